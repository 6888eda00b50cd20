#include "options.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "families.h"

namespace ftapp {
namespace {

bool parse_size(const char* s, size_t* out) {
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  unsigned long long v = std::strtoull(s, &end, 0);
  if (end == nullptr || *end != '\0') return false;
  *out = static_cast<size_t>(v);
  return true;
}

}  // namespace

bool is_known_test(const std::string& name) {
  return name == "all" || find_family(name) != nullptr;
}

void print_usage(FILE* f) {
  std::fprintf(f,
               "usage: ft_app --prov PROV --test NAME [--count N] [--size BYTES] [--threads T]\n"
               "              [--result FILE] [--cq-format context|unspec|msg|data|tagged]\n"
               "              [--ep-type rdm|msg] [--av-type table|map] [--window W]\n"
               "              [--timeout SEC] [--hold-until FILE] [--until FILE] [--touch-mb N]\n"
               "              [--toggle-at I,J,...] [--own-usr2 1] [--gap sleep|pipe:MS]\n"
               "              [--reuse-ctx 1] [--rx-contexts N] [--sleepers N]\n"
               "  NAME: msg tagged rma atomic inject cancel threads pingpong stream multirecv\n"
               "        peek sep srx trigger sizes multiep bw recvtiming marks writes all\n"
               "  marks: --count iterations of known ops between fabtrace_mark()s;\n"
               "  --toggle-at: rank 0 raises SIGUSR2 before those iterations; --own-usr2 1:\n"
               "  the program handles SIGUSR2 itself (installed before any fabric call).\n"
               "  PROV \"tcp\" (or \"verbs\") defaults to --ep-type msg, others to rdm.\n"
               "  --hold-until FILE: after the test, each rank waits (up to --timeout) until\n"
               "  FILE exists before it exits, so a test can watch what runs in the\n"
               "  background of a traced process (the NIC counter sampler) for as long as\n"
               "  it needs, instead of for as long as the traffic happened to take.\n"
               "  stream: busy-polled round trips, --count of them or until the --until\n"
               "  file exists; --touch-mb N: rank 0 touches N MiB of fresh memory inside\n"
               "  round trip #100's send (a slow op with page faults); --gap KIND:MS: rank 0\n"
               "  spends MS ms between two polls of round trip #100, asleep (sleep) or\n"
               "  blocked reading a pipe another thread writes after MS ms (pipe);\n"
               "  --sleepers N: meanwhile, N threads of rank 0 sleep 1 us in a loop (many\n"
               "  off-CPU intervals), counting their sleeps (\"sleeps\", their tids as\n"
               "  \"sleeper_tid_I\"); rank 0 marks round trip #100 (fabtrace_mark).\n"
               "  writes: rank 0 writes --count messages to rank 1, one at a time, then\n"
               "  rank 1 to rank 0, each timing its own; --gap KIND:MS: rank 0 spends MS ms\n"
               "  so between posting each of its writes and polling for it.\n"
               "  --reuse-ctx 1: msg, tagged, inject: each slot of the receive window posts\n"
               "  its receives with one context, reused once the previous one completed.\n"
               "  --rx-contexts N: bw: the receives are posted with N contexts in turn, so\n"
               "  a context is reused while earlier receives with it are outstanding.\n");
}

bool parse_options(int argc, char** argv, Options* out, std::string* err) {
  Options o;
  bool ep_type_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string val;
    std::string key = a;
    size_t eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
      key = a.substr(0, eq);
      val = a.substr(eq + 1);
    } else if (a == "-h" || a == "--help") {
      *err = "help";
      return false;
    } else {
      if (i + 1 >= argc) {
        *err = "missing value for " + a;
        return false;
      }
      val = argv[++i];
    }
    if (key == "--prov") {
      o.prov = val;
    } else if (key == "--test") {
      o.test = val;
    } else if (key == "--count") {
      if (!parse_size(val.c_str(), &o.count) || o.count == 0 || o.count > 1000000) {
        *err = "bad --count";
        return false;
      }
    } else if (key == "--size") {
      if (!parse_size(val.c_str(), &o.size) || o.size == 0 || o.size > (64u << 20)) {
        *err = "bad --size";
        return false;
      }
    } else if (key == "--threads") {
      if (!parse_size(val.c_str(), &o.threads) || o.threads == 0 || o.threads > 64) {
        *err = "bad --threads";
        return false;
      }
    } else if (key == "--window") {
      if (!parse_size(val.c_str(), &o.window) || o.window == 0 || o.window > 1024) {
        *err = "bad --window";
        return false;
      }
    } else if (key == "--timeout") {
      size_t t = 0;
      if (!parse_size(val.c_str(), &t) || t == 0 || t > 3600) {
        *err = "bad --timeout";
        return false;
      }
      o.timeout_s = static_cast<int>(t);
    } else if (key == "--until") {
      o.until = val;
    } else if (key == "--touch-mb") {
      if (!parse_size(val.c_str(), &o.touch_mb) || o.touch_mb > 4096) {
        *err = "bad --touch-mb";
        return false;
      }
    } else if (key == "--toggle-at") {
      size_t pos = 0;
      while (pos <= val.size()) {
        const size_t comma = std::min(val.find(',', pos), val.size());
        size_t v = 0;
        if (!parse_size(val.substr(pos, comma - pos).c_str(), &v) || v > 1000000) {
          *err = "bad --toggle-at";
          return false;
        }
        o.toggle_at.push_back(v);
        pos = comma + 1;
      }
    } else if (key == "--gap") {
      const size_t colon = val.find(':');
      o.gap_kind = val.substr(0, colon);
      if (colon == std::string::npos || (o.gap_kind != "sleep" && o.gap_kind != "pipe") ||
          !parse_size(val.substr(colon + 1).c_str(), &o.gap_ms) || o.gap_ms == 0 ||
          o.gap_ms > 60000) {
        *err = "bad --gap (sleep:MS or pipe:MS)";
        return false;
      }
    } else if (key == "--sleepers") {
      if (!parse_size(val.c_str(), &o.sleepers) || o.sleepers > 64) {
        *err = "bad --sleepers (0 to 64)";
        return false;
      }
    } else if (key == "--reuse-ctx") {
      o.reuse_ctx = val == "1";
    } else if (key == "--rx-contexts") {
      if (!parse_size(val.c_str(), &o.rx_contexts) || o.rx_contexts > 1024) {
        *err = "bad --rx-contexts";
        return false;
      }
    } else if (key == "--own-usr2") {
      o.own_usr2 = val == "1";
    } else if (key == "--hold-until") {
      o.hold_until = val;
    } else if (key == "--result") {
      o.result = val;
    } else if (key == "--cq-format") {
      if (val == "context") {
        o.cq_format = FI_CQ_FORMAT_CONTEXT;
      } else if (val == "unspec") {
        o.cq_format = FI_CQ_FORMAT_UNSPEC;  // the provider's default (read as fi_cq_entry)
      } else if (val == "msg") {
        o.cq_format = FI_CQ_FORMAT_MSG;
      } else if (val == "data") {
        o.cq_format = FI_CQ_FORMAT_DATA;
      } else if (val == "tagged") {
        o.cq_format = FI_CQ_FORMAT_TAGGED;
      } else {
        *err = "bad --cq-format " + val;
        return false;
      }
      o.cq_format_name = val;
    } else if (key == "--ep-type") {
      if (val == "rdm") {
        o.ep_type = FI_EP_RDM;
      } else if (val == "msg") {
        o.ep_type = FI_EP_MSG;
      } else {
        *err = "bad --ep-type " + val;
        return false;
      }
      ep_type_given = true;
    } else if (key == "--av-type") {
      if (val == "table") {
        o.av_type = FI_AV_TABLE;
      } else if (val == "map") {
        o.av_type = FI_AV_MAP;
      } else {
        *err = "bad --av-type " + val;
        return false;
      }
    } else {
      *err = "unknown option " + key;
      return false;
    }
  }
  if (o.prov.empty() || o.test.empty()) {
    *err = "--prov and --test are required";
    return false;
  }
  if (!is_known_test(o.test)) {
    *err = "unknown test " + o.test;
    return false;
  }
  if (!ep_type_given) {
    o.ep_type = (o.prov == "tcp" || o.prov == "verbs") ? FI_EP_MSG : FI_EP_RDM;
  }
  *out = o;
  return true;
}

}  // namespace ftapp

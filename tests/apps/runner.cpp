#include "runner.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "env.h"
#include "fabric.h"
#include "families.h"
#include "oob.h"
#include "result.h"
#include "stats.h"

namespace ftapp {
namespace {

const char* g_watchdog_family = "";

void on_watchdog(int) {
  const char a[] = "ft_app: watchdog expired in family ";
  ssize_t ignored = ::write(2, a, sizeof a - 1);
  ignored = ::write(2, g_watchdog_family, std::strlen(g_watchdog_family));
  ignored = ::write(2, "\n", 1);
  (void)ignored;
  _exit(3);
}

// Finds the capabilities this provider supports for the family. Returns the
// fi_getinfo result for them (caller owns), or nullptr with *why.
fi_info* probe(const Options& opt, const FamilyDef& def, uint64_t* caps, std::string* why) {
  uint64_t all = def.required;
  for (uint64_t o : def.optional) all |= o;
  fi_info* info = query_info(opt, all, def.spec, why);
  uint64_t chosen = all;
  if (info == nullptr && !def.optional.empty()) {
    std::vector<uint64_t> kept;
    for (uint64_t o : def.optional) {
      std::string ignored;
      fi_info* t = query_info(opt, def.required | o, def.spec, &ignored);
      if (t != nullptr) {
        kept.push_back(o);
        fi_freeinfo(t);
      }
    }
    while (info == nullptr) {
      chosen = def.required;
      for (uint64_t o : kept) chosen |= o;
      if (kept.empty() && def.any_of != 0) break;
      info = query_info(opt, chosen, def.spec, why);
      if (kept.empty()) break;
      if (info == nullptr) kept.pop_back();
    }
  }
  if (info != nullptr && def.any_of != 0 && (chosen & def.any_of) == 0) {
    fi_freeinfo(info);
    info = nullptr;
  }
  if (info == nullptr && why->empty()) *why = "no matching provider";
  *caps = chosen;
  return info;
}

std::string encode_skips(const std::map<std::string, std::string>& m) {
  std::string o;
  for (const auto& kv : m) o += kv.first + "\t" + kv.second + "\n";
  return o;
}

void merge_skips(const std::string& s, Stats& stats) {
  size_t pos = 0;
  while (pos < s.size()) {
    size_t nl = s.find('\n', pos);
    if (nl == std::string::npos) nl = s.size();
    std::string line = s.substr(pos, nl - pos);
    size_t tab = line.find('\t');
    if (tab != std::string::npos) stats.skip_function(line.substr(0, tab), line.substr(tab + 1));
    pos = nl + 1;
  }
}

enum class Outcome { kRan, kUnsupported };

void family_unsupported(const FamilyDef& def, const std::string& reason, Stats& stats) {
  stats.family_skipped(def.name, reason);
  for (const char* fn : def.functions) {
    stats.skip_function(fn, std::string("family ") + def.name + " unsupported: " + reason);
  }
}

Outcome run_family(const FamilyDef& def, const Options& opt, int rank, Oob& oob, Stats& stats,
                   std::string* reason, bool* peer_lost) {
  const int timeout_ms = opt.timeout_s * 1000;
  g_watchdog_family = def.name;
  alarm(static_cast<unsigned>(opt.timeout_s) * 6 + 30);

  uint64_t caps = 0;
  std::string why;
  fi_info* info = probe(opt, def, &caps, &why);
  std::string mine = info ? "1:" + std::to_string(caps) : "0:" + why;
  std::string theirs;
  try {
    oob.send("sup", mine);
    theirs = oob.recv("sup", timeout_ms);
  } catch (const std::exception& e) {
    if (info) fi_freeinfo(info);
    stats.failure(std::string(def.name) + ": " + e.what());
    *peer_lost = true;
    alarm(0);
    return Outcome::kRan;
  }
  if (info == nullptr || theirs.compare(0, 2, "1:") != 0) {
    if (info) fi_freeinfo(info);
    *reason = info == nullptr ? why : theirs.substr(2) + " (on peer)";
    family_unsupported(def, *reason, stats);
    std::string ignored;
    if (!oob.end_family("", timeout_ms, &ignored)) {
      stats.failure(std::string(def.name) + ": peer did not finish the family");
      *peer_lost = true;
    }
    alarm(0);
    return Outcome::kUnsupported;
  }
  std::string capstr = fi_tostr(&caps, FI_TYPE_CAPS);
  while (!capstr.empty() && (capstr.back() == ' ' || capstr.back() == '\n')) capstr.pop_back();
  bool unsupported = false;

  std::map<std::string, std::string> skips;
  {
    Env env(opt, rank, oob, stats);
    env.caps = caps;
    env.method = def.method;
    FabricSpec spec = def.spec;
    spec.caps = caps;
    try {
      if (theirs != mine) throw FamilyError("ranks disagree on capabilities");
      fi_info* owned = info;
      info = nullptr;  // the fabric owns it from here on, even if open() throws
      env.fab.open(opt, rank, owned, spec, oob);
      if (env.method == CqMethod::kSRead && !env.fab.cq_has_wait) {
        env.method = CqMethod::kRead;
        stats.note(std::string(def.name) + ": CQ wait objects unsupported, used fi_cq_read");
      }
      def.run(env);
    } catch (const FamilyUnsupported& e) {
      unsupported = true;
      *reason = e.what();
    } catch (const PeerAbort& e) {
      stats.failure(std::string(def.name) + ": peer rank failed: " + e.what());
    } catch (const std::exception& e) {
      stats.failure(std::string(def.name) + ": " + e.what());
      oob.send_abort(std::string(def.name) + " failed on rank " + std::to_string(rank) + ": " +
                     e.what());
    }
    if (info) fi_freeinfo(info);
    for (const std::string& e : env.fab.close()) stats.failure(std::string(def.name) + ": " + e);
    skips = env.skips();
  }
  if (unsupported) {
    family_unsupported(def, *reason, stats);
  } else {
    stats.family_ran(def.name, capstr);
  }
  for (const auto& kv : skips) stats.skip_function(kv.first, kv.second);
  std::string peer_skips;
  if (!oob.end_family(encode_skips(skips), timeout_ms, &peer_skips)) {
    stats.failure(std::string(def.name) + ": peer did not finish the family");
    *peer_lost = true;
  } else {
    merge_skips(peer_skips, stats);
  }
  alarm(0);
  return unsupported ? Outcome::kUnsupported : Outcome::kRan;
}

}  // namespace

int run_rank(const Options& opt, int rank, int fd, std::string* json, std::string* skip_reason) {
  signal(SIGALRM, on_watchdog);
  signal(SIGPIPE, SIG_IGN);
  Oob oob(fd);
  Stats stats;
  std::vector<const FamilyDef*> todo;
  if (opt.test == "all") {
    for (const FamilyDef& d : families()) todo.push_back(&d);
  } else {
    todo.push_back(find_family(opt.test));
  }
  size_t ran = 0;
  std::string unsupported;
  uint32_t fam = 0;
  for (const FamilyDef* def : todo) {
    oob.begin_family(++fam);
    std::string reason;
    bool peer_lost = false;
    if (run_family(*def, opt, rank, oob, stats, &reason, &peer_lost) == Outcome::kRan) {
      ++ran;
    } else if (unsupported.empty()) {
      unsupported = std::string(def->name) + ": " + reason;
    }
    if (peer_lost || oob.dead()) {
      stats.failure("lost contact with the peer rank; stopping");
      ++ran;
      break;
    }
  }
  if (ran != 0) unsupported.clear();
  if (skip_reason != nullptr) *skip_reason = unsupported;
  *json = result_json(opt, rank, stats, unsupported);
  if (!opt.result.empty() && !write_result_file(opt.result, rank, *json)) {
    std::fprintf(stderr, "ft_app: rank %d: cannot write result file %s.r%d.json\n", rank,
                 opt.result.c_str(), rank);
    return 1;
  }
  if (ran == 0) return 77;
  return stats.ok() ? 0 : 1;
}

}  // namespace ftapp

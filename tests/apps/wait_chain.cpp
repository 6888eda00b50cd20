// wait_chain: a chain of N ranks (processes forked by a launcher that makes no
// fabric call) over libfabric RDM tagged messages, for the wait-state analysis
// of `fabtrace report`. Round after round, rank N-1 sends to N-2, each rank k in
// between receives from k+1 and then sends to k-1, rank 0 only receives. Each
// receiving rank times its own wait (from its receive posted to its completion
// read, CLOCK_MONOTONIC) and prints it:
//   wait round=R rank=K on=K+1 ns=N
// In the last round the delayed rank (--delay-rank, default N-1) is held up
// before it receives or sends: stopped (--delay stop: it raises SIGSTOP and
// the launcher sends SIGCONT after --delay-ms) or sleeping (--delay sleep). The
// earlier rounds set the connections up; the last one is marked ("measured",
// then "after": FABTRACE_OPS_WINDOW=mark:measured keeps it alone in the
// timeline). Between rounds the launcher is a barrier (pipes), and every rank
// keeps progressing its endpoint while in it. A rank waiting for a completion
// sleeps 20 us between empty polls: 4 busy pollers on 2 cores would make the
// ranks wait for their CPUs, not for each other.
//
//   wait_chain --provider "tcp;ofi_rxm" --ranks 4 --delay stop --delay-ms 200
#include <poll.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fabtrace.h"
#include "fixtures/fabric_handles.h"

namespace {

struct Opts {
  std::string provider = "tcp;ofi_rxm";
  int ranks = 4, rounds = 3, delay_rank = -1, delay_ms = 200;
  std::string delay = "stop";  // stop, sleep, none
  size_t bytes = 64;
};

[[noreturn]] void die(const char* what, long rc) {
  std::fprintf(stderr, "wait_chain: %s: %ld (%s)\n", what, rc,
               rc < 0 ? fi_strerror(static_cast<int>(-rc)) : "");
  std::_Exit(2);
}

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

bool read_all(int fd, void* p, size_t n) {
  auto* b = static_cast<char*>(p);
  while (n) {
    const ssize_t k = read(fd, b, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    b += k, n -= static_cast<size_t>(k);
  }
  return true;
}

bool write_all(int fd, const void* p, size_t n) {
  const auto* b = static_cast<const char*>(p);
  while (n) {
    const ssize_t k = write(fd, b, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    b += k, n -= static_cast<size_t>(k);
  }
  return true;
}

struct Child {
  int up = -1, down = -1;  // to the launcher, from the launcher
};

// One rank: its endpoint, the others' addresses, the rounds.
struct RankRun : fabtrace::fixtures::FabricHandles {
  RankRun(const Opts& opts, int r, Child c) : o(opts), rank(r), ch(c) {}
  const Opts& o;
  int rank;
  Child ch;
  std::vector<fi_addr_t> peers;
  std::vector<char> sbuf, rbuf;

  void open() {
    fi_info* hints = fi_allocinfo();
    hints->caps = FI_TAGGED;
    hints->ep_attr->type = FI_EP_RDM;
    hints->mode = FI_CONTEXT;
    hints->fabric_attr->prov_name = strdup(o.provider.c_str());
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    const int rc = fi_getinfo(FI_VERSION(1, 9), nullptr, nullptr, 0, hints, &info);
    fi_freeinfo(hints);
    if (rc) die("fi_getinfo", rc);
    long r = fi_fabric(info->fabric_attr, &fabric, nullptr);
    if (r) die("fi_fabric", r);
    if ((r = fi_domain(fabric, info, &domain, nullptr))) die("fi_domain", r);
    fi_cq_attr ca{};
    ca.format = FI_CQ_FORMAT_TAGGED;
    ca.size = 64;
    if ((r = fi_cq_open(domain, &ca, &cq, nullptr))) die("fi_cq_open", r);
    fi_av_attr aa{};
    aa.type = FI_AV_TABLE;
    if ((r = fi_av_open(domain, &aa, &av, nullptr))) die("fi_av_open", r);
    if ((r = fi_endpoint(domain, info, &ep, nullptr))) die("fi_endpoint", r);
    if ((r = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV))) die("fi_ep_bind cq", r);
    if ((r = fi_ep_bind(ep, &av->fid, 0))) die("fi_ep_bind av", r);
    if ((r = fi_enable(ep))) die("fi_enable", r);
    // Addresses through the launcher: ours up, everyone's down.
    char name[256];
    size_t len = sizeof(name);
    if ((r = fi_getname(&ep->fid, name, &len))) die("fi_getname", r);
    const uint32_t l32 = static_cast<uint32_t>(len);
    if (!write_all(ch.up, &l32, 4) || !write_all(ch.up, name, len)) die("address up", 0);
    std::vector<char> all;
    for (int k = 0; k < o.ranks; ++k) {
      uint32_t n = 0;
      if (!read_all(ch.down, &n, 4) || n > 4096) die("address down", 0);
      std::vector<char> a(n);
      if (!read_all(ch.down, a.data(), n)) die("address down", 0);
      fi_addr_t fa = FI_ADDR_UNSPEC;
      if (fi_av_insert(av, a.data(), 1, &fa, 0, nullptr) != 1) die("fi_av_insert", k);
      peers.push_back(fa);
    }
    sbuf.assign(o.bytes, static_cast<char>('a' + rank));
    rbuf.assign(o.bytes, 0);
  }

  // Reads completions until `want` arrived (progressing the endpoint).
  void complete(int want) {
    fi_cq_tagged_entry e[8];
    while (want > 0) {
      const ssize_t n = fi_cq_read(cq, e, 8);
      if (n > 0) {
        want -= static_cast<int>(n);
      } else if (n == -FI_EAGAIN) {
        timespec ts{0, 20000};
        nanosleep(&ts, nullptr);
      } else if (n == -FI_EAVAIL) {
        fi_cq_err_entry err{};
        fi_cq_readerr(cq, &err, 0);
        die("completion error", -err.err);
      } else {
        die("fi_cq_read", n);
      }
    }
  }

  // The launcher's barrier, progressing the endpoint while in it.
  void barrier() {
    const char c = 'r';
    if (!write_all(ch.up, &c, 1)) die("barrier up", 0);
    pollfd p{ch.down, POLLIN, 0};
    fi_cq_tagged_entry e[8];
    for (;;) {
      const ssize_t n = fi_cq_read(cq, e, 8);
      if (n < 0 && n != -FI_EAGAIN) die("fi_cq_read in the barrier", n);
      if (::poll(&p, 1, 0) > 0) break;
      timespec ts{0, 100000};  // polls 100 us apart: no poll gap of FABTRACE_STALL_US
      nanosleep(&ts, nullptr);
    }
    char g = 0;
    if (!read_all(ch.down, &g, 1)) die("barrier down", 0);
  }

  void delay_here() {
    if (o.delay == "stop") {
      raise(SIGSTOP);  // the launcher continues it after delay_ms
    } else if (o.delay == "sleep") {
      timespec ts{o.delay_ms / 1000, (o.delay_ms % 1000) * 1000000L};
      while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
      }
    }
  }

  void round(int r) {
    const bool last = r == o.rounds - 1;
    const int delayed = o.delay_rank < 0 ? o.ranks - 1 : o.delay_rank;
    long rc;
    if (last) fabtrace_mark("measured");
    if (last && rank == delayed) delay_here();
    if (rank < o.ranks - 1) {
      fi_context ctx{};
      do {
        rc = fi_trecv(ep, rbuf.data(), rbuf.size(), nullptr, peers[rank + 1], 7, 0, &ctx);
        if (rc == -FI_EAGAIN) complete(0);
      } while (rc == -FI_EAGAIN);
      if (rc) die("fi_trecv", rc);
      const int64_t t0 = now_ns();
      complete(1);
      const int64_t t1 = now_ns();
      if (rbuf[0] != static_cast<char>('a' + rank + 1)) die("payload", rbuf[0]);
      std::printf("wait round=%d rank=%d on=%d ns=%lld\n", r, rank, rank + 1,
                  static_cast<long long>(t1 - t0));
      std::fflush(stdout);
    }
    if (rank > 0) {
      fi_context ctx{};
      do {
        rc = fi_tsend(ep, sbuf.data(), sbuf.size(), nullptr, peers[rank - 1], 7, &ctx);
        if (rc == -FI_EAGAIN) {
          fi_cq_tagged_entry e;
          fi_cq_read(cq, &e, 0);
        }
      } while (rc == -FI_EAGAIN);
      if (rc) die("fi_tsend", rc);
      complete(1);
    }
  }

  int run() {
    setenv("RANK", std::to_string(rank).c_str(), 1);
    open();
    for (int r = 0; r < o.rounds; ++r) {
      barrier();
      round(r);
    }
    fabtrace_mark("after");
    barrier();
    close_all();
    return 0;
  }
};

int usage() {
  std::fprintf(
      stderr,
      "usage: wait_chain [--provider P] [--ranks N] [--rounds R] [--delay stop|sleep|none]\n"
      "                  [--delay-rank K] [--delay-ms MS]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Opts o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    const char* v = argv[++i];
    if (a == "--provider")
      o.provider = v;
    else if (a == "--ranks")
      o.ranks = std::atoi(v);
    else if (a == "--rounds")
      o.rounds = std::atoi(v);
    else if (a == "--delay")
      o.delay = v;
    else if (a == "--delay-rank")
      o.delay_rank = std::atoi(v);
    else if (a == "--delay-ms")
      o.delay_ms = std::atoi(v);
    else
      return usage();
  }
  if (o.ranks < 2 || o.ranks > 64 || o.rounds < 1 || o.delay_ms < 0 ||
      (o.delay != "stop" && o.delay != "sleep" && o.delay != "none") || o.delay_rank >= o.ranks)
    return usage();
  std::vector<Child> kids(static_cast<size_t>(o.ranks));
  std::vector<Child> mine(kids.size());  // the launcher's ends
  std::vector<pid_t> pids;
  for (int k = 0; k < o.ranks; ++k) {
    int up[2], down[2];
    if (pipe(up) || pipe(down)) return perror("wait_chain: pipe"), 2;
    kids[k] = {up[1], down[0]};
    mine[k] = {down[1], up[0]};  // up: launcher writes (to the child's down); down: it reads
    const pid_t p = fork();
    if (p < 0) return perror("wait_chain: fork"), 2;
    if (p == 0) {
      for (int j = 0; j <= k; ++j) {
        if (j < k) close(mine[j].up), close(mine[j].down);
      }
      close(down[1]), close(up[0]);
      RankRun run(o, k, kids[k]);
      std::exit(run.run());  // atexit: the preload writes its report
    }
    close(up[1]), close(down[0]);
    pids.push_back(p);
  }
  // Addresses: each rank's in, all of them out to each.
  std::vector<std::vector<char>> names;
  for (int k = 0; k < o.ranks; ++k) {
    uint32_t n = 0;
    if (!read_all(mine[k].down, &n, 4) || n > 4096)
      return std::fprintf(stderr, "wait_chain: rank %d died\n", k), 2;
    std::vector<char> a(n);
    if (!read_all(mine[k].down, a.data(), n)) return 2;
    names.push_back(a);
  }
  for (int k = 0; k < o.ranks; ++k)
    for (const auto& a : names) {
      const uint32_t n = static_cast<uint32_t>(a.size());
      if (!write_all(mine[k].up, &n, 4) || !write_all(mine[k].up, a.data(), n)) return 2;
    }
  const int delayed = o.delay_rank < 0 ? o.ranks - 1 : o.delay_rank;
  for (int r = 0; r <= o.rounds; ++r) {
    for (int k = 0; k < o.ranks; ++k) {
      char c = 0;
      if (!read_all(mine[k].down, &c, 1))
        return std::fprintf(stderr, "wait_chain: rank %d died\n", k), 2;
    }
    for (int k = 0; k < o.ranks; ++k) {
      const char g = 'g';
      if (!write_all(mine[k].up, &g, 1)) return 2;
    }
    if (r == o.rounds - 1 && o.delay == "stop") {
      int st = 0;
      if (waitpid(pids[delayed], &st, WUNTRACED) != pids[delayed] || !WIFSTOPPED(st))
        return std::fprintf(stderr, "wait_chain: rank %d did not stop\n", delayed), 2;
      const int64_t t0 = now_ns();
      timespec ts{o.delay_ms / 1000, (o.delay_ms % 1000) * 1000000L};
      while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
      }
      kill(pids[delayed], SIGCONT);
      std::printf("stopped rank=%d ns=%lld\n", delayed, static_cast<long long>(now_ns() - t0));
      std::fflush(stdout);
    }
  }
  int rc = 0;
  for (pid_t p : pids) {
    int st = 0;
    if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st)) rc = 1;
  }
  return rc;
}

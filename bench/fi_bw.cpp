// fi_bw: small libfabric message-rate / bandwidth program for the end-to-end
// overhead suite (bench/run-e2e). Forks into two ranks over loopback (parent =
// rank 0, the initiator; child = rank 1, the target) that coordinate over a
// socketpair (the launcher of fixtures/two_ranks.h, ft_app's; nothing else
// from tests/apps is linked).
//
//   fi_bw --prov PROV --mode tagged|rma --size BYTES --count N --window W
//         [--warmup N] [--timeout S]
//
// tagged: rank 0 issues N fi_tsend of SIZE bytes with at most W outstanding;
//         rank 1 keeps W fi_trecv posted. The clock stops when rank 0 has all
//         its completions and rank 1 has reported receiving all N messages.
// rma:    rank 1 registers a W*SIZE buffer and keeps progressing its CQ; rank 0
//         issues N fi_write into it with at most W outstanding, then one fi_read
//         of the target buffer. The clock stops when the read completes: write
//         completions may be local (data handed to the socket), the read comes
//         back behind the writes on the same ordered connection/queue.
//
// Rank 0 prints one line:
//   mode=tagged prov=... size=... count=... secs=... msgs_per_s=... MB_per_s=...
#include <poll.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fixtures/fabric_handles.h"
#include "fixtures/two_ranks.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string prov = "tcp;ofi_rxm";
  std::string mode = "tagged";
  size_t size = 64;
  size_t count = 100000;
  size_t window = 64;
  size_t warmup = 0;  // 0: 2 * window
  int timeout_s = 60;
};

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void usage(FILE* out) {
  std::fprintf(out,
               "usage: fi_bw [--prov PROV] [--mode tagged|rma] [--size BYTES] [--count N]\n"
               "             [--window W] [--warmup N] [--timeout S]\n"
               "defaults: --prov 'tcp;ofi_rxm' --mode tagged --size 64 --count 100000\n"
               "          --window 64 --warmup 2*W --timeout 60\n");
}

bool parse_size(const char* s, size_t* out) {
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || end == s) return false;
  if (*end == 'k' || *end == 'K') {
    v <<= 10;
    ++end;
  } else if (*end == 'm' || *end == 'M') {
    v <<= 20;
    ++end;
  }
  if (*end != '\0') return false;
  *out = static_cast<size_t>(v);
  return true;
}

bool parse_options(int argc, char** argv, Options* o, std::string* err) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      *err = "help";
      return false;
    }
    if (i + 1 >= argc) {
      *err = "missing value for " + a;
      return false;
    }
    const char* v = argv[++i];
    size_t n = 0;
    if (a == "--prov" || a == "-p") {
      o->prov = v;
    } else if (a == "--mode" || a == "-m") {
      o->mode = v;
      if (o->mode != "tagged" && o->mode != "rma") {
        *err = "--mode must be tagged or rma";
        return false;
      }
    } else if (a == "--size" || a == "-S") {
      if (!parse_size(v, &o->size) || o->size == 0) {
        *err = "bad --size";
        return false;
      }
    } else if (a == "--count" || a == "-n") {
      if (!parse_size(v, &o->count) || o->count == 0) {
        *err = "bad --count";
        return false;
      }
    } else if (a == "--window" || a == "-w") {
      if (!parse_size(v, &o->window) || o->window == 0 || o->window > 4096) {
        *err = "bad --window (1..4096)";
        return false;
      }
    } else if (a == "--warmup") {
      if (!parse_size(v, &o->warmup)) {
        *err = "bad --warmup";
        return false;
      }
    } else if (a == "--timeout") {
      if (!parse_size(v, &n) || n == 0 || n > 3600) {
        *err = "bad --timeout (1..3600 s)";
        return false;
      }
      o->timeout_s = static_cast<int>(n);
    } else {
      *err = "unknown option " + a;
      return false;
    }
  }
  if (o->warmup == 0) o->warmup = 2 * o->window;
  return true;
}

void on_watchdog(int) {
  const char m[] = "fi_bw: watchdog expired\n";
  ssize_t ignored = ::write(2, m, sizeof m - 1);
  (void)ignored;
  _exit(3);
}

void check(int ret, const char* what) {
  if (ret != 0) throw Error(std::string(what) + " failed: " + fi_strerror(ret < 0 ? -ret : ret));
}

// Out-of-band channel: length-prefixed messages over the socketpair.
class Oob {
 public:
  explicit Oob(int fd) : fd_(fd) {}
  ~Oob() { ::close(fd_); }
  Oob(const Oob&) = delete;
  Oob& operator=(const Oob&) = delete;

  void send(const std::string& s) {
    uint32_t len = static_cast<uint32_t>(s.size());
    std::string frame(reinterpret_cast<const char*>(&len), 4);
    frame += s;
    size_t off = 0;
    while (off < frame.size()) {
      ssize_t n = ::send(fd_, frame.data() + off, frame.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw Error("out-of-band send failed");
      off += static_cast<size_t>(n);
    }
  }
  // True when a message is waiting (does not block).
  bool ready() {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }
  std::string recv(int timeout_ms) {
    uint32_t len = 0;
    read_full(&len, 4, timeout_ms);
    if (len > (1u << 20)) throw Error("out-of-band: bad frame");
    std::string s(len, '\0');
    if (len != 0) read_full(&s[0], len, timeout_ms);
    return s;
  }

 private:
  void read_full(void* buf, size_t len, int timeout_ms) {
    auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    char* p = static_cast<char*>(buf);
    size_t got = 0;
    while (got < len) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) throw Error("out-of-band: timeout waiting for peer");
      pollfd pfd{fd_, POLLIN, 0};
      int pr = ::poll(&pfd, 1, static_cast<int>(left));
      if (pr < 0 && errno == EINTR) continue;
      if (pr <= 0) continue;
      ssize_t n = ::recv(fd_, p + got, len - got, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw Error("out-of-band: peer closed the connection");
      got += static_cast<size_t>(n);
    }
  }
  int fd_;
};

struct RemoteMem {
  uint64_t addr;
  uint64_t key;
};

class Bw {
 public:
  Bw(const Options& opt, int rank, Oob& oob) : opt_(opt), rank_(rank), oob_(oob) {
    deadline_ = Clock::now() + std::chrono::seconds(opt.timeout_s);
  }
  ~Bw() { close(); }
  Bw(const Bw&) = delete;
  Bw& operator=(const Bw&) = delete;

  void open();
  double run();  // rank 0: seconds of the timed phase; rank 1: 0

 private:
  void post_retry(const std::function<ssize_t()>& op);
  size_t poll_cq();  // completions read (>= 0), throws on errors
  void check_deadline(const char* what) {
    if (Clock::now() > deadline_) throw Error(std::string("timeout ") + what);
  }
  void tagged_phase(size_t n, bool timed, double* secs);
  void rma_phase(size_t n, bool timed, double* secs);
  void close();

  const Options& opt_;
  int rank_;
  Oob& oob_;
  Clock::time_point deadline_;

  fabtrace::fixtures::FabricHandles h_;
  fid_mr* mr_ = nullptr;
  fi_addr_t peer_ = FI_ADDR_UNSPEC;
  void* buf_ = nullptr;
  size_t buf_len_ = 0;
  void* desc_ = nullptr;
  RemoteMem remote_{0, 0};
  std::vector<fi_context2> ctx_;
  size_t pending_done_ = 0;
};

void Bw::open() {
  const bool rma = opt_.mode == "rma";
  fi_info* hints = fi_allocinfo();
  if (hints == nullptr) throw Error("fi_allocinfo failed");
  hints->fabric_attr->prov_name = strdup(opt_.prov.c_str());
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = rma ? (FI_RMA | FI_WRITE | FI_READ | FI_REMOTE_WRITE | FI_REMOTE_READ)
                    : (FI_TAGGED | FI_SEND | FI_RECV);
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->domain_attr->mr_mode =
      FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  hints->domain_attr->av_type = FI_AV_TABLE;
  int ret = fi_getinfo(FI_VERSION(1, 9), nullptr, nullptr, 0, hints, &h_.info);
  fi_freeinfo(hints);
  if (ret != 0 || h_.info == nullptr) {
    throw Error("fi_getinfo found no " + opt_.prov + " RDM endpoint for mode " + opt_.mode + ": " +
                fi_strerror(ret < 0 ? -ret : ret));
  }
  check(fi_fabric(h_.info->fabric_attr, &h_.fabric, nullptr), "fi_fabric");
  check(fi_domain(h_.fabric, h_.info, &h_.domain, nullptr), "fi_domain");

  fi_cq_attr cq_attr;
  std::memset(&cq_attr, 0, sizeof cq_attr);
  cq_attr.format = FI_CQ_FORMAT_CONTEXT;
  cq_attr.wait_obj = FI_WAIT_NONE;
  cq_attr.size = opt_.window * 2 + 64;
  check(fi_cq_open(h_.domain, &cq_attr, &h_.cq, nullptr), "fi_cq_open");

  fi_av_attr av_attr;
  std::memset(&av_attr, 0, sizeof av_attr);
  av_attr.type = FI_AV_TABLE;
  av_attr.count = 4;
  check(fi_av_open(h_.domain, &av_attr, &h_.av, nullptr), "fi_av_open");

  check(fi_endpoint(h_.domain, h_.info, &h_.ep, nullptr), "fi_endpoint");
  check(fi_ep_bind(h_.ep, &h_.av->fid, 0), "fi_ep_bind(av)");
  check(fi_ep_bind(h_.ep, &h_.cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
  check(fi_enable(h_.ep), "fi_enable");

  // Buffer: W slots of SIZE bytes (one per outstanding op).
  const uint64_t mr_mode = static_cast<uint64_t>(h_.info->domain_attr->mr_mode);
  buf_len_ = opt_.window * opt_.size;
  if (posix_memalign(&buf_, 4096, buf_len_) != 0) throw Error("out of memory");
  std::memset(buf_, rank_ == 0 ? 0xA5 : 0, buf_len_);
  const bool target = rma && rank_ == 1;
  if (target || (mr_mode & FI_MR_LOCAL)) {
    uint64_t access = rma ? (target ? (FI_REMOTE_WRITE | FI_REMOTE_READ) : (FI_WRITE | FI_READ))
                          : (FI_SEND | FI_RECV);
    check(fi_mr_reg(h_.domain, buf_, buf_len_, access, 0, 0x5eed + static_cast<uint64_t>(rank_), 0,
                    &mr_, nullptr),
          "fi_mr_reg");
    if (mr_mode & FI_MR_ENDPOINT) {
      check(fi_mr_bind(mr_, &h_.ep->fid, 0), "fi_mr_bind");
      check(fi_mr_enable(mr_), "fi_mr_enable");
    }
    desc_ = fi_mr_desc(mr_);
  }

  // Exchange endpoint names (and the target's buffer for RMA).
  char name[256];
  size_t len = sizeof name;
  check(fi_getname(&h_.ep->fid, name, &len), "fi_getname");
  std::string mine(name, len);
  if (target) {
    RemoteMem rm;
    rm.addr = (mr_mode & FI_MR_VIRT_ADDR) ? reinterpret_cast<uint64_t>(buf_) : 0;
    rm.key = fi_mr_key(mr_);
    if (rm.key == FI_KEY_NOTAVAIL) throw Error("fi_mr_key: key not available");
    mine.insert(0, reinterpret_cast<const char*>(&rm), sizeof rm);
  }
  oob_.send(mine);
  std::string theirs = oob_.recv(opt_.timeout_s * 1000);
  if (rma && rank_ == 0) {
    if (theirs.size() < sizeof remote_) throw Error("bad remote memory descriptor");
    std::memcpy(&remote_, theirs.data(), sizeof remote_);
    theirs.erase(0, sizeof remote_);
  }
  int n = fi_av_insert(h_.av, theirs.data(), 1, &peer_, 0, nullptr);
  if (n != 1) throw Error("fi_av_insert failed");
  ctx_.resize(opt_.window);
}

// Posts an op, progressing the CQ while the provider pushes back with EAGAIN.
// Completions read meanwhile are counted in pending_done_.
void Bw::post_retry(const std::function<ssize_t()>& op) {
  for (unsigned spin = 0;; ++spin) {
    ssize_t r = op();
    if (r == 0) return;
    if (r != -FI_EAGAIN) throw Error(std::string("post failed: ") + fi_strerror(int(-r)));
    pending_done_ += poll_cq();
    if ((spin & 1023) == 1023) check_deadline("posting (provider keeps returning EAGAIN)");
  }
}

size_t Bw::poll_cq() {
  fi_cq_entry entries[32];
  ssize_t r = fi_cq_read(h_.cq, entries, 32);
  if (r > 0) return static_cast<size_t>(r);
  if (r == -FI_EAGAIN) return 0;
  if (r == -FI_EAVAIL) {
    fi_cq_err_entry err;
    std::memset(&err, 0, sizeof err);
    fi_cq_readerr(h_.cq, &err, 0);
    char detail[256] = {0};
    const char* d = fi_cq_strerror(h_.cq, err.prov_errno, err.err_data, detail, sizeof detail);
    throw Error(std::string("completion error: ") + fi_strerror(err.err) + " (" + (d ? d : "") +
                ")");
  }
  throw Error(std::string("fi_cq_read failed: ") + fi_strerror(int(-r)));
}

void Bw::tagged_phase(size_t n, bool timed, double* secs) {
  const size_t w = opt_.window;
  const size_t size = opt_.size;
  const uint64_t tag = 0x7a6;
  char* base = static_cast<char*>(buf_);
  size_t posted = 0, done = 0;
  unsigned spin = 0;
  if (rank_ == 1) {
    pending_done_ = 0;
    auto post_one = [&] {
      size_t slot = posted % w;
      post_retry([&] {
        return fi_trecv(h_.ep, base + slot * size, size, desc_, peer_, tag, 0, &ctx_[slot]);
      });
      ++posted;
    };
    while (posted < n && posted < w) post_one();
    oob_.send("R");
    while (done < n) {
      size_t c = poll_cq() + pending_done_;
      pending_done_ = 0;
      done += c;
      for (size_t i = 0; i < c && posted < n; ++i) post_one();
      if ((++spin & 4095) == 0) check_deadline("receiving tagged messages");
    }
    oob_.send("D");
    return;
  }
  if (oob_.recv(opt_.timeout_s * 1000) != "R") throw Error("out-of-band: expected R");
  pending_done_ = 0;
  auto t0 = Clock::now();
  while (done < n) {
    while (posted < n && posted - done < w) {
      size_t slot = posted % w;
      post_retry([&] {
        return fi_tsend(h_.ep, base + slot * size, size, desc_, peer_, tag, &ctx_[slot]);
      });
      ++posted;
      done += pending_done_;
      pending_done_ = 0;
    }
    done += poll_cq();
    if ((++spin & 4095) == 0) check_deadline("waiting for tagged send completions");
  }
  // The receiver reports when it has all n; keep progressing meanwhile.
  while (!oob_.ready()) {
    poll_cq();
    if ((++spin & 4095) == 0) check_deadline("waiting for the receiver");
  }
  if (oob_.recv(opt_.timeout_s * 1000) != "D") throw Error("out-of-band: expected D");
  auto t1 = Clock::now();
  if (timed) *secs = std::chrono::duration<double>(t1 - t0).count();
}

void Bw::rma_phase(size_t n, bool timed, double* secs) {
  const size_t w = opt_.window;
  const size_t size = opt_.size;
  char* base = static_cast<char*>(buf_);
  unsigned spin = 0;
  if (rank_ == 1) {
    // Target: progress until the initiator says it is done.
    oob_.send("R");
    for (;;) {
      poll_cq();
      if ((++spin & 255) == 0) {
        if (oob_.ready()) break;
        if ((spin & 65535) == 0) check_deadline("waiting for the initiator's writes");
      }
    }
    if (oob_.recv(opt_.timeout_s * 1000) != "D") throw Error("out-of-band: expected D");
    return;
  }
  if (oob_.recv(opt_.timeout_s * 1000) != "R") throw Error("out-of-band: expected R");
  pending_done_ = 0;
  size_t posted = 0, done = 0;
  auto t0 = Clock::now();
  while (done < n) {
    while (posted < n && posted - done < w) {
      size_t slot = posted % w;
      uint64_t raddr = remote_.addr + slot * size;
      post_retry([&] {
        return fi_write(h_.ep, base + slot * size, size, desc_, peer_, raddr, remote_.key,
                        &ctx_[slot]);
      });
      ++posted;
      done += pending_done_;
      pending_done_ = 0;
    }
    done += poll_cq();
    if ((++spin & 4095) == 0) check_deadline("waiting for write completions");
  }
  // Fence: a read behind the writes.
  pending_done_ = 0;
  post_retry([&] {
    return fi_read(h_.ep, base, size, desc_, peer_, remote_.addr, remote_.key, &ctx_[0]);
  });
  done = pending_done_;
  while (done < 1) {
    done += poll_cq();
    if ((++spin & 4095) == 0) check_deadline("waiting for the fencing read");
  }
  auto t1 = Clock::now();
  oob_.send("D");
  if (timed) *secs = std::chrono::duration<double>(t1 - t0).count();
}

double Bw::run() {
  double secs = 0;
  const bool rma = opt_.mode == "rma";
  if (opt_.warmup > 0) {
    if (rma) {
      rma_phase(opt_.warmup, false, nullptr);
    } else {
      tagged_phase(opt_.warmup, false, nullptr);
    }
  }
  if (rma) {
    rma_phase(opt_.count, true, &secs);
  } else {
    tagged_phase(opt_.count, true, &secs);
  }
  // Both ranks finished: neither closes its endpoint while the other still needs it.
  oob_.send("E");
  if (oob_.recv(opt_.timeout_s * 1000) != "E") throw Error("out-of-band: expected E");
  return secs;
}

void Bw::close() {
  // The MR before the endpoint and domain it was bound to and registered in.
  if (mr_ != nullptr) fi_close(&mr_->fid);
  mr_ = nullptr;
  h_.close_all();
  std::free(buf_);
  buf_ = nullptr;
}

int run_rank(const Options& opt, int rank, int fd, double* secs) {
  signal(SIGALRM, on_watchdog);
  signal(SIGPIPE, SIG_IGN);
  alarm(static_cast<unsigned>(opt.timeout_s) + 10);
  Oob oob(fd);
  try {
    Bw bw(opt, rank, oob);
    bw.open();
    *secs = bw.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fi_bw: rank %d: %s\n", rank, e.what());
    return 1;
  }
  alarm(0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  std::string err;
  if (!parse_options(argc, argv, &opt, &err)) {
    if (err == "help") {
      usage(stdout);
      return 0;
    }
    std::fprintf(stderr, "fi_bw: %s\n", err.c_str());
    usage(stderr);
    return 2;
  }
  // Forked before any thread exists (fixtures/two_ranks.h).
  tworanks::Rank me;
  if (!tworanks::fork_two_ranks("fi_bw", &me)) return 1;
  if (me.rank == 1) {
    double ignored = 0;
    return run_rank(opt, 1, me.fd, &ignored);
  }
  double secs = 0;
  int rc0 = run_rank(opt, 0, me.fd, &secs);
  int rc1 = tworanks::wait_rank1("fi_bw", me.child, rc0 == 0 ? opt.timeout_s : 5, 5);
  if (rc0 != 0 || rc1 != 0) {
    std::fprintf(stderr, "fi_bw: FAIL (rank 0 exit %d, rank 1 exit %d)\n", rc0, rc1);
    return 1;
  }
  double rate = secs > 0 ? static_cast<double>(opt.count) / secs : 0;
  std::printf("mode=%s prov=%s size=%zu count=%zu secs=%.6f msgs_per_s=%.1f MB_per_s=%.3f\n",
              opt.mode.c_str(), opt.prov.c_str(), opt.size, opt.count, secs, rate,
              rate * static_cast<double>(opt.size) / 1e6);
  return 0;
}

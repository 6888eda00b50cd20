// What `fabtrace record --uprobes` costs a process that runs without the
// preload, on the real providers (shm, tcp;ofi_rxm, udp;ofi_rxd, sockets: RDM
// endpoints): an empty CQ poll, and one send and one receive
// to the endpoint's own address with their completions polled. Run it once
// with no session and once with `fabtrace record --uprobes` running
// (bench/uprobes-cost does both, interleaved); the difference of the thread CPU
// time per iteration is what the probes cost (the traps are kernel time of the
// traced thread, which the CPU column includes; wall time on a loaded machine
// does not isolate it).
//
//   BM_EmptyPoll/<provider>     one fi_cq_read on an empty CQ
//   BM_SendRecvSelf/<provider>  fi_recv + fi_send to itself (64 B), polled until both complete
//   BM_InjectRecvSelf/<provider>  fi_recv + fi_inject to itself (64 B), polled until the
//                                 receive completes (an inject has no completion: what its
//                                 return probe costs shows here)
//
// The counters give the CQ reads per iteration, so a poll's and an op's share
// can be told apart.
#include <benchmark/benchmark.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

// One RDM endpoint of `prov`, its CQ (context format) and its own address in
// its AV. Every object opened is closed, in reverse order, on destruction.
struct SelfEndpoint {
  fid_cq* cq = nullptr;
  fid_ep* ep = nullptr;
  fi_addr_t self = FI_ADDR_UNSPEC;
  std::string error;

  explicit SelfEndpoint(const char* prov) {
    fi_info* hints = fi_allocinfo();
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->fabric_attr->prov_name = strdup(prov);
    int ret = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info_);
    fi_freeinfo(hints);
    if (ret) {
      error = std::string("fi_getinfo ") + prov + ": " + fi_strerror(-ret);
      return;
    }
    fi_cq_attr ca{};
    ca.format = FI_CQ_FORMAT_CONTEXT;
    fi_av_attr aa{};
    aa.type = FI_AV_MAP;
    fid_fabric* fabric = nullptr;
    fid_domain* domain = nullptr;
    fid_av* av = nullptr;
    char name[256];
    size_t len = sizeof(name);
    // Each step runs only if the previous ones worked; what opened is kept.
    auto step = [&](int r, fid_t opened) {
      if (!ret) ret = r;
      if (!r && opened) opened_.push_back(opened);
      return ret == 0;
    };
    step(fi_fabric(info_->fabric_attr, &fabric, nullptr), nullptr) && step(0, &fabric->fid) &&
        step(fi_domain(fabric, info_, &domain, nullptr), nullptr) && step(0, &domain->fid) &&
        step(fi_cq_open(domain, &ca, &cq, nullptr), nullptr) && step(0, &cq->fid) &&
        step(fi_av_open(domain, &aa, &av, nullptr), nullptr) && step(0, &av->fid) &&
        step(fi_endpoint(domain, info_, &ep, nullptr), nullptr) && step(0, &ep->fid) &&
        step(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), nullptr) &&
        step(fi_ep_bind(ep, &av->fid, 0), nullptr) && step(fi_enable(ep), nullptr) &&
        step(fi_getname(&ep->fid, name, &len), nullptr);
    if (ret) {
      error = std::string("opening ") + prov + ": " + fi_strerror(-ret);
      return;
    }
    if (fi_av_insert(av, name, 1, &self, 0, nullptr) != 1) error = "fi_av_insert of its own name";
  }
  ~SelfEndpoint() {
    for (auto it = opened_.rbegin(); it != opened_.rend(); ++it) fi_close(*it);
    if (info_) fi_freeinfo(info_);
  }

 private:
  fi_info* info_ = nullptr;
  std::vector<fid_t> opened_;
};

// The endpoint of `prov`, or false with the benchmark skipped for the reason.
bool opened(benchmark::State& state, const SelfEndpoint& e) {
  if (e.error.empty()) return true;
  state.SkipWithError(e.error.c_str());
  return false;
}

void BM_EmptyPoll(benchmark::State& state, const char* prov) {
  SelfEndpoint e(prov);
  if (!opened(state, e)) return;
  fi_cq_entry entry;
  for (auto _ : state) benchmark::DoNotOptimize(fi_cq_read(e.cq, &entry, 1));
}

// Per iteration: a 64-byte fi_recv, then `send` (named `what`) of 64 bytes to
// the endpoint itself, then CQ reads until `completions` have come (2 for a
// send, whose own completion counts; 1 for an inject, which has none).
template <typename Send>
void self_round_trips(benchmark::State& state, const SelfEndpoint& e, const char* what,
                      int completions, Send send) {
  char tx[64] = {}, rx[64];
  fi_context2 tctx, rctx;
  fi_cq_entry entries[2];
  uint64_t polls = 0;
  for (auto _ : state) {
    ssize_t ret;
    while ((ret = fi_recv(e.ep, rx, sizeof(rx), nullptr, FI_ADDR_UNSPEC, &rctx)) == -FI_EAGAIN)
      fi_cq_read(e.cq, entries, 0);
    while ((ret = send(tx, sizeof(tx), &tctx)) == -FI_EAGAIN) fi_cq_read(e.cq, entries, 0);
    if (ret) {
      state.SkipWithError((std::string(what) + " failed").c_str());
      return;
    }
    for (int done = 0; done < completions;) {
      ++polls;
      const ssize_t n = fi_cq_read(e.cq, entries, static_cast<size_t>(completions));
      if (n > 0) done += static_cast<int>(n);
      if (n < 0 && n != -FI_EAGAIN) {
        state.SkipWithError("fi_cq_read failed");
        return;
      }
    }
  }
  state.counters["polls"] =
      benchmark::Counter(static_cast<double>(polls), benchmark::Counter::kAvgIterations);
}

void BM_SendRecvSelf(benchmark::State& state, const char* prov) {
  SelfEndpoint e(prov);
  if (!opened(state, e)) return;
  self_round_trips(state, e, "fi_send", 2, [&](const char* tx, size_t len, fi_context2* ctx) {
    return fi_send(e.ep, tx, len, nullptr, e.self, ctx);
  });
}

void BM_InjectRecvSelf(benchmark::State& state, const char* prov) {
  SelfEndpoint e(prov);
  if (!opened(state, e)) return;
  self_round_trips(state, e, "fi_inject", 1, [&](const char* tx, size_t len, fi_context2*) {
    return fi_inject(e.ep, tx, len, e.self);
  });
}

// Each benchmark on each provider, as <benchmark>/<tag> (BM_EmptyPoll/shm, ...),
// registered benchmark by benchmark.
[[maybe_unused]] const bool registered = [] {
  using Bench = void (*)(benchmark::State&, const char*);
  const std::pair<const char*, Bench> benches[] = {
      {"BM_EmptyPoll", BM_EmptyPoll},
      {"BM_SendRecvSelf", BM_SendRecvSelf},
      {"BM_InjectRecvSelf", BM_InjectRecvSelf},
  };
  const std::pair<const char*, const char*> provs[] = {
      {"shm", "shm"},
      {"tcp_rxm", "tcp;ofi_rxm"},
      {"udp_rxd", "udp;ofi_rxd"},
      {"sockets", "sockets"},
  };
  for (const auto& b : benches)
    for (const auto& p : provs)
      benchmark::RegisterBenchmark((std::string(b.first) + "/" + p.first).c_str(), b.second,
                                   p.second);
  return true;
}();

}  // namespace

BENCHMARK_MAIN();

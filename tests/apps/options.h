// Command-line options of ft_app, the fabtrace libfabric test workload.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace ftapp {

struct Options {
  std::string prov;               // libfabric provider string, e.g. "tcp;ofi_rxm"
  std::string test;               // test family name or "all"
  size_t count = 50;              // operations per function
  size_t size = 4096;             // payload bytes
  size_t threads = 2;             // threads for the "threads" family
  size_t window = 16;             // outstanding operations per endpoint/thread
  int timeout_s = 20;             // bound for every wait
  std::string result;             // result file prefix (FILE.r<rank>.json)
  std::string hold_until;         // wait for this file to exist before exiting (see usage)
  std::string until;              // stream: stop the round trips once this file exists
  size_t touch_mb = 0;            // stream: MiB of fresh memory touched inside one send
  std::string gap_kind;           // stream, writes: "sleep" or "pipe": a planted gap between polls
  size_t gap_ms = 0;              // its length
  size_t sleepers = 0;            // stream: rank 0's threads that sleep 1 us in a loop meanwhile
  bool reuse_ctx = false;         // receive windows: each slot's context reused for its receives
  size_t rx_contexts = 0;         // bw: the receives share this many contexts (0: one each)
  std::vector<size_t> toggle_at;  // marks: rank 0 raises SIGUSR2 before these iterations
  bool own_usr2 = false;          // install a SIGUSR2 handler of the program's own at start
  fi_cq_format cq_format = FI_CQ_FORMAT_TAGGED;
  std::string cq_format_name = "tagged";
  fi_ep_type ep_type = FI_EP_RDM;
  fi_av_type av_type = FI_AV_UNSPEC;  // UNSPEC: provider default (TABLE if none)
};

// Parses argv into *out. Returns false (with a message in *err) on bad usage.
bool parse_options(int argc, char** argv, Options* out, std::string* err);
void print_usage(FILE* f);

// "all" or the name of a test family.
bool is_known_test(const std::string& name);

}  // namespace ftapp

// The uprobe mode's half of a `fabtrace record` session (--uprobes): the
// uprobe_ops skeleton (bpf/uprobe_ops.bpf.c), opened among the session's
// objects (bpf_objects.h) so that it shares their maps and ring buffer; its
// sites attached per library file (one uprobe_multi link per program, file and
// process where the kernel makes them, else one perf-event uprobe per probe);
// and what its maps hold when the session reads them: the rows, the polled
// CQs, the endpoints' and peers' names, what the programs could not keep.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/kernel_log.h"
#include "userspace/record/uprobes/optable_probe.h"
#include "userspace/record/uprobes/uprobe_names.h"
#include "userspace/record/uprobes/uprobe_rows.h"

struct bpf_program;
struct ftskel_uprobe_ops;

namespace fabtrace {

struct BpfObjects;

struct UprobeOptions {
  bool enabled = false;  // --uprobes
  // The provider functions to probe (optable_probe.h), attached per library
  // file for every process that maps it.
  std::vector<OpSite> sites;
  // One perf-event uprobe per probe even where the kernel makes uprobe_multi
  // links (--uprobe-perf-events): how kernels before 6.6 are attached.
  bool perf_events = false;
  // The providers' layouts, which each site's `layout` indexes (none: CQs
  // opened before the session stay unknown).
  std::vector<UprobeLayout> layouts;
  // The statistics rows one process may hold (0: a share of the map,
  // UprobeSession::max_rows() / kRowShares).
  uint32_t rows_per_process = 0;
  static constexpr uint32_t kRowShares = 16;
};

class UprobeSession {
 public:
  // Before the load: opens the skeleton among `objs` and tells its programs
  // the sites (their index is the cookie's site) and what they need to learn
  // the CQs and endpoints of processes started before the session. Each probe
  // is attached for every process, or for each of `only_pids` (--only-pids).
  void open(BpfObjects* objs, const UprobeOptions& opt, const std::vector<pid_t>& only_pids);
  // After the load: every site on its library file, by file offset (past an
  // endbr64: see probe_offset), each in the attach list; then the programs
  // start together. Nothing when the object did not load.
  void attach();

  // The sites as attached (index = the site's number in the programs), the
  // hits of each, and the statistics rows.
  const std::vector<OpSite>& sites() const { return sites_; }
  std::vector<uint64_t> site_hits() const;
  std::vector<UprobeRow> rows() const;
  std::vector<UprobeCq> cqs() const;  // the polled ones
  UprobeNames names() const;          // what the rows' endpoints and peers are
  // What the programs could not keep (enum ft_up_lost), and the statistics
  // map's size (its rows).
  std::vector<uint64_t> lost_counts() const;
  uint32_t max_rows() const;
  // Per process: its rows and objects refused over its quota, into `s`.
  void add_quota_stats(KernelStats* s) const;

 private:
  // One site's probes: the programs on its function, return probe first.
  struct SiteProg {
    bpf_program* prog;
    bool ret;
  };
  void configure();
  void choose_links();
  std::vector<SiteProg> site_programs(const OpSite& site) const;
  uint64_t site_cookie(uint32_t index) const;
  bool first_return(uint32_t index) const;
  uint32_t callee_key(uint32_t index) const;
  std::string site_point(uint32_t index) const;
  void site_failed(uint32_t index, pid_t pid, bool ret, const std::string& why,
                   std::vector<bool>* ok);
  void attach_events(std::vector<bool>* ok);
  void attach_links(std::vector<bool>* ok);
  void attach_connect_sockets();

  BpfObjects* objs_ = nullptr;
  ftskel_uprobe_ops* skel_ = nullptr;  // null: not opened, or not loaded
  UprobeOptions opt_;
  std::vector<pid_t> only_pids_;
  std::vector<OpSite> sites_;      // as attached: the index is the cookie's site
  std::vector<uint64_t> offsets_;  // each site's probed file offset (probe_offset: read once)
  // Each site's return probe's file offset: its entry's, or the callee's
  // entry of an op probed on the call it forwards to (probe_place.h).
  std::vector<uint64_t> ret_offsets_;
  // An op probed on the call it forwards to: that call's file offset (0: none);
  // and whether its entry probe is instead its callee's (offsets_ then the
  // callee's entry: ft_up_op_callee, with uprobe_multi links).
  std::vector<uint64_t> call_offsets_;
  std::vector<bool> via_callee_;
  bool multi_ = false;    // through uprobe_multi links (uprobe_multi.h)
  bool session_ = false;  // CQ reads through one session program (uprobe_multi.h)
};

}  // namespace fabtrace

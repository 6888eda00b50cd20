#include "userspace/record/uprobes/uprobe_session.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "common/addr_format.h"
#include "common/op_kinds.h"
#include "common/uprobe_stats.h"
#include "uprobe_ops.skel.h"
#include "userspace/record/bpf_objects.h"
#include "userspace/record/uprobes/probe_place.h"
#include "userspace/record/uprobes/uprobe_multi.h"

namespace fabtrace {

namespace {

constexpr const char* kObject = "uprobe_ops";

}  // namespace

void UprobeSession::open(BpfObjects* objs, const UprobeOptions& opt,
                         const std::vector<pid_t>& only_pids) {
  objs_ = objs;
  opt_ = opt;
  only_pids_ = only_pids;
  skel_ = objs->open(kObject, ftskel_uprobe_ops__open, ftskel_uprobe_ops__load,
                     ftskel_uprobe_ops__destroy, true);
  if (skel_) configure();
}

// --uprobes, before the load: the sites to attach (their index is the
// cookie's site) and what the programs need to learn the CQs and endpoints
// of processes started before the session (the providers' layouts, each
// site's, and each CQ read site's probed offset in its layout's library).
void UprobeSession::configure() {
  choose_links();
  // Each site's first instruction (past an endbr64), read once. A function
  // that is an op site's keeps its own entry program, so ops forwarding to
  // it are probed on their calls.
  std::vector<uint64_t> firsts;
  std::set<std::pair<std::string, uint64_t>> op_entries;
  for (const OpSite& site : opt_.sites) {
    firsts.push_back(probe_offset(site.path, site.offset));
    if (site.role == FT_UP_ROLE_OP) op_entries.insert({site.path, firsts.back()});
  }
  for (size_t si = 0; si < opt_.sites.size(); ++si) {
    const OpSite& site = opt_.sites[si];
    if (sites_.size() >= FT_UP_MAX_SITES) break;
    if (site.role < FT_UP_ROLE_OP || site.role > FT_UP_ROLE_LAST) continue;
    const size_t index = sites_.size();
    uint64_t probed = firsts[si];
    if (site.layout && site.layout <= opt_.layouts.size() && site.layout <= FT_UP_MAX_LAYOUTS) {
      skel_->rodata->ft_site_layout[index] = static_cast<__u8>(site.layout);
      if (site.role == FT_UP_ROLE_CQ_READ && site.path == opt_.layouts[site.layout - 1].path)
        skel_->rodata->ft_site_off[index] = probed;
    }
    if (site.role == FT_UP_ROLE_AV_INSERT || site.role == FT_UP_ROLE_CONNECT)
      skel_->rodata->ft_site_addrlen[index] = site.addrlen;
    if (site.role == FT_UP_ROLE_CONNECT)
      skel_->rodata->ft_site_addr_format[index] = site.addr_format;
    uint64_t ret = probed, call = 0;
    bool via_callee = false;
#if defined(__x86_64__)
    if (site.role == FT_UP_ROLE_OP) {
      const ProbePlace place = place_op_probe(site.path, site.offset, op_args_read(site));
      if (place.moved) {
        // With uprobe_multi links the callee's entry probe serves the op's
        // entry too (ft_up_op_callee): there the call has pushed its return
        // address, 8 bytes above which the arguments in memory are.
        via_callee = multi_ && !op_entries.count({site.path, place.ret});
        auto& a = skel_->rodata->ft_site_args[index];
        a.moved = 1;
        a.ret_sp = static_cast<__s32>(via_callee ? 0 : place.ret_sp);
        for (int n = 1; n <= FT_UP_ARGS; ++n) {
          const ArgPlace& arg = place.args[n];
          a.reg[n] = static_cast<__u8>(arg.reg + 1);
          a.off[n] = static_cast<__s16>(arg.reg < 0 && via_callee ? arg.sp_off + 8 : arg.sp_off);
        }
        probed = via_callee ? place.ret : place.entry;
        ret = place.ret;
        call = place.entry;
      }
    }
#endif
    sites_.push_back(site);
    offsets_.push_back(probed);
    ret_offsets_.push_back(ret);
    call_offsets_.push_back(call);
    via_callee_.push_back(via_callee);
  }
  // The statistics rows: a per-CPU row of ft_up_stats each, so as many as
  // fit kStatsBudget on this machine's CPUs (all of them on a small one).
  constexpr uint64_t kStatsBudget = 256ULL << 20;
  const int ncpu = libbpf_num_possible_cpus();
  const uint64_t fit =
      kStatsBudget / (sizeof(ft_up_stats) * static_cast<uint64_t>(ncpu > 0 ? ncpu : 1));
  const auto rows = static_cast<__u32>(fit < FT_UP_MAX_STATS ? fit : FT_UP_MAX_STATS);
  bpf_map__set_max_entries(skel_->maps.up_stats, rows);
  // One process's share: others keep their rows whatever one process does.
  skel_->rodata->ft_up_rows_per_proc = opt_.rows_per_process
                                           ? opt_.rows_per_process
                                           : std::max<__u32>(1, rows / UprobeOptions::kRowShares);
  for (size_t i = 0; i < opt_.layouts.size() && i < FT_UP_MAX_LAYOUTS; ++i) {
    const UprobeLayout& l = opt_.layouts[i];
    auto& r = skel_->rodata->ft_layouts[i];
    r.cq_fmt_kind = l.cq_kind;
    r.cq_fmt_off = l.cq_fmt_off;
    for (int f = 0; f < 5; ++f) r.fmt_fn[f] = l.fmt_fn[f];
    for (const int side : {FT_UP_TX, FT_UP_RX}) {
      r.ep_cq_hops[side] = l.ep_hops[side];
      for (int h = 0; h <= FT_UP_EP_HOPS_MAX; ++h) r.ep_cq_path[side][h] = l.ep_path[side][h];
    }
  }
}

// uprobe_multi links where the kernel makes them (and --uprobe-perf-events
// does not say otherwise): the uprobe programs are then loaded with that
// attach type, which perf-event uprobes do not take, so this is decided
// once, before the load.
void UprobeSession::choose_links() {
  std::string why = "--uprobe-perf-events";
  multi_ = !opt_.perf_events && uprobe_multi_usable(!only_pids_.empty(), &why);
  if (!multi_) {
    // Ops probed at their callee's entry need the probe's address
    // (bpf_get_func_ip), which uprobe_multi links give.
    bpf_program__set_autoload(skel_->progs.ft_up_op_callee, false);
    bpf_program__set_autoload(skel_->progs.ft_up_cq_read_session, false);
    objs_->note(kObject, "uprobe_multi", "absent",
                why + ": one perf-event uprobe per probe (each detached on its own at exit)");
    return;
  }
  bpf_program* p;
  bpf_object__for_each_program(p, skel_->obj) {
    const std::string sec = bpf_program__section_name(p);
    if (sec.rfind("uprobe", 0) == 0 || sec.rfind("uretprobe", 0) == 0)
      bpf_program__set_expected_attach_type(p, static_cast<bpf_attach_type>(kBpfTraceUprobeMulti));
  }
  // A CQ read's entry and return in one session program where the kernel
  // has them: an entry that records no poll (a provider's inner read, a CQ
  // not the application's) then costs no return probe.
  session_ = uprobe_session_usable();
  if (session_) {
    bpf_program__set_expected_attach_type(skel_->progs.ft_up_cq_read_session,
                                          static_cast<bpf_attach_type>(kBpfTraceUprobeSession));
    bpf_program__set_autoload(skel_->progs.ft_up_cq_read, false);
    bpf_program__set_autoload(skel_->progs.ft_up_cq_read_ret, false);
  } else
    bpf_program__set_autoload(skel_->progs.ft_up_cq_read_session, false);
}

std::vector<UprobeSession::SiteProg> UprobeSession::site_programs(const OpSite& site) const {
  // A function's return probe is attached before its entry probe: a
  // uretprobe takes hold at a call's entry, so every call whose entry is
  // seen then has its return seen too (the other way round, a call that
  // returns in between leaves its entry's record behind).
  switch (site.role) {
    case FT_UP_ROLE_OP:
      // Injects too: their return tells accepted from refused calls.
      return {{skel_->progs.ft_up_op_ret, true}, {skel_->progs.ft_up_op, false}};
    case FT_UP_ROLE_EP_BIND:
      return {{skel_->progs.ft_up_ep_bind, false}};
    case FT_UP_ROLE_CQ_READ:
      if (session_) return {{skel_->progs.ft_up_cq_read_session, false}};
      return {{skel_->progs.ft_up_cq_read_ret, true}, {skel_->progs.ft_up_cq_read, false}};
    case FT_UP_ROLE_AV_INSERT:
      return {{skel_->progs.ft_up_av_insert_ret, true}, {skel_->progs.ft_up_av_insert, false}};
    case FT_UP_ROLE_GETNAME:
      return {{skel_->progs.ft_up_getname_ret, true}, {skel_->progs.ft_up_getname, false}};
    case FT_UP_ROLE_EP_OPEN:
      return {{skel_->progs.ft_up_ep_open_ret, true}, {skel_->progs.ft_up_ep_open, false}};
    case FT_UP_ROLE_CONNECT:
      return {{skel_->progs.ft_up_connect_ret, true}, {skel_->progs.ft_up_connect, false}};
    default:
      return {{skel_->progs.ft_up_cq_open_ret, true}, {skel_->progs.ft_up_cq_open, false}};
  }
}

// Whether site `index` is the first whose return probe is at its place: an
// op probed on the call it forwards to shares its callee's entry with the
// other ops that forward to it (one return probe serves them all: its
// program finds the call by its thread and stack pointer).
bool UprobeSession::first_return(uint32_t index) const {
  for (uint32_t k = 0; k < index; ++k)
    if (sites_[k].role == sites_[index].role && sites_[k].path == sites_[index].path &&
        ret_offsets_[k] == ret_offsets_[index])
      return false;
  return true;
}

// The first site probed at the same callee's entry as site `index` (the
// cookie of that entry probe, and up_callers' key).
uint32_t UprobeSession::callee_key(uint32_t index) const {
  for (uint32_t k = 0; k < index; ++k)
    if (via_callee_[k] && sites_[k].path == sites_[index].path && offsets_[k] == offsets_[index])
      return k;
  return index;
}

uint64_t UprobeSession::site_cookie(uint32_t index) const {
  const OpSite& site = sites_[index];
  const bool rx = site.role == FT_UP_ROLE_OP &&
                  site.op_kind < static_cast<uint32_t>(kOpKindCount) &&
                  op_is_recv(static_cast<OpKind>(site.op_kind));
  // A CQ read's class says whether it blocks (fi_cq_sread*: its poll is
  // stamped at its entry, as the preload stamps it).
  const bool blocking =
      site.role == FT_UP_ROLE_CQ_READ && (site.op == "sread" || site.op == "sreadfrom");
  return FT_UP_COOKIE(index, site.role, site.op_kind, site.ctx, site.len, rx || blocking ? 1 : 0,
                      site.peer);
}

std::string UprobeSession::site_point(uint32_t index) const {
  const OpSite& site = sites_[index];
  const std::string point = "uprobe:" + site.path + hex_offset(offsets_[index]);
  // An op probed at its callee's entry, or on its call with its return there.
  if (via_callee_[index]) return point + " from the call at " + hex_offset(call_offsets_[index]);
  return ret_offsets_[index] == offsets_[index]
             ? point
             : point + " return " + hex_offset(ret_offsets_[index]);
}

void UprobeSession::attach() {
  if (skel_ && !objs_->loaded(kObject)) skel_ = nullptr;
  if (!skel_) return;
  std::vector<bool> ok(sites_.size(), true);
  // The ops probed at their callee's entry, by their call's return address.
  const int callers = bpf_map__fd(skel_->maps.up_callers);
  for (uint32_t index = 0; index < sites_.size(); ++index) {
    if (!via_callee_[index]) continue;
    ft_up_caller_key k = {};
    k.callee = callee_key(index);
    k.delta = static_cast<__s64>(call_offsets_[index] + 5 - offsets_[index]);
    const __u64 cookie = site_cookie(index);
    if (bpf_map_update_elem(callers, &k, &cookie, BPF_ANY) != 0)
      site_failed(index, 0, false, std::string("up_callers: ") + std::strerror(errno), &ok);
  }
  if (multi_)
    attach_links(&ok);
  else
    attach_events(&ok);
  for (uint32_t index = 0; index < sites_.size(); ++index)
    if (ok[index]) objs_->note(kObject, site_point(index), "attached", sites_[index].what());
  if (sites_.empty())
    objs_->note(kObject, "uprobe:*", "absent", "no provider function found to probe");
  attach_connect_sockets();
  // Every probe in place: they start together (uprobe_ops.bpf.c).
  __atomic_store_n(&skel_->bss->ft_up_armed, 1u, __ATOMIC_RELEASE);
}

void UprobeSession::site_failed(uint32_t index, pid_t pid, bool ret, const std::string& why,
                                std::vector<bool>* ok) {
  objs_->note(
      kObject,
      site_point(index) + (pid > 0 ? " pid " + std::to_string(pid) : "") + (ret ? " (return)" : ""),
      "failed", sites_[index].what() + ": " + why);
  (*ok)[index] = false;
}

// One perf-event uprobe per probe (kernels before 6.6).
void UprobeSession::attach_events(std::vector<bool>* ok) {
  size_t placed = 0;
  for (uint32_t index = 0; index < sites_.size(); ++index) {
    const OpSite& site = sites_[index];
    for (const pid_t pid : attach_pids(only_pids_))
      for (const SiteProg& p : site_programs(site)) {
        const uint64_t off = p.ret ? ret_offsets_[index] : offsets_[index];
        // One return probe per callee that several ops forward to.
        if (p.ret && !first_return(index)) continue;
        LIBBPF_OPTS(bpf_uprobe_opts, uo);
        uo.retprobe = p.ret;
        uo.bpf_cookie = site_cookie(index);
        take_log();
        bpf_link* l = bpf_program__attach_uprobe_opts(p.prog, pid, site.path.c_str(),
                                                      static_cast<size_t>(off), &uo);
        if (!l) {
          site_failed(index, pid, p.ret, reason_of(take_log(), errno), ok);
          continue;
        }
        objs_->links.push_back(l);
        ++placed;
      }
  }
  if (placed)
    objs_->note(kObject, "uprobe_perf_events", "attached",
                std::to_string(placed) + " probes, one perf-event uprobe each");
}

// One uprobe_multi link per (program, library file, process), return
// programs' links before entry programs' (as site_programs orders them per
// site). A link the kernel refuses is retried site by site, so that one bad
// offset costs its own site only.
void UprobeSession::attach_links(std::vector<bool>* ok) {
  struct Group {
    std::vector<uint32_t> sites;
    std::vector<uint64_t> offsets, cookies;
  };
  // (return first, program, path) -> its sites, in site order.
  std::map<std::tuple<bool, bpf_program*, std::string>, Group> groups;
  for (uint32_t index = 0; index < sites_.size(); ++index) {
    const OpSite& site = sites_[index];
    for (const SiteProg& p : site_programs(site)) {
      if (p.ret && !first_return(index)) continue;
      bpf_program* prog = p.prog;
      uint64_t cookie = site_cookie(index);
      if (!p.ret && via_callee_[index]) {
        // One entry probe per callee; its cookie keys up_callers.
        if (callee_key(index) != index) continue;
        prog = skel_->progs.ft_up_op_callee;
        cookie = index;
      }
      Group& g = groups[{!p.ret, prog, site.path}];
      g.sites.push_back(index);
      g.offsets.push_back(p.ret ? ret_offsets_[index] : offsets_[index]);
      g.cookies.push_back(cookie);
    }
  }
  size_t made = 0, placed = 0;
  for (const pid_t pid : attach_pids(only_pids_))
    for (const auto& [key, g] : groups) {
      const bool ret = !std::get<0>(key);
      const int prog_fd = bpf_program__fd(std::get<1>(key));
      const std::string& path = std::get<2>(key);
      const bool session = std::get<1>(key) == skel_->progs.ft_up_cq_read_session;
      const int fd = uprobe_multi_attach(prog_fd, path, g.offsets, g.cookies, ret, pid, session);
      if (fd >= 0) {
        objs_->link_fds.push_back(fd);
        ++made;
        placed += g.sites.size();
        continue;
      }
      for (size_t i = 0; i < g.sites.size(); ++i) {
        const int one =
            uprobe_multi_attach(prog_fd, path, {g.offsets[i]}, {g.cookies[i]}, ret, pid, session);
        if (one < 0) {
          site_failed(g.sites[i], pid, ret, std::strerror(-one), ok);
          continue;
        }
        objs_->link_fds.push_back(one);
        ++made;
        ++placed;
      }
    }
  if (made)
    objs_->note(kObject, "uprobe_multi", "attached",
                std::to_string(placed) + " probes in " + std::to_string(made) +
                    " links (one per program, library file and process; detached together)");
}

// The connecting side's own address (uprobe_ops.bpf.c, ft_up_sk_state):
// the TCP socket a probed connect moves to SYN_SENT. Only with a connect
// site; the tracepoint fires node-wide, and returns at once outside one.
void UprobeSession::attach_connect_sockets() {
  bool connect = false;
  for (const OpSite& s : sites_) connect = connect || s.role == FT_UP_ROLE_CONNECT;
  bpf_program* p = skel_->progs.ft_up_sk_state;
  if (!connect || !bpf_program__autoload(p)) return;
  take_log();
  bpf_link* l = bpf_program__attach(p);
  if (!l) {
    objs_->note(kObject, bpf_program__section_name(p), "failed", reason_of(take_log(), errno));
    return;
  }
  objs_->links.push_back(l);
  objs_->note(kObject, bpf_program__section_name(p), "attached",
              "the connecting side's own address");
}

std::vector<uint64_t> UprobeSession::site_hits() const {
  std::vector<uint64_t> hits;
  if (!skel_) return hits;
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return hits;
  std::vector<__u64> v(static_cast<size_t>(ncpu));
  const int fd = bpf_map__fd(skel_->maps.up_hits);
  for (__u32 i = 0; i < sites_.size(); ++i) {
    __u64 t = 0;
    if (bpf_map_lookup_elem(fd, &i, v.data()) == 0)
      for (__u64 x : v) t += x;
    hits.push_back(t);
  }
  return hits;
}

std::vector<UprobeRow> UprobeSession::rows() const {
  std::vector<UprobeRow> rows;
  if (!skel_) return rows;
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return rows;
  // By (pid, op, endpoint, peer, size class, sized as posted).
  std::map<std::tuple<uint32_t, uint32_t, uint64_t, uint64_t, uint32_t, bool>, UprobeRow> by;
  auto row = [&by](uint32_t pid, uint32_t op, uint64_t ep, uint64_t peer, uint32_t size_class,
                   bool posted) -> UprobeRow& {
    UprobeRow& r = by[{pid, op, ep, peer, size_class, posted}];
    r.pid = pid;
    r.op = op;
    r.ep = ep;
    r.peer = peer;
    r.size_class = size_class;
    r.posted = posted;
    return r;
  };
  // The statistics, summed over CPUs.
  const int sfd = bpf_map__fd(skel_->maps.up_stats);
  std::vector<ft_up_stats> v(static_cast<size_t>(ncpu));
  ft_up_stat_key key{}, next{};
  bool first = true;
  while (bpf_map_get_next_key(sfd, first ? nullptr : &key, &next) == 0) {
    first = false;
    key = next;
    if (bpf_map_lookup_elem(sfd, &key, v.data()) != 0) continue;
    UprobeRow& r = row(key.tgid, key.op, key.ep, key.peer, key.size_class, key.posted != 0);
    for (const ft_up_stats& c : v) add_uprobe_stats(&r.s, c);
  }
  // Ops still waiting for their completion (by context, and by order).
  auto count_pending = [&row](const auto& k, const ft_up_pending& p) {
    UprobeRow& r = row(k.tgid, p.op, p.ep, p.peer, ft_up_size_class(p.bytes), p.rx != 0);
    ++r.pending;
    r.pending_bytes += p.bytes;
  };
  each_entry<ft_up_key, ft_up_pending>(bpf_map__fd(skel_->maps.up_pending), count_pending);
  each_entry<ft_up_dup_key, ft_up_pending>(bpf_map__fd(skel_->maps.up_dup), count_pending);
  each_entry<ft_up_seq_key, ft_up_pending>(bpf_map__fd(skel_->maps.up_seq_pending), count_pending);
  for (auto& kv : by) rows.push_back(kv.second);
  return rows;
}

std::vector<UprobeCq> UprobeSession::cqs() const {
  std::vector<UprobeCq> out;
  if (!skel_) return out;
  each_entry<ft_up_key, ft_up_cq>(bpf_map__fd(skel_->maps.up_cqs),
                                  [&out](const ft_up_key& k, const ft_up_cq& c) {
                                    if (!c.polls) return;
                                    UprobeCq q;
                                    q.pid = k.tgid;
                                    q.cq = k.ptr;
                                    q.opened = c.opened;
                                    q.polls = c.polls;
                                    for (int i = 0; i < FT_UP_GAP_CLASSES; ++i)
                                      q.gaps[i] = c.gaps[i];
                                    q.max_gap_ns = c.max_gap;
                                    q.max_gap_end = c.max_gap_end;
                                    out.push_back(q);
                                  });
  return out;
}

UprobeNames UprobeSession::names() const {
  UprobeNames n;
  if (!skel_) return n;
  const std::vector<OpSite>& sites = sites_;
  auto addr_of = [&sites](const ft_up_addr& a) {
    UprobeAddr u;
    const __u32 len = a.len < FT_UP_ADDR_MAX ? a.len : FT_UP_ADDR_MAX;
    u.bytes.assign(reinterpret_cast<const char*>(a.bytes), len);
    if (a.site < sites.size()) {
      u.addr_format = sites[a.site].addr_format;
      u.straddr_form = sites[a.site].straddr_form;
      u.passive = sites[a.site].table == "pep";
    }
    return u;
  };
  each_entry<ft_up_key, ft_up_addr>(bpf_map__fd(skel_->maps.up_ep_names),
                                    [&](const ft_up_key& k, const ft_up_addr& a) {
                                      n.ep_names[{k.tgid, k.ptr}] = addr_of(a);
                                    });
  // Connected endpoints: their addresses in the format their info gave.
  auto conn_addr = [](const ft_up_conn& c, const __u8* bytes, __u32 len) {
    UprobeAddr u;
    u.bytes.assign(reinterpret_cast<const char*>(bytes),
                   len < FT_UP_ADDR_MAX ? len : FT_UP_ADDR_MAX);
    u.addr_format = c.addr_format;
    u.straddr_form = kStraddrPlain;
    return u;
  };
  each_entry<ft_up_key, ft_up_conn>(
      bpf_map__fd(skel_->maps.up_ep_conns), [&](const ft_up_key& k, const ft_up_conn& c) {
        n.ep_conns[{k.tgid, k.ptr}] = {conn_addr(c, c.peer, c.peer_len),
                                       conn_addr(c, c.local, c.local_len)};
      });
  each_entry<ft_up_key, __u64>(bpf_map__fd(skel_->maps.up_ep_av),
                               [&](const ft_up_key& k, const __u64& av) {
                                 n.ep_av[{k.tgid, k.ptr}] = av;
                               });
  each_entry<ft_up_av_key, ft_up_addr>(bpf_map__fd(skel_->maps.up_av_addrs),
                                       [&](const ft_up_av_key& k, const ft_up_addr& a) {
                                         n.av_addrs[{k.tgid, k.av, k.fi_addr}] = addr_of(a);
                                       });
  return n;
}

std::vector<uint64_t> UprobeSession::lost_counts() const {
  std::vector<uint64_t> lost(FT_UP_LOST_KINDS, 0);
  if (!skel_) return lost;
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return lost;
  std::vector<__u64> v(static_cast<size_t>(ncpu));
  const int fd = bpf_map__fd(skel_->maps.up_lost);
  for (__u32 i = 0; i < FT_UP_LOST_KINDS; ++i)
    if (bpf_map_lookup_elem(fd, &i, v.data()) == 0)
      for (__u64 x : v) lost[i] += x;
  return lost;
}

uint32_t UprobeSession::max_rows() const {
  return skel_ ? bpf_map__max_entries(skel_->maps.up_stats) : 0;
}

void UprobeSession::add_quota_stats(KernelStats* s) const {
  if (!skel_) return;
  each_entry<__u32, ft_up_quota>(bpf_map__fd(skel_->maps.up_quota), [s](__u32 pid,
                                                                        const ft_up_quota& q) {
    if ((q.over || q.objs_over || q.inflight_over) && s->per_process.size() < kMaxStatsProcesses) {
      s->per_process[pid].uprobe_rows_over_quota = q.over;
      s->per_process[pid].uprobe_objects_over_quota = q.objs_over;
      s->per_process[pid].uprobe_inflight_over_quota = q.inflight_over;
    }
  });
}

}  // namespace fabtrace

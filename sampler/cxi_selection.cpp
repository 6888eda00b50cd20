// Which NIC counters a sampler reads: the devices (FABTRACE_NIC_DEV, or the
// local rank's cxi), the counters (FABTRACE_NIC_COUNTERS: the curated default
// sets, names, prefixes), each opened and read once before it becomes a
// column, and the memory for the series, reserved up front.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <exception>
#include <memory>
#include <unordered_set>
#include <utility>

#include "common/comma_list.h"
#include "common/counter_csv.h"
#include "common/env.h"
#include "sampler/cxi_counters.h"
#include "sampler/cxi_sampler_state.h"

namespace fabtrace {

// ---- the curated default selection --------------------------------------------

const std::vector<std::string>& cxi_curated_telemetry() {
  static const std::vector<std::string> names = {
      // bytes, flits and packets per traffic class
      "hni_sts_tx_ok_octets", "hni_sts_rx_ok_octets", "cq_cq_oxe_num_flits", "cq_cq_tou_num_flits",
      "hni_pkts_sent_by_tc_0", "hni_pkts_sent_by_tc_1", "hni_pkts_sent_by_tc_2",
      "hni_pkts_sent_by_tc_3", "hni_pkts_sent_by_tc_4", "hni_pkts_sent_by_tc_5",
      "hni_pkts_sent_by_tc_6", "hni_pkts_sent_by_tc_7", "hni_pkts_recv_by_tc_0",
      "hni_pkts_recv_by_tc_1", "hni_pkts_recv_by_tc_2", "hni_pkts_recv_by_tc_3",
      "hni_pkts_recv_by_tc_4", "hni_pkts_recv_by_tc_5", "hni_pkts_recv_by_tc_6",
      "hni_pkts_recv_by_tc_7",
      // link pause and fine-grained flow control
      "hni_pause_sent", "hni_pause_refresh", "hni_fgfc_event_xoff", "hni_fgfc_event_xon",
      "hni_fgfc_discard",
      // congestion marking
      "ixe_pool_ecn_pkts_0", "ixe_pool_ecn_pkts_1", "ixe_pool_ecn_pkts_2", "ixe_pool_ecn_pkts_3",
      "ixe_pool_no_ecn_pkts_0", "ixe_pool_no_ecn_pkts_1", "ixe_pool_no_ecn_pkts_2",
      "ixe_pool_no_ecn_pkts_3",
      // link-level replay
      "hni_llr_tx_replay_event", "hni_llr_rx_replay_event", "hni_llr_tx_nack_ctl_os",
      "hni_llr_rx_nack_ctl_os", "hni_llr_rx_ack_nack_seq_err",
      // end-to-end timeouts, NACKs and retries as the NIC counts them (these advance
      // with the hardware; the retry handler's copies in /run/cxi trail behind)
      "pct_spt_timeouts", "pct_sct_timeouts", "pct_tct_timeouts", "pct_rsp_dropped_timeout",
      "pct_bad_seq_nacks", "pct_no_mst_nacks", "pct_no_tct_nacks", "pct_no_trs_nacks",
      "pct_resource_busy", "pct_trs_rsp_nack_drops", "pct_trs_replay_pend_drops",
      "pct_req_blocked_retry", "pct_req_no_response", "pct_req_blocked_clearing",
      "pct_req_blocked_closing", "pct_retry_srb_requests", "pct_retry_mst_get", "pct_retry_trs_put",
      // connection set-up, tear-down and the recovery after a stall
      "pct_sct_stall_state", "pct_conn_sct_open", "pct_conn_tct_open", "pct_close_sent",
      "pct_clear_sent", "pct_clear_close_drop", "pct_no_matching_tct", "pct_err_no_matching_trs",
      "pct_err_no_matching_mst", "pct_req_tct_tmout_drops",
      // transaction-table occupancy, current and high-water
      "pct_prf_spt_status_spt_in_use", "pct_prf_spt_status_max_spt_in_use",
      "pct_prf_mst_status_mst_in_use", "pct_prf_mst_status_max_mst_in_use",
      "pct_prf_sct_status_sct_in_use", "pct_prf_sct_status_max_sct_in_use",
      "pct_prf_trs_status_trs_in_use", "pct_prf_trs_status_max_trs_in_use",
      "pct_prf_tct_status_tct_in_use", "pct_prf_tct_status_max_tct_in_use",
      "pct_prf_smt_status_smt_in_use", "pct_prf_smt_status_max_smt_in_use",
      "pct_prf_srb_status_srb_in_use", "pct_prf_srb_status_max_srb_in_use",
      // receive-side drops
      "ixe_rx_pkt_drop_pct", "hni_discard_cntr_0", "hni_discard_cntr_1", "hni_discard_cntr_2",
      "hni_discard_cntr_3", "hni_discard_cntr_4", "hni_discard_cntr_5", "hni_discard_cntr_6",
      "hni_discard_cntr_7"};
  return names;
}

// Only what the NIC itself does not count: how the retry handler parks peers and
// switches after repeated failures, and what it cancels.
const std::vector<std::string>& cxi_curated_rh() {
  static const std::vector<std::string> names = {
      "parked_nids",           "max_parked_nids",  "parked_switches",  "max_parked_switches",
      "connections_cancelled", "pkts_cancelled_o", "pkts_cancelled_u", "nacks"};
  return names;
}

// ---- file-system helpers --------------------------------------------------------

namespace {

constexpr char kTelemetrySub[] = "/device/telemetry";
constexpr char kPropertiesSub[] = "/device/properties";

bool stat_follow(const std::string& path, struct stat* st) { return ::stat(path.c_str(), st) == 0; }

bool is_dir(const std::string& path) {
  struct stat st;
  return stat_follow(path, &st) && S_ISDIR(st.st_mode);
}

// "cxi<digits>" -> the number; -1 for anything else (cxi_user, cxi, cxi0a).
long cxi_number(const std::string& name) {
  if (name.size() < 4 || name.size() > 12 || name.compare(0, 3, "cxi") != 0) return -1;
  long n = 0;
  for (size_t i = 3; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

void sort_devices(std::vector<std::string>* devs) {
  std::sort(devs->begin(), devs->end(), [](const std::string& a, const std::string& b) {
    const long na = cxi_number(a), nb = cxi_number(b);
    return na != nb ? na < nb : a < b;
  });
  devs->erase(std::unique(devs->begin(), devs->end()), devs->end());
}

// Directory entries of `dir` passing `keep`, sorted. False (errno set) when the
// directory cannot be opened.
template <typename Keep>
bool list_dir(const std::string& dir, Keep keep, std::vector<std::string>* out) {
  out->clear();
  DIR* d = ::opendir(dir.c_str());
  if (!d) return false;
  while (struct dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::string name = e->d_name;
    if (keep(name)) out->push_back(std::move(name));
  }
  ::closedir(d);
  std::sort(out->begin(), out->end());
  return true;
}

// Readable regular files directly under dir (symlinks followed; subdirectories and
// write-only files such as counter resets are left out).
std::vector<std::string> list_counter_files(const std::string& dir) {
  std::vector<std::string> out;
  list_dir(
      dir,
      [&dir](const std::string& name) {
        struct stat st;
        return stat_follow(dir + "/" + name, &st) && S_ISREG(st.st_mode) &&
               (st.st_mode & (S_IRUSR | S_IRGRP | S_IROTH)) != 0;
      },
      &out);
  return out;
}

// The first line of a small file with blanks trimmed and anything that would break
// the "key=value" comment line replaced by '_'; "?" when unreadable or empty.
std::string read_property(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "?";
  char buf[256];
  ssize_t n;
  do {
    n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) return "?";
  std::string s(buf, static_cast<size_t>(n));
  const size_t nl = s.find('\n');
  if (nl != std::string::npos) s.resize(nl);
  s = trim_blanks(s);
  for (char& c : s)
    if (static_cast<unsigned char>(c) <= ' ' || c == ',' || c == '=' || c == 0x7f) c = '_';
  return s.empty() ? "?" : s;
}

// One selection token of FABTRACE_NIC_COUNTERS.
struct Token {
  enum Kind { kDefault, kAll, kRhAll, kRhPrefix, kRhName, kTelPrefix, kTelName } kind;
  std::string arg;   // name or prefix
  std::string text;  // as written
  bool matched = false;
};

bool valid_name(const std::string& s, bool allow_empty) {
  if (s.empty()) return allow_empty;
  if (s == "." || s == "..") return false;
  for (char c : s)
    if (c == '/' || c == '*' || c == ',' || static_cast<unsigned char>(c) <= ' ') return false;
  return true;
}

bool parse_token(const std::string& t, Token* out) {
  out->text = t;
  out->matched = false;
  if (t == "default") {
    out->kind = Token::kDefault;
    return true;
  }
  if (t == "all") {
    out->kind = Token::kAll;
    return true;
  }
  const bool rh = t.compare(0, 3, "rh:") == 0;
  std::string rest = rh ? t.substr(3) : t;
  const bool glob = !rest.empty() && rest.back() == '*';
  if (glob) rest.pop_back();
  if (rh && rest.empty()) {  // "rh:" or "rh:*"
    out->kind = Token::kRhAll;
    return true;
  }
  if (!valid_name(rest, glob)) return false;
  out->arg = rest;
  out->kind = rh ? (glob ? Token::kRhPrefix : Token::kRhName)
                 : (glob ? Token::kTelPrefix : Token::kTelName);
  return true;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

// ---- open: devices, counters, memory ------------------------------------------

namespace {

// Every cxi device under root; false when root cannot be listed.
bool present_devices(const std::string& root, std::vector<std::string>* out) {
  const bool ok = list_dir(
      root,
      [&root](const std::string& name) {
        return cxi_number(name) >= 0 && is_dir(root + "/" + name);
      },
      out);
  if (ok) sort_devices(out);
  return ok;
}

}  // namespace

bool CounterSampler::open() {
  std::lock_guard<std::mutex> g(ctl_mtx_);
  if (open_tried_) return state_ != nullptr;
  open_tried_ = true;
  if (!config_.enabled || phase_.load(std::memory_order_relaxed) == kStopped) return false;

  const bool dev_explicit = !config_.devices.empty();
  const char* const root = config_.sysfs_root.c_str();

  // Devices.
  std::vector<std::string> present;
  if (!present_devices(config_.sysfs_root, &present)) {
    if (dev_explicit)
      log_line("FABTRACE_NIC_DEV=%s: cannot read %s (%s); NIC counters off",
               config_.devices.c_str(), root, std::strerror(errno));
    return false;
  }
  if (present.empty()) {
    if (dev_explicit)
      log_line("FABTRACE_NIC_DEV=%s: no cxi device under %s; NIC counters off",
               config_.devices.c_str(), root);
    return false;
  }
  std::vector<std::string> devices;
  if (!dev_explicit) {
    const std::string mine = "cxi" + std::to_string(config_.local_rank);
    if (config_.local_rank >= 0 && std::find(present.begin(), present.end(), mine) != present.end())
      devices.push_back(mine);
    else
      devices = present;
  } else {
    std::vector<std::string> missing;
    bool all = false;
    for (const std::string& tok : split_commas(config_.devices)) {
      if (tok == "all") {
        all = true;
      } else if (std::find(present.begin(), present.end(), tok) != present.end()) {
        devices.push_back(tok);
      } else if (std::find(missing.begin(), missing.end(), tok) == missing.end()) {
        missing.push_back(tok);
      }
    }
    if (all) {
      devices = present;
    } else if (devices.empty()) {
      log_line(
          "warning: FABTRACE_NIC_DEV=%s: no such device under %s; sampling every cxi present "
          "(%s)",
          config_.devices.c_str(), root, join_commas(present).c_str());
      devices = present;
    } else if (!missing.empty()) {
      log_line("warning: FABTRACE_NIC_DEV: no device %s under %s (present: %s); ignoring it",
               join_commas(missing).c_str(), root, join_commas(present).c_str());
    }
    sort_devices(&devices);
  }

  // Selection.
  const bool sel_explicit = !config_.counters.empty();
  std::vector<Token> tokens;
  {
    std::vector<std::string> bad;
    for (const std::string& t : split_commas(config_.counters)) {
      Token tok;
      if (parse_token(t, &tok))
        tokens.push_back(std::move(tok));
      else
        bad.push_back(t);
    }
    const bool none_valid = tokens.empty();
    if (none_valid) {
      Token tok;
      parse_token("default", &tok);
      tokens.push_back(std::move(tok));
    }
    if (!bad.empty())
      log_line(
          "warning: FABTRACE_NIC_COUNTERS: ignoring %s (tokens are default, all, rh:, "
          "rh:<name>, rh:<prefix>*, <prefix>*, <name>)%s",
          join_commas(bad).c_str(), none_valid ? "; using the default set" : "");
  }

  auto st = std::make_shared<State>();
  st->interval_ms = config_.interval_ms;
  st->columns = {kCounterMonoColumn, kCounterWallColumn};

  for (size_t di = 0; di < devices.size(); ++di) {
    const std::string& dev = devices[di];
    const std::string tel_dir = config_.sysfs_root + "/" + dev + kTelemetrySub;
    const std::string rh_dir = config_.run_root + "/" + dev;
    State::DeviceInfo info;
    info.nic_addr = read_property(config_.sysfs_root + "/" + dev + kPropertiesSub + "/nic_addr");
    info.nid = read_property(config_.sysfs_root + "/" + dev + kPropertiesSub + "/nid");
    info.stamp_column = static_cast<uint32_t>(st->columns.size());
    st->columns.push_back(dev + ":" + kTelemetryWallColumn);
    st->device_info.push_back(info);

    bool tel_listed = false, rh_listed = false;
    std::vector<std::string> tel_names, rh_names;
    auto tel_list = [&]() -> const std::vector<std::string>& {
      if (!tel_listed) tel_names = list_counter_files(tel_dir), tel_listed = true;
      return tel_names;
    };
    auto rh_list = [&]() -> const std::vector<std::string>& {
      if (!rh_listed) rh_names = list_counter_files(rh_dir), rh_listed = true;
      return rh_names;
    };
    std::unordered_set<std::string> seen;

    // Opens one counter; true when it is (or already was) a column.
    auto add = [&](bool telemetry, const std::string& name) -> bool {
      const std::string label = dev + (telemetry ? ":" : ":rh:") + name;
      if (seen.count(label)) return true;
      const std::string path = (telemetry ? tel_dir : rh_dir) + "/" + name;
      struct stat sst;
      if (!stat_follow(path, &sst) || !S_ISREG(sst.st_mode)) return false;
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return false;
      // One read now: a file that cannot be read or does not hold a number is left out.
      char buf[64];
      ssize_t got;
      do {
        got = ::pread(fd, buf, sizeof(buf) - 1, 0);
      } while (got < 0 && errno == EINTR);
      uint64_t v, stamp;
      struct stat fst;
      if (got <= 0 || !parse_cxi_counter(buf, static_cast<size_t>(got), &v, &stamp) ||
          ::fstat(fd, &fst) != 0 || !S_ISREG(fst.st_mode)) {
        ::close(fd);
        return false;
      }
      seen.insert(label);
      st->counters.push_back(
          {fd, static_cast<uint32_t>(st->columns.size()), static_cast<uint32_t>(di), telemetry});
      st->columns.push_back(label);
      st->labels.push_back(label);
      return true;
    };

    // The listed counters of one source whose names start with `prefix` ("": all).
    auto add_listed = [&](bool telemetry, const std::string& prefix) {
      bool hit = false;
      for (const std::string& n : telemetry ? tel_list() : rh_list())
        if (starts_with(n, prefix)) hit |= add(telemetry, n);
      return hit;
    };

    for (Token& tok : tokens) {
      bool hit = false;
      switch (tok.kind) {
        case Token::kDefault:
          for (const std::string& n : cxi_curated_telemetry()) hit |= add(true, n);
          for (const std::string& n : cxi_curated_rh()) hit |= add(false, n);
          break;
        case Token::kAll:
          hit = add_listed(true, "");
          hit |= add_listed(false, "");
          break;
        case Token::kRhAll:
          hit = add_listed(false, "");
          break;
        case Token::kRhPrefix:
          hit = add_listed(false, tok.arg);
          break;
        case Token::kRhName:
          hit = add(false, tok.arg);
          break;
        case Token::kTelPrefix:
          hit = add_listed(true, tok.arg);
          break;
        case Token::kTelName:
          hit = add(true, tok.arg);
          break;
      }
      tok.matched |= hit;
    }
  }

  if (sel_explicit) {
    std::vector<std::string> unmatched;
    for (const Token& tok : tokens)
      if (!tok.matched && tok.kind != Token::kDefault) unmatched.push_back(tok.text);
    if (!unmatched.empty())
      log_line("warning: FABTRACE_NIC_COUNTERS: nothing readable matches %s on %s",
               join_commas(unmatched).c_str(), join_commas(devices).c_str());
  }
  if (st->counters.empty()) {
    if (dev_explicit)
      log_line("FABTRACE_NIC_DEV=%s: no counter file could be read on %s; NIC counters off",
               config_.devices.c_str(), join_commas(devices).c_str());
    return false;  // st's destructor closes nothing: no counters
  }

  // Memory: the whole cap, reserved now (virtual until samples are written).
  st->stride = st->columns.size();
  const uint64_t row_bytes = st->stride * sizeof(uint64_t);
  st->capacity = config_.max_bytes / row_bytes;
  try {
    st->scratch.assign(st->stride, 0);
    st->rows.reserve(static_cast<size_t>(st->capacity * st->stride));
  } catch (const std::exception&) {
    log_line("warning: cannot reserve %" PRIu64
             " MiB for NIC counters (FABTRACE_NIC_MAX_MB); "
             "NIC counters off",
             config_.max_bytes >> 20);
    return false;
  }
  st->base = st->rows.data();
  st->devices = std::move(devices);
  state_ = std::move(st);
  ready_.store(true, std::memory_order_release);
  return true;
}

}  // namespace fabtrace

#include "common/cxi_counters.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <unordered_set>
#include <utility>

#include "common/clock.h"
#include "common/env.h"
#include "common/input_limits.h"
#include "common/rank.h"
#include "common/safe_output.h"

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

// ---- parsing one counter file -------------------------------------------------

bool parse_cxi_counter(const char* text, size_t len, uint64_t* value, uint64_t* stamp_ns) {
  const char* p = text;
  const char* const end = text + len;
  while (p < end && (*p == ' ' || *p == '\t')) ++p;
  if (p == end || *p < '0' || *p > '9') return false;
  uint64_t v = 0;
  while (p < end && *p >= '0' && *p <= '9') {
    const uint64_t d = static_cast<uint64_t>(*p - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
    ++p;
  }
  uint64_t stamp = 0;
  if (p < end && *p == '@') {
    ++p;
    uint64_t sec = 0;
    bool ok = p < end && *p >= '0' && *p <= '9';
    while (ok && p < end && *p >= '0' && *p <= '9') {
      if (sec > UINT64_MAX / 10) ok = false;
      sec = sec * 10 + static_cast<uint64_t>(*p - '0');
      ++p;
    }
    uint64_t frac = 0;
    if (ok && p < end && *p == '.') {
      ++p;
      int digits = 0;
      while (p < end && *p >= '0' && *p <= '9') {
        if (digits < 9) {
          frac = frac * 10 + static_cast<uint64_t>(*p - '0');
          ++digits;
        }
        ++p;
      }
      for (; digits < 9; ++digits) frac *= 10;
    }
    // A stamp that does not fit (year 2554 and later) reads as none.
    if (ok && sec <= (UINT64_MAX - frac) / 1000000000ULL) stamp = sec * 1000000000ULL + frac;
  }
  *value = v;
  if (stamp_ns) *stamp_ns = stamp;
  return true;
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

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\n' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\n' || s[e - 1] == '\r'))
    --e;
  return s.substr(b, e - b);
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    std::string tok = trim(s.substr(i, j - i));
    if (!tok.empty()) out.push_back(std::move(tok));
    i = j + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& v, const char* sep = ",") {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += v[i];
  }
  return out;
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
  s = trim(s);
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

// ---- shared state -------------------------------------------------------------

struct CounterSampler::State {
  struct Counter {
    int fd;
    uint32_t column;
    uint32_t device;
    bool telemetry;
  };
  struct DeviceInfo {
    std::string nic_addr = "?", nid = "?";
    uint32_t stamp_column = 0;
  };

  uint64_t interval_ms = 100;
  std::vector<std::string> devices;
  std::vector<DeviceInfo> device_info;
  std::vector<std::string> labels;
  std::vector<std::string> columns;
  std::vector<Counter> counters;
  size_t stride = 0;      // uint64 values per sample (= columns.size())
  uint64_t capacity = 0;  // samples that fit the memory cap

  // The series, sample-major. Reserved once; appends stay within the reservation,
  // so `base` never moves and readers use it without touching the vector.
  std::vector<uint64_t> rows;
  const uint64_t* base = nullptr;
  std::vector<uint64_t> scratch;   // one row being assembled
  std::mutex sample_mtx;           // one sampler at a time
  std::atomic<uint64_t> count{0};  // stored samples, published with release
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> read_errors{0};

  std::mutex run_mtx;
  std::condition_variable run_cv;
  bool stop_requested = false;  // guarded by run_mtx
  bool exited = false;          // guarded by run_mtx

  ~State() {
    for (const Counter& c : counters) ::close(c.fd);
  }

  bool sample();
  void run();
};

bool CounterSampler::State::sample() {
  std::lock_guard<std::mutex> lk(sample_mtx);
  const uint64_t n = count.load(std::memory_order_relaxed);
  if (n >= capacity) {
    dropped.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  uint64_t* row = scratch.data();
  row[0] = mono_ns();
  row[1] = real_ns();
  for (const DeviceInfo& d : device_info) row[d.stamp_column] = 0;
  char buf[64];
  for (const Counter& c : counters) {
    ssize_t got;
    do {
      got = ::pread(c.fd, buf, sizeof(buf) - 1, 0);
    } while (got < 0 && errno == EINTR);
    uint64_t v = 0, stamp = 0;
    if (got > 0 && parse_cxi_counter(buf, static_cast<size_t>(got), &v, &stamp)) {
      row[c.column] = v;
      if (c.telemetry) {
        uint64_t& newest = row[device_info[c.device].stamp_column];
        if (stamp > newest) newest = stamp;
      }
    } else {
      row[c.column] = 0;
      read_errors.fetch_add(1, std::memory_order_relaxed);
    }
  }
  rows.insert(rows.end(), scratch.begin(), scratch.end());  // within the reservation
  count.store(n + 1, std::memory_order_release);
  return true;
}

void CounterSampler::State::run() {
  using Clock = std::chrono::steady_clock;
  const Clock::duration period = std::chrono::milliseconds(interval_ms);
  Clock::time_point next = Clock::now();
  std::unique_lock<std::mutex> lk(run_mtx);
  while (!stop_requested) {
    lk.unlock();
    sample();
    lk.lock();
    next += period;
    const Clock::time_point now = Clock::now();
    if (next <= now) {
      // Sampling took longer than the interval: skip the deadlines already missed
      // rather than firing a burst to catch up (the CSV's achieved_mean_ms shows it).
      next += ((now - next) / period + 1) * period;
    }
    run_cv.wait_until(lk, next, [this] { return stop_requested; });
  }
  exited = true;
  run_cv.notify_all();
}

// ---- configuration ------------------------------------------------------------

CounterSampler::Config CounterSampler::config_from_env() {
  Config c;
  c.enabled = env_bool("FABTRACE_NIC", true);
  if (!c.enabled) return c;
  c.interval_ms = env_u64("FABTRACE_NIC_MS", 100, 1, 60000);
  c.devices = trim(env_str("FABTRACE_NIC_DEV"));
  c.counters = trim(env_str("FABTRACE_NIC_COUNTERS"));
  c.max_bytes = env_u64("FABTRACE_NIC_MAX_MB", 256, 1, uint64_t{1} << 20) << 20;
  const std::string sysfs = trim(env_str("FABTRACE_CXI_SYSFS_ROOT"));
  if (!sysfs.empty()) c.sysfs_root = sysfs;
  const std::string run = trim(env_str("FABTRACE_CXI_RUN_ROOT"));
  if (!run.empty()) c.run_root = run;
  c.local_rank = detect_local_rank();
  return c;
}

CounterSampler::CounterSampler(Config config) : config_(std::move(config)) {}

CounterSampler::~CounterSampler() { stop(); }

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
          config_.devices.c_str(), root, join(present).c_str());
      devices = present;
    } else if (!missing.empty()) {
      log_line("warning: FABTRACE_NIC_DEV: no device %s under %s (present: %s); ignoring it",
               join(missing).c_str(), root, join(present).c_str());
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
          join(bad).c_str(), none_valid ? "; using the default set" : "");
  }

  auto st = std::make_shared<State>();
  st->interval_ms = config_.interval_ms;
  st->columns = {"t_mono_ns", "wall_ns"};

  for (size_t di = 0; di < devices.size(); ++di) {
    const std::string& dev = devices[di];
    const std::string tel_dir = config_.sysfs_root + "/" + dev + kTelemetrySub;
    const std::string rh_dir = config_.run_root + "/" + dev;
    State::DeviceInfo info;
    info.nic_addr = read_property(config_.sysfs_root + "/" + dev + kPropertiesSub + "/nic_addr");
    info.nid = read_property(config_.sysfs_root + "/" + dev + kPropertiesSub + "/nid");
    info.stamp_column = static_cast<uint32_t>(st->columns.size());
    st->columns.push_back(dev + ":telemetry_wall_ns");
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

    for (Token& tok : tokens) {
      bool hit = false;
      switch (tok.kind) {
        case Token::kDefault:
          for (const std::string& n : cxi_curated_telemetry()) hit |= add(true, n);
          for (const std::string& n : cxi_curated_rh()) hit |= add(false, n);
          break;
        case Token::kAll:
          for (const std::string& n : tel_list()) hit |= add(true, n);
          for (const std::string& n : rh_list()) hit |= add(false, n);
          break;
        case Token::kRhAll:
          for (const std::string& n : rh_list()) hit |= add(false, n);
          break;
        case Token::kRhPrefix:
          for (const std::string& n : rh_list())
            if (starts_with(n, tok.arg)) hit |= add(false, n);
          break;
        case Token::kRhName:
          hit = add(false, tok.arg);
          break;
        case Token::kTelPrefix:
          for (const std::string& n : tel_list())
            if (starts_with(n, tok.arg)) hit |= add(true, n);
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
               join(unmatched).c_str(), join(devices).c_str());
  }
  if (st->counters.empty()) {
    if (dev_explicit)
      log_line("FABTRACE_NIC_DEV=%s: no counter file could be read on %s; NIC counters off",
               config_.devices.c_str(), join(devices).c_str());
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

// ---- thread control -----------------------------------------------------------

namespace {

void* sampler_main(void* arg) {
  // The thread owns one reference to the state, so a thread left behind by stop()
  // keeps its files and buffer alive.
  std::unique_ptr<std::shared_ptr<CounterSampler::State>> ref(
      static_cast<std::shared_ptr<CounterSampler::State>*>(arg));
  (*ref)->run();
  return nullptr;
}

}  // namespace

bool CounterSampler::inherited() const {
  const pid_t owner = thread_pid_.load(std::memory_order_acquire);
  return owner != 0 && owner != ::getpid();
}

bool CounterSampler::start() {
  if (inherited()) return false;
  if (phase_.load(std::memory_order_acquire) == kRunning) return true;
  if (!open()) return false;
  std::lock_guard<std::mutex> g(ctl_mtx_);
  const int phase = phase_.load(std::memory_order_relaxed);
  if (phase == kRunning) return true;
  if (phase == kStopped) return false;

  // The thread must not take the program's signals: block them all while creating it
  // (a new thread inherits its creator's mask) and restore the caller's mask after.
  sigset_t all, old;
  sigfillset(&all);
  const bool masked = pthread_sigmask(SIG_SETMASK, &all, &old) == 0;
  auto* ref = new (std::nothrow) std::shared_ptr<State>(state_);
  const int rc = ref ? pthread_create(&thread_, nullptr, sampler_main, ref) : ENOMEM;
  if (masked) pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    delete ref;
    log_line("warning: cannot start the NIC counter thread (%s); NIC counters off",
             std::strerror(rc));
    return false;
  }
  pthread_setname_np(thread_, "fabtrace-nic");  // named before start() returns
  thread_pid_.store(::getpid(), std::memory_order_release);
  phase_.store(kRunning, std::memory_order_release);
  return true;
}

void CounterSampler::stop() {
  if (inherited()) return;  // no thread here; its locks may be held by the parent's
  std::lock_guard<std::mutex> g(ctl_mtx_);
  const int phase = phase_.load(std::memory_order_relaxed);
  if (phase == kStopped) return;
  if (phase == kRunning) {
    State& st = *state_;
    std::unique_lock<std::mutex> lk(st.run_mtx);
    st.stop_requested = true;
    st.run_cv.notify_all();
    const bool done = st.run_cv.wait_for(lk, std::chrono::milliseconds(config_.stop_timeout_ms),
                                         [&st] { return st.exited; });
    lk.unlock();
    if (done) {
      pthread_join(thread_, nullptr);
    } else {
      // Still inside a read (a hung retry-handler daemon, most likely). The thread
      // holds its own reference to the state, so leaving it behind is safe.
      pthread_detach(thread_);
      log_line("warning: NIC counter thread still blocked in a read after %" PRIu64
               " ms; leaving it behind",
               config_.stop_timeout_ms);
    }
  }
  phase_.store(kStopped, std::memory_order_release);
}

bool CounterSampler::sample_once() {
  return !inherited() && ready() != nullptr && state_->sample();
}

// ---- inspection ---------------------------------------------------------------

const CounterSampler::State* CounterSampler::ready() const {
  return ready_.load(std::memory_order_acquire) ? state_.get() : nullptr;
}

namespace {
const std::vector<std::string>& empty_strings() {
  static const std::vector<std::string> v;
  return v;
}
}  // namespace

const std::vector<std::string>& CounterSampler::devices() const {
  const State* s = ready();
  return s ? s->devices : empty_strings();
}

const std::vector<std::string>& CounterSampler::labels() const {
  const State* s = ready();
  return s ? s->labels : empty_strings();
}

const std::vector<std::string>& CounterSampler::columns() const {
  const State* s = ready();
  return s ? s->columns : empty_strings();
}

int CounterSampler::column_index(const std::string& name) const {
  const std::vector<std::string>& cols = columns();
  for (size_t i = 0; i < cols.size(); ++i)
    if (cols[i] == name) return static_cast<int>(i);
  return -1;
}

uint64_t CounterSampler::samples() const {
  const State* s = ready();
  return s ? s->count.load(std::memory_order_acquire) : 0;
}

uint64_t CounterSampler::value(uint64_t sample, size_t column) const {
  const State* s = ready();
  if (!s || column >= s->stride || sample >= s->count.load(std::memory_order_acquire)) return 0;
  return s->base[sample * s->stride + column];
}

uint64_t CounterSampler::dropped() const {
  const State* s = ready();
  return s ? s->dropped.load(std::memory_order_relaxed) : 0;
}

uint64_t CounterSampler::read_errors() const {
  const State* s = ready();
  return s ? s->read_errors.load(std::memory_order_relaxed) : 0;
}

uint64_t CounterSampler::capacity_samples() const {
  const State* s = ready();
  return s ? s->capacity : 0;
}

uint64_t CounterSampler::reserved_bytes() const {
  const State* s = ready();
  return s ? s->capacity * s->stride * sizeof(uint64_t) : 0;
}

double CounterSampler::achieved_mean_ms() const {
  const State* s = ready();
  if (!s) return 0.0;
  const uint64_t n = s->count.load(std::memory_order_acquire);
  if (n < 2) return 0.0;
  const uint64_t first = s->base[0], last = s->base[(n - 1) * s->stride];
  return static_cast<double>(last - first) / 1e6 / static_cast<double>(n - 1);
}

// ---- CSV output -----------------------------------------------------------------

bool CounterSampler::write_csv(const std::string& path, const std::string& host,
                               const std::string& rank, long pid) const {
  const State* s = ready();
  if (!s) return false;
  const uint64_t n = s->count.load(std::memory_order_acquire);
  const uint64_t dropped_now = s->dropped.load(std::memory_order_relaxed);
  const uint64_t errors_now = s->read_errors.load(std::memory_order_relaxed);
  const double mean_ms = n >= 2 ? static_cast<double>(s->base[(n - 1) * s->stride] - s->base[0]) /
                                      1e6 / static_cast<double>(n - 1)
                                : 0.0;

  std::string why;
  std::FILE* f = create_new_stream(path, &why);
  if (!f) {
    log_line("cannot write NIC counters to %s: %s", path.c_str(), why.c_str());
    return false;
  }
  std::vector<char> iobuf;
  try {
    iobuf.resize(1 << 20);
    std::setvbuf(f, iobuf.data(), _IOFBF, iobuf.size());
  } catch (const std::exception&) {
    // keep stdio's own buffer
  }

  std::fprintf(f, "# fabtrace-counters v1 host=%s rank=%s pid=%ld\n", output_token(host).c_str(),
               output_token(rank).c_str(), pid);
  std::fprintf(f,
               "# interval_ms=%" PRIu64
               " achieved_mean_ms=%.3f devices=%s counters=%zu samples=%" PRIu64 " dropped=%" PRIu64
               " read_errors=%" PRIu64 "\n",
               s->interval_ms, mean_ms, join(s->devices).c_str(), s->labels.size(), n, dropped_now,
               errors_now);
  std::fputs(
      "# clock t_mono_ns=CLOCK_MONOTONIC ns (same clock as every fabtrace output); "
      "wall_ns=CLOCK_REALTIME; *:telemetry_wall_ns=newest telemetry stamp of that device in the "
      "sample\n",
      f);
  for (size_t d = 0; d < s->devices.size(); ++d)
    std::fprintf(f, "# dev %s nic_addr=%s nid=%s\n", s->devices[d].c_str(),
                 s->device_info[d].nic_addr.c_str(), s->device_info[d].nid.c_str());
  std::fputs(join(s->columns).c_str(), f);
  std::fputc('\n', f);

  // Rows: at most 21 characters per value.
  std::vector<char> line(s->stride * 21 + 2);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t* row = s->base + i * s->stride;
    char* p = line.data();
    char* const end = line.data() + line.size();
    for (size_t c = 0; c < s->stride; ++c) {
      if (c) *p++ = ',';
      p = std::to_chars(p, end, row[c]).ptr;
    }
    *p++ = '\n';
    std::fwrite(line.data(), 1, static_cast<size_t>(p - line.data()), f);
  }
  const bool write_failed = std::ferror(f) != 0;
  const int saved = errno;
  const bool close_failed = std::fclose(f) != 0;
  if (write_failed || close_failed) {
    log_line("cannot write NIC counters to %s: %s", path.c_str(),
             std::strerror(write_failed ? saved : errno));
    return false;
  }
  return true;
}

// ---- CSV input ------------------------------------------------------------------

int CounterSeries::column(const std::string& name) const {
  for (size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == name) return static_cast<int>(i);
  return -1;
}

namespace {

bool parse_u64(const std::string& s, uint64_t* out) {
  if (s.empty()) return false;
  const char* b = s.data();
  const char* e = b + s.size();
  auto r = std::from_chars(b, e, *out);
  return r.ec == std::errc() && r.ptr == e;
}

// The "key=value" words of a comment line.
std::vector<std::pair<std::string, std::string>> key_values(const std::string& line) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t j = line.find(' ', i);
    if (j == std::string::npos) j = line.size();
    const std::string word = line.substr(i, j - i);
    const size_t eq = word.find('=');
    if (eq != std::string::npos) out.emplace_back(word.substr(0, eq), word.substr(eq + 1));
    i = j;
  }
  return out;
}

}  // namespace

bool read_counter_csv(const std::string& path, CounterSeries* out, std::string* error) {
  auto fail = [error](const std::string& msg) {
    if (error) *error = msg;
    return false;
  };
  *out = CounterSeries();
  std::string text, why;
  if (!read_bounded_file(path, limits::kMaxCounterCsvBytes, &text, &why))
    return fail(path + ": " + why);
  return parse_counter_csv(text, path, out, error);
}

bool parse_counter_csv(const std::string& text, const std::string& path, CounterSeries* out,
                       std::string* error) {
  auto fail = [error](const std::string& msg) {
    if (error) *error = msg;
    return false;
  };
  *out = CounterSeries();
  // Strings kept from the file are bounded; a longer one is not of our writer.
  auto bounded = [&](const std::string& v, const std::string& where, const char* what) {
    if (v.size() <= limits::kMaxStringBytes) return true;
    fail(where + what + " is " + std::to_string(v.size()) + " bytes long, more than " +
         std::to_string(limits::kMaxStringBytes));
    return false;
  };
  uint64_t values = 0;

  bool saw_format = false, saw_header = false;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    ++line_no;
    if (nl == std::string::npos) {
      // The writer stopped in the middle of this line.
      if (!saw_header) return fail(path + ": cut short before the header row");
      out->truncated = true;
      break;
    }
    const std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    const std::string where = path + ":" + std::to_string(line_no) + ": ";

    if (!saw_format) {
      if (line.compare(0, 20, "# fabtrace-counters ") != 0)
        return fail(where + "not a fabtrace-counters file");
      if (line.compare(20, 3, "v1 ") != 0 && line.compare(20, std::string::npos, "v1") != 0)
        return fail(where + "unsupported version (" + line.substr(20, line.find(' ', 20) - 20) +
                    ")");
      saw_format = true;
      for (const auto& kv : key_values(line)) {
        if (!bounded(kv.second, where, kv.first.c_str())) return false;
        if (kv.first == "host") out->host = kv.second;
        if (kv.first == "rank") out->rank = kv.second;
        if (kv.first == "pid") {
          uint64_t pid = 0;
          if (!parse_u64(kv.second, &pid) || pid > static_cast<uint64_t>(INT32_MAX))
            return fail(where + "pid is not a process id");
          out->pid = static_cast<long>(pid);
        }
      }
      continue;
    }
    if (!line.empty() && line[0] == '#') {
      if (saw_header) return fail(where + "comment after the header row");
      if (line.compare(0, 6, "# dev ") == 0) {
        if (out->device_info.size() >= limits::kMaxCounterDevices)
          return fail(where + "more than " + std::to_string(limits::kMaxCounterDevices) +
                      " devices");
        if (!bounded(line, where, "the line")) return false;
        CounterSeries::Device d;
        const size_t e = line.find(' ', 6);
        d.name = line.substr(6, e == std::string::npos ? std::string::npos : e - 6);
        for (const auto& kv : key_values(line)) {
          if (kv.first == "nic_addr") d.nic_addr = kv.second;
          if (kv.first == "nid") d.nid = kv.second;
        }
        out->device_info.push_back(std::move(d));
      } else if (line.compare(0, 14, "# interval_ms=") == 0) {
        if (!bounded(line, where, "the line")) return false;
        for (const auto& kv : key_values(line)) {
          const std::string& k = kv.first;
          if (k == "interval_ms") parse_u64(kv.second, &out->interval_ms);
          if (k == "achieved_mean_ms") {
            const double ms = std::strtod(kv.second.c_str(), nullptr);
            out->achieved_mean_ms = finite_in(ms, 0, limits::kMaxSeconds * 1e3) ? ms : 0.0;
          }
          if (k == "devices") out->devices = split_commas(kv.second);
          if (k == "counters") parse_u64(kv.second, &out->counters);
          if (k == "samples") parse_u64(kv.second, &out->samples);
          if (k == "dropped") parse_u64(kv.second, &out->dropped);
          if (k == "read_errors") parse_u64(kv.second, &out->read_errors);
        }
      }
      continue;  // other comment lines: later additions
    }
    if (line.empty()) continue;
    if (!saw_header) {
      if (std::count(line.begin(), line.end(), ',') >=
          static_cast<std::ptrdiff_t>(limits::kMaxCounterColumns))
        return fail(where + "more than " + std::to_string(limits::kMaxCounterColumns) + " columns");
      out->columns = split_commas(line);
      for (const std::string& c : out->columns)
        if (!bounded(c, where, "a column name")) return false;
      if (out->columns.size() < 2 || out->columns[0] != "t_mono_ns" || out->columns[1] != "wall_ns")
        return fail(where + "header row does not start with t_mono_ns,wall_ns");
      saw_header = true;
      continue;
    }
    std::vector<uint64_t> row;
    row.reserve(out->columns.size());
    size_t i = 0;
    while (true) {
      size_t j = line.find(',', i);
      if (j == std::string::npos) j = line.size();
      uint64_t v;
      if (!parse_u64(line.substr(i, j - i), &v))
        return fail(where + "field " + std::to_string(row.size() + 1) + " is not a number");
      row.push_back(v);
      if (j == line.size() || row.size() > out->columns.size()) break;
      i = j + 1;
    }
    if (row.size() != out->columns.size())
      return fail(where + std::to_string(row.size()) + " fields, the header has " +
                  std::to_string(out->columns.size()));
    // The two clocks of the row are times: later arithmetic on them must not wrap.
    if (!time_ns_ok(row[0]) || !time_ns_ok(row[1]))
      return fail(where + "t_mono_ns or wall_ns is beyond any clock (" + std::to_string(row[0]) +
                  ", " + std::to_string(row[1]) + ")");
    values += row.size();
    if (values > limits::kMaxCounterValues || out->rows.size() >= limits::kMaxCounterRows)
      return fail(where + "more samples than fabtrace reads (" +
                  std::to_string(limits::kMaxCounterRows) + " rows, " +
                  std::to_string(limits::kMaxCounterValues) + " values)");
    out->rows.push_back(std::move(row));
  }
  if (!saw_format) return fail(path + ": empty file");
  if (!saw_header) return fail(path + ": no header row");
  return true;
}

}  // namespace fabtrace

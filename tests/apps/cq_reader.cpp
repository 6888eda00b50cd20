#include "cq_reader.h"

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>

#include "oob.h"

namespace ftapp {
namespace {

constexpr size_t kBatch = 16;

std::atomic<uint64_t> g_polls{0};

// One CQ's polls as the program saw them.
struct CqPolls {
  size_t order = 0;  // of its first poll
  uint64_t polls = 0;
  int64_t last_ns = 0, max_gap_ns = 0;
  uint64_t long_gaps = 0;  // gaps of 1 ms or more
};
std::mutex g_cq_mu;
std::map<const fid_cq*, CqPolls> g_cqs;

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void stamp_poll(const fid_cq* cq, int64_t now) {
  std::lock_guard<std::mutex> g(g_cq_mu);
  auto it = g_cqs.find(cq);
  if (it == g_cqs.end()) it = g_cqs.emplace(cq, CqPolls{g_cqs.size(), 0, 0, 0, 0}).first;
  CqPolls& p = it->second;
  ++p.polls;
  if (p.last_ns && now - p.last_ns > p.max_gap_ns) p.max_gap_ns = now - p.last_ns;
  if (p.last_ns && now - p.last_ns >= 1000000) ++p.long_gaps;
  p.last_ns = now;
}

// A CQ entry of any format but the context one: each format adds to the one
// before it (msg < data < tagged); fi_cq_err_entry has all of the tagged one's.
template <typename Entry>
void take(Completion& c, const Entry& e) {
  c.op_context = e.op_context;
  c.flags = e.flags;
  c.len = e.len;
  c.has_flags = true;
  if constexpr (!std::is_same_v<Entry, fi_cq_msg_entry>) {
    c.buf = e.buf;
    c.data = e.data;
    c.has_data = true;
  }
  if constexpr (!std::is_same_v<Entry, fi_cq_msg_entry> &&
                !std::is_same_v<Entry, fi_cq_data_entry>) {
    c.tag = e.tag;
    c.has_tag = true;
  }
}

Completion from_entry(const void* base, size_t i, fi_cq_format fmt) {
  Completion c;
  switch (fmt) {
    case FI_CQ_FORMAT_UNSPEC:  // fi_cq_entry in libfabric's util CQ and sockets
    case FI_CQ_FORMAT_CONTEXT:
      c.op_context = static_cast<const fi_cq_entry*>(base)[i].op_context;
      break;
    case FI_CQ_FORMAT_MSG:
      take(c, static_cast<const fi_cq_msg_entry*>(base)[i]);
      break;
    case FI_CQ_FORMAT_DATA:
      take(c, static_cast<const fi_cq_data_entry*>(base)[i]);
      break;
    default:
      take(c, static_cast<const fi_cq_tagged_entry*>(base)[i]);
      break;
  }
  return c;
}

size_t read_error(fid_cq* cq, std::vector<Completion>* out) {
  fi_cq_err_entry e;
  std::memset(&e, 0, sizeof e);
  ssize_t r = fi_cq_readerr(cq, &e, 0);
  if (r == -FI_EAGAIN) return 0;
  if (r < 0) throw FamilyError(std::string("fi_cq_readerr failed: ") + fi_strerror(int(-r)));
  Completion c;
  take(c, e);
  c.err = e.err;
  c.prov_errno = e.prov_errno;
  c.is_error = true;
  c.cq = cq;
  out->push_back(c);
  return 1;
}

}  // namespace

uint64_t cq_polls_made() { return g_polls.load(std::memory_order_relaxed); }

std::string cq_poll_stats_json() {
  std::lock_guard<std::mutex> g(g_cq_mu);
  std::vector<const CqPolls*> by_order(g_cqs.size());
  for (const auto& kv : g_cqs) by_order[kv.second.order] = &kv.second;
  std::string o = "[";
  for (size_t i = 0; i < by_order.size(); ++i) {
    if (i) o += ",";
    o += "{\"polls\":" + std::to_string(by_order[i]->polls) +
         ",\"max_gap_ns\":" + std::to_string(by_order[i]->max_gap_ns) +
         ",\"long_gaps\":" + std::to_string(by_order[i]->long_gaps) + "}";
  }
  return o + "]";
}

const char* cq_method_name(CqMethod m) {
  switch (m) {
    case CqMethod::kRead:
      return "fi_cq_read";
    case CqMethod::kReadFrom:
      return "fi_cq_readfrom";
    default:
      return "fi_cq_sread";
  }
}

namespace {
thread_local bool tl_track_faults = false;
thread_local ReadFaults tl_read_faults;
}  // namespace

uint64_t thread_faults() {
  rusage u{};
  if (getrusage(RUSAGE_THREAD, &u) != 0) return 0;
  return static_cast<uint64_t>(u.ru_minflt) + static_cast<uint64_t>(u.ru_majflt);
}

void track_read_faults() { tl_track_faults = true; }
ReadFaults last_read_faults() { return tl_read_faults; }

size_t read_cq(fid_cq* cq, fi_cq_format fmt, CqMethod method, int sread_timeout_ms,
               std::vector<Completion>* out) {
  alignas(16) unsigned char buf[kBatch * sizeof(fi_cq_tagged_entry)];
  fi_addr_t src[kBatch];
  for (fi_addr_t& a : src) a = FI_ADDR_NOTAVAIL;
  ssize_t r;
  g_polls.fetch_add(1, std::memory_order_relaxed);
  const bool track = tl_track_faults;
  if (track) tl_read_faults.before = thread_faults();
  switch (method) {
    case CqMethod::kReadFrom:
      r = fi_cq_readfrom(cq, buf, kBatch, src);
      break;
    case CqMethod::kSRead:
      stamp_poll(cq, steady_ns());
      r = fi_cq_sread(cq, buf, kBatch, nullptr, sread_timeout_ms);
      break;
    default:
      r = fi_cq_read(cq, buf, kBatch);
      break;
  }
  if (track) tl_read_faults.after = thread_faults();
  const int64_t now = method != CqMethod::kSRead ? steady_ns() : 0;
  if (method != CqMethod::kSRead) stamp_poll(cq, now);
  if (r == -FI_EAGAIN || r == -FI_ETIMEDOUT || r == 0) return 0;
  if (r == -FI_EAVAIL) return read_error(cq, out);
  if (r < 0) {
    throw FamilyError(std::string(cq_method_name(method)) + " failed: " + fi_strerror(int(-r)));
  }
  for (ssize_t i = 0; i < r; ++i) {
    Completion c = from_entry(buf, static_cast<size_t>(i), fmt);
    if (method == CqMethod::kReadFrom) {
      c.src = src[i];
      c.has_src = true;
    }
    c.cq = cq;
    c.read_ns = now;
    out->push_back(c);
  }
  return static_cast<size_t>(r);
}

}  // namespace ftapp

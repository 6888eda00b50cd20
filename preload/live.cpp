#include "preload/live.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "common/env.h"
#include "common/histogram.h"
#include "common/live_format.h"
#include "common/live_seqlock.h"
#include "common/op_kinds.h"
#include "preload/names.h"
#include "preload/outputs.h"
#include "preload/runtime.h"
#include "preload/stats.h"

namespace fabtrace {

LiveConfig live_config_from_env() {
  LiveConfig c;
  c.on = env_bool("FABTRACE_LIVE", true);
  c.interval_ms = env_u64("FABTRACE_LIVE_INTERVAL_MS", 1000, 50, 3600ULL * 1000);
  c.dir = env_trimmed("FABTRACE_LIVE_DIR");
  if (c.dir.empty()) c.dir = live::kDefaultDir;
  c.link_cap = env_u64("FABTRACE_LIVE_LINKS", live::kDefaultLinkCap, 1, live::kMaxLinkCap);
  return c;
}

namespace {

using live::Layout;

// Whether another open file description holds a lock on fd's file (the
// owner of a live snapshot holds a read lock while it lives).
bool lock_held_elsewhere(int fd) {
  struct flock fl = {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  return ::fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
}

std::string comm_of_self() {
  const int fd = ::open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char b[32] = {};
  const ssize_t n = ::read(fd, b, sizeof(b) - 1);
  ::close(fd);
  std::string s(b, n > 0 ? static_cast<size_t>(n) : 0);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  return s;
}

// One (local, remote, op) row as the publisher keeps it between snapshots.
using RowKey = std::tuple<std::string, std::string, int>;
struct RowState {
  LogHistogram lat;  // every size summed
  uint64_t bytes = 0, errors = 0, eagain = 0, untimed = 0, untimed_bytes = 0;
};

class Publisher {
 public:
  bool open(const LiveConfig& cfg, std::string* why);
  void publish();
  void run();
  void stop_thread();
  void remove_file();
  void forget();  // in a forked child

  LiveConfig cfg_;
  std::string path_, name_;
  int dirfd_ = -1, fd_ = -1;
  pid_t owner_ = 0;
  char* map_ = nullptr;
  Layout layout_;
  std::vector<uint64_t> body_;
  std::map<RowKey, RowState> prev_;
  std::vector<uint64_t> prev_polls_ = std::vector<uint64_t>(kMaxCqs);
  uint64_t last_mono_ = 0, publishes_ = 0;
  std::mutex pub_mu_;  // one publish at a time (the thread, or live_publish_now)

  std::mutex run_mu_;
  std::condition_variable cv_;
  bool stop_ = false, paused_ = false, started_ = false;
  pthread_t thread_{};
};

Publisher* g_pub = nullptr;  // never freed: shims and the thread may run during exit

bool Publisher::open(const LiveConfig& cfg, std::string* why) {
  cfg_ = cfg;
  layout_.link_cap = cfg.link_cap;
  layout_.cq_cap = live::kDefaultCqCap;
  owner_ = ::getpid();
  name_ = live::file_name(::geteuid(), owner_);
  path_ = cfg.dir + "/" + name_;
  dirfd_ = ::open(cfg.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd_ < 0) {
    *why = cfg.dir + ": " + std::strerror(errno);
    return false;
  }
  for (int attempt = 0; attempt < 2 && fd_ < 0; ++attempt) {
    fd_ = ::openat(dirfd_, name_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_ >= 0 || errno != EEXIST || attempt) break;
    // A file of this user's from an earlier process with this pid (killed,
    // or this process before an exec): replaced when its lock is free. In a
    // sticky directory (/dev/shm) nobody else can unlink it, nor could we
    // unlink theirs.
    const int old = ::openat(dirfd_, name_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    const bool stale = old >= 0 && ::fstat(old, &st) == 0 && S_ISREG(st.st_mode) &&
                       st.st_uid == ::geteuid() && !lock_held_elsewhere(old);
    if (old >= 0) ::close(old);
    if (!stale || ::unlinkat(dirfd_, name_.c_str(), 0) != 0) {
      errno = EEXIST;
      break;
    }
  }
  if (fd_ < 0) {
    *why = path_ + ": " + std::strerror(errno);
    return false;
  }
  struct flock fl = {};
  fl.l_type = F_RDLCK;
  fl.l_whence = SEEK_SET;
  const size_t size = layout_.file_size();
  if (::fchmod(fd_, 0600) != 0 || ::ftruncate(fd_, static_cast<off_t>(size)) != 0 ||
      ::fcntl(fd_, F_OFD_SETLK, &fl) != 0) {
    *why = path_ + ": " + std::strerror(errno);
    return false;
  }
  void* m = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (m == MAP_FAILED) {
    *why = path_ + ": " + std::strerror(errno);
    return false;
  }
  map_ = static_cast<char*>(m);
  body_.assign(layout_.body_words(), 0);

  const Runtime& rt = runtime();
  const Calibration cal = clock_calibration();
  live::Head* h = reinterpret_cast<live::Head*>(map_);
  h->c[live::kh_version] = live::kVersion;
  h->c[live::kh_link_cap] = layout_.link_cap;
  h->c[live::kh_cq_cap] = layout_.cq_cap;
  h->c[live::kh_pid] = static_cast<uint64_t>(owner_);
  h->c[live::kh_uid] = ::geteuid();
  h->c[live::kh_start_time] = live::process_start_time(owner_);
  h->c[live::kh_interval_ns] = cfg.interval_ms * 1000000ULL;
  h->c[live::kh_start_mono_ns] = cal.to_mono_ns(rt.start_ticks);
  h->c[live::kh_start_real_ns] = cal.real0_ns + (h->c[live::kh_start_mono_ns] - cal.mono0_ns);
  h->host.set(output_host());
  h->rank.set(rt.rank.text);
  h->job.set(rt.job.job_id);
  h->comm.set(comm_of_self());
  last_mono_ = h->c[live::kh_start_mono_ns];
  publish();
  // The magic last: a reader that sees it sees the head, and a snapshot.
  __atomic_store_n(&h->c[live::kh_magic], live::kMagic, __ATOMIC_RELEASE);
  return true;
}

void Publisher::publish() {
  std::lock_guard<std::mutex> lk(pub_mu_);
  if (!map_) return;
  Runtime& rt = runtime();
  const Calibration cal = clock_calibration();
  // The interval that ends now: gaps that end from here on count for the next.
  const uint32_t closing = g_live_epoch.fetch_add(1, std::memory_order_relaxed);
  const uint64_t now_mono = mono_ns();

  // Every thread's cells, by (endpoint, peer, op): read, never written.
  using Acc = RowState;
  std::map<std::tuple<const EpWrap*, fi_addr_t, int>, Acc> by_ep;
  struct CqAcc {
    uint64_t polls = 0, max_gap = 0, win_max = 0, gaps_1ms = 0;
  };
  const uint32_t ncq = std::min<uint32_t>(rt.ncq_ids.load(std::memory_order_acquire), kMaxCqs);
  std::vector<CqAcc> cqs(ncq);
  const auto ld = [](const uint64_t& v) { return __atomic_load_n(&v, __ATOMIC_RELAXED); };
  for (Shard* s = all_shards(); s; s = s->next) {
    const uint64_t cap = __atomic_load_n(&s->cap, __ATOMIC_ACQUIRE);
    Cell** slots = __atomic_load_n(&s->slots, __ATOMIC_ACQUIRE);
    for (uint64_t i = 0; i < cap; ++i) {
      const Cell* c = __atomic_load_n(&slots[i], __ATOMIC_ACQUIRE);
      if (!c) continue;
      Acc& a = by_ep[{c->key.ep, c->key.peer, static_cast<int>(c->key.kind)}];
      a.lat.merge_live(c->lat);
      a.bytes += ld(c->ok_bytes);
      a.errors += ld(c->errors);
      a.eagain += ld(c->eagain);
      // A cell is one size: the bytes of its untimed ops are that size each.
      const uint64_t untimed = ld(c->untimed) + ld(c->ring_full);
      a.untimed += untimed;
      a.untimed_bytes += untimed * c->key.bytes;
    }
    for (uint32_t q = 0; q < ncq; ++q) {
      const PollStats& p = s->cq[q];
      CqAcc& a = cqs[q];
      a.polls += ld(p.polls);
      a.max_gap = std::max(a.max_gap, ld(p.max_gap));
      if (__atomic_load_n(&p.win_epoch, __ATOMIC_RELAXED) == closing)
        a.win_max = std::max(a.win_max, ld(p.win_max));
      for (int k = 3; k < PollStats::kClasses; ++k) a.gaps_1ms += ld(p.gaps[k]);
    }
  }
  // Rows by their readable (local, remote) pair, as the rank's report merges them.
  std::map<RowKey, RowState> rows;
  for (const auto& [k, a] : by_ep) {
    const EpWrap* ep = std::get<0>(k);
    RowState& r = rows[RowKey{local_label(ep), remote_label(ep, std::get<1>(k)), std::get<2>(k)}];
    r.lat.merge(a.lat);
    r.bytes += a.bytes;
    r.errors += a.errors;
    r.eagain += a.eagain;
    r.untimed += a.untimed;
    r.untimed_bytes += a.untimed_bytes;
  }

  std::fill(body_.begin(), body_.end(), 0);
  uint64_t* pc = body_.data();
  // The busiest rows first; those past the capacity are counted in the totals.
  std::vector<std::pair<const RowKey*, RowState*>> order;
  for (auto& kv : rows) order.push_back({&kv.first, &kv.second});
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.second->lat.count() > b.second->lat.count();
  });
  const auto ns = [&cal](uint64_t ticks) { return static_cast<uint64_t>(cal.ticks_to_ns(ticks)); };
  size_t kept = 0;
  for (const auto& [key, r] : order) {
    pc[live::kp_ops] += r->lat.count();
    pc[live::kp_bytes] += r->bytes;
    pc[live::kp_errors] += r->errors;
    pc[live::kp_eagain] += r->eagain;
    pc[live::kp_untimed] += r->untimed;
    RowState& before = prev_[*key];
    if (kept < layout_.link_cap) {
      live::LinkRow* row = reinterpret_cast<live::LinkRow*>(pc + Layout::kLinksWord) + kept++;
      uint64_t* c = row->c;
      c[live::kl_op] = static_cast<uint64_t>(std::get<2>(*key));
      c[live::kl_ops] = r->lat.count();
      c[live::kl_bytes] = r->bytes;
      c[live::kl_errors] = r->errors;
      c[live::kl_eagain] = r->eagain;
      c[live::kl_untimed] = r->untimed;
      c[live::kl_untimed_bytes] = r->untimed_bytes;
      c[live::kl_lat_sum_ns] = ns(r->lat.sum());
      c[live::kl_p50_ns] = ns(r->lat.percentile(0.50));
      c[live::kl_p90_ns] = ns(r->lat.percentile(0.90));
      c[live::kl_p99_ns] = ns(r->lat.percentile(0.99));
      c[live::kl_max_ns] = ns(r->lat.max());
      const LogHistogram iv = r->lat.since(before.lat);
      c[live::kl_ops_iv] = iv.count();
      c[live::kl_bytes_iv] = r->bytes - std::min(r->bytes, before.bytes);
      c[live::kl_errors_iv] = r->errors - std::min(r->errors, before.errors);
      c[live::kl_eagain_iv] = r->eagain - std::min(r->eagain, before.eagain);
      c[live::kl_untimed_iv] = r->untimed - std::min(r->untimed, before.untimed);
      c[live::kl_untimed_bytes_iv] =
          r->untimed_bytes - std::min(r->untimed_bytes, before.untimed_bytes);
      c[live::kl_p50_iv_ns] = ns(iv.percentile(0.50));
      c[live::kl_p99_iv_ns] = ns(iv.percentile(0.99));
      c[live::kl_max_iv_ns] = ns(iv.max());
      row->local.set(std::get<0>(*key));
      row->remote.set(std::get<1>(*key));
    }
    before = std::move(*r);
  }
  pc[live::kp_links] = kept;
  pc[live::kp_links_dropped] = order.size() - kept;

  // CQs: every one opened, polled or not (a CQ never polled is a finding too).
  struct Registered {
    uint32_t id;
    uint64_t last;  // its latest poll, ticks
    bool closed;
  };
  std::vector<Registered> registered;
  {
    std::lock_guard<std::mutex> g(rt.mu);  // the control path's registry
    for (const CqWrap* q : rt.cqs)
      if (q->id < ncq)
        registered.push_back({q->id, q->last_poll.load(std::memory_order_relaxed),
                              q->closed.load(std::memory_order_relaxed)});
  }
  std::sort(registered.begin(), registered.end(),
            [](const Registered& a, const Registered& b) { return a.id < b.id; });
  uint64_t* cq0 = pc + layout_.cqs_word();
  size_t ncq_rows = 0;
  for (const auto& [id, last, closed] : registered) {
    if (ncq_rows >= layout_.cq_cap) break;
    const CqAcc& a = cqs[id];
    uint64_t* c = reinterpret_cast<live::CqRow*>(cq0)[ncq_rows++].c;
    c[live::kq_id] = id;
    c[live::kq_polls] = a.polls;
    c[live::kq_polls_iv] = a.polls - std::min(a.polls, prev_polls_[id]);
    c[live::kq_max_gap_ns] = ns(a.max_gap);
    c[live::kq_max_gap_iv_ns] = ns(a.win_max);
    c[live::kq_gaps_1ms] = a.gaps_1ms;
    c[live::kq_last_poll_mono_ns] = last ? cal.to_mono_ns(last) : 0;
    c[live::kq_closed] = closed ? 1 : 0;
    prev_polls_[id] = a.polls;
  }
  pc[live::kp_cqs] = ncq_rows;
  pc[live::kp_published_mono_ns] = now_mono;
  pc[live::kp_published_real_ns] = real_ns();
  pc[live::kp_interval_real_ns] = now_mono > last_mono_ ? now_mono - last_mono_ : 0;
  pc[live::kp_publishes] = ++publishes_;
  last_mono_ = now_mono;
  live::write_seqlocked(reinterpret_cast<uint64_t*>(map_ + Layout::kSeqOffset),
                        reinterpret_cast<uint64_t*>(map_ + Layout::kBodyOffset), body_.data(),
                        body_.size());
}

void Publisher::run() {
  std::unique_lock<std::mutex> lk(run_mu_);
  auto next = std::chrono::steady_clock::now() + std::chrono::milliseconds(cfg_.interval_ms);
  while (!stop_) {
    if (cv_.wait_until(lk, next, [this] { return stop_; })) break;
    const auto period = std::chrono::milliseconds(cfg_.interval_ms);
    next += period;
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now + period;  // a late wake (a stopped process) does not catch up
    if (paused_) continue;
    lk.unlock();
    publish();
    lk.lock();
  }
}

void* publisher_main(void* arg) {
  static_cast<Publisher*>(arg)->run();
  return nullptr;
}

void Publisher::stop_thread() {
  {
    std::lock_guard<std::mutex> lk(run_mu_);
    if (!started_) return;
    started_ = false;
    stop_ = true;
  }
  cv_.notify_all();
  pthread_join(thread_, nullptr);
}

void Publisher::remove_file() {
  std::lock_guard<std::mutex> lk(pub_mu_);
  if (map_) ::munmap(map_, layout_.file_size());
  map_ = nullptr;
  // Only our own file: the name may have been replaced meanwhile (by this
  // user: the directory is sticky).
  struct stat mine, there;
  if (fd_ >= 0 && ::fstat(fd_, &mine) == 0 &&
      ::fstatat(dirfd_, name_.c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0 &&
      mine.st_dev == there.st_dev && mine.st_ino == there.st_ino)
    ::unlinkat(dirfd_, name_.c_str(), 0);
  if (fd_ >= 0) ::close(fd_);
  if (dirfd_ >= 0) ::close(dirfd_);
  fd_ = dirfd_ = -1;
}

void Publisher::forget() {
  // The child's copies of the parent's descriptor and mapping: closing the
  // descriptor leaves the parent's lock to the parent alone.
  if (map_) ::munmap(map_, layout_.file_size());
  map_ = nullptr;
  if (fd_ >= 0) ::close(fd_);
  if (dirfd_ >= 0) ::close(dirfd_);
  fd_ = dirfd_ = -1;
  started_ = false;
}

// fork(): the publisher holds the control path's locks (the registry's, the
// names', the clock fit's) only inside a publish, which holds pub_mu_
// throughout; taking pub_mu_ before the fork means the child inherits none of
// them held.
void before_fork() {
  if (g_pub) g_pub->pub_mu_.lock();
}
void after_fork_parent() {
  if (g_pub) g_pub->pub_mu_.unlock();
}
void after_fork_child() {
  if (!g_pub) return;
  g_pub->pub_mu_.unlock();
  g_pub->forget();
}

}  // namespace

bool live_start(const LiveConfig& cfg) {
  if (!cfg.on || g_pub) return false;
  Publisher* p = new (std::nothrow) Publisher();
  if (!p) return false;
  std::string why;
  if (!p->open(cfg, &why)) {
    log_line("live snapshot off (FABTRACE_LIVE=0 silences this): %s", why.c_str());
    p->remove_file();
    delete p;
    return false;
  }
  // The thread must not take the program's signals: all blocked while it is
  // created (it inherits the mask), the caller's restored after.
  sigset_t all, old;
  sigfillset(&all);
  const bool masked = pthread_sigmask(SIG_SETMASK, &all, &old) == 0;
  const int rc = pthread_create(&p->thread_, nullptr, publisher_main, p);
  if (masked) pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    log_line("live snapshot off: cannot start its thread (%s)", std::strerror(rc));
    p->remove_file();
    delete p;
    return false;
  }
  pthread_setname_np(p->thread_, "fabtrace-live");
  {
    std::lock_guard<std::mutex> lk(p->run_mu_);
    p->started_ = true;
  }
  g_pub = p;
  pthread_atfork(before_fork, after_fork_parent, after_fork_child);
  return true;
}

void live_stop() {
  Publisher* p = g_pub;
  if (!p || p->owner_ != ::getpid()) return;
  p->stop_thread();
  p->remove_file();
}

bool live_running() { return g_pub && g_pub->map_ && g_pub->owner_ == ::getpid(); }

std::string live_path() { return live_running() ? g_pub->path_ : ""; }

bool live_publish_now() {
  if (!live_running()) return false;
  g_pub->publish();
  return true;
}

void live_pause(bool paused) {
  if (!live_running()) return;
  std::lock_guard<std::mutex> lk(g_pub->run_mu_);
  g_pub->paused_ = paused;
}

void live_set_interval_ms(uint64_t ms) {
  if (!live_running() || !ms) return;
  {
    std::lock_guard<std::mutex> lk(g_pub->run_mu_);
    g_pub->cfg_.interval_ms = ms;
  }
  g_pub->cv_.notify_all();
}

}  // namespace fabtrace

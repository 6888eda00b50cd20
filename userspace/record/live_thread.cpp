#include "userspace/record/live_thread.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/clock.h"
#include "common/kernel_explain.h"
#include "common/kernel_log.h"
#include "common/live_read.h"
#include "common/op_kinds.h"
#include "userspace/record/bpf_session.h"

namespace fabtrace {

bool LiveThread::open(const std::string& dir, std::string* why) { return pub_.open(dir, why); }

bool LiveThread::start(BpfSession* session, const std::string& proc_root) {
  if (!pub_.is_open() || thread_.joinable() || session->live_fd() < 0) return false;
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd_ < 0) return false;
  proc_root_ = proc_root;
  thread_ = std::thread([this, session] {
    tid_.store(static_cast<pid_t>(::syscall(SYS_gettid)), std::memory_order_release);
    run(session);
  });
  // Its id known before the collector lowers its threads (background()).
  while (tid() == 0) std::this_thread::yield();
  return true;
}

void LiveThread::known(pid_t pid, uid_t uid, const std::string& rank) {
  std::lock_guard<std::mutex> lk(mu_);
  Proc& p = procs_[pid];
  p.uid = uid;
  if (p.rank.empty()) p.rank = rank;
}

void LiveThread::close() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    if (::write(stop_fd_, &one, sizeof(one)) != sizeof(one)) {
      // Cannot fail on a fresh eventfd; were it to, the thread's wait has a bound.
    }
    thread_.join();
  }
  if (stop_fd_ >= 0) ::close(stop_fd_);
  stop_fd_ = -1;
  tid_.store(0, std::memory_order_release);
  pub_.close();  // the session's live files go with it
}

void LiveThread::run(BpfSession* session) {
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return;
  // Level-triggered: the ring is readable for as long as it holds records.
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.u32 = 0;
  ::epoll_ctl(ep, EPOLL_CTL_ADD, session->live_fd(), &e);
  e.data.u32 = 1;
  ::epoll_ctl(ep, EPOLL_CTL_ADD, stop_fd_, &e);
  const std::function<void(const void*, size_t)> sink = [this](const void* d, size_t n) {
    publish(d, n);
  };
  // Asleep until something comes (a second at most: a lost wakeup, none is
  // known, would delay the view, never stop it). While a file waits out the
  // rewrite limit, asleep until it is due, the ring unwatched: what comes
  // meanwhile joins that rewrite, one wakeup for all of it instead of one per
  // stall (on a node whose cores the ranks keep busy, each wakeup is taken
  // from a rank).
  for (;;) {
    bool stop = false;
    if (pub_.pending()) {
      pollfd p{stop_fd_, POLLIN, 0};
      const int n = ::poll(&p, 1, static_cast<int>(live::kMinRewriteMs));
      if (n < 0 && errno != EINTR) break;
      stop = n > 0;
    } else {
      epoll_event ev[2];
      const int n = ::epoll_wait(ep, ev, 2, 1000);
      if (n < 0 && errno != EINTR) break;
      for (int i = 0; i < n; ++i) stop |= ev[i].data.u32 == 1;
    }
    if (stop) break;
    session->drain_live(sink);
    std::string err;
    if (!pub_.flush(mono_ns(), &err) && !told_) {
      told_ = true;  // once: the session goes on, and so do later rewrites
      std::fprintf(stderr, "fabtrace record: live stalls for fabtrace top: %s\n", err.c_str());
    }
  }
  ::close(ep);
}

// A stall or slow op into its user's live stalls file, with the kernel's
// verdict (the same words as the report's "why:").
void LiveThread::publish(const void* data, size_t size) {
  ft_hdr h;
  if (!BpfSession::record_header(data, size, &h)) return;
  const pid_t pid = static_cast<pid_t>(h.pid);
  uid_t owner = 0;
  live::StallEvent e;
  {
    std::unique_lock<std::mutex> lk(mu_);
    const auto it = procs_.find(pid);
    if (it != procs_.end()) {
      owner = it->second.uid;
      e.rank = it->second.rank;
    } else {
      lk.unlock();
      if (!live::process_owner(pid, proc_root_, &owner)) return;  // gone: nobody to tell
      lk.lock();
      procs_[pid].uid = owner;
    }
  }
  e.pid = h.pid;
  e.tid = h.tid;
  const auto* rec = static_cast<const uint8_t*>(data);
  ft_breakdown w;
  if (h.kind == FT_EV_STALL && size >= sizeof(ft_stall)) {
    const auto st = kernel_log::record_as<ft_stall>(rec);
    e.cq = st.cq;
    w = st.w;
  } else if (h.kind == FT_EV_SLOW_OP && size >= sizeof(ft_op)) {
    const auto op = kernel_log::record_as<ft_op>(rec);
    e.slow_op = true;
    e.op = op.op < static_cast<uint32_t>(kOpKindCount) ? op_name(static_cast<OpKind>(op.op)) : "?";
    e.bytes = op.bytes;
    w = op.w;
  } else {
    return;
  }
  e.cause = breakdown_cause(w);
  e.why = breakdown_verdict(w);
  e.end_mono_ns = w.end;
  e.dur_ns = w.end > w.start ? w.end - w.start : 0;
  const uint64_t now_m = mono_ns();
  e.end_real_ns = real_ns() - (now_m > e.end_mono_ns ? now_m - e.end_mono_ns : 0);
  pub_.add(owner, e);
}

}  // namespace fabtrace

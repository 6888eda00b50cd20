// LinkRow's extra part (job.h): held only by the rows that have one.
#include <cstring>

#include "userspace/report/job/job.h"

namespace fabtrace::report {

// Never destroyed: rows may outlive static destruction.
const LinkExtra& LinkRow::no_extra() {
  static const LinkExtra* const e = new LinkExtra;
  return *e;
}

const LinkExtra& LinkRow::shared_extra(int which) {
  static const LinkExtra* const e[2] = {[] {
                                          auto* x = new LinkExtra;
                                          x->posted.set_unknown(kPostedNotRead);
                                          return x;
                                        }(),
                                        [] {
                                          auto* x = new LinkExtra;
                                          x->posted.set_unknown(kPostedNoTimeline);
                                          return x;
                                        }()};
  return *e[which];
}

LinkExtra* LinkRow::own_extra() {
  if (!owns_extra()) {
    const LinkExtra* shared = extra();
    auto* mine = shared ? new LinkExtra(*shared) : new LinkExtra;
    extra_ = reinterpret_cast<uintptr_t>(mine) | kOwned | (extra_ & kKernelLogged);
  }
  return const_cast<LinkExtra*>(extra());
}

void LinkRow::set_posted_unknown(std::string_view why) {
  const int shared = why == kPostedNotRead ? 0 : why == kPostedNoTimeline ? 1 : -1;
  const LinkExtra* e = extra();
  // Nothing but a reason (or nothing) so far: the shared one will do.
  if (shared >= 0 && (!e || !owns_extra())) {
    extra_ = reinterpret_cast<uintptr_t>(&shared_extra(shared)) | (extra_ & kKernelLogged);
    return;
  }
  own_extra()->posted.set_unknown(why);
}

void LinkRow::clear_posted() {
  if (owns_extra()) {
    own_extra()->posted = PostEvidence();
    return;
  }
  extra_ &= kKernelLogged;
}

void LinkRow::set_kernel(bool logged, uint64_t retrans, uint64_t drops) {
  extra_ = (extra_ & ~kKernelLogged) | (logged ? kKernelLogged : 0);
  if (retrans || drops || owns_extra()) {
    LinkExtra* e = own_extra();
    e->retrans = retrans;
    e->drops = drops;
  }
}

}  // namespace fabtrace::report

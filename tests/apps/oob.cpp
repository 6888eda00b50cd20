#include "oob.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace ftapp {
namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

void put32(std::string* s, uint32_t v) { s->append(reinterpret_cast<const char*>(&v), 4); }

}  // namespace

Oob::Oob(int fd) : fd_(fd) {}

Oob::~Oob() {
  if (fd_ >= 0) ::close(fd_);
}

void Oob::begin_family(uint32_t fam) {
  fam_ = fam;
  aborted_sent_ = false;
}

void Oob::send_frame(Kind kind, const std::string& step, const std::string& payload) {
  if (dead_) throw FamilyError("out-of-band channel to peer is closed");
  std::string body;
  put32(&body, fam_);
  body.push_back(static_cast<char>(kind));
  put32(&body, static_cast<uint32_t>(step.size()));
  body += step;
  body += payload;
  std::string frame;
  put32(&frame, static_cast<uint32_t>(body.size()));
  frame += body;
  size_t off = 0;
  while (off < frame.size()) {
    ssize_t n = ::send(fd_, frame.data() + off, frame.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      dead_ = true;
      throw FamilyError(std::string("out-of-band send failed: ") + std::strerror(errno));
    }
    off += static_cast<size_t>(n);
  }
}

void Oob::send(const std::string& step, const std::string& payload) {
  send_frame(kData, step, payload);
}

void Oob::send_abort(const std::string& reason) {
  if (aborted_sent_ || dead_) return;
  aborted_sent_ = true;
  try {
    send_frame(kAbort, "abort", reason);
  } catch (const FamilyError&) {
  }
}

bool Oob::read_full(void* buf, size_t len, int timeout_ms) {
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  char* p = static_cast<char*>(buf);
  size_t got = 0;
  while (got < len) {
    pollfd pfd{fd_, POLLIN, 0};
    int pr = ::poll(&pfd, 1, got == 0 ? timeout_ms : remaining_ms(deadline) + 1000);
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) {
      if (got == 0) return false;
      dead_ = true;
      throw FamilyError("out-of-band channel: truncated frame");
    }
    ssize_t n = ::recv(fd_, p + got, len - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      dead_ = true;
      throw FamilyError("out-of-band channel: peer closed the connection");
    }
    got += static_cast<size_t>(n);
  }
  return true;
}

bool Oob::read_frame(Frame* f, int timeout_ms) {
  if (dead_) throw FamilyError("out-of-band channel to peer is closed");
  uint32_t len = 0;
  if (!read_full(&len, 4, timeout_ms)) return false;
  if (len < 9 || len > (1u << 24)) {
    dead_ = true;
    throw FamilyError("out-of-band channel: bad frame length");
  }
  std::string body(len, '\0');
  read_full(&body[0], len, 5000);
  uint32_t steplen = 0;
  std::memcpy(&f->fam, body.data(), 4);
  f->kind = static_cast<Kind>(body[4]);
  std::memcpy(&steplen, body.data() + 5, 4);
  if (9 + static_cast<size_t>(steplen) > body.size()) {
    dead_ = true;
    throw FamilyError("out-of-band channel: bad frame");
  }
  f->step = body.substr(9, steplen);
  f->payload = body.substr(9 + steplen);
  return true;
}

void Oob::check_abort() {
  for (;;) {
    Frame f;
    if (!read_frame(&f, 0)) break;
    if (f.fam < fam_) continue;
    pending_.push_back(std::move(f));
  }
  for (const Frame& f : pending_) {
    if (f.fam == fam_ && f.kind == kAbort) throw PeerAbort(f.payload);
  }
}

std::string Oob::recv(const std::string& step, int timeout_ms,
                      const std::function<void()>& progress) {
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->fam < fam_) {
        it = pending_.erase(it);
        continue;
      }
      if (it->fam == fam_ && it->kind == kAbort) throw PeerAbort(it->payload);
      if (it->fam == fam_ && it->kind == kData && it->step == step) {
        std::string payload = std::move(it->payload);
        pending_.erase(it);
        return payload;
      }
      ++it;
    }
    int left = remaining_ms(deadline);
    if (left <= 0) {
      throw FamilyError("timeout after " + std::to_string(timeout_ms / 1000) +
                        " s waiting for peer step '" + step + "'");
    }
    if (progress) progress();
    Frame f;
    if (read_frame(&f, progress ? 0 : (left < 100 ? left : 100))) {
      if (f.fam >= fam_) pending_.push_back(std::move(f));
    }
  }
}

bool Oob::end_family(const std::string& payload, int timeout_ms, std::string* peer_payload) {
  if (dead_) return false;
  try {
    send_frame(kEnd, "end", payload);
    auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      for (auto it = pending_.begin(); it != pending_.end();) {
        if (it->fam < fam_ || (it->fam == fam_ && it->kind != kEnd)) {
          it = pending_.erase(it);
          continue;
        }
        if (it->fam == fam_ && it->kind == kEnd) {
          if (peer_payload != nullptr) *peer_payload = it->payload;
          pending_.erase(it);
          return true;
        }
        ++it;
      }
      int left = remaining_ms(deadline);
      if (left <= 0) return false;
      Frame f;
      if (read_frame(&f, left < 100 ? left : 100)) {
        if (f.fam >= fam_) pending_.push_back(std::move(f));
      }
    }
  } catch (const FamilyError&) {
    return false;
  }
}

}  // namespace ftapp

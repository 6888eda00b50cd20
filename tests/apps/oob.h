// Out-of-band channel between the two ranks: a socketpair created before fork.
//
// Frames carry the number of the test family they belong to, so stale frames of a
// family that ended early (after an abort) are dropped instead of confusing the next.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <stdexcept>
#include <string>

namespace ftapp {

// Local fatal error inside a test family (setup failure, timeout, refused call ...).
class FamilyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Both ranks found at run time that the provider lacks what the family needs.
class FamilyUnsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The peer rank reported a fatal error in the current family.
class PeerAbort : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Oob {
 public:
  explicit Oob(int fd);
  ~Oob();
  Oob(const Oob&) = delete;
  Oob& operator=(const Oob&) = delete;

  void begin_family(uint32_t fam);
  uint32_t family() const { return fam_; }

  void send(const std::string& step, const std::string& payload = std::string());
  // Waits up to timeout_ms for the peer's frame `step` of the current family, calling
  // progress() between polls. Throws PeerAbort / FamilyError.
  std::string recv(const std::string& step, int timeout_ms,
                   const std::function<void()>& progress = std::function<void()>());
  // Non-blocking: pulls available frames; throws PeerAbort if the peer aborted.
  void check_abort();
  void send_abort(const std::string& reason);
  // Exchanges "end" frames (carrying `payload`), dropping everything else of this
  // family. Returns false on timeout / dead peer; peer's payload in *peer_payload.
  bool end_family(const std::string& payload, int timeout_ms, std::string* peer_payload);
  bool dead() const { return dead_; }

 private:
  enum Kind : uint8_t { kData = 0, kAbort = 1, kEnd = 2 };
  struct Frame {
    uint32_t fam = 0;
    Kind kind = kData;
    std::string step;
    std::string payload;
  };
  void send_frame(Kind kind, const std::string& step, const std::string& payload);
  // Reads one frame if one arrives within timeout_ms. Throws FamilyError on EOF.
  bool read_frame(Frame* f, int timeout_ms);
  bool read_full(void* buf, size_t len, int timeout_ms);

  int fd_;
  uint32_t fam_ = 0;
  bool dead_ = false;
  bool aborted_sent_ = false;
  std::deque<Frame> pending_;
};

}  // namespace ftapp

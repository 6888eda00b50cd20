// The latest stalls of a `fabtrace record` session, while it runs, for
// `fabtrace top` and `fabtrace metrics`.
//
// The collector already receives each stall and slow op with its kernel
// breakdown (FT_EV_STALL, FT_EV_SLOW_OP): it keeps the latest kRecentStalls of
// each user's processes and their counts by cause, and rewrites that user's
// file when something new came in (at most every kMinRewriteMs): a new file
// under a temporary name, then rename(2) over the old one, so a reader reads a
// whole file or the previous one. No socket, no map shared with users, no
// reader can slow the session.
//
// Where: kRunDir, a directory of root's (0755, never a link, not writable by
// others; created by the session). In it:
//   session        the running session: its pid and start time (root's, 0644)
//   stalls.u<UID>  the stalls of UID's processes (given to UID, 0400: theirs
//                  to read and no one else's but root's)
// Both are removed when the session ends. A reader checks that the directory
// and the session file are root's, that a stalls file's owner is the user its
// name says, and, as root, that an event's process is that user's (the file
// is the user's own, so it says nothing about anyone else's processes).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fabtrace {

class JsonWriter;

namespace live {

constexpr const char* kRunDir = "/run/fabtrace-live";
constexpr const char* kSessionFileName = "session";
constexpr size_t kRecentStalls = 32;  // per user
// Past kRecentStalls, the shortest gives way but for the newest kNewestKept,
// and anything that ended kLongestKeptMs before the newest goes first.
constexpr size_t kNewestKept = 8;
constexpr uint64_t kLongestKeptMs = 30000;
// A user's file, at most this often: `fabtrace top` reads it each second.
constexpr uint64_t kMinRewriteMs = 500;
constexpr size_t kMaxStallsFileBytes = 1 << 20;

std::string stalls_file_name(uid_t uid);  // "stalls.u1000"
bool parse_stalls_file_name(const std::string& name, uid_t* uid);

struct StallEvent {
  uint32_t pid = 0, tid = 0;
  std::string rank;
  bool slow_op = false;  // else a CQ's poll gap
  uint64_t cq = 0;       // a stall's CQ#n
  std::string op;        // a slow op's function ("fi_send")
  uint64_t bytes = 0;    // and its size
  uint64_t end_mono_ns = 0, end_real_ns = 0, dur_ns = 0;
  std::string cause;  // breakdown_cause(): one word of a fixed set
  std::string why;    // breakdown_verdict()
};

// A process's stalls and slow ops by cause, since the session started.
struct CauseCount {
  uint32_t pid = 0;
  std::string rank, cause;
  uint64_t stalls = 0, slow_ops = 0;
};

// One user's file.
struct StallsDoc {
  uint64_t session_pid = 0;
  uint64_t updated_real_ns = 0, updated_mono_ns = 0;
  // Oldest first, at most kRecentStalls: the newest, and the longest of the
  // last kLongestKeptMs.
  std::vector<StallEvent> recent;
  std::vector<CauseCount> counts;
};

std::string stalls_to_json(const StallsDoc& d);
// One event as a JSON object, the stalls file's and `fabtrace top --json`'s
// (which leaves out the monotonic end: it is of the session's node).
void write_stall_event(JsonWriter& w, const StallEvent& e, bool with_mono);
// False with *why for anything but a whole document within the bounds.
bool stalls_from_json(const std::string& text, StallsDoc* d, std::string* why);

// `e` into a user's list (oldest first), which then keeps at most
// kRecentStalls: past that, the oldest that ended more than kLongestKeptMs
// before the newest gives way, else the shortest but for the kNewestKept newest.
void add_recent(std::vector<StallEvent>* recent, const StallEvent& e);

// The collector's side.
class StallsPublisher {
 public:
  StallsPublisher() = default;
  ~StallsPublisher();
  StallsPublisher(const StallsPublisher&) = delete;
  StallsPublisher& operator=(const StallsPublisher&) = delete;

  // Creates (or checks) `dir` and writes the session file. False with *why:
  // the session runs on without live stalls.
  bool open(const std::string& dir, std::string* why);
  bool is_open() const { return dirfd_ >= 0; }
  void add(uid_t uid, const StallEvent& e);
  // Rewrites the files of users with new events, each at most every
  // kMinRewriteMs. False with *error (one line) when a write failed.
  bool flush(uint64_t now_mono_ns, std::string* error);
  bool pending() const { return !dirty_.empty(); }  // a file flush() held back
  // Removes every file this session wrote (at its end).
  void close();

 private:
  bool write(uid_t uid, StallsDoc& d, std::string* error);

  int dirfd_ = -1;
  std::map<uid_t, StallsDoc> docs_;
  std::map<uid_t, uint64_t> written_at_;
  std::set<uid_t> dirty_;
};

// The reading side.
struct SessionInfo {
  long pid = 0;
  uint64_t started_real_ns = 0;
};
// The running session, when its file is root's and its process alive (the one
// that wrote it: its start time). False when there is none.
bool read_session(const std::string& dir, const std::string& proc_root, SessionInfo* s);
// The stalls files the caller may read (its own; root: every user's), by
// user. Files that fail a check are left out, their reason in *problems.
void read_stalls(const std::string& dir, uid_t caller, std::map<uid_t, StallsDoc>* out,
                 std::vector<std::string>* problems);

}  // namespace live
}  // namespace fabtrace

// What `fabtrace top` and `fabtrace metrics` show: the node's live snapshots
// (common/live_read.h) the caller may see, with their rates, filtered and
// sorted, and a running `fabtrace record` session's latest stalls
// (common/live_stalls.h), joined to the processes they belong to.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/live_read.h"
#include "common/live_stalls.h"

namespace fabtrace {
namespace live {

// Only what matches: empty fields match everything. rank: the rank's text
// exactly; link: a substring of "local -> remote"; op: the op's name
// ("fi_send") or a substring of it ("send"); pid: that process (0: any).
struct Filter {
  std::string rank, link, op;
  pid_t pid = 0;
  bool empty() const { return rank.empty() && link.empty() && op.empty() && !pid; }
};

enum class SortKey { kRank, kOps, kBytes, kP99, kGap };
const char* sort_key_name(SortKey k);  // "rank", "ops", "mb", "p99", "gap"
bool parse_sort_key(const std::string& s, SortKey* k);

struct LinkView {
  std::string local, remote, op;
  bool recv = false;
  double ops_s = 0, mb_s = 0;  // over the snapshot's last interval
  uint64_t p50_iv_ns = 0, p99_iv_ns = 0;
  const Link* row = nullptr;  // the snapshot's row (whole-run figures)
};

struct CqView {
  uint64_t id = 0;
  uint64_t gap_now_ns = 0;  // the longer of the interval's longest gap and the one still open
  bool open_gap = false;    // the longest is the gap since its latest poll
  const Cq* row = nullptr;
};

struct ProcessView {
  Snapshot snap;
  char state = 0;     // /proc/PID/stat ('T': stopped)
  double age_s = 0;   // since the snapshot was published
  bool late = false;  // no snapshot for 3 intervals: the process is not running its publisher
  double ops_s = 0, mb_s = 0;   // over the matching links
  uint64_t slowest_p99_ns = 0;  // the matching non-receive links' largest interval p99
  std::string slowest_link;     // "local -> remote fi_send"
  uint64_t worst_gap_ns = 0;    // its CQs' largest gap now
  uint64_t worst_gap_cq = 0;
  bool worst_gap_open = false;
  std::vector<LinkView> links;  // matching, busiest first
  std::vector<CqView> cqs;
};

struct NodeView {
  uint64_t now_mono_ns = 0, now_real_ns = 0;
  std::vector<ProcessView> procs;
  bool session = false;  // a `fabtrace record` session runs on the node
  SessionInfo session_info;
  std::vector<StallEvent> stalls;                      // the listed processes' latest, newest first
  std::map<uint32_t, std::vector<CauseCount>> counts;  // by pid
  std::vector<Skipped> skipped;
  std::vector<std::string> problems;
};

struct GatherOptions {
  ReadOptions read;
  std::string run_dir = kRunDir;  // the session's live stalls (common/live_stalls.h)
  Filter filter;
  SortKey sort = SortKey::kRank;
};

// Reads everything now. False with *error when the snapshots' directory
// cannot be read.
bool gather(const GatherOptions& opt, NodeView* v, std::string* error);
void sort_view(NodeView* v, SortKey key);

// One screen as lines (`fabtrace top`, and --once): at most `width` columns;
// `keys`: the key help line at the bottom.
std::vector<std::string> view_lines(const NodeView& v, const GatherOptions& opt, size_t width,
                                    bool keys);
// --once --json.
std::string view_json(const NodeView& v, const GatherOptions& opt);

// "12.3 us", "1.002 s"; "-" for 0 when `dash`.
std::string short_ns(uint64_t ns, bool dash = true);

}  // namespace live
}  // namespace fabtrace

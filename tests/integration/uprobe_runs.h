// fi_pingpong under `fabtrace record --uprobes` sessions, for the Uprobes
// tests (test_uprobes_*.cpp): the program started and its own counts read, a
// process's rows read back from the kernel log, and the whole-run check of
// fi_pingpong that the tests of each provider and of each attach mode share.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tests/integration/record_session.h"

namespace fabtrace::test {

// fi_pingpong's own result line ("4k 200 =200 1.5m 2.77s 0.59 6930.36 0.00"):
// the iterations it counted and its time per transfer (half a round trip).
struct PingpongResult {
  uint64_t iters = 0;
  double usec_per_xfer = 0;
  bool ok = false;
};
PingpongResult pingpong_result(const std::string& out);

// One process's uprobe_ops rows, by op name ("fi_send", "cq_read", ...), its
// links' rows of one op summed (a row per endpoint and peer in the log): counts
// added, the extremes kept, the mean weighted by completions.
std::map<std::string, Event> uprobe_rows_of(const std::vector<Event>& ev, int pid);

// A session's row's accepted calls (issued and not refused).
uint64_t accepted(const std::map<std::string, Event>& rows, const std::string& op);
uint64_t field(const std::map<std::string, Event>& rows, const std::string& op, const char* k);

// The CPU time (user + system) process `pid` has used, in seconds.
double cpu_seconds(int pid);

// fi_pingpong's server and client (without the preload) over `prov`, `size`
// byte messages, `ep` endpoints ("rdm", "msg", "dgram"), their output in
// DIR/server.log and DIR/client.log.
struct Pingpong {
  int server = -1, client = -1;
};
// With `preload`, both run under the preload, their per-rank reports in DIR.
Pingpong start_pingpong(const std::string& dir, const char* prov, bool tagged, int iters,
                        const char* ep = "rdm", bool preload = false, int size = 4096);

// A `fabtrace record --uprobes` session over a whole fi_pingpong run (server and
// client started after it, neither with the preload): per process, the kernel's
// pairing must give exactly the program's own traffic. fi_pingpong (libfabric's
// util/pingpong.c) posts one receive before its loop, then per iteration one
// send (fi_send / fi_tsend: 4 KiB is not below any provider's inject size)
// and one receive completed and posted again; at the end one fi_sendmsg /
// fi_tsendmsg ("fin") and the last receive completed. So each side has
// `iters` sends, 1 sendmsg and iters + 1 receives, all completed. On DGRAM
// endpoints (run_pingpong_dgram) it posts one receive more before its loop,
// "to avoid lacking a posted receive in the finalize": iters + 2 receives, of
// which iters + 1 complete and one stays posted when it closes the endpoint
// (pending: its report's one unfinished receive). A datagram lost on the way
// would leave fi_pingpong waiting for it forever (it has no retry): a run that
// ends with its own counts "=iters" lost none. With `providers`, the session
// probes those (--uprobe-providers) instead of its default ones; `more` are
// further arguments of record's. The session's output is returned through
// *record_out. `size`: the message size (fi_pingpong sends a message shorter
// than the provider's inject size with fi_inject, which has no completion).
void uprobes_pingpong(const char* prov, bool tagged, const char* ep = "rdm",
                      const char* providers = nullptr, int iters = 300,
                      std::vector<std::string> more = {}, std::string* record_out = nullptr,
                      int size = 4096);

// The site `what` ("tcp;ofi_rxm msg.send") was attached and hit, as record's
// log says: "WHAT: N hits", or "WHAT (FUNCTION): N hits" where symbols named it.
void expect_hit(const std::string& record_log, const std::string& what);

}  // namespace fabtrace::test

// `fabtrace record --uprobes` over whole fi_pingpong runs (server and client
// started after the session, neither with the preload), on each provider and
// endpoint type: per process, the kernel's pairing must give exactly the
// program's own traffic, and its links the names the preload gives them.
//
// Ground truth is what the traced programs count themselves: fi_pingpong's
// iterations and time per transfer (uprobe_runs.h), never the kernel rows'
// own arithmetic.
#include <gtest/gtest.h>

#include "tests/integration/record_session.h"
#include "tests/integration/uprobe_runs.h"

namespace fabtrace::test {
namespace {

TEST(Uprobes, PingpongTcpRxmMsg) {
  REQUIRE_SESSION_SLOT();
  uprobes_pingpong("tcp;ofi_rxm", false);
}

TEST(Uprobes, PingpongTcpRxmTagged) {
  REQUIRE_SESSION_SLOT();
  uprobes_pingpong("tcp;ofi_rxm", true);
}

TEST(Uprobes, PingpongShmMsg) {
  REQUIRE_SESSION_SLOT();
  uprobes_pingpong("shm", false);
}

TEST(Uprobes, PingpongShmTagged) {
  REQUIRE_SESSION_SLOT();
  uprobes_pingpong("shm", true);
}

// Other providers, each probed alone (--uprobe-providers): udp;ofi_rxd (RDM
// over udp), sockets (RDM and MSG endpoints), tcp's own MSG endpoint.
TEST(Uprobes, PingpongUdpRxdMsg) {
  REQUIRE_SESSION_SLOT();
  uprobes_pingpong("udp;ofi_rxd", false, "rdm", "udp;ofi_rxd");
}

TEST(Uprobes, PingpongUdpRxdTagged) {
  REQUIRE_SESSION_SLOT();
  uprobes_pingpong("udp;ofi_rxd", true, "rdm", "udp;ofi_rxd");
}

// The sockets provider progresses in a thread of its own and answers slowly
// here (tens of ms a round trip): fewer iterations.
TEST(Uprobes, PingpongSocketsMsg) {
  REQUIRE_SESSION_SLOT();
  uprobes_pingpong("sockets", false, "rdm", "sockets", 60);
}

TEST(Uprobes, PingpongSocketsTagged) {
  REQUIRE_SESSION_SLOT();
  uprobes_pingpong("sockets", true, "rdm", "sockets", 60);
}

TEST(Uprobes, PingpongSocketsMsgEndpoint) {
  REQUIRE_SESSION_SLOT();
  uprobes_pingpong("sockets", false, "msg", "sockets", 60);
}

TEST(Uprobes, PingpongTcpMsgEndpoint) {
  REQUIRE_SESSION_SLOT();
  uprobes_pingpong("tcp", false, "msg", "tcp");
}

// udp's own FI_EP_DGRAM endpoint (its functions are not those udp;ofi_rxd's
// RDM tables hold): 1472-byte messages, udp's largest (and its inject size:
// fi_pingpong sends a shorter one with fi_inject, without a completion).
TEST(Uprobes, PingpongUdpDgram) {
  REQUIRE_SESSION_SLOT();
  uprobes_pingpong("udp", false, "dgram", "udp", 300, {}, nullptr, 1472);
}

}  // namespace
}  // namespace fabtrace::test

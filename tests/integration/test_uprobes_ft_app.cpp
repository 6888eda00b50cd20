// `fabtrace record --uprobes` on ft_app's families (both ranks without the
// preload): message sizes, RMA and atomics, one process with several links.
// Ground truth: each rank's own result file (the ops it issued, those refused
// and issued again, the sizes it received, the links it used).
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/integration/harness.h"
#include "tests/integration/record_session.h"
#include "tests/integration/uprobe_runs.h"

namespace fabtrace::test {
namespace {

// ---- --uprobes: RMA and atomics (ep->rma, ep->atomic).

// The ops of the RMA and atomic tables, by the names ft_app and the kernel log
// both use, and the bytes one of them moves in ft_app's families: rma moves
// --size bytes per op (its iovec variants split the same bytes), atomic one
// FI_UINT64 per op (count 1 x 8 bytes).
const std::set<std::string> kRmaOps = {"fi_write",     "fi_writev",       "fi_writemsg",
                                       "fi_writedata", "fi_read",         "fi_readv",
                                       "fi_readmsg",   "fi_inject_write", "fi_inject_writedata"};
const std::set<std::string> kAtomicOps = {
    "fi_atomic",          "fi_atomicv",          "fi_atomicmsg",       "fi_inject_atomic",
    "fi_fetch_atomic",    "fi_fetch_atomicv",    "fi_fetch_atomicmsg", "fi_compare_atomic",
    "fi_compare_atomicv", "fi_compare_atomicmsg"};

// Runs ft_app with `args` (both ranks, no preload, result files dir/app*)
// under a `record --uprobes` session of its own in `dir`, stopped once the
// program ended; *app_rc is the program's exit status.
void ft_app_under_uprobes(const std::string& dir, std::vector<std::string> args, int* app_rc) {
  const int rec = start_uprobe_session(dir, "record.log");
  ASSERT_GT(rec, 0) << slurp(dir + "/record.log");
  args.insert(args.begin(), FT_APP);
  args.insert(args.end(), {"--result", dir + "/app"});
  const int app = spawn(args, {}, dir + "/app.log", false);
  ASSERT_GT(app, 0);
  *app_rc = wait_for(app, 240);
  kill(rec, SIGINT);
  ASSERT_EQ(wait_for(rec, 120), 0) << slurp(dir + "/record.log");
}

// ft_app's sizes family over `prov` without the preload, under `record
// --uprobes`: rank 0 sends messages of 0, 1, 64, 256, 1000 and 4096 bytes,
// --count of each, through fi_send and fi_tsend, into receives posted with
// 4096 bytes. Ground truth: the sizes the receiving program got, by its own
// plan (received_sizes: size -> count), and the ops each rank issued. The
// sender's per-rank report must have one row per size (each its own size
// class), its count the messages of that size, as the preload's report has;
// the receiver's rows too, sized as the messages arrived (its CQ entries'
// len: ft_app's CQs are FI_CQ_FORMAT_TAGGED), as the preload files them.
void uprobes_sizes(const char* prov) {
  const std::string dir = make_temp_dir("rec-up-sizes");
  int app_rc = -1;
  ASSERT_NO_FATAL_FAILURE(ft_app_under_uprobes(
      dir, {"--prov", prov, "--test", "sizes", "--count", "20", "--size", "4096"}, &app_rc));
  if (app_rc == 77) GTEST_SKIP() << slurp(dir + "/app.log");
  ASSERT_EQ(app_rc, 0) << slurp(dir + "/app.log");
  const nlohmann::json sender = load_json(dir + "/app.r0.json");
  const nlohmann::json receiver = load_json(dir + "/app.r1.json");
  ASSERT_TRUE(sender.at("ok").get<bool>() && receiver.at("ok").get<bool>());
  // (op, bytes) -> count, and which rows are sized as posted, of a process's report.
  auto rows_of = [&dir](int pid, std::map<std::pair<std::string, uint64_t>, uint64_t>* rows,
                        std::set<std::string>* posted) {
    const auto reports = list_files(dir, "fabtrace.", ".p" + std::to_string(pid) + ".json");
    ASSERT_EQ(reports.size(), 1u) << pid;
    const nlohmann::json rep = load_json(reports.front());
    EXPECT_EQ(rep.at("source"), "uprobes");
    for (const auto& l : rep.at("links"))
      for (const auto& o : l.at("ops")) {
        const std::string op = o.at("op").get<std::string>();
        (*rows)[{op, o.at("bytes").get<uint64_t>()}] += o.at("count").get<uint64_t>();
        if (o.value("size_unknown", false)) posted->insert(op);
      }
  };
  std::map<std::pair<std::string, uint64_t>, uint64_t> sent, received;
  std::set<std::string> sent_posted, received_posted;
  ASSERT_NO_FATAL_FAILURE(rows_of(sender.at("pid").get<int>(), &sent, &sent_posted));
  ASSERT_NO_FATAL_FAILURE(rows_of(receiver.at("pid").get<int>(), &received, &received_posted));
  EXPECT_TRUE(sent_posted.empty());
  EXPECT_TRUE(received_posted.empty());
  EXPECT_EQ(receiver.at("cq_format").get<std::string>(), "tagged");
  size_t kinds = 0;
  for (const auto& [recv_op, sizes] : receiver.at("received_sizes").items()) {
    const std::string send_op = recv_op == "fi_trecv" ? "fi_tsend" : "fi_send";
    SCOPED_TRACE(send_op);
    ++kinds;
    std::map<uint64_t, uint64_t> want, got_sent, got_received;
    for (const auto& [size, n] : sizes.items()) want[std::stoull(size)] = n.get<uint64_t>();
    for (const auto& [key, n] : sent)
      if (key.first == send_op) got_sent[key.second] = n;
    for (const auto& [key, n] : received)
      if (key.first == recv_op) got_received[key.second] = n;
    EXPECT_EQ(want.size(), 6u);
    EXPECT_EQ(got_sent, want);
    EXPECT_EQ(got_received, want);
  }
  EXPECT_GT(kinds, 0u) << receiver.dump();
}

TEST(Uprobes, SizesTcpRxm) {
  REQUIRE_SESSION_SLOT();
  uprobes_sizes("tcp;ofi_rxm");
}

TEST(Uprobes, SizesShm) {
  REQUIRE_SESSION_SLOT();
  uprobes_sizes("shm");
}

// ft_app's `family` (rma or atomic) over `prov`, both ranks without the
// preload, under `record --uprobes`. Ground truth: each rank's own result file
// (its pid, the ops it issued - accepted - and those refused with -FI_EAGAIN
// and issued again). Per process the kernel must count the same calls,
// refusals and completions of every RMA/atomic op, with the bytes they moved,
// none pending or unmatched, every CQ entry either paired or a peer's RMA
// landing (fi_writedata's remote CQ data at the rma target).
void uprobes_ft_app(const char* prov, const char* family) {
  const std::string dir = make_temp_dir("rec-up-rma");
  const uint64_t count = 20, size = 4096;
  int app_rc = -1;
  ASSERT_NO_FATAL_FAILURE(
      ft_app_under_uprobes(dir,
                           {"--prov", prov, "--test", family, "--count", std::to_string(count),
                            "--size", std::to_string(size)},
                           &app_rc));
  if (app_rc == 77) GTEST_SKIP() << slurp(dir + "/app.log");
  ASSERT_EQ(app_rc, 0) << slurp(dir + "/app.log");
  const std::string record_log = slurp(dir + "/record.log");
  bool ok = false;
  const std::vector<Event> ev = export_kernel(kernel_log_of(dir), &ok);
  ASSERT_TRUE(ok);
  const bool rma = std::string(family) == "rma";
  const std::set<std::string>& ops = rma ? kRmaOps : kAtomicOps;
  const uint64_t op_bytes = rma ? size : sizeof(uint64_t);
  uint64_t writedata_issued = 0;
  std::map<int, nlohmann::json> by_rank;
  for (const int rank : {0, 1})
    by_rank[rank] = load_json(dir + "/app.r" + std::to_string(rank) + ".json");
  for (const int rank : {0, 1}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const nlohmann::json& own = by_rank[rank];
    ASSERT_TRUE(own.at("ok").get<bool>()) << own.dump();
    const int pid = own.at("pid").get<int>();
    const auto rows = uprobe_rows_of(ev, pid);
    std::map<std::string, uint64_t> issued, eagain;
    for (const auto& [fn, n] : own.at("issued").items())
      if (ops.count(fn)) issued[fn] = n.get<uint64_t>();
    for (const auto& [fn, n] : own.at("eagain").items())
      if (ops.count(fn)) eagain[fn] = n.get<uint64_t>();
    if (rank == 0) {
      // The initiator issued every variant the provider offers, count each.
      ASSERT_FALSE(issued.empty()) << own.dump();
      for (const auto& [fn, n] : issued) EXPECT_EQ(n, count) << fn;
      writedata_issued = issued.count("fi_writedata") ? issued.at("fi_writedata") : 0;
    }
    for (const std::string& op : ops) {
      SCOPED_TRACE(op);
      const uint64_t n = issued.count(op) ? issued.at(op) : 0;
      const uint64_t again = eagain.count(op) ? eagain.at(op) : 0;
      if (n + again == 0) {
        EXPECT_EQ(rows.count(op), 0u) << record_log;
        continue;
      }
      ASSERT_TRUE(rows.count(op)) << record_log;
      const Event& r = rows.at(op);
      EXPECT_EQ(r.num("calls"), n + again);
      EXPECT_EQ(r.num("refused"), again);
      // An inject has no completion (and the kernel does not follow it further).
      const uint64_t completed = op.rfind("fi_inject", 0) == 0 ? 0 : n;
      EXPECT_EQ(r.num("completions"), completed);
      EXPECT_EQ(r.num("bytes"), completed * op_bytes);
      EXPECT_EQ(r.num("pending"), 0u);
      EXPECT_EQ(r.num("unmatched"), 0u);
      EXPECT_EQ(r.num("by_order"), 0u);  // ft_app passes a context with every op
      if (completed) {
        EXPECT_GT(r.num("min_ns"), 0u);
      }
    }
  }
  for (const int rank : {0, 1}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const auto rows = uprobe_rows_of(ev, by_rank[rank].at("pid").get<int>());
    ASSERT_TRUE(rows.count("cq_read")) << record_log;
    const Event& polls = rows.at("cq_read");
    uint64_t paired = 0;
    for (const auto& [op, r] : rows)
      if (op != "cq_read") paired += r.num("completions");
    EXPECT_EQ(polls.num("unmatched"), 0u);
    EXPECT_EQ(polls.num("unwalked"), 0u);
    EXPECT_EQ(polls.num("early"), 0u);
    // The target's remote CQ data entries: one per fi_writedata of the initiator.
    EXPECT_EQ(polls.num("remote"), rank == 1 ? writedata_issued : 0u);
    EXPECT_EQ(polls.num("entries"), paired + polls.num("remote"));
  }
  // The sites the traffic went through were attached and hit.
  for (const std::string& what : {std::string(prov) + (rma ? " rma.write" : " atomic.write"),
                                  std::string(prov) + (rma ? " rma.read" : " atomic.compwrite")})
    ASSERT_NO_FATAL_FAILURE(expect_hit(record_log, what));
}

TEST(Uprobes, RmaTcpRxm) {
  REQUIRE_SESSION_SLOT();
  uprobes_ft_app("tcp;ofi_rxm", "rma");
}

TEST(Uprobes, AtomicTcpRxm) {
  REQUIRE_SESSION_SLOT();
  uprobes_ft_app("tcp;ofi_rxm", "atomic");
}

TEST(Uprobes, RmaShm) {
  REQUIRE_SESSION_SLOT();
  uprobes_ft_app("shm", "rma");
}

TEST(Uprobes, AtomicShm) {
  REQUIRE_SESSION_SLOT();
  uprobes_ft_app("shm", "atomic");
}

// ---- --uprobes: one process, several links.

// ft_app's multiep family, both ranks without the preload, under `record
// --uprobes`: each rank opens four endpoints, and endpoint i sends --count
// messages to the other rank's endpoint i and posts --count receives from any
// source. Ground truth: each rank's own result file, which says how many ops
// it issued on each link, naming the link as the preload would (its endpoint's
// address and its peer's, printed by the provider's fi_av_straddr; "(any)").
// The per-rank report record writes for the process must have exactly those
// links with exactly those counts: one row per peer.
void uprobes_multiep(const char* prov) {
  const std::string dir = make_temp_dir("rec-up-multiep");
  int app_rc = -1;
  ASSERT_NO_FATAL_FAILURE(ft_app_under_uprobes(
      dir, {"--prov", prov, "--test", "multiep", "--count", "25", "--size", "1024"}, &app_rc));
  if (app_rc == 77) GTEST_SKIP() << slurp(dir + "/app.log");
  ASSERT_EQ(app_rc, 0) << slurp(dir + "/app.log");
  for (const int rank : {0, 1}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const nlohmann::json own = load_json(dir + "/app.r" + std::to_string(rank) + ".json");
    ASSERT_TRUE(own.at("ok").get<bool>()) << own.dump();
    std::map<std::string, uint64_t> want;
    std::set<std::string> fns;
    for (const auto& [key, n] : own.at("link_ops").items()) {
      want[key] = n.get<uint64_t>();
      fns.insert(key.substr(0, key.find('|')));
    }
    // Four endpoints: four peers for the sends, "(any)" from each for the receives.
    ASSERT_EQ(want.size(), 8u) << own.dump();
    const std::string pid = std::to_string(own.at("pid").get<int>());
    const auto reports = list_files(dir, "fabtrace.", ".p" + pid + ".json");
    ASSERT_EQ(reports.size(), 1u);
    const nlohmann::json rep = load_json(reports.front());
    EXPECT_EQ(rep.at("source"), "uprobes");
    std::map<std::string, uint64_t> got;
    for (const auto& l : rep.at("links"))
      for (const auto& o : l.at("ops")) {
        const std::string fn = o.at("op").get<std::string>();
        if (!fns.count(fn)) continue;
        got[fn + "|" + l.at("local").get<std::string>() + "|" +
            l.at("remote").get<std::string>()] += o.at("count").get<uint64_t>();
        EXPECT_EQ(o.at("unfinished").get<uint64_t>(), 0u) << fn;
      }
    EXPECT_EQ(got, want) << rep.dump();
  }
}

TEST(Uprobes, MultiPeerTcpRxm) {
  REQUIRE_SESSION_SLOT();
  uprobes_multiep("tcp;ofi_rxm");
}

TEST(Uprobes, MultiPeerShm) {
  REQUIRE_SESSION_SLOT();
  uprobes_multiep("shm");
}

}  // namespace
}  // namespace fabtrace::test

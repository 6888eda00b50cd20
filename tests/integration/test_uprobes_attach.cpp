// How a `fabtrace record --uprobes` session attaches, each way checked against
// the programs' own counts: programs started before the session (their CQs
// and endpoints learnt from their memory), --only-pids, one perf-event uprobe
// per probe or uprobe_multi links, and the sites by name (--symbols,
// --uprobe-by-name).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"
#include "tests/integration/record_session.h"
#include "tests/integration/symbols_copy.h"
#include "tests/integration/uprobe_runs.h"

namespace fabtrace::test {
namespace {

// fi_pingpong (server and client, without the preload) runs under session A,
// both processes are frozen (SIGSTOP) part-way, A stops, session B starts (the
// processes' CQs and endpoints were opened before it: B learns them from their
// memory), and the processes run to their end under B. The program's own
// count: fi_pingpong's totals per side (iters sends, 1 sendmsg, iters + 1
// receives, each completed once: see uprobes_pingpong) minus the ops it issued
// before the freeze, which session A counted (A saw the program from its start;
// Uprobes.Pingpong* check that such a session counts the program exactly). So
// in B's window the program issued totals - A's accepted ops, and B must pair
// exactly the ops it saw accepted, none pending, none unmatched; completions of
// ops issued before the freeze are B's `early` entries (at most one per side:
// fi_pingpong has at most one send and one receive outstanding).
// What the freeze can split: a call whose entry A saw and whose return it did
// not (the stop lands on the way out of a probe's trap): a send refused there
// counts as accepted in A (sends: A + B within one of the totals), and a CQ
// read split so returns its entry to neither session. B knows a CQ opened
// before it from the first op of an endpoint bound to it: a completion read
// before that is not seen either (entries: A + B within A's accepted ops not
// completed of the totals). With `providers`, both sessions probe those
// (--uprobe-providers); `iters` iterations, frozen once the client used
// `freeze_cpu` seconds of CPU.
void uprobes_running_pingpong(const char* prov, bool tagged, const char* providers = nullptr,
                              int iters = 20000, double freeze_cpu = 0.3) {
  const std::string da = make_temp_dir("rec-up-early-a"), db = make_temp_dir("rec-up-early-b");
  std::vector<std::string> args;
  if (providers) args = {"--uprobe-providers", providers};
  const int a = start_uprobe_session(da, "record.log", args);
  ASSERT_GT(a, 0) << slurp(da + "/record.log");
  // Frozen once the client has used 0.3 s of CPU (it busy-polls: it is in
  // its loop), well before its end whatever the machine's load: under the
  // traps each iteration costs it at least about 30 us of CPU (two ops at
  // about 15 us), so 20000 take at least 0.6 s.
  const Pingpong pp = start_pingpong(db, prov, tagged, iters);
  ASSERT_GT(pp.server, 0);
  ASSERT_GT(pp.client, 0);
  // Both busy-polling (state R), not blocked in fi_pingpong's control-socket
  // exchange (state S): a read there with a timeout fails with EINTR when the
  // process is stopped and continued (signal(7)), and fi_pingpong gives up.
  ASSERT_TRUE(eventually(
      [&] {
        return cpu_seconds(pp.client) >= freeze_cpu && proc_state(pp.client) == 'R' &&
               proc_state(pp.server) == 'R';
      },
      120));
  for (const int pid : {pp.client, pp.server}) {
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, WNOHANG), 0) << "fi_pingpong ended before the freeze";
    kill(pid, SIGSTOP);
  }
  ASSERT_TRUE(
      eventually([&] { return proc_state(pp.client) == 'T' && proc_state(pp.server) == 'T'; }, 30));
  kill(a, SIGINT);
  ASSERT_EQ(wait_for(a, 120), 0) << slurp(da + "/record.log");
  const int b = start_uprobe_session(db, "record.log", args);
  for (const int pid : {pp.client, pp.server}) kill(pid, SIGCONT);
  ASSERT_GT(b, 0) << slurp(db + "/record.log");
  const int client_rc = wait_for(pp.client, 300);
  const int server_rc = wait_for(pp.server, 300);
  kill(b, SIGINT);
  ASSERT_EQ(wait_for(b, 120), 0) << slurp(db + "/record.log");
  ASSERT_EQ(client_rc, 0) << slurp(db + "/client.log");
  ASSERT_EQ(server_rc, 0) << slurp(db + "/server.log");
  const std::string log_b = slurp(db + "/record.log");
  EXPECT_NE(log_b.find("opened before the session: learnt ("), std::string::npos) << log_b;

  bool ok_a = false, ok_b = false;
  const std::vector<Event> ev_a = export_kernel(kernel_log_of(da), &ok_a);
  const std::vector<Event> ev_b = export_kernel(kernel_log_of(db), &ok_b);
  ASSERT_TRUE(ok_a && ok_b);
  const std::string send = tagged ? "fi_tsend" : "fi_send";
  const std::string sendmsg = tagged ? "fi_tsendmsg" : "fi_sendmsg";
  const std::string recv = tagged ? "fi_trecv" : "fi_recv";
  for (const auto& [who, pid] :
       {std::make_pair("server", pp.server), std::make_pair("client", pp.client)}) {
    SCOPED_TRACE(who);
    const PingpongResult own = pingpong_result(slurp(db + "/" + who + ".log"));
    ASSERT_TRUE(own.ok) << slurp(db + "/" + who + ".log");
    ASSERT_EQ(own.iters, static_cast<uint64_t>(iters));
    const auto ra = uprobe_rows_of(ev_a, pid), rb = uprobe_rows_of(ev_b, pid);
    ASSERT_TRUE(rb.count(send) && rb.count(recv) && rb.count("cq_read")) << log_b;
    // The freeze fell inside the run: both sessions saw receives.
    ASSERT_GT(accepted(ra, recv), 0u);
    ASSERT_GT(accepted(rb, recv), 0u);
    // The ops the program issued in B's window: its totals minus A's.
    const uint64_t recv_in_b = own.iters + 1 - accepted(ra, recv);
    const uint64_t sendmsg_in_b = 1 - accepted(ra, sendmsg);
    EXPECT_EQ(accepted(rb, recv), recv_in_b);
    EXPECT_EQ(accepted(rb, sendmsg), sendmsg_in_b);
    // Every send issued is accepted once in A or B; a send split by the freeze
    // and refused counts in A too, and its retry in B: one over at most.
    EXPECT_GE(accepted(ra, send) + accepted(rb, send), own.iters);
    EXPECT_LE(accepted(ra, send) + accepted(rb, send), own.iters + 1);
    // Every op B saw accepted was paired with its completion; none other.
    for (const std::string& op : {send, sendmsg, recv}) {
      EXPECT_EQ(field(rb, op, "completions"), accepted(rb, op)) << op;
      EXPECT_EQ(field(rb, op, "pending"), 0u) << op;
      EXPECT_EQ(field(rb, op, "unmatched"), 0u) << op;
    }
    const Event& polls = rb.at("cq_read");
    EXPECT_EQ(polls.num("unmatched"), 0u);
    EXPECT_EQ(polls.num("unwalked"), 0u);
    EXPECT_LE(polls.num("early"), 2u);
    const uint64_t paired_b = field(rb, send, "completions") + field(rb, sendmsg, "completions") +
                              field(rb, recv, "completions");
    EXPECT_EQ(polls.num("entries"), paired_b + polls.num("early"));
    // Entries: every completion seen once, but for those of ops A saw issued
    // and not completed (pending, or in flight when A stopped: their
    // completion is in a read split by the freeze, or read in B before the
    // process's first op there made its CQ known).
    const uint64_t seen = field(ra, "cq_read", "entries") + polls.num("entries");
    uint64_t outstanding_a = 0;
    for (const std::string& op : {send, sendmsg, recv})
      outstanding_a += accepted(ra, op) - field(ra, op, "completions");
    EXPECT_LE(seen, 2 * own.iters + 2);
    EXPECT_GE(seen + outstanding_a, 2 * own.iters + 2);
    // Paired with the right ops: a send completes within a round trip.
    EXPECT_LE(static_cast<double>(field(rb, send, "avg_ns")), 2 * own.usec_per_xfer * 1000);
  }
}

TEST(Uprobes, RunningPingpongTcpRxmMsg) {
  REQUIRE_SESSION_SLOT();
  uprobes_running_pingpong("tcp;ofi_rxm", false);
}

TEST(Uprobes, RunningPingpongShmTagged) {
  REQUIRE_SESSION_SLOT();
  uprobes_running_pingpong("shm", true);
}

// sockets keeps its CQs and endpoints its own way (its layout: the endpoint's
// CQs two pointers away). It answers slowly here (tens of ms a round trip,
// its progress thread): 300 iterations take about 15 s, while the client
// busy-polls at about one CPU (less on this loaded machine); frozen after
// 0.5 s of its CPU, a few iterations in.
TEST(Uprobes, RunningPingpongSocketsTagged) {
  REQUIRE_SESSION_SLOT();
  uprobes_running_pingpong("sockets", true, "sockets", 300, 0.5);
}

// --uprobes --only-pids --pid CLIENT: the probes are attached to that process
// only. fi_pingpong's server and client are both running when the session
// starts; only the client's ops are counted (without the per-process attach
// every process mapping the library is counted), and its completions pair
// (learnt CQs: both were opened before the session). The run is cut while it
// goes on: at most one op of each kind is left pending.
TEST(Uprobes, OnlyPidsTcpRxm) {
  REQUIRE_SESSION_SLOT();
  const std::string dir = make_temp_dir("rec-up-pid");
  const Pingpong pp = start_pingpong(dir, "tcp;ofi_rxm", false, 2000000);
  ASSERT_GT(pp.server, 0);
  ASSERT_GT(pp.client, 0);
  const int rec = start_record(dir, "record.log",
                               {"--uprobes", "--only-pids", "--pid", std::to_string(pp.client)},
                               "provider functions probed");
  ASSERT_GT(rec, 0) << slurp(dir + "/record.log");
  std::this_thread::sleep_for(std::chrono::seconds(2));
  kill(rec, SIGINT);
  const int rec_rc = wait_for(rec, 120);
  for (const int pid : {pp.client, pp.server}) {
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, WNOHANG), 0) << "fi_pingpong ended before the session did";
    kill(pid, SIGKILL);
    wait_for(pid, 30);
  }
  ASSERT_EQ(rec_rc, 0) << slurp(dir + "/record.log");
  bool ok = false;
  const std::vector<Event> ev = export_kernel(kernel_log_of(dir), &ok);
  ASSERT_TRUE(ok);
  EXPECT_TRUE(uprobe_rows_of(ev, pp.server).empty());
  const auto rows = uprobe_rows_of(ev, pp.client);
  ASSERT_TRUE(rows.count("fi_send") && rows.count("fi_recv") && rows.count("cq_read"))
      << slurp(dir + "/record.log");
  EXPECT_GT(field(rows, "fi_recv", "completions"), 0u);
  for (const char* op : {"fi_send", "fi_recv"}) {
    EXPECT_LE(field(rows, op, "pending"), 1u) << op;
    // Accepted ops are completed or pending, but for at most one call in
    // flight when the session read its maps (its entry counted, its return
    // not seen: a NULL-context op is queued only when it returns accepted).
    EXPECT_LE(field(rows, op, "completions") + field(rows, op, "pending"), accepted(rows, op))
        << op;
    EXPECT_GE(field(rows, op, "completions") + field(rows, op, "pending") + 1, accepted(rows, op))
        << op;
    EXPECT_EQ(field(rows, op, "unmatched"), 0u) << op;
  }
  EXPECT_EQ(field(rows, "cq_read", "unmatched"), 0u);
  EXPECT_LE(field(rows, "cq_read", "early"), 2u);
}

// --uprobes --only-pids --pid IDLE: the session traces the listed process only,
// so a libfabric process started after it began is not traced: the probes are
// attached for IDLE alone (a fi_pingpong server waiting for a client that never
// comes: it maps libfabric and issues nothing). A fi_pingpong pair started
// after the session runs its traffic (its client's own count) while no probed
// site is hit at all, the pair has no rows and no per-rank report, and record
// names both processes as started during the session and not probed.
TEST(Uprobes, OnlyPidsLeavesLaterProcessesAlone) {
  REQUIRE_SESSION_SLOT();
  const std::string dir = make_temp_dir("rec-up-later");
  const std::string port = std::to_string(free_port());
  const int idle = spawn({"fi_pingpong", "-p", "tcp;ofi_rxm", "-e", "rdm", "-B", port}, {},
                         dir + "/idle.log", false);
  ASSERT_GT(idle, 0);
  ASSERT_TRUE(wait_listening(std::stoi(port)));
  const int rec =
      start_uprobe_session(dir, "record.log", {"--only-pids", "--pid", std::to_string(idle)});
  ASSERT_GT(rec, 0) << slurp(dir + "/record.log");
  // Runs until it is killed below: untraced, an iteration takes about 5 us,
  // and the session's start and stop (attaching and detaching every probe)
  // took longer than 2 million of them once (the pair had ended: CI, 55446ef).
  const Pingpong pp = start_pingpong(dir, "tcp;ofi_rxm", false, 1000000000);
  ASSERT_GT(pp.server, 0);
  ASSERT_GT(pp.client, 0);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  // The pair ran: its client busy-polls in its loop (it prints its own count
  // only at its end), so it used CPU time.
  const double client_cpu = cpu_seconds(pp.client);
  kill(rec, SIGINT);
  const int rec_rc = wait_for(rec, 120);
  for (const int pid : {pp.client, pp.server, idle}) {
    int st = 0;
    EXPECT_EQ(waitpid(pid, &st, WNOHANG), 0) << "pid " << pid << " ended before the session did";
    kill(pid, SIGKILL);
    wait_for(pid, 30);
  }
  const std::string record_log = slurp(dir + "/record.log");
  ASSERT_EQ(rec_rc, 0) << record_log;
  EXPECT_NE(record_log.find("--only-pids: probes attached to the --pid processes only"),
            std::string::npos)
      << record_log;
  EXPECT_GT(client_cpu, 0.05);
  // Not one trap: every probed site's hit count is 0.
  size_t sites = 0;
  for (size_t at = record_log.find("fabtrace record: uprobe /"); at != std::string::npos;
       at = record_log.find("fabtrace record: uprobe /", at + 1)) {
    const size_t eol = record_log.find('\n', at);
    const std::string line = record_log.substr(at, eol - at);
    EXPECT_NE(line.find(": 0 hits"), std::string::npos) << line;
    ++sites;
  }
  EXPECT_GT(sites, 0u) << record_log;
  bool ok = false;
  const std::vector<Event> ev = export_kernel(kernel_log_of(dir), &ok);
  ASSERT_TRUE(ok);
  for (const int pid : {pp.client, pp.server}) {
    SCOPED_TRACE(pid);
    EXPECT_TRUE(uprobe_rows_of(ev, pid).empty());
    EXPECT_TRUE(list_files(dir, "fabtrace.", ".p" + std::to_string(pid) + ".json").empty());
    EXPECT_NE(record_log.find("uprobes: pid " + std::to_string(pid) +
                              " (fi_pingpong) started during the session and maps libfabric: "
                              "not probed (--only-pids)"),
              std::string::npos)
        << record_log;
  }
  EXPECT_EQ(record_log.find("uprobes: pid " + std::to_string(idle) + " ("), std::string::npos)
      << record_log;
}

// --uprobe-perf-events: one perf-event uprobe per probe, as kernels before 6.6
// are attached (this one makes uprobe_multi links, which the tests above use):
// the same exact pairing.
TEST(Uprobes, PingpongTcpRxmTaggedPerfEvents) {
  REQUIRE_SESSION_SLOT();
  std::string log;
  uprobes_pingpong("tcp;ofi_rxm", true, "rdm", nullptr, 300, {"--uprobe-perf-events"}, &log);
  EXPECT_NE(log.find("uprobe_multi absent: --uprobe-perf-events"), std::string::npos) << log;
  EXPECT_EQ(log.find("uprobes: uprobe_multi: "), std::string::npos) << log;
}

// How many of process `pid`'s open files are `what` ("anon_inode:bpf_link").
size_t fds_of(int pid, const std::string& what) {
  size_t n = 0;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  for (const std::string& fd : list_files(dir, "", "")) {
    char target[256];
    const ssize_t len = readlink(fd.c_str(), target, sizeof(target) - 1);
    if (len > 0 && std::string(target, static_cast<size_t>(len)) == what) ++n;
  }
  return n;
}

// uprobe_multi links: the session holds its probes in a few links (one per
// program, library file and process) instead of one perf event each, which is
// what lets the kernel release them together at exit (docs/performance.md:
// 17 s with perf events). The same session once each way, nothing running:
// the perf-event session opens one perf event per probe it says it placed;
// the links hold no more probes than that (fewer where ops that forward to
// one function share its entry probe, which needs links: probe_place.h).
TEST(Uprobes, HeldInMultiLinks) {
  REQUIRE_SESSION_SLOT();
  struct Held {
    size_t perf_events = 0, links = 0;
    std::string log;
  };
  auto session = [](const std::vector<std::string>& args, Held* h) {
    const std::string dir = make_temp_dir("rec-up-links");
    const int rec = start_uprobe_session(dir, "record.log", args);
    ASSERT_GT(rec, 0) << slurp(dir + "/record.log");
    h->perf_events = fds_of(rec, "anon_inode:[perf_event]");
    h->links = fds_of(rec, "anon_inode:bpf_link");
    kill(rec, SIGINT);
    ASSERT_EQ(wait_for(rec, 120), 0) << slurp(dir + "/record.log");
    h->log = slurp(dir + "/record.log");
  };
  Held multi, perf;
  ASSERT_NO_FATAL_FAILURE(session({}, &multi));
  ASSERT_NO_FATAL_FAILURE(session({"--uprobe-perf-events"}, &perf));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(multi.log, m,
                                std::regex("uprobe_multi: ([0-9]+) probes in ([0-9]+) links")))
      << multi.log;
  const size_t probes = std::stoul(m[1]), links = std::stoul(m[2]);
  std::smatch f1, f2;
  const std::regex functions("([0-9]+) provider functions probed");
  ASSERT_TRUE(std::regex_search(multi.log, f1, functions));
  ASSERT_TRUE(std::regex_search(perf.log, f2, functions));
  EXPECT_EQ(f1[1], f2[1]);               // the same functions either way
  EXPECT_GT(probes, std::stoul(f1[1]));  // most have an entry and a return probe
  EXPECT_LT(links, probes / 4);
  EXPECT_GE(multi.links, links);
  std::smatch pm;
  ASSERT_TRUE(
      std::regex_search(perf.log, pm, std::regex("([0-9]+) probes, one perf-event uprobe each")))
      << perf.log;
  const size_t perf_probes = std::stoul(pm[1]);
  EXPECT_LE(probes, perf_probes);
  EXPECT_EQ(perf.perf_events - multi.perf_events, perf_probes)
      << "perf events: " << perf.perf_events << " with --uprobe-perf-events, " << multi.perf_events
      << " with links";
}

// ---- --uprobes by name: --symbols FILE --uprobe-by-name.
//
// No unstripped libfabric exists here (Debian's is stripped, no dbgsym), so the
// test makes the symbols FILE (symbols_copy.h): a copy of the library the
// processes map, its build-id unchanged, with one symbol per name of fabtrace's
// table of provider functions placed at the address libfabric's own op tables
// hold for that (provider, table.op). Record then takes every site from a name
// (--uprobe-by-name): the FILE's build-id checked against the library's, its
// symbol table read, each name of the table resolved to a file offset of the
// real library, described by the descriptions the op-table path shares, and
// attached; the program's own counts must come out exactly as in
// Uprobes.Pingpong*, and every site be named by its function.
// What this proves: the by-name path end to end. What it cannot: that the names
// in the table are libfabric's real ones (the symbols were put where the table
// says): that was checked by reading libfabric v1.17.0's source
// (provider_functions.cpp names the files and tables).
void uprobes_by_name_pingpong(const char* prov, bool tagged) {
  const std::string sdir = make_temp_dir("rec-up-symbols");
  size_t added = 0;
  std::string why;
  const std::string symbols = libfabric_with_symbols(sdir, &added, &why);
  ASSERT_FALSE(symbols.empty()) << why;
  EXPECT_EQ(added, 2u * 44 - 3);  // both providers' rows, their shared utility CQ's once
  std::string log;
  uprobes_pingpong(prov, tagged, "rdm", nullptr, 300, {"--symbols", symbols, "--uprobe-by-name"},
                   &log);
  EXPECT_NE(log.find(std::string(prov) + ": 44 of 44 functions found by name, 0 disagreeing with "
                                         "the op tables: attached by name"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("symbols of "), std::string::npos);
  EXPECT_EQ(log.find("not attached"), std::string::npos) << log;
  const std::string send = std::string(prov) + (tagged ? " tagged.send (" : " msg.send (") +
                           (std::string(prov) == "shm" ? "smr_" : "rxm_") +
                           (tagged ? "tsend)" : "send)");
  EXPECT_NE(log.find(send + ": "), std::string::npos) << send << "\n" << log;
}

TEST(Uprobes, ByNamePingpongTcpRxmTagged) {
  REQUIRE_SESSION_SLOT();
  uprobes_by_name_pingpong("tcp;ofi_rxm", true);
}

TEST(Uprobes, ByNamePingpongShmMsg) {
  REQUIRE_SESSION_SLOT();
  uprobes_by_name_pingpong("shm", false);
}

// A symbols FILE of another build (another build-id: here the fabtrace CLI
// itself) is refused with one clear line, before anything is attached.
TEST(Uprobes, SymbolsOfAnotherBuildAreRefused) {
  REQUIRE_SESSION_SLOT();
  const std::string dir = make_temp_dir("rec-up-badsyms");
  const int rc = wait_for(spawn({FABTRACE_CLI, "record", "-o", dir, "--uprobes", "--symbols",
                                 FABTRACE_CLI, "--duration", "1"},
                                {}, dir + "/record.log", false),
                          120);
  const std::string log = slurp(dir + "/record.log");
  EXPECT_EQ(rc, 2) << log;
  EXPECT_NE(log.find(std::string("--symbols ") + FABTRACE_CLI + ": its GNU build-id ("),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("the library the processes map: refused"), std::string::npos) << log;
  EXPECT_EQ(log.find("attach points attached"), std::string::npos) << log;
}

}  // namespace
}  // namespace fabtrace::test

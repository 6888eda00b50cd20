// `fabtrace record --uprobes`: processes that run without the preload, their
// ops paired with their completions in the kernel (bpf/uprobe_ops.bpf.c), on
// this machine's libfabric, as root.
//
// Ground truth is what the traced programs count themselves: fi_pingpong's
// iterations and time per transfer, ft_app's result files (the ops it issued,
// those refused and issued again), never the kernel rows' own arithmetic.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"
#include "tests/integration/record_session.h"
#include "tests/integration/symbols_copy.h"

namespace fabtrace::test {
namespace {

// fi_pingpong's own result line ("4k 200 =200 1.5m 2.77s 0.59 6930.36 0.00"):
// the iterations it counted and its time per transfer (half a round trip).
struct PingpongResult {
  uint64_t iters = 0;
  double usec_per_xfer = 0;
  bool ok = false;
};
PingpongResult pingpong_result(const std::string& out) {
  PingpongResult r;
  std::istringstream in(out);
  std::string line;
  bool header = false;
  while (std::getline(in, line)) {
    if (line.rfind("bytes", 0) == 0 && line.find("usec/xfer") != std::string::npos) {
      header = true;
      continue;
    }
    if (!header) continue;
    std::istringstream f(line);
    std::string bytes, sent, ack, total, time, mbs, usec;
    if (f >> bytes >> sent >> ack >> total >> time >> mbs >> usec) {
      // Counts are printed with a suffix from 1000 on ("50k", "2m").
      const char unit = sent.empty() ? '\0' : sent.back();
      r.iters = std::stoull(sent) * (unit == 'k' ? 1000 : unit == 'm' ? 1000000 : 1);
      r.usec_per_xfer = std::stod(usec);
      r.ok = ack == "=" + sent;
    }
    break;
  }
  return r;
}

// One process's uprobe_ops rows, by op name ("fi_send", "cq_read", ...), its
// links' rows of one op summed (a row per endpoint and peer in the log): counts
// added, the extremes kept, the mean weighted by completions.
std::map<std::string, Event> uprobe_rows_of(const std::vector<Event>& ev, int pid) {
  static const std::set<std::string> kSummed = {"calls",    "refused", "completions", "by_order",
                                                "bytes",    "pending", "unmatched",   "entries",
                                                "unwalked", "early",   "remote"};
  std::map<std::string, Event> rows;
  std::map<std::string, double> lat_sum;
  for (const Event& e : ev) {
    if (e.kind != "uprobe_ops" || static_cast<int>(e.pid) != pid) continue;
    const auto it = rows.find(e.cause);
    lat_sum[e.cause] += static_cast<double>(e.num("avg_ns") * e.num("completions"));
    if (it == rows.end()) {
      rows[e.cause] = e;
      continue;
    }
    Event& r = it->second;
    for (const std::string& k : kSummed)
      if (e.detail.count(k)) r.detail[k] = std::to_string(r.num(k) + e.num(k));
    if (e.num("completions") && (!r.detail.count("min_ns") || e.num("min_ns") < r.num("min_ns")))
      r.detail["min_ns"] = e.detail.at("min_ns");
    if (e.num("max_ns") > r.num("max_ns")) r.detail["max_ns"] = e.detail.at("max_ns");
  }
  for (auto& [op, r] : rows)
    if (r.num("completions"))
      r.detail["avg_ns"] = std::to_string(
          static_cast<uint64_t>(lat_sum[op] / static_cast<double>(r.num("completions"))));
  return rows;
}

// A report link's labels with every run of digits made '#': the form of an
// address without its port, IP or pid ("fi_sockaddr_in://#.#.#.#:#").
std::string label_shape(const std::string& label) {
  std::string out;
  for (size_t i = 0; i < label.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(label[i]))) {
      out += label[i];
      continue;
    }
    out += '#';
    while (i + 1 < label.size() && std::isdigit(static_cast<unsigned char>(label[i + 1]))) ++i;
  }
  return out;
}

// fi_pingpong's server and client (without the preload) over `prov`, `size`
// byte messages, `ep` endpoints ("rdm", "msg", "dgram"), their output in
// DIR/server.log and DIR/client.log.
struct Pingpong {
  int server = -1, client = -1;
};
// With `preload`, both run under the preload, their per-rank reports in DIR.
Pingpong start_pingpong(const std::string& dir, const char* prov, bool tagged, int iters,
                        const char* ep = "rdm", bool preload = false, int size = 4096) {
  Pingpong pp;
  const std::string port = std::to_string(free_port());
  std::vector<std::string> args = {
      "fi_pingpong", "-p", prov, "-e", ep, "-I", std::to_string(iters), "-S", std::to_string(size)};
  if (tagged) args.insert(args.end(), {"-m", "tagged"});
  std::vector<std::string> sargs = args, cargs = args;
  sargs.insert(sargs.end(), {"-B", port});
  cargs.insert(cargs.end(), {"-P", port, "127.0.0.1"});
  const Env env = {{"FABTRACE_DIR", dir}};
  pp.server = spawn(sargs, preload ? env : Env{}, dir + "/server.log", preload);
  if (pp.server <= 0 || !wait_listening(std::stoi(port))) return pp;
  pp.client = spawn(cargs, preload ? env : Env{}, dir + "/client.log", preload);
  return pp;
}

// The link labels (local, remote) of each process of a report directory's
// per-rank reports (every link of a process: its set).
std::map<int, std::set<std::pair<std::string, std::string>>> links_by_pid(const std::string& dir) {
  std::map<int, std::set<std::pair<std::string, std::string>>> out;
  for (const std::string& f : list_files(dir, "fabtrace.", ".json")) {
    const nlohmann::json j = load_json(f);
    for (const auto& l : j.at("links"))
      out[j.at("pid").get<int>()].insert(
          {l.at("local").get<std::string>(), l.at("remote").get<std::string>()});
  }
  return out;
}

// The one link (local, remote) of fi_pingpong's server and of its client in
// the per-rank reports of `dir`.
struct PingpongLinks {
  std::pair<std::string, std::string> server, client;
};
void pingpong_links(const std::string& dir, int server, int client, PingpongLinks* out) {
  auto links = links_by_pid(dir);
  ASSERT_EQ(links[server].size(), 1u) << dir;
  ASSERT_EQ(links[client].size(), 1u) << dir;
  out->server = *links[server].begin();
  out->client = *links[client].begin();
}

// The same of a preloaded run of fi_pingpong over `prov` with `ep` endpoints
// (after the session: its addresses differ by port or pid only).
void preloaded_links(const char* prov, bool tagged, const char* ep, int size, PingpongLinks* pre) {
  const std::string pdir = make_temp_dir("rec-up-preloaded");
  const Pingpong pp = start_pingpong(pdir, prov, tagged, 20, ep, true, size);
  ASSERT_GT(pp.server, 0);
  ASSERT_GT(pp.client, 0);
  ASSERT_EQ(wait_for(pp.client, 120), 0) << slurp(pdir + "/client.log");
  ASSERT_EQ(wait_for(pp.server, 120), 0) << slurp(pdir + "/server.log");
  pingpong_links(pdir, pp.server, pp.client, pre);
}

// The link names of a session's per-rank reports, each process one link: the
// client's remote (RDM: the peer it inserted in its AV; MSG: the address it
// connected to) is the server's local, the server's remote differs from it,
// and they have the form the preload gives the same program's links (digits
// aside).
// - RDM and DGRAM endpoints (each endpoint's getname and the peer's AV insert
//   seen): the client's local is the server's remote too.
// - Connected (MSG) endpoints, which have no AV: the peer is the one the
//   endpoint open's info or the connect named. fi_pingpong's client connects
//   to the address the server's passive endpoint gave it (fi_getname); the
//   server's local is its listener (sockets: the accepted connection's info
//   names it; tcp: that names its IP only, the passive endpoint's getname the
//   rest), its remote where the connection came from (the connection
//   request's source). None is a fallback nor "(connected)": the preload's
//   form is "ip:port". fi_pingpong's client never asks its endpoint's name
//   and its info has no port (the preload asks it after fi_connect): on tcp
//   the socket its connect made names it (the server's remote, which the
//   server's side learnt from another probe: the connection request's info);
//   on sockets that socket is not the endpoint's name, and the client's local
//   stays the fallback.
void check_link_labels(const std::string& dir, const char* prov, bool tagged, const char* ep,
                       int server, int client, int size = 4096) {
  PingpongLinks got, pre;
  ASSERT_NO_FATAL_FAILURE(pingpong_links(dir, server, client, &got));
  ASSERT_NO_FATAL_FAILURE(preloaded_links(prov, tagged, ep, size, &pre));
  const auto &s = got.server, &c = got.client;
  std::printf(
      "uprobes: server %s -> %s, client %s -> %s; preload: server %s -> %s, client %s -> %s\n",
      s.first.c_str(), s.second.c_str(), c.first.c_str(), c.second.c_str(),
      pre.server.first.c_str(), pre.server.second.c_str(), pre.client.first.c_str(),
      pre.client.second.c_str());
  EXPECT_EQ(c.second, s.first);
  EXPECT_NE(s.second, s.first);
  EXPECT_EQ(label_shape(s.first), label_shape(pre.server.first));
  EXPECT_EQ(label_shape(s.second), label_shape(pre.server.second));
  EXPECT_EQ(label_shape(c.second), label_shape(pre.client.second));
  if (std::string(ep) != "msg") {  // RDM, DGRAM: their AV names their peers
    EXPECT_EQ(c.first, s.second);
    EXPECT_EQ(label_shape(c.first), label_shape(pre.client.first));
  } else {
    EXPECT_EQ(label_shape(pre.server.first), "#.#.#.#:#");
    EXPECT_EQ(label_shape(pre.server.second), "#.#.#.#:#");
    if (std::string(prov) == "tcp")
      EXPECT_EQ(c.first, s.second);
    else
      EXPECT_EQ(c.first.rfind("pid " + std::to_string(client) + " ep 0x", 0), 0u) << c.first;
  }
}

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
                      int size = 4096) {
  const std::string dir = make_temp_dir("rec-uprobes");
  std::vector<std::string> args = std::move(more);
  if (providers) args.insert(args.end(), {"--uprobe-providers", providers});
  const int rec = start_uprobe_session(dir, "record.log", args);
  ASSERT_GT(rec, 0) << slurp(dir + "/record.log");
  const Pingpong pp = start_pingpong(dir, prov, tagged, iters, ep, false, size);
  const int server = pp.server, client = pp.client;
  const bool dgram = std::string(ep) == "dgram";
  const uint64_t recv_left = dgram ? 1 : 0;  // receives still posted at the end
  ASSERT_GT(server, 0);
  ASSERT_GT(client, 0);
  const int client_rc = wait_for(client, 240);
  const int server_rc = wait_for(server, 240);
  kill(rec, SIGINT);
  ASSERT_EQ(wait_for(rec, 120), 0) << slurp(dir + "/record.log");
  ASSERT_EQ(client_rc, 0) << slurp(dir + "/client.log");
  ASSERT_EQ(server_rc, 0) << slurp(dir + "/server.log");
  const std::string record_log = slurp(dir + "/record.log");
  if (record_out) *record_out = record_log;

  bool ok = false;
  const std::vector<Event> ev = export_kernel(kernel_log_of(dir), &ok);
  ASSERT_TRUE(ok);
  const std::string send = tagged ? "fi_tsend" : "fi_send";
  const std::string sendmsg = tagged ? "fi_tsendmsg" : "fi_sendmsg";
  const std::string recv = tagged ? "fi_trecv" : "fi_recv";
  for (const auto& [who, pid] :
       {std::make_pair("server", server), std::make_pair("client", client)}) {
    SCOPED_TRACE(who);
    const PingpongResult own = pingpong_result(slurp(dir + "/" + who + ".log"));
    ASSERT_TRUE(own.ok) << slurp(dir + "/" + who + ".log");
    ASSERT_EQ(own.iters, static_cast<uint64_t>(iters));
    const auto rows = uprobe_rows_of(ev, pid);
    ASSERT_TRUE(rows.count(send) && rows.count(sendmsg) && rows.count(recv) &&
                rows.count("cq_read"))
        << record_log;
    const Event& s = rows.at(send);
    const Event& sm = rows.at(sendmsg);
    const Event& r = rows.at(recv);
    const Event& polls = rows.at("cq_read");
    // Completions: exactly the program's traffic, every one paired with its op.
    EXPECT_EQ(s.num("completions"), own.iters);
    EXPECT_EQ(sm.num("completions"), 1u);
    EXPECT_EQ(r.num("completions"), own.iters + 1);
    EXPECT_EQ(s.num("pending"), 0u);
    EXPECT_EQ(sm.num("pending"), 0u);
    EXPECT_EQ(r.num("pending"), recv_left);
    // Issue attempts: as many or more (fi_pingpong issues a send again after
    // -FI_EAGAIN); receives are never refused here.
    EXPECT_GE(s.num("calls"), own.iters);
    EXPECT_EQ(sm.num("calls"), 1u);
    EXPECT_EQ(r.num("calls"), own.iters + 1 + recv_left);
    EXPECT_EQ(s.num("bytes"), own.iters * static_cast<uint64_t>(size));
    // Polls: every entry returned was one of these completions.
    EXPECT_EQ(polls.num("unmatched"), 0u);
    EXPECT_EQ(polls.num("unwalked"), 0u);
    EXPECT_EQ(polls.num("entries"), 2 * own.iters + 2);
    EXPECT_GE(polls.num("calls"), polls.num("entries"));  // fi_pingpong reads one at a time
    // Latencies within the program's own round trip: a send completes before
    // the reply to it arrives; a receive of the loop is posted just after the
    // previous one completed, so it lasts about one round trip (the first one
    // also waits for the connection set-up: the max is left out of the mean).
    // On DGRAM the extra receive is ahead of it (receives complete in the
    // order posted): each lasts about two round trips, more than one.
    const double rtt_ns = 2 * own.usec_per_xfer * 1000;
    const double recv_rtts = 1 + static_cast<double>(recv_left);
    EXPECT_GT(s.num("min_ns"), 0u);
    EXPECT_LE(static_cast<double>(s.num("avg_ns")), rtt_ns);
    const double recv_mean_but_max =
        static_cast<double>(r.num("avg_ns") * r.num("completions") - r.num("max_ns")) /
        static_cast<double>(r.num("completions") - 1);
    EXPECT_LE(recv_mean_but_max, 2 * recv_rtts * rtt_ns);
    EXPECT_GT(recv_mean_but_max, (recv_rtts - 1) * rtt_ns);
  }
  // The per-rank reports record wrote from the same rows (source "uprobes"),
  // read by `fabtrace report` as it reads the preload's: per process one link,
  // whose op counts are the program's own.
  const Cli cli = report_cli(dir, dir + "/out");
  ASSERT_EQ(cli.rc, 0) << cli.err;
  const nlohmann::json links = load_json(dir + "/out/links.json");
  for (const auto& [who, pid] :
       {std::make_pair("server", server), std::make_pair("client", client)}) {
    SCOPED_TRACE(who);
    const auto reports = list_files(dir, "fabtrace.", ".p" + std::to_string(pid) + ".json");
    ASSERT_EQ(reports.size(), 1u);
    EXPECT_EQ(load_json(reports.front()).at("source"), "uprobes");
    // Per op, its rows (one per size) summed; the sizes its rows carry.
    std::map<std::string, uint64_t> count, unfinished;
    std::map<std::string, std::set<uint64_t>> sizes;
    std::set<std::string> remotes;
    for (const auto& l : links)
      if (l.at("pid").get<int64_t>() == pid) {
        const std::string op = l.at("op").get<std::string>();
        count[op] += l.at("count").get<uint64_t>();
        unfinished[op] += l.at("unfinished").get<uint64_t>();
        sizes[op].insert(l.at("bytes").get<uint64_t>());
        remotes.insert(l.at("local").get<std::string>() + " " + l.at("remote").get<std::string>());
      }
    EXPECT_EQ(remotes.size(), 1u);  // one link: one endpoint, its peer's fi_addr_t for all
    ASSERT_TRUE(count.count(send) && count.count(sendmsg) && count.count(recv)) << links.dump();
    EXPECT_EQ(count.at(send), static_cast<uint64_t>(iters));
    EXPECT_EQ(sizes.at(send), std::set<uint64_t>{static_cast<uint64_t>(size)});
    EXPECT_EQ(count.at(sendmsg), 1u);
    EXPECT_EQ(count.at(recv), static_cast<uint64_t>(iters) + 1);
    EXPECT_TRUE(sizes.at(recv).count(static_cast<uint64_t>(size))) << links.dump();
    for (const auto& kv : unfinished)
      EXPECT_EQ(kv.second, kv.first == recv ? recv_left : 0u) << kv.first;
  }
  // The sites the traffic went through were attached and hit.
  for (const std::string& what : {std::string(prov) + (tagged ? " tagged.send" : " msg.send"),
                                  std::string(prov) + (tagged ? " tagged.recv" : " msg.recv")}) {
    // "WHAT: N hits", or "WHAT (FUNCTION): N hits" where symbols named it.
    size_t at = record_log.find(what + ": ");
    if (at == std::string::npos) at = record_log.find(what + " (");
    ASSERT_NE(at, std::string::npos) << what << "\n" << record_log;
    const size_t colon = record_log.find(": ", at);
    ASSERT_NE(colon, std::string::npos);
    EXPECT_GT(std::stoull(record_log.substr(colon + 2)), 0u) << what;
  }
  check_link_labels(dir, prov, tagged, ep, server, client, size);
}

// ---- --uprobes: a program started before the session.

// The CPU time (user + system) process `pid` has used, in seconds.
double cpu_seconds(int pid) {
  const std::string st = slurp("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = st.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream in(st.substr(paren + 2));
  std::string f;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && in >> f; ++i) {  // fields 14 and 15: utime, stime
    if (i == 14) utime = std::stoull(f);
    if (i == 15) stime = std::stoull(f);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// A session's row's accepted calls (issued and not refused).
uint64_t accepted(const std::map<std::string, Event>& rows, const std::string& op) {
  const auto it = rows.find(op);
  return it == rows.end() ? 0 : it->second.num("calls") - it->second.num("refused");
}
uint64_t field(const std::map<std::string, Event>& rows, const std::string& op, const char* k) {
  const auto it = rows.find(op);
  return it == rows.end() ? 0 : it->second.num(k);
}

// fi_pingpong (server and client, without the preload) runs under session A,
// both processes are frozen (SIGSTOP) part-way, A stops, session B starts (the
// processes' CQs and endpoints were opened before it: B learns them from their
// memory), and the processes run to their end under B. The program's own
// count: fi_pingpong's totals per side (iters sends, 1 sendmsg, iters + 1
// receives, each completed once: see uprobes_pingpong) minus the ops it issued
// before the freeze, which session A counted (A saw the program from its start;
// UprobesPingpong* check that such a session counts the program exactly). So
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

TEST(Record, UprobesRunningPingpongTcpRxmMsg) {
  REQUIRE_SESSION_SLOT();
  uprobes_running_pingpong("tcp;ofi_rxm", false);
}

TEST(Record, UprobesRunningPingpongShmTagged) {
  REQUIRE_SESSION_SLOT();
  uprobes_running_pingpong("shm", true);
}

// sockets keeps its CQs and endpoints its own way (its layout: the endpoint's
// CQs two pointers away). It answers slowly here (tens of ms a round trip,
// its progress thread): 300 iterations take about 15 s, while the client
// busy-polls at about one CPU (less on this loaded machine); frozen after
// 0.5 s of its CPU, a few iterations in.
TEST(Record, UprobesRunningPingpongSocketsTagged) {
  REQUIRE_SESSION_SLOT();
  uprobes_running_pingpong("sockets", true, "sockets", 300, 0.5);
}

// --uprobes --only-pids --pid CLIENT: the probes are attached to that process
// only. fi_pingpong's server and client are both running when the session
// starts; only the client's ops are counted (without the per-process attach
// every process mapping the library is counted), and its completions pair
// (learnt CQs: both were opened before the session). The run is cut while it
// goes on: at most one op of each kind is left pending.
TEST(Record, UprobesOnlyPidsTcpRxm) {
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

TEST(Record, UprobesPingpongTcpRxmMsg) {
  REQUIRE_SESSION_SLOT();
  uprobes_pingpong("tcp;ofi_rxm", false);
}

TEST(Record, UprobesPingpongTcpRxmTagged) {
  REQUIRE_SESSION_SLOT();
  uprobes_pingpong("tcp;ofi_rxm", true);
}

TEST(Record, UprobesPingpongShmMsg) {
  REQUIRE_SESSION_SLOT();
  uprobes_pingpong("shm", false);
}

TEST(Record, UprobesPingpongShmTagged) {
  REQUIRE_SESSION_SLOT();
  uprobes_pingpong("shm", true);
}

// --uprobe-perf-events: one perf-event uprobe per probe, as kernels before 6.6
// are attached (this one makes uprobe_multi links, which the tests above use):
// the same exact pairing.
TEST(Record, UprobesPingpongTcpRxmTaggedPerfEvents) {
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
// the perf events it no longer opens are exactly the probes its links hold.
TEST(Record, UprobesHeldInMultiLinks) {
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
  EXPECT_EQ(perf.perf_events - multi.perf_events, probes)
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
// UprobesPingpong*, and every site be named by its function.
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

TEST(Record, UprobesByNamePingpongTcpRxmTagged) {
  REQUIRE_SESSION_SLOT();
  uprobes_by_name_pingpong("tcp;ofi_rxm", true);
}

TEST(Record, UprobesByNamePingpongShmMsg) {
  REQUIRE_SESSION_SLOT();
  uprobes_by_name_pingpong("shm", false);
}

// A symbols FILE of another build (another build-id: here the fabtrace CLI
// itself) is refused with one clear line, before anything is attached.
TEST(Record, UprobesSymbolsOfAnotherBuildAreRefused) {
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

// Other providers, each probed alone (--uprobe-providers): udp;ofi_rxd (RDM
// over udp), sockets (RDM and MSG endpoints), tcp's own MSG endpoint.
TEST(Record, UprobesPingpongUdpRxdMsg) {
  REQUIRE_SESSION_SLOT();
  uprobes_pingpong("udp;ofi_rxd", false, "rdm", "udp;ofi_rxd");
}

TEST(Record, UprobesPingpongUdpRxdTagged) {
  REQUIRE_SESSION_SLOT();
  uprobes_pingpong("udp;ofi_rxd", true, "rdm", "udp;ofi_rxd");
}

// The sockets provider progresses in a thread of its own and answers slowly
// here (tens of ms a round trip): fewer iterations.
TEST(Record, UprobesPingpongSocketsMsg) {
  REQUIRE_SESSION_SLOT();
  uprobes_pingpong("sockets", false, "rdm", "sockets", 60);
}

TEST(Record, UprobesPingpongSocketsTagged) {
  REQUIRE_SESSION_SLOT();
  uprobes_pingpong("sockets", true, "rdm", "sockets", 60);
}

TEST(Record, UprobesPingpongSocketsMsgEndpoint) {
  REQUIRE_SESSION_SLOT();
  uprobes_pingpong("sockets", false, "msg", "sockets", 60);
}

TEST(Record, UprobesPingpongTcpMsgEndpoint) {
  REQUIRE_SESSION_SLOT();
  uprobes_pingpong("tcp", false, "msg", "tcp");
}

// udp's own FI_EP_DGRAM endpoint (its functions are not those udp;ofi_rxd's
// RDM tables hold): 1472-byte messages, udp's largest (and its inject size:
// fi_pingpong sends a shorter one with fi_inject, without a completion).
TEST(Record, UprobesPingpongUdpDgram) {
  REQUIRE_SESSION_SLOT();
  uprobes_pingpong("udp", false, "dgram", "udp", 300, {}, nullptr, 1472);
}

// --uprobes --only-pids --pid IDLE: the session traces the listed process only,
// so a libfabric process started after it began is not traced: the probes are
// attached for IDLE alone (a fi_pingpong server waiting for a client that never
// comes: it maps libfabric and issues nothing). A fi_pingpong pair started
// after the session runs its traffic (its client's own count) while no probed
// site is hit at all, the pair has no rows and no per-rank report, and record
// names both processes as started during the session and not probed.
TEST(Record, UprobesOnlyPidsLeavesLaterProcessesAlone) {
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

TEST(Record, UprobesSizesTcpRxm) {
  REQUIRE_SESSION_SLOT();
  uprobes_sizes("tcp;ofi_rxm");
}

TEST(Record, UprobesSizesShm) {
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
                                  std::string(prov) + (rma ? " rma.read" : " atomic.compwrite")}) {
    // "WHAT: N hits", or "WHAT (FUNCTION): N hits" where symbols named it.
    size_t at = record_log.find(what + ": ");
    if (at == std::string::npos) at = record_log.find(what + " (");
    ASSERT_NE(at, std::string::npos) << what << "\n" << record_log;
    const size_t colon = record_log.find(": ", at);
    ASSERT_NE(colon, std::string::npos);
    EXPECT_GT(std::stoull(record_log.substr(colon + 2)), 0u) << what;
  }
}

TEST(Record, UprobesRmaTcpRxm) {
  REQUIRE_SESSION_SLOT();
  uprobes_ft_app("tcp;ofi_rxm", "rma");
}

TEST(Record, UprobesAtomicTcpRxm) {
  REQUIRE_SESSION_SLOT();
  uprobes_ft_app("tcp;ofi_rxm", "atomic");
}

TEST(Record, UprobesRmaShm) {
  REQUIRE_SESSION_SLOT();
  uprobes_ft_app("shm", "rma");
}

TEST(Record, UprobesAtomicShm) {
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

TEST(Record, UprobesMultiPeerTcpRxm) {
  REQUIRE_SESSION_SLOT();
  uprobes_multiep("tcp;ofi_rxm");
}

TEST(Record, UprobesMultiPeerShm) {
  REQUIRE_SESSION_SLOT();
  uprobes_multiep("shm");
}

}  // namespace
}  // namespace fabtrace::test

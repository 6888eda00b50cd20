#include "tests/integration/uprobe_runs.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <set>
#include <sstream>
#include <utility>

#include "tests/integration/harness.h"

namespace fabtrace::test {

namespace {

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

}  // namespace

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

uint64_t accepted(const std::map<std::string, Event>& rows, const std::string& op) {
  const auto it = rows.find(op);
  return it == rows.end() ? 0 : it->second.num("calls") - it->second.num("refused");
}
uint64_t field(const std::map<std::string, Event>& rows, const std::string& op, const char* k) {
  const auto it = rows.find(op);
  return it == rows.end() ? 0 : it->second.num(k);
}

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

Pingpong start_pingpong(const std::string& dir, const char* prov, bool tagged, int iters,
                        const char* ep, bool preload, int size) {
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

void uprobes_pingpong(const char* prov, bool tagged, const char* ep, const char* providers,
                      int iters, std::vector<std::string> more, std::string* record_out, int size) {
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
                                  std::string(prov) + (tagged ? " tagged.recv" : " msg.recv")})
    ASSERT_NO_FATAL_FAILURE(expect_hit(record_log, what));
  check_link_labels(dir, prov, tagged, ep, server, client, size);
}

void expect_hit(const std::string& record_log, const std::string& what) {
  size_t at = record_log.find(what + ": ");
  if (at == std::string::npos) at = record_log.find(what + " (");
  ASSERT_NE(at, std::string::npos) << what << "\n" << record_log;
  const size_t colon = record_log.find(": ", at);
  ASSERT_NE(colon, std::string::npos);
  EXPECT_GT(std::stoull(record_log.substr(colon + 2)), 0u) << what;
}

}  // namespace fabtrace::test

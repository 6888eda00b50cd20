// `fabtrace record --uprobes` against the programs' own counts and against the
// preload's on the same programs: both modes must print the same numbers, and
// each the program's own (issue 29).
//
// ft_app counts what it did itself: per function the calls it made, those
// refused (-FI_EAGAIN, issued again), those accepted, those that completed
// (its completion handler, by the context it gave) and those that by design
// get no completion (an inject, an op without FI_COMPLETION on a CQ bound
// with FI_SELECTIVE_COMPLETION); the bytes each moved follow from the
// family's size. Its receive windows reuse contexts: each slot's context for
// every receive of the slot (--reuse-ctx), and in the bw family a few
// contexts for all the receives at once, earlier ones still outstanding
// (--rx-contexts), as fabtests' bandwidth tests post theirs. The same
// program runs once under the preload and once under a session (without the
// preload); the per-rank reports of both (the same JSON) are read the same way.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/integration/harness.h"
#include "tests/integration/record_session.h"

namespace fabtrace::test {
namespace {

// One op function's figures in one process.
struct Figures {
  uint64_t calls = 0, refusals = 0, completions = 0, untimed = 0, unfinished = 0;
  uint64_t bytes = 0, untimed_bytes = 0;  // of the completed ops; of the untimed ones
};
using ByFn = std::map<std::string, Figures>;

// A per-rank report's figures per op function (its rows over links and sizes
// summed): the preload's and the uprobe mode's alike.
ByFn from_report(const nlohmann::json& rep) {
  ByFn out;
  for (const auto& l : rep.at("links"))
    for (const auto& o : l.at("ops")) {
      Figures& f = out[o.at("op").get<std::string>()];
      const auto n = [&o](const char* k) { return o.at(k).get<uint64_t>(); };
      f.completions += n("count");
      f.untimed += n("untimed");
      f.unfinished += n("unfinished") + n("ring_full") + n("errors");
      f.refusals += n("eagain") + n("refused");
      f.calls += n("count") + n("untimed") + n("unfinished") + n("ring_full") + n("errors") +
                 n("eagain") + n("refused");
      f.bytes += n("count") * n("bytes");
      f.untimed_bytes += n("untimed") * n("bytes");
    }
  return out;
}

// The bytes one op of `fn` moves in a run of ft_app's `family` with --size
// `size`: an atomic one FI_UINT64; the bw family's first send (and receive) is
// its 16-byte setup message.
uint64_t bytes_of(const std::string& family, const std::string& fn, uint64_t size, uint64_t n) {
  if (fn.find("atomic") != std::string::npos) return 8 * n;
  if (family == "bw") return n ? 16 + (n - 1) * size : 0;
  return size * n;
}

// The program's own figures per function (its result file).
ByFn from_program(const nlohmann::json& app, const std::string& family) {
  ByFn out;
  const auto get = [&app](const char* what, const std::string& fn) {
    return app.at(what).count(fn) ? app.at(what).at(fn).get<uint64_t>() : 0;
  };
  std::set<std::string> fns;
  for (const char* what : {"issued", "eagain"})
    for (const auto& kv : app.at(what).items()) fns.insert(kv.key());
  const uint64_t size = app.at("size").get<uint64_t>();
  for (const std::string& fn : fns) {
    Figures& f = out[fn];
    const uint64_t issued = get("issued", fn);
    f.refusals = get("eagain", fn);
    f.calls = issued + f.refusals;
    f.completions = get("completed", fn);
    f.untimed = get("no_completion", fn) + get("kept_context", fn);
    f.unfinished = issued - f.completions - f.untimed;
    f.bytes = bytes_of(family, fn, size, f.completions);
    f.untimed_bytes = bytes_of(family, fn, size, f.untimed);
  }
  return out;
}

// The report `dir` holds for process `pid` (the preload's or the session's).
nlohmann::json report_of(const std::string& dir, int pid) {
  const auto f = list_files(dir, "fabtrace.", ".p" + std::to_string(pid) + ".json");
  return f.size() == 1 ? load_json(f.front()) : nlohmann::json();
}

// ft_app's families run here, with their extra arguments: each kind of op the
// issue names (inject, send, tagged, RMA, atomic) and the bw family's window
// of receives sharing contexts.
struct Family {
  const char* name;
  std::vector<std::string> args;
};
const std::vector<Family> kFamilies = {
    {"inject", {"--count", "10", "--size", "64", "--reuse-ctx", "1"}},
    {"msg", {"--count", "10", "--size", "64", "--reuse-ctx", "1"}},
    {"tagged", {"--count", "10", "--size", "64", "--reuse-ctx", "1"}},
    {"rma", {"--count", "10", "--size", "64"}},
    {"atomic", {"--count", "10", "--size", "64"}},
    {"bw", {"--count", "40", "--size", "64", "--rx-contexts", "4"}},
};

std::vector<std::string> ft_app_argv(const char* prov, const Family& fam,
                                     const std::string& result) {
  std::vector<std::string> argv = {FT_APP, "--prov", prov, "--test", fam.name};
  argv.insert(argv.end(), fam.args.begin(), fam.args.end());
  argv.insert(argv.end(), {"--result", result});
  return argv;
}

// One family's run in one mode: the program's result files (both ranks) and
// the reports' directory; skipped where the provider cannot run it.
struct Run {
  bool skipped = false;
  std::string dir;
  nlohmann::json app[2];
};

std::string cell(uint64_t program_u, uint64_t program_p, uint64_t preload, uint64_t uprobes) {
  const std::string prog = program_u == program_p
                               ? std::to_string(program_u)
                               : std::to_string(program_p) + "|" + std::to_string(program_u);
  return prog + "/" + std::to_string(preload) + "/" + std::to_string(uprobes);
}

// Every op function's calls, refusals, completions, untimed ops and bytes:
// under --uprobes equal to the program's own, under the preload equal to the
// program's own, and the two modes equal to each other where the program's
// own do not vary between runs (all but the refusals, which are timing). One
// line per (family, function, rank) is printed: program/preload/uprobes (the
// program's own of the preload's run first where the two runs differ).
void uprobe_truth(const char* prov) {
  std::map<std::string, Run> pre, up;
  for (const Family& fam : kFamilies) {
    Run& r = pre[fam.name];
    r.dir = make_temp_dir("up-truth-pre");
    const RunResult rr =
        run(ft_app_argv(prov, fam, r.dir + "/app"), {{"FABTRACE_DIR", r.dir}}, true, 240);
    r.skipped = rr.exit_code == 77;
    if (!r.skipped) {
      ASSERT_EQ(rr.exit_code, 0) << fam.name << "\n" << rr.output;
    }
  }
  const std::string dir = make_temp_dir("up-truth");
  const int rec = start_uprobe_session(dir, "record.log", {"--uprobe-providers", prov});
  ASSERT_GT(rec, 0) << slurp(dir + "/record.log");
  for (const Family& fam : kFamilies) {
    Run& r = up[fam.name];
    r.dir = dir;
    const std::string log = dir + "/" + fam.name + ".log";
    const int app = spawn(ft_app_argv(prov, fam, dir + "/" + fam.name), {}, log, false);
    ASSERT_GT(app, 0);
    const int rc = wait_for(app, 240);
    r.skipped = rc == 77;
    if (!r.skipped && rc != 0) {
      kill(rec, SIGINT);
      wait_for(rec, 120);
      FAIL() << fam.name << " exited " << rc << "\n" << slurp(log);
    }
  }
  kill(rec, SIGINT);
  ASSERT_EQ(wait_for(rec, 120), 0) << slurp(dir + "/record.log");

  size_t compared = 0;
  for (const Family& fam : kFamilies) {
    SCOPED_TRACE(fam.name);
    if (pre[fam.name].skipped || up[fam.name].skipped) {
      std::printf("truth %s %s: skipped (the provider cannot run it)\n", prov, fam.name);
      continue;
    }
    for (const int rank : {0, 1}) {
      SCOPED_TRACE("rank " + std::to_string(rank));
      const std::string r = ".r" + std::to_string(rank) + ".json";
      const nlohmann::json app_p = load_json(pre[fam.name].dir + "/app" + r);
      const nlohmann::json app_u = load_json(dir + "/" + fam.name + r);
      ASSERT_TRUE(app_p.at("ok").get<bool>()) << app_p.dump();
      ASSERT_TRUE(app_u.at("ok").get<bool>()) << app_u.dump();
      const nlohmann::json rep_p = report_of(pre[fam.name].dir, app_p.at("pid").get<int>());
      const nlohmann::json rep_u = report_of(dir, app_u.at("pid").get<int>());
      if (app_p.at("issued").empty() && app_u.at("issued").empty()) {
        // A rank that issues no op (the RMA and atomic families' target): the
        // preload writes no report for a process without fabric I/O.
        EXPECT_TRUE(rep_p.is_null()) << rep_p.dump();
        std::printf("truth %-11s %-6s r%d issues no op\n", prov, fam.name, rank);
        continue;
      }
      ASSERT_FALSE(rep_p.is_null()) << "no preload report";
      ASSERT_FALSE(rep_u.is_null()) << "no uprobes report\n" << slurp(dir + "/record.log");
      EXPECT_EQ(rep_u.at("source"), "uprobes");
      const ByFn own_p = from_program(app_p, fam.name), own_u = from_program(app_u, fam.name);
      const ByFn got_p = from_report(rep_p), got_u = from_report(rep_u);
      std::set<std::string> fns;
      for (const ByFn* m : {&own_p, &own_u, &got_p, &got_u})
        for (const auto& kv : *m) fns.insert(kv.first);
      for (const std::string& fn : fns) {
        SCOPED_TRACE(fn);
        const auto at = [&fn](const ByFn& m) {
          const auto it = m.find(fn);
          return it == m.end() ? Figures() : it->second;
        };
        const Figures op = at(own_p), ou = at(own_u), p = at(got_p), u = at(got_u);
        std::printf(
            "truth %-11s %-6s r%d %-20s calls %s refused %s completions %s untimed %s bytes %s "
            "untimed_bytes %s\n",
            prov, fam.name, rank, fn.c_str(), cell(ou.calls, op.calls, p.calls, u.calls).c_str(),
            cell(ou.refusals, op.refusals, p.refusals, u.refusals).c_str(),
            cell(ou.completions, op.completions, p.completions, u.completions).c_str(),
            cell(ou.untimed, op.untimed, p.untimed, u.untimed).c_str(),
            cell(ou.bytes, op.bytes, p.bytes, u.bytes).c_str(),
            cell(ou.untimed_bytes, op.untimed_bytes, p.untimed_bytes, u.untimed_bytes).c_str());
        // Each mode against its run's program.
        for (const auto& [got, own, mode] :
             {std::make_tuple(p, op, "preload"), std::make_tuple(u, ou, "uprobes")}) {
          SCOPED_TRACE(mode);
          EXPECT_EQ(got.calls, own.calls);
          EXPECT_EQ(got.refusals, own.refusals);
          EXPECT_EQ(got.completions, own.completions);
          EXPECT_EQ(got.untimed, own.untimed);
          EXPECT_EQ(got.unfinished, 0u);
          EXPECT_EQ(got.bytes, own.bytes);
          EXPECT_EQ(got.untimed_bytes, own.untimed_bytes);
        }
        // The two modes alike (the accepted ops do not depend on timing).
        EXPECT_EQ(u.completions, p.completions);
        EXPECT_EQ(u.untimed, p.untimed);
        EXPECT_EQ(u.calls - u.refusals, p.calls - p.refusals);
        EXPECT_EQ(u.bytes, p.bytes);
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 0u);
  // Selective completion: the inject family binds its transmit CQ with
  // FI_SELECTIVE_COMPLETION and sends with fi_send (no completion) and
  // fi_sendmsg with and without FI_COMPLETION: untimed as the preload counts.
  if (!up["inject"].skipped) {
    const nlohmann::json app = load_json(dir + "/inject.r0.json");
    const ByFn got = from_report(report_of(dir, app.at("pid").get<int>()));
    ASSERT_TRUE(got.count("fi_send") && got.count("fi_sendmsg"));
    EXPECT_EQ(got.at("fi_send").untimed, app.at("no_completion").at("fi_send").get<uint64_t>());
    EXPECT_EQ(got.at("fi_send").completions, 0u);
    EXPECT_EQ(got.at("fi_sendmsg").untimed,
              app.at("no_completion").at("fi_sendmsg").get<uint64_t>());
  }
}

// (Record tests: they start a session, and so run alone.)
TEST(Uprobes, TruthTcpRxm) {
  REQUIRE_SESSION_SLOT();
  uprobe_truth("tcp;ofi_rxm");
}

TEST(Uprobes, TruthShm) {
  REQUIRE_SESSION_SLOT();
  uprobe_truth("shm");
}

TEST(Uprobes, TruthUdpRxd) {
  REQUIRE_SESSION_SLOT();
  uprobe_truth("udp;ofi_rxd");
}

TEST(Uprobes, TruthSockets) {
  REQUIRE_SESSION_SLOT();
  uprobe_truth("sockets");
}

// A poll gap planted under --uprobes (ft_app's stream, rank 0 asleep for
// 200 ms between two polls of its CQ, --gap sleep:200): the per-rank report's
// CQ rows, as the preload writes them, hold each CQ's polls, exactly the
// program's own count, and the planted gap as its longest, within 1% of the
// program's own measure of it (each stamps a poll at its return); `fabtrace
// report` lists it among the longest gaps, as it lists the preload's.
TEST(Uprobes, LongestPollGapIsTheProgramsOwn) {
  REQUIRE_SESSION_SLOT();
  const std::string dir = make_temp_dir("up-gap");
  const int rec = start_uprobe_session(dir, "record.log", {"--uprobe-providers", "tcp;ofi_rxm"});
  ASSERT_GT(rec, 0) << slurp(dir + "/record.log");
  const int app = spawn({FT_APP, "--prov", "tcp;ofi_rxm", "--test", "stream", "--count", "200",
                         "--gap", "sleep:200", "--result", dir + "/app"},
                        {}, dir + "/app.log", false);
  ASSERT_GT(app, 0);
  const int rc = wait_for(app, 240);
  kill(rec, SIGINT);
  ASSERT_EQ(wait_for(rec, 120), 0) << slurp(dir + "/record.log");
  ASSERT_EQ(rc, 0) << slurp(dir + "/app.log");
  for (const int rank : {0, 1}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const nlohmann::json own = load_json(dir + "/app.r" + std::to_string(rank) + ".json");
    const nlohmann::json rep = report_of(dir, own.at("pid").get<int>());
    ASSERT_FALSE(rep.is_null()) << slurp(dir + "/record.log");
    ASSERT_EQ(own.at("cqs").size(), 1u) << own.dump();  // the stream family: one CQ
    ASSERT_EQ(rep.at("cqs").size(), 1u) << rep.dump();
    const auto& mine = own.at("cqs")[0];
    const auto& cq = rep.at("cqs")[0];
    EXPECT_EQ(cq.at("polls").get<uint64_t>(), mine.at("polls").get<uint64_t>());
    uint64_t classed = 0;
    for (const auto& kv : cq.at("gaps").items()) classed += kv.value().get<uint64_t>();
    EXPECT_EQ(classed + 1, cq.at("polls").get<uint64_t>());  // every poll but the first ends one
    if (rank == 0) {
      const double planted = mine.at("max_gap_ns").get<double>();
      EXPECT_GE(planted, 200e6);
      EXPECT_NEAR(cq.at("max_gap_ns").get<double>(), planted, planted * 0.01);
      EXPECT_EQ(cq.at("gaps").at(">=100ms").get<uint64_t>() >= 1, true);
    }
  }
  const Cli cli = report_cli(dir, dir + "/out");
  ASSERT_EQ(cli.rc, 0) << cli.err;
  EXPECT_NE(cli.out.find("longest CQ poll gaps"), std::string::npos) << cli.out;
}

}  // namespace
}  // namespace fabtrace::test

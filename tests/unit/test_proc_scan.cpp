// Discovery of the traced processes in /proc (userspace/record/proc_scan.*): the
// parsers on exact /proc texts, and ProcScanner on a /proc tree the test builds.
#include "userspace/record/proc_scan.h"
#include "userspace/record/proc_watch.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "tests/unit/scratch_dir.h"
#include "userspace/report/job/kernel_rows.h"

namespace fabtrace {
namespace {

using test::ScratchDir;

std::string env(std::initializer_list<const char*> vars) {
  std::string s;
  for (const char* v : vars) {
    s += v;
    s += '\0';
  }
  return s;
}

TEST(ProcScan, ParseMaps) {
  const std::string maps =
      "55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1311 /usr/bin/app\n"
      "7f1c2a000000-7f1c2a100000 r-xp 00000000 08:01 2001 /opt/fabtrace/lib/libfabtrace.so\n"
      "7f1c2a100000-7f1c2a101000 rw-p 00100000 08:01 2001 /opt/fabtrace/lib/libfabtrace.so\n"
      "7f1c2b000000-7f1c2b200000 r-xp 00000000 08:01 3001 /usr/lib64/libfabric.so.1.18.0\n"
      "7f1c2c000000-7f1c2c021000 rw-p 00000000 00:00 0 \n"
      "7ffd1e000000-7ffd1e021000 rw-p 00000000 00:00 0                          [stack]\n"
      "7ffd1e100000-7ffd1e102000 r-xp 00000000 00:00 0                          [vdso]";
  std::string preload, fabric;
  parse_maps(maps, &preload, &fabric);
  EXPECT_EQ(preload, "/opt/fabtrace/lib/libfabtrace.so");
  EXPECT_EQ(fabric, "/usr/lib64/libfabric.so.1.18.0");

  // An install preloads the SONAME link; the loader maps the versioned file.
  preload.clear();
  fabric.clear();
  parse_maps("7f00-7f01 r-xp 0 08:01 9 /usr/lib/x86_64-linux-gnu/libfabtrace.so.0.9.0\n", &preload,
             &fabric);
  EXPECT_EQ(preload, "/usr/lib/x86_64-linux-gnu/libfabtrace.so.0.9.0");
  EXPECT_TRUE(is_preload_file_name("libfabtrace.so.0"));

  // The first mapping of each wins; names that only look alike do not count.
  preload.clear();
  fabric.clear();
  parse_maps(
      "1000-2000 r-xp 0 0:0 1 /a/libfabric.so\n"
      "2000-3000 r-xp 0 0:0 1 /b/libfabric.so.1\n"
      "3000-4000 r-xp 0 0:0 1 /c/libfabtrace.so.bak\n"
      "4000-5000 r-xp 0 0:0 1 /d/libfabtrace.so/x\n"
      "5000-6000 r-xp 0 0:0 1 /e/mylibfabtrace.so\n"
      "6000-7000 r-xp 0 0:0 1 /f/libfabtrace.so.\n"
      "7000-8000 r-xp 0 0:0 1 /g/libfabtrace.so.0..1\n"
      "8000-9000 r-xp 0 0:0 1 /h/libfabtrace.so.0a\n",
      &preload, &fabric);
  EXPECT_EQ(preload, "");
  EXPECT_EQ(fabric, "/a/libfabric.so");

  preload.clear();
  fabric.clear();
  parse_maps(
      "1000-2000 r-xp 0 0:0 1 /x/libfabricx.so\n"
      "2000-3000 r-xp 0 0:0 1 /x/libfabric_shm.so\n"
      "no path here\n\n",
      &preload, &fabric);
  EXPECT_EQ(preload, "");
  EXPECT_EQ(fabric, "");
}

TEST(ProcScan, RankFromEnviron) {
  // The preload's order: SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, RANK.
  EXPECT_EQ(rank_from_environ(env({"PATH=/bin", "PMI_RANK=3", "SLURM_PROCID=7", "RANK=9"})), "7");
  EXPECT_EQ(rank_from_environ(env({"RANK=9", "OMPI_COMM_WORLD_RANK=2"})), "2");
  EXPECT_EQ(rank_from_environ(env({"RANK=9", "PMIX_RANK=4"})), "4");
  EXPECT_EQ(rank_from_environ(env({"RANK=9"})), "9");
  // An empty value is passed over.
  EXPECT_EQ(rank_from_environ(env({"SLURM_PROCID=", "PMI_RANK=5"})), "5");
  // Names that only end like one, or contain one.
  EXPECT_EQ(rank_from_environ(env({"MY_RANK=1", "XSLURM_PROCID=2", "RANKS=3"})), "");
  EXPECT_EQ(rank_from_environ(""), "");
  // The last variable without its NUL; a value cut at 64 bytes.
  EXPECT_EQ(rank_from_environ(std::string("A=1\0RANK=11", 11)), "11");
  EXPECT_EQ(rank_from_environ(env({("RANK=" + std::string(100, '8')).c_str()})),
            std::string(64, '8'));
}

const char* const kTcpHeader =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
    "timeout inode";
const char* const kTcp6Header =
    "  sl  local_address                         remote_address                        st "
    "tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode";

struct TcpCase {
  std::string line;
  bool v6;
  uint64_t inode;
  uint8_t state;
  const char *src, *dst;
};

TEST(ProcScan, ParseTcpLines) {
  const std::vector<TcpCase> good = {
      {"   0: 0100007F:1388 0200000A:1770 01 00000000:00000000 00:00000000 00000000  1000      "
       "  0 1111 1 0000000000000000 20 4 30 10 -1",
       false, 1111, 1, "127.0.0.1:5000", "10.0.0.2:6000"},
      {"   1: 00000000000000000000000001000000:1388 0000000000000000FFFF00000200000A:1770 0A "
       "00000000:00000000 00:00000000 00000000     0        0 2222 1 0000000000000000 100 0 0 "
       "10 0",
       true, 2222, 0x0A, "[::1]:5000", "[::ffff:10.0.0.2]:6000"},
      {"   2: 000080FE00000000FF0001025AFE0405:C350 00000000000000000000000000000000:0000 0A "
       "00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 100 0 0 10 0",
       true, 3, 0x0A, "[fe80::201:ff:504:fe5a]:50000", "[::]:0"},
  };
  for (const TcpCase& t : good) {
    ScannedConn c;
    uint64_t ino = 0;
    ASSERT_TRUE(parse_tcp_line(t.line, t.v6, &c, &ino)) << t.line;
    EXPECT_EQ(ino, t.inode);
    EXPECT_EQ(c.state, t.state);
    EXPECT_EQ(c.tuple.family, t.v6 ? AF_INET6 : AF_INET);
    EXPECT_EQ(tuple_side(c.tuple, true), t.src);
    EXPECT_EQ(tuple_side(c.tuple, false), t.dst);
    // Bytes past an IPv4 address stay zero.
    for (int i = t.v6 ? 16 : 4; i < 16; ++i) EXPECT_EQ(c.tuple.saddr[i] | c.tuple.daddr[i], 0);
  }
  ScannedConn c;
  uint64_t ino = 0;
  const std::string good4 =
      "   0: 0100007F:1388 0200000A:1770 01 00000000:00000000 00:00000000 00000000  1000 0 1111";
  EXPECT_TRUE(parse_tcp_line(good4, false, &c, &ino));
  const std::vector<std::pair<std::string, bool>> bad = {
      {kTcpHeader, false},
      {kTcp6Header, true},
      {"", false},
      {good4, true},  // an IPv4 line read as IPv6
      {"   0: 0100007F:1388 0200000A:1770 01 00000000:00000000 00:00000000", false},
      {"   0 0100007F:1388 0200000A:1770 01 00000000:00000000 00:00000000 00000000 0 0 1", false},
      {"   0: 0100007G:1388 0200000A:1770 01 00000000:00000000 00:00000000 00000000 0 0 1", false},
      {"   0: 0100007F:10000 0200000A:1770 01 00000000:00000000 00:00000000 00000000 0 0 1", false},
      {"   0: 0100007F: 0200000A:1770 01 00000000:00000000 00:00000000 00000000 0 0 1", false},
      {"   0: 0100007F1388 0200000A:1770 01 00000000:00000000 00:00000000 00000000 0 0 1", false},
      {"   0: 0100007F:1388 0200000A:1770 0Z 00000000:00000000 00:00000000 00000000 0 0 1", false},
      {"   0: 0100007F:1388 0200000A:1770 01 00000000:00000000 00:00000000 00000000 0 0 12x",
       false},
  };
  for (const auto& b : bad) EXPECT_FALSE(parse_tcp_line(b.first, b.second, &c, &ino)) << b.first;
}

// A /proc with: 1234 (preload and libfabric, two threads, sockets), 2345
// (libfabric only), 3456 (neither), 4567 (the scanner itself), 5678 (gone:
// no files), and non-process entries.
class FakeProc {
 public:
  FakeProc() {
    add_process(1234, "/usr/bin/app",
                "7f00-7f01 r-xp 0 08:01 9 /opt/ft/lib/libfabtrace.so\n"
                "7f02-7f03 r-xp 0 08:01 8 /usr/lib/libfabric.so.1\n",
                env({"PATH=/bin", "PMI_RANK=3", "SLURM_PROCID=7"}), "app",
                {{1234, "app"}, {1240, "app-poll"}});
    dir_.symlink("/dev/null", "1234/fd/0");
    dir_.symlink("socket:[1111]", "1234/fd/3");
    dir_.symlink("socket:[2222]", "1234/fd/4");
    dir_.symlink("pipe:[9]", "1234/fd/5");
    dir_.symlink("socket:[4444]", "1234/fd/notanfd");
    dir_.write("1234/net/tcp",
               std::string(kTcpHeader) +
                   "\n   0: 0100007F:1388 0200000A:1770 01 00000000:00000000 00:00000000 "
                   "00000000  1000        0 1111 1 0000000000000000 20 4 30 10 -1\n"
                   "   1: 0100007F:1389 0300000A:1771 01 00000000:00000000 00:00000000 "
                   "00000000  1000        0 3333 1 0000000000000000 20 4 30 10 -1\n"
                   "   2: 0100007F:138A 0300000A:1772 01 00000000:00000000 00:00000000 "
                   "00000000  1000        0 4444 1 0000000000000000 20 4 30 10 -1\n");
    dir_.write("1234/net/tcp6",
               std::string(kTcp6Header) +
                   "\n   0: 00000000000000000000000001000000:1388 "
                   "00000000000000000000000001000000:C000 0A 00000000:00000000 00:00000000 "
                   "00000000     0        0 2222 1 0000000000000000 100 0 0 10 0\n");
    add_process(2345, "/opt/x/fi_server", "7f00-7f01 r-xp 0 08:01 8 /usr/lib/libfabric.so\n",
                env({"HOME=/root"}), "fi_server", {{2345, "fi_server"}});
    add_process(3456, "/usr/bin/bash", "7f00-7f01 r-xp 0 08:01 7 /usr/lib/libc.so.6\n",
                env({"RANK=1"}), "bash", {{3456, "bash"}});
    add_process(4567, "/usr/bin/fabtrace", "7f00-7f01 r-xp 0 08:01 9 /opt/ft/lib/libfabtrace.so\n",
                env({}), "fabtrace", {{4567, "fabtrace"}});
    dir_.mkdirs("5678");
    dir_.mkdirs("net");
    dir_.mkdirs("sys/kernel");
    dir_.write("uptime", "1.0 2.0\n");
    dir_.symlink("1234", "self");
  }
  std::string root() const { return dir_.path(); }
  const ScratchDir& dir() const { return dir_; }

 private:
  void add_process(int pid, const std::string& exe, const std::string& maps, const std::string& e,
                   const std::string& comm, std::vector<std::pair<int, std::string>> threads) {
    const std::string p = std::to_string(pid);
    dir_.write(p + "/maps", maps);
    dir_.write(p + "/environ", e);
    dir_.write(p + "/comm", comm + "\n");
    dir_.symlink(exe, p + "/exe");
    for (const auto& t : threads)
      dir_.write(p + "/task/" + std::to_string(t.first) + "/comm", t.second + "\n");
    dir_.mkdirs(p + "/task/not-a-tid");
  }
  ScratchDir dir_;
};

std::vector<ScannedThread> sorted(std::vector<ScannedThread> v) {
  std::sort(v.begin(), v.end(),
            [](const ScannedThread& a, const ScannedThread& b) { return a.tid < b.tid; });
  return v;
}

TEST(ProcScan, ScannerFindsTheProcessesThatMapTheLibraries) {
  FakeProc fake;
  const ProcScanner scanner(fake.root());
  std::vector<ScannedProcess> found = scanner.scan(4567);
  std::sort(found.begin(), found.end(),
            [](const ScannedProcess& a, const ScannedProcess& b) { return a.pid < b.pid; });
  ASSERT_EQ(found.size(), 2u);

  const ScannedProcess& app = found[0];
  EXPECT_EQ(app.pid, 1234);
  EXPECT_EQ(app.comm, "app");
  EXPECT_EQ(app.exe, "/usr/bin/app");
  EXPECT_EQ(app.rank, "7");
  EXPECT_TRUE(app.preload);
  EXPECT_EQ(app.preload_path, "/opt/ft/lib/libfabtrace.so");
  EXPECT_EQ(app.libfabric_path, "/usr/lib/libfabric.so.1");
  const std::vector<ScannedThread> threads = sorted(app.threads);
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_EQ(threads[0].tid, 1234);
  EXPECT_EQ(threads[0].comm, "app");
  EXPECT_EQ(threads[1].tid, 1240);
  EXPECT_EQ(threads[1].comm, "app-poll");

  const ScannedProcess& server = found[1];
  EXPECT_EQ(server.pid, 2345);
  EXPECT_EQ(server.comm, "fi_server");
  EXPECT_EQ(server.rank, "");
  EXPECT_FALSE(server.preload);
  EXPECT_EQ(server.preload_path, "");
  EXPECT_EQ(server.libfabric_path, "/usr/lib/libfabric.so");
  ASSERT_EQ(server.threads.size(), 1u);
  EXPECT_EQ(server.threads[0].tid, 2345);

  // Not excluding itself: the scanner's own process is found too.
  EXPECT_EQ(scanner.scan(99999).size(), 3u);
}

TEST(ProcScan, InspectOneProcess) {
  FakeProc fake;
  const ProcScanner scanner(fake.root());
  ScannedProcess p;
  p.pid = -1;
  EXPECT_FALSE(scanner.inspect(3456, &p));  // maps neither library
  EXPECT_FALSE(scanner.inspect(5678, &p));  // gone
  EXPECT_FALSE(scanner.inspect(9999, &p));  // never there
  EXPECT_EQ(p.pid, -1);                     // untouched when false
  ASSERT_TRUE(scanner.inspect(2345, &p));
  EXPECT_EQ(p.pid, 2345);
  EXPECT_EQ(p.exe, "/opt/x/fi_server");
}

TEST(ProcScan, SocketsMatchedByInode) {
  FakeProc fake;
  const ProcScanner scanner(fake.root());
  const std::vector<ScannedConn> conns = scanner.tcp_conns(1234);
  ASSERT_EQ(conns.size(), 2u);
  // IPv4 first, then IPv6; 3333 is another process's, 4444 behind a non-fd name.
  EXPECT_EQ(conns[0].tuple.family, AF_INET);
  EXPECT_EQ(tuple_side(conns[0].tuple, true), "127.0.0.1:5000");
  EXPECT_EQ(tuple_side(conns[0].tuple, false), "10.0.0.2:6000");
  EXPECT_EQ(conns[0].state, 1u);
  EXPECT_EQ(conns[1].tuple.family, AF_INET6);
  EXPECT_EQ(tuple_side(conns[1].tuple, true), "[::1]:5000");
  EXPECT_EQ(tuple_side(conns[1].tuple, false), "[::1]:49152");
  EXPECT_EQ(conns[1].state, 0x0Au);

  EXPECT_TRUE(scanner.tcp_conns(2345).empty());  // no fd directory
  EXPECT_TRUE(scanner.tcp_conns(9999).empty());
}

TEST(ProcScan, MissingRoot) {
  ScratchDir dir;
  const ProcScanner scanner(dir.path("nothing"));
  EXPECT_TRUE(scanner.scan(1).empty());
  ScannedProcess p;
  EXPECT_FALSE(scanner.inspect(1, &p));
  EXPECT_TRUE(scanner.tcp_conns(1).empty());
}

// ---- ProcWatch: the scan made cheap where nothing changed ----

constexpr uint64_t kS = 1000000000ULL;

// Whether process `pid` is among those a scan found.
bool has(const std::vector<ScannedProcess>& v, pid_t pid) {
  return std::any_of(v.begin(), v.end(), [pid](const ScannedProcess& p) { return p.pid == pid; });
}

TEST(ProcWatch, FindsWhatTheScannerFindsAndInspectsEachOnce) {
  FakeProc fake;
  ProcWatch w(fake.root());
  std::vector<ScannedProcess> a = w.scan(4567, 10 * kS);
  EXPECT_EQ(a.size(), ProcScanner(fake.root()).scan(4567).size());
  const uint64_t first = w.inspections();
  EXPECT_EQ(first, 4u);  // 1234, 2345, 3456 (neither library), 5678 (gone: no maps)
  // Again 0.1 s later: the ones that map a library as they were, not read again.
  std::vector<ScannedProcess> b = w.scan(4567, 10 * kS + kS / 10);
  EXPECT_EQ(b.size(), a.size());
  EXPECT_EQ(w.inspections(), first);
}

TEST(ProcWatch, AProcessThatLoadsLibfabricLaterIsFoundAtItsNextCheck) {
  FakeProc fake;
  ProcWatch w(fake.root());
  uint64_t t = 10 * kS;
  ASSERT_FALSE(has(w.scan(4567, t), 3456));
  // It loads libfabric (as MPI does, through dlopen).
  fake.dir().write("3456/maps", "7f00-7f01 r-xp 0 08:01 8 /usr/lib/libfabric.so.1\n");
  EXPECT_FALSE(has(w.scan(4567, t + kS / 4), 3456)) << "checked again before its time";
  EXPECT_TRUE(has(w.scan(4567, t + kS / 2), 3456)) << "its first recheck, 0.5 s on";
  // One that never does is checked ever more seldom, up to every 8 s.
  t += kS;
  uint64_t before = w.inspections();
  for (int i = 0; i < 400; ++i) w.scan(4567, t + static_cast<uint64_t>(i) * kS / 2);
  // 200 s of scans every 0.5 s: 5678 (no maps) at 0.5, 1, 2, 4, 8 s, then every 8 s.
  EXPECT_LE(w.inspections() - before, 30u);
  EXPECT_GE(w.inspections() - before, 25u);
}

TEST(ProcWatch, AnExecOrAReusedPidIsInspectedAtOnce) {
  FakeProc fake;
  ProcWatch w(fake.root());
  fake.dir().write("3456/stat", "3456 (bash) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0\n");
  w.scan(4567, 10 * kS);
  const uint64_t before = w.inspections();
  // exec: another name; the pid reused: another start time.
  fake.dir().write("3456/stat", "3456 (app) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0\n");
  w.scan(4567, 10 * kS + kS / 10);
  EXPECT_EQ(w.inspections(), before + 1);
  fake.dir().write("3456/stat", "3456 (app) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 778 0 0\n");
  w.scan(4567, 10 * kS + 2 * kS / 10);
  EXPECT_EQ(w.inspections(), before + 2);
  w.scan(4567, 10 * kS + 3 * kS / 10);
  EXPECT_EQ(w.inspections(), before + 2);
}

// Processes of one network namespace asked for after one scan share one read
// of its tables; after the next scan, they are read again.
TEST(ProcWatch, OneNamespacesTablesAreReadOncePerScan) {
  FakeProc fake;
  // 2345 in 1234's namespace, with a socket and no tables of its own: what it
  // finds can only come from 1234's.
  fake.dir().symlink("net:[4026531840]", "1234/ns/net");
  fake.dir().symlink("net:[4026531840]", "2345/ns/net");
  fake.dir().symlink("socket:[3333]", "2345/fd/7");
  ProcWatch w(fake.root());
  w.scan(4567, 10 * kS);
  EXPECT_EQ(w.new_tcp_conns(1234).size(), 2u);
  const std::vector<ScannedConn> other = w.new_tcp_conns(2345);
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0].tuple.dport, 0x1771);
  EXPECT_EQ(w.tcp_table_reads(), 1u);
  // An exec: the process read again, after another scan: its tables too.
  fake.dir().write("1234/stat", "1234 (other) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0\n");
  w.scan(4567, 11 * kS);
  EXPECT_EQ(w.new_tcp_conns(1234).size(), 2u);
  EXPECT_EQ(w.tcp_table_reads(), 2u);
}

// A kernel thread never maps a library: inspected once, never again (most of
// a node's pids are kernel threads).
TEST(ProcWatch, AKernelThreadIsInspectedOnce) {
  FakeProc fake;
  // PF_KTHREAD (0x200000) in its flags (field 9), and no maps.
  fake.dir().write("9999/stat",
                   "9999 (kworker/0:1) I 2 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0\n");
  fake.dir().write("9999/maps", "");
  fake.dir().write("8888/stat",
                   "8888 (sleep) S 1 1 1 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 6 0 0\n");
  fake.dir().write("8888/maps", "");
  ProcWatch w(fake.root());
  w.scan(4567, 10 * kS);
  const uint64_t first = w.inspections();
  for (int i = 1; i <= 40; ++i) w.scan(4567, 10 * kS + static_cast<uint64_t>(i) * kS / 2);
  // 20 s of scans: 3456, 5678 and 8888 at 0.5, 1.5, 3.5, 7.5, 15.5 s; 9999 never.
  EXPECT_EQ(w.inspections() - first, 15u);
}

// Told which processes began or exec'ed since the last scan (the session's
// programs tell), the scan reads the identity of those and of new pids only.
TEST(ProcWatch, ToldChangesOnlyThoseAreRead) {
  FakeProc fake;
  ProcWatch w(fake.root());
  fake.dir().write("3456/stat", "3456 (bash) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0\n");
  const ProcChanges none;
  w.scan(4567, 10 * kS, &none);
  const uint64_t known = w.identity_reads();
  ASSERT_GE(known, 2u);  // every process, the first time
  const uint64_t inspected = w.inspections();
  // Nothing told: nothing read, whatever /proc says.
  fake.dir().write("3456/stat", "3456 (app) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0\n");
  w.scan(4567, 10 * kS + kS / 10, &none);
  EXPECT_EQ(w.identity_reads(), known);
  EXPECT_EQ(w.inspections(), inspected);
  // Its exec told: read, and inspected as the process it now is.
  ProcChanges exec;
  exec.pids = {3456};
  w.scan(4567, 10 * kS + 2 * kS / 10, &exec);
  EXPECT_EQ(w.identity_reads(), known + 1);
  EXPECT_EQ(w.inspections(), inspected + 1);
  // Untold (the programs missed some): every process is read again.
  w.scan(4567, 10 * kS + 3 * kS / 10);
  EXPECT_EQ(w.identity_reads(), 2 * known + 1);
  EXPECT_EQ(w.inspections(), inspected + 1);
}

// Told of files mapped executable too, the scan inspects a process that maps
// neither library again when it loaded one, and its rechecks grow further.
TEST(ProcWatch, ToldLoadsFindALibraryAtOnceAndRecheckSeldom) {
  FakeProc fake;
  ProcWatch w(fake.root());
  ProcChanges none;
  none.loads = true;
  const uint64_t t = 10 * kS;
  // 20 s of scans: rechecks at 0.5, 1.5, 3.5, 7.5, 15.5 s, the next at 31.5 s.
  for (int i = 0; i < 40; ++i) w.scan(4567, t + static_cast<uint64_t>(i) * kS / 2, &none);
  const uint64_t first = w.inspections();
  // It loads libfabric, and the kernel says it mapped a file executable.
  fake.dir().write("3456/maps", "7f00-7f01 r-xp 0 08:01 8 /usr/lib/libfabric.so.1\n");
  EXPECT_FALSE(has(w.scan(4567, t + 20 * kS, &none), 3456)) << "untold, its recheck not due";
  ProcChanges loaded = none;
  loaded.pids = {3456};
  EXPECT_TRUE(has(w.scan(4567, t + 20 * kS + kS / 2, &loaded), 3456));
  EXPECT_EQ(w.inspections(), first + 1);
  // 200 s more: 5678 (no files) at 31.5, 63.5, 127.5 and 191.5 s (untold, every 8 s: 25).
  const uint64_t before = w.inspections();
  for (int i = 0; i < 400; ++i)
    w.scan(4567, t + 21 * kS + static_cast<uint64_t>(i) * kS / 2, &none);
  EXPECT_LE(w.inspections() - before, 5u);
  EXPECT_GE(w.inspections() - before, 3u);
}

// Told of everything (begins, execs, loads, ends), the scan lists /proc at its
// first scan only: a process is found when told, and forgotten when its end is.
TEST(ProcWatch, ToldOfEverythingProcIsNotListed) {
  FakeProc fake;
  ProcWatch w(fake.root());
  ProcChanges none;
  none.loads = none.ends = true;
  ASSERT_TRUE(has(w.scan(4567, 10 * kS, &none), 1234));  // listed: the first scan
  const uint64_t reads = w.identity_reads();
  // A new process that maps libfabric: not found until told.
  fake.dir().write("7777/maps", "7f00-7f01 r-xp 0 08:01 8 /usr/lib/libfabric.so.1\n");
  fake.dir().write("7777/stat", "7777 (rank) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 900 0 0\n");
  EXPECT_FALSE(has(w.scan(4567, 10 * kS + kS / 4, &none), 7777));  // no recheck due yet
  EXPECT_EQ(w.identity_reads(), reads);
  ProcChanges began = none;
  began.pids = {7777};
  EXPECT_TRUE(has(w.scan(4567, 11 * kS, &began), 7777));
  EXPECT_TRUE(has(w.scan(4567, 11 * kS + kS / 2, &none), 7777));
  // It ends: a zombie until its parent waits, then gone. Either way, forgotten.
  fake.dir().write("7777/stat", "7777 (rank) Z 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 900 0 0\n");
  ProcChanges ended = none;
  ended.pids = {7777};
  EXPECT_FALSE(has(w.scan(4567, 12 * kS, &ended), 7777));
  // 1234 ends without a zombie: its files gone.
  std::filesystem::remove_all(fake.dir().path("1234"));
  ended.pids = {1234};
  EXPECT_FALSE(has(w.scan(4567, 12 * kS + kS / 2, &ended), 1234));
  EXPECT_TRUE(has(w.scan(4567, 13 * kS, &none), 2345));  // the others as they were
}

// The TCP table is read once per process: the programs see what it connects,
// accepts or listens on once it is traced.
TEST(ProcWatch, TcpTablesAreReadOncePerProcess) {
  FakeProc fake;
  ProcWatch w(fake.root());
  w.scan(4567, 10 * kS);
  EXPECT_EQ(w.new_tcp_conns(1234).size(), 2u);
  EXPECT_EQ(w.tcp_reads(), 1u);
  fake.dir().symlink("socket:[3333]", "1234/fd/6");  // a later connection
  for (int i = 1; i <= 40; ++i) {
    w.scan(4567, 10 * kS + static_cast<uint64_t>(i) * kS / 2);
    EXPECT_TRUE(w.new_tcp_conns(1234).empty());
  }
  EXPECT_EQ(w.tcp_reads(), 1u);
  // The same pid, another process (an exec): read again, with the new one.
  fake.dir().write("1234/stat", "1234 (other) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0\n");
  w.scan(4567, 40 * kS);
  EXPECT_EQ(w.new_tcp_conns(1234).size(), 3u);
  EXPECT_EQ(w.tcp_reads(), 2u);
  // A --pid process the scan does not know: once too.
  EXPECT_TRUE(w.new_tcp_conns(9999).empty());
  EXPECT_TRUE(w.new_tcp_conns(9999).empty());
  EXPECT_EQ(w.tcp_reads(), 3u);
}

}  // namespace
}  // namespace fabtrace

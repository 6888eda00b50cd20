// Which processes of this node a session traces, read from /proc: every
// process that maps libfabtrace.so (the preload) or libfabric, with its threads,
// its rank (from its environment) and its TCP connections (so that retransmits
// and drops can be put on the traced process's links).
//
// /proc is read as hostile input: every file is read with a size cap, and a
// process that vanishes mid-scan is simply not reported. The root is a
// parameter so that tests can point the scanner at a tree of their own.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bpf/fabtrace_events.h"

namespace fabtrace {

struct ScannedThread {
  pid_t tid = 0;
  std::string comm;
};

struct ScannedProcess {
  pid_t pid = 0;
  std::string comm, exe, rank;  // rank "" when no launcher variable is set
  bool preload = false;         // libfabtrace.so is mapped
  std::string preload_path;     // the mapped libfabtrace.so, as the process names it
  std::string preload_range;    // its first mapping's "start-end" (/proc/PID/map_files/<range>)
  uid_t uid = 0;                // the process's owner (of /proc/PID)
  std::string libfabric_path;   // the mapped libfabric.so*
  std::vector<ScannedThread> threads;
};

struct ScannedConn {
  ft_tuple tuple{};   // local first
  uint8_t state = 0;  // TCP state as in /proc/net/tcp (0x0A = LISTEN)
};

class ProcScanner {
 public:
  explicit ProcScanner(std::string root = "/proc") : root_(std::move(root)) {}

  // Every process (but `self`) mapping the preload or libfabric.
  std::vector<ScannedProcess> scan(pid_t self) const;
  // One process, when it maps either (false otherwise, or when it is gone).
  bool inspect(pid_t pid, ScannedProcess* out) const;
  // The TCP sockets (IPv4 and IPv6) process `pid` holds open.
  std::vector<ScannedConn> tcp_conns(pid_t pid) const;
  // The same in two steps: the inodes of the sockets it holds (its descriptors
  // listed), then the TCP connections among `inodes` (its network namespace's
  // tables read).
  std::set<uint64_t> socket_inodes(pid_t pid) const;
  // `tables`, when given, keeps the texts read by network namespace: processes
  // of one namespace share its tables (one read, not one per process).
  using TcpTables = std::map<std::string, std::array<std::string, 2>>;
  std::vector<ScannedConn> tcp_conns(pid_t pid, const std::set<uint64_t>& inodes,
                                     TcpTables* tables = nullptr) const;
  uint64_t table_reads() const { return table_reads_; }  // of a namespace's pair of tables

 private:
  std::string root_;
  mutable uint64_t table_reads_ = 0;
};

// The preload's file: libfabtrace.so or a versioned one (libfabtrace.so.0,
// libfabtrace.so.0.9.0: what the loader maps when the SONAME link is
// preloaded). A base name, not a path.
bool is_preload_file_name(const std::string& name);

// Parsers, exposed for the tests.
// A /proc/PID/maps text: the paths of the preload and of libfabric, if mapped,
// and the address range of the preload's first mapping.
void parse_maps(const std::string& text, std::string* preload, std::string* libfabric,
                std::string* preload_range = nullptr);
// The rank a process's environment (NUL-separated) names, with the preload's rule
// (SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, RANK), as the
// preload writes it (output_token: common/rank.h); "" when none.
std::string rank_from_environ(const std::string& environ_text);
// One line of /proc/net/tcp or tcp6 (the header line gives false): tuple, state, inode.
bool parse_tcp_line(const std::string& line, bool v6, ScannedConn* conn, uint64_t* inode);

}  // namespace fabtrace

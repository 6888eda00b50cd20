#include "tests/integration/record_session.h"

#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "fixtures/csv_records.h"
#include "tests/integration/cli_csv.h"

namespace fabtrace::test {

bool is_root() { return geteuid() == 0; }

std::string kernel_log_of(const std::string& dir) {
  const auto f = list_files(dir, "fabtrace_kernel.", ".klog");
  return f.empty() ? "" : f.front();
}

std::vector<Event> export_kernel(const std::string& log, bool* ok, const std::string& kinds) {
  std::vector<std::string> argv = {FABTRACE_CLI, "export", "kernel", log, "--csv"};
  if (!kinds.empty()) argv.insert(argv.end(), {"--kind", kinds});
  const RunResult r = run(argv, {}, false);
  if (ok) *ok = r.exit_code == 0;
  std::vector<Event> out;
  for (const std::string& line : csv_data_lines(r.output, "ts_ns,kind,")) {
    const std::vector<std::vector<std::string>> rec = parse_csv(line);
    if (rec.size() != 1) continue;
    const std::vector<std::string>& f = rec[0];
    if (f.size() != 11 || f[0].empty() || !isdigit(static_cast<unsigned char>(f[0][0]))) continue;
    Event e;
    e.ts = std::stoull(f[0]);
    e.kind = f[1];
    e.cpu = static_cast<uint32_t>(std::stoul(f[2]));
    e.pid = static_cast<uint32_t>(std::stoul(f[3]));
    e.tid = static_cast<uint32_t>(std::stoul(f[4]));
    e.start = std::stoull(f[5]);
    e.dur = std::stoull(f[6]);
    e.cause = f[7];
    e.other_pid = static_cast<uint32_t>(std::stoul(f[8]));
    e.other_comm = f[9];
    std::istringstream d(f[10]);
    std::string kv;
    while (std::getline(d, kv, ';')) {
      const size_t eq = kv.find('=');
      if (eq != std::string::npos) e.detail[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    out.push_back(e);
  }
  return out;
}

std::vector<int> children_of(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  std::vector<int> out;
  int c;
  while (in >> c) out.push_back(c);
  return out;
}

std::string preload_list() {
  const std::string san = SANITIZER_PRELOAD;
  return san.empty() ? FABTRACE_LIB : san + ":" + FABTRACE_LIB;
}

int start_record(const std::string& dir, const std::string& log,
                 const std::vector<std::string>& args, const char* ready) {
  std::vector<std::string> argv = {FABTRACE_CLI, "record", "-o", dir};
  argv.insert(argv.end(), args.begin(), args.end());
  const int rec = spawn(argv, {}, dir + "/" + log, false);
  if (rec <= 0) return -1;
  if (!eventually([&] { return slurp(dir + "/" + log).find(ready) != std::string::npos; }, 60)) {
    kill(rec, SIGINT);  // never left behind: it would be every later test's session
    wait_for(rec, 30);
    return -1;
  }
  return rec;
}

int start_uprobe_session(const std::string& dir, const std::string& log,
                         std::vector<std::string> args) {
  args.insert(args.begin(), "--uprobes");
  return start_record(dir, log, args, "provider functions probed");
}

char proc_state(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() ? stat[paren + 2] : 0;
}

}  // namespace fabtrace::test

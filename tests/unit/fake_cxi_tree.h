// A fake /sys/class/cxi + /run/cxi tree in a temporary directory, for the NIC
// counter sampler's tests (CounterSampler::Config::sysfs_root / run_root point at it).
//
// Layout, shaped like the real one (class entries are symlinks into a device tree):
//   <root>/sys/devices/pci0000:00/0000:0N:00.0/{telemetry,properties}/...
//   <root>/sys/devices/pci0000:00/0000:0N:00.0/cxi/cxiN/device -> ../../../0000:0N:00.0
//   <root>/sys/class/cxi/cxiN -> ../../devices/pci0000:00/0000:0N:00.0/cxi/cxiN
//   <root>/run/cxi/cxiN/<rh stat>
//
// "Tracked" counter files hold values the tree can advance while a sampler reads
// them from another thread. The files are rewritten in place (the sampler keeps
// its descriptors open, so replacing the file would hide updates) with one pwrite
// of the same length, and consecutive contents differ in exactly one byte of the
// value and one byte of the stamp. A reader racing the writer therefore sees, for
// each of value and stamp, either the old or the new text, never a mix: every
// value a sampler reports must be one of value_at(label, k). (Linux does not make
// a page-cache read atomic against a concurrent write; this encoding makes that
// irrelevant.) Values and stamps strictly increase with the step.
//
// Encoding at step k (0 <= k <= kMaxSteps): the value is a 3-digit id unique to the
// file followed by a 16-digit "odometer" (the first k/9 digits are 9, the next is
// k%9, the rest 0); the telemetry stamp is "1" + an 18-digit odometer, split into
// seconds (10 digits) and nanoseconds (9 digits).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fabtrace {
namespace test {

class FakeCxiTree {
 public:
  static constexpr int kMaxSteps = 144;  // 9 x 16 value digits

  // Curated names the standard layout provides (a subset of cxi_curated_telemetry()
  // and cxi_curated_rh()), and names outside the curated sets.
  static const std::vector<std::string>& standard_curated_telemetry();
  static const std::vector<std::string>& standard_extra_telemetry();
  static const std::vector<std::string>& standard_curated_rh();
  static const std::vector<std::string>& standard_extra_rh();

  FakeCxiTree();   // empty <root>/sys/class/cxi and <root>/run/cxi
  ~FakeCxiTree();  // removes the whole tree
  FakeCxiTree(const FakeCxiTree&) = delete;
  FakeCxiTree& operator=(const FakeCxiTree&) = delete;

  const std::string& root() const { return root_; }
  std::string sysfs_root() const { return root_ + "/sys/class/cxi"; }
  std::string run_root() const { return root_ + "/run/cxi"; }

  // cxi0 and cxi1, each with every standard telemetry and rh name as tracked files,
  // nic_addr (both) and nid (cxi0 only); next to them the non-devices "cxi_user"
  // (directory), "cxi" (directory) and "cxi7" (regular file); in each rh directory
  // a "config" subdirectory and a write-only, empty "reset_counters".
  void populate_standard();

  void add_device(int n);  // the directories and symlinks above
  void add_non_device(const std::string& name, bool directory);
  void add_telemetry(const std::string& dev, const std::string& name);  // tracked
  void add_rh(const std::string& dev, const std::string& name);         // tracked
  void set_property(const std::string& dev, const std::string& key, const std::string& text);

  std::string telemetry_path(const std::string& dev, const std::string& name) const;
  std::string rh_path(const std::string& dev, const std::string& name) const;
  std::string device_dir(const std::string& dev) const;  // the PCI device directory

  // Replaces a file's content (truncate + write, not atomic; for static tests).
  static void write_text(const std::string& path, const std::string& text, unsigned mode = 0644);

  // Moves every tracked file to the next step. False (nothing written) after kMaxSteps.
  bool advance();
  int step() const { return step_.load(std::memory_order_acquire); }

  // Labels as the sampler names them: "cxiN:<name>" and "cxiN:rh:<name>".
  std::vector<std::string> tracked_labels() const;
  bool is_tracked(const std::string& label) const { return files_.count(label) != 0; }
  uint64_t value_at(const std::string& label, int step) const;
  static uint64_t stamp_at(int step);  // ns since the epoch
  static std::string value_text(int id, int step);
  static std::string stamp_text(int step);  // "<sec>.<nsec>"

 private:
  struct Tracked {
    int fd = -1;
    int id = 0;
    bool telemetry = false;
  };

  std::string content(const Tracked& t, int step) const;
  void track(const std::string& label, const std::string& path, bool telemetry);

  std::string root_;
  std::map<std::string, Tracked> files_;  // by label; not modified while advancing
  std::atomic<int> step_{0};
  int next_id_ = 100;
};

}  // namespace test
}  // namespace fabtrace

#include "tests/unit/fake_cxi_tree.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace fabtrace {
namespace test {

namespace {

void must(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("fake cxi tree: " + what);
}

void mkdirs(const std::string& path) {
  std::string cur;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    cur = path.substr(0, j);
    if (!cur.empty()) {
      struct stat st;
      if (::stat(cur.c_str(), &st) != 0) must(::mkdir(cur.c_str(), 0755) == 0, "mkdir " + cur);
    }
    i = j + 1;
  }
}

// k >= 0 steps of a width-digit odometer that only ever changes one digit per step.
std::string odometer(int width, int k) {
  std::string s(static_cast<size_t>(width), '0');
  const int nines = k / 9;
  for (int i = 0; i < nines && i < width; ++i) s[static_cast<size_t>(i)] = '9';
  if (nines < width) s[static_cast<size_t>(nines)] = static_cast<char>('0' + k % 9);
  return s;
}

std::string pci_name(int n) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0000:%02x:00.0", n);
  return buf;
}

int remove_entry(const char* path, const struct stat*, int type, struct FTW*) {
  if (type == FTW_DP)
    ::rmdir(path);
  else
    ::unlink(path);
  return 0;
}

}  // namespace

const std::vector<std::string>& FakeCxiTree::standard_curated_telemetry() {
  // Deliberately not in cxi_curated_telemetry() order.
  static const std::vector<std::string> v = {"pct_spt_timeouts",     "hni_sts_rx_ok_octets",
                                             "hni_discard_cntr_0",   "hni_pause_sent",
                                             "hni_sts_tx_ok_octets", "pct_no_tct_nacks"};
  return v;
}

const std::vector<std::string>& FakeCxiTree::standard_extra_telemetry() {
  static const std::vector<std::string> v = {"ixe_mem_cor_err_cntr", "lpe_net_match_success_0",
                                             "lpe_net_match_success_1", "hni_tx_paused_0"};
  return v;
}

const std::vector<std::string>& FakeCxiTree::standard_curated_rh() {
  static const std::vector<std::string> v = {"nacks", "parked_nids"};
  return v;
}

const std::vector<std::string>& FakeCxiTree::standard_extra_rh() {
  static const std::vector<std::string> v = {"spt_timeouts", "nack_resource_busy"};
  return v;
}

FakeCxiTree::FakeCxiTree() {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/fabtrace-cxi-XXXXXX";
  must(::mkdtemp(&templ[0]) != nullptr, "mkdtemp " + templ);
  root_ = templ;
  mkdirs(sysfs_root());
  mkdirs(run_root());
  mkdirs(root_ + "/sys/devices/pci0000:00");
}

FakeCxiTree::~FakeCxiTree() {
  for (auto& kv : files_) ::close(kv.second.fd);
  ::nftw(root_.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

std::string FakeCxiTree::device_dir(const std::string& dev) const {
  return root_ + "/sys/devices/pci0000:00/" + pci_name(std::atoi(dev.c_str() + 3));
}

std::string FakeCxiTree::telemetry_path(const std::string& dev, const std::string& name) const {
  return device_dir(dev) + "/telemetry/" + name;
}

std::string FakeCxiTree::rh_path(const std::string& dev, const std::string& name) const {
  return run_root() + "/" + dev + "/" + name;
}

void FakeCxiTree::add_device(int n) {
  const std::string dev = "cxi" + std::to_string(n);
  const std::string pci = device_dir(dev);
  mkdirs(pci + "/telemetry");
  mkdirs(pci + "/properties");
  mkdirs(pci + "/cxi/" + dev);
  must(::symlink(("../../../" + pci_name(n)).c_str(), (pci + "/cxi/" + dev + "/device").c_str()) ==
           0,
       "symlink device");
  must(::symlink(("../../devices/pci0000:00/" + pci_name(n) + "/cxi/" + dev).c_str(),
                 (sysfs_root() + "/" + dev).c_str()) == 0,
       "symlink class entry");
  mkdirs(run_root() + "/" + dev);
}

void FakeCxiTree::add_non_device(const std::string& name, bool directory) {
  const std::string path = sysfs_root() + "/" + name;
  if (directory)
    mkdirs(path);
  else
    write_text(path, "not a device\n");
}

void FakeCxiTree::set_property(const std::string& dev, const std::string& key,
                               const std::string& text) {
  write_text(device_dir(dev) + "/properties/" + key, text);
}

void FakeCxiTree::write_text(const std::string& path, const std::string& text, unsigned mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  must(fd >= 0, "open " + path);
  const ssize_t n = ::write(fd, text.data(), text.size());
  ::close(fd);
  must(n == static_cast<ssize_t>(text.size()), "write " + path);
  ::chmod(path.c_str(), mode);
}

std::string FakeCxiTree::value_text(int id, int step) {
  return std::to_string(id) + odometer(16, step);
}

std::string FakeCxiTree::stamp_text(int step) {
  const std::string digits = "1" + odometer(18, step);
  return digits.substr(0, 10) + "." + digits.substr(10);
}

uint64_t FakeCxiTree::stamp_at(int step) {
  const std::string digits = "1" + odometer(18, step);
  return std::strtoull(digits.c_str(), nullptr, 10);  // sec * 1e9 + nsec
}

uint64_t FakeCxiTree::value_at(const std::string& label, int step) const {
  auto it = files_.find(label);
  if (it == files_.end()) return 0;
  return std::strtoull(value_text(it->second.id, step).c_str(), nullptr, 10);
}

std::string FakeCxiTree::content(const Tracked& t, int step) const {
  return t.telemetry ? value_text(t.id, step) + "@" + stamp_text(step) + "\n"
                     : value_text(t.id, step) + "\n";
}

void FakeCxiTree::track(const std::string& label, const std::string& path, bool telemetry) {
  Tracked t;
  t.id = next_id_++;
  t.telemetry = telemetry;
  must(t.id <= 999, "too many tracked files");
  write_text(path, content(t, step()));
  t.fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  must(t.fd >= 0, "reopen " + path);
  files_[label] = t;
}

void FakeCxiTree::add_telemetry(const std::string& dev, const std::string& name) {
  track(dev + ":" + name, telemetry_path(dev, name), true);
}

void FakeCxiTree::add_rh(const std::string& dev, const std::string& name) {
  track(dev + ":rh:" + name, rh_path(dev, name), false);
}

bool FakeCxiTree::advance() {
  const int next = step() + 1;
  if (next > kMaxSteps) return false;
  for (const auto& kv : files_) {
    const std::string text = content(kv.second, next);
    // Same length as before, so no truncation is ever needed.
    if (::pwrite(kv.second.fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
      return false;
  }
  step_.store(next, std::memory_order_release);
  return true;
}

std::vector<std::string> FakeCxiTree::tracked_labels() const {
  std::vector<std::string> out;
  for (const auto& kv : files_) out.push_back(kv.first);
  return out;
}

void FakeCxiTree::populate_standard() {
  for (int n : {0, 1}) {
    add_device(n);
    const std::string dev = "cxi" + std::to_string(n);
    for (const std::string& name : standard_curated_telemetry()) add_telemetry(dev, name);
    for (const std::string& name : standard_extra_telemetry()) add_telemetry(dev, name);
    for (const std::string& name : standard_curated_rh()) add_rh(dev, name);
    for (const std::string& name : standard_extra_rh()) add_rh(dev, name);
    mkdirs(run_root() + "/" + dev + "/config");
    write_text(rh_path(dev, "reset_counters"), "", 0200);
    set_property(dev, "nic_addr", n == 0 ? "0x12a0\n" : "0x12a1\n");
  }
  set_property("cxi0", "nid", "0x4a0\n");
  add_non_device("cxi_user", true);
  add_non_device("cxi", true);
  add_non_device("cxi7", false);
}

}  // namespace test
}  // namespace fabtrace

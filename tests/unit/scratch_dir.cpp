#include "tests/unit/scratch_dir.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "fixtures/synthetic_job.h"

namespace fabtrace {
namespace test {

namespace {

void must(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("scratch dir: " + what + ": " + std::strerror(errno));
}

}  // namespace

ScratchDir::ScratchDir() : root_(make_fixture_dir("unit")) {}

ScratchDir::~ScratchDir() { remove_tree(root_); }

void ScratchDir::mkdirs(const std::string& rel) const {
  std::filesystem::create_directories(path(rel));  // throws on failure
}

std::string ScratchDir::write(const std::string& rel, const std::string& bytes) const {
  const size_t slash = rel.rfind('/');
  if (slash != std::string::npos) mkdirs(rel.substr(0, slash));
  const std::string p = path(rel);
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  must(static_cast<bool>(f), "write " + p);
  return p;
}

void ScratchDir::symlink(const std::string& target, const std::string& rel) const {
  const size_t slash = rel.rfind('/');
  if (slash != std::string::npos) mkdirs(rel.substr(0, slash));
  must(::symlink(target.c_str(), path(rel).c_str()) == 0, "symlink " + rel);
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

}  // namespace test
}  // namespace fabtrace

// A temporary directory for one test (make_fixture_dir: under $TMPDIR, else
// /tmp), removed with everything in it when the object goes away, and small file
// helpers.
#pragma once

#include <string>

namespace fabtrace {
namespace test {

class ScratchDir {
 public:
  ScratchDir();   // throws std::runtime_error when the directory cannot be made
  ~ScratchDir();  // removes the tree (links are removed, never followed)
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return root_; }
  std::string path(const std::string& rel) const { return root_ + "/" + rel; }

  // Writes `rel` (creating its parent directories), replacing what was there.
  std::string write(const std::string& rel, const std::string& bytes) const;
  void mkdirs(const std::string& rel) const;
  void symlink(const std::string& target, const std::string& rel) const;

 private:
  std::string root_;
};

// The whole content of a file ("" when it cannot be read).
std::string read_file_bytes(const std::string& path);

}  // namespace test
}  // namespace fabtrace

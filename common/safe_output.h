// Creating fabtrace's outputs safely in directories that other users may write
// to (FABTRACE_DIR=/scratch/run42, often group- or world-writable). Output
// names are predictable (host, rank, pid), so anything may already sit at one:
// a symlink to a file of the user's, a FIFO, a file of someone else's. Nothing
// here ever follows a symlink at an output's name or writes into an existing
// file: a new file is created exclusively, and a file that replaces an earlier
// one of ours is written under a fresh name and renamed into place.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <string>

namespace fabtrace {

// Outputs are readable by the job's other users, writable by their owner only
// (the umask may take more away).
constexpr mode_t kOutputFileMode = 0644;
constexpr mode_t kOutputDirMode = 0755;

// Creates the new file `name` in the directory dirfd (AT_FDCWD: the current
// one) with O_CREAT|O_EXCL|O_NOFOLLOW and kOutputFileMode. Whatever is already
// at the name (a file, a symlink, a FIFO) makes it fail, untouched. Returns the
// fd, or -1 with *error (one line: the reason, without the name).
int create_new_file_at(int dirfd, const std::string& name, std::string* error);

// The same for a path: its directory is opened (symlinks on the way there are
// the caller's choice and are followed), then the last component is created
// as above.
int create_new_file(const std::string& path, std::string* error);

// create_new_file as a stdio stream for writing; nullptr with *error.
std::FILE* create_new_stream(const std::string& path, std::string* error);

// A directory for outputs of the effective user's own: created with
// kOutputDirMode when missing (create), else used only if it is a directory
// (not a symlink to one) owned by the effective user. Returns an fd opened
// with O_DIRECTORY|O_NOFOLLOW, or -1 with *error (one line with the path).
int open_own_dir(const std::string& path, bool create, std::string* error);

// A file that replaces an earlier one of ours (a report written again into its
// output directory): written under a fresh temporary name in the same
// directory and renamed over `path` by commit(), so whatever was planted at the
// name is replaced, never written through. The directory must pass
// open_own_dir(create = false): nobody else may place files in it.
class ReplacingFile {
 public:
  ReplacingFile() = default;
  ~ReplacingFile();  // an uncommitted file is removed
  ReplacingFile(const ReplacingFile&) = delete;
  ReplacingFile& operator=(const ReplacingFile&) = delete;

  bool open(const std::string& path, std::string* error);  // *error names the path
  int fd() const { return fd_; }
  // A stdio stream on the file (made on first use; then write through it only).
  std::FILE* stream();
  // Flushes, closes and renames into place. False (with *error) when any of it
  // failed; the temporary file is then removed.
  bool commit(std::string* error);
  void abandon();
  const std::string& path() const { return path_; }

 private:
  int dirfd_ = -1, fd_ = -1;
  std::FILE* f_ = nullptr;
  std::string path_, name_, tmp_;
};

}  // namespace fabtrace

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
// the caller's choice and are followed; a held OutputDir is used through its
// descriptor), then the last component is created as above.
int create_new_file(const std::string& path, std::string* error);

// create_new_file as a stdio stream for writing; nullptr with *error.
std::FILE* create_new_stream(const std::string& path, std::string* error);

// Who may own a directory fabtrace writes into, or a symbolic link on the way
// to it: root, this process's effective or real user, and, for a root process
// started through sudo, the user who ran sudo (SUDO_UID).
bool trusted_owner(uid_t uid);

// The n-th other name for `name` when something is already there: a number
// before its extension ("report.html" -> "report.1.html",
// "fabtrace_kernel.h.p7.klog" -> "fabtrace_kernel.h.p7.1.klog"; a name
// without one gets ".1" at its end).
std::string numbered_name(const std::string& name, unsigned n);

// An output directory opened once: every file of a session (`fabtrace record`,
// `report`, `export -o`) is created relative to its descriptor, so that a path
// renamed or swapped for a link afterwards changes nothing. Opening walks the
// path one component at a time: a symbolic link on the way is followed only
// when a trusted owner made it; the directory itself is never a link
// (O_NOFOLLOW) and belongs to a trusted owner (trusted_owner).
//
// While open, the directory is held for the process: a path under it given to
// create_new_file(), create_new_stream() or ReplacingFile is created through
// the descriptor as well, and held_path() rewrites such a path for libraries
// that open paths themselves.
class OutputDir {
 public:
  OutputDir() = default;
  ~OutputDir();
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  // `create`: a missing last component is made (kOutputDirMode). False with one
  // line naming the path in *error; nothing is created then but that directory.
  bool open(const std::string& path, bool create, std::string* error);
  // For a root process writing a user's outputs (`fabtrace record --owner`):
  // `path` is walked as open() walks it but not created, it must be owned by
  // `uid` itself (not root, not another user), and every file create() makes
  // in it is then given to uid:gid. False with one line in *error.
  bool open_owned_by(const std::string& path, uid_t uid, gid_t gid, std::string* error);
  void close();
  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  std::string path_of(const std::string& name) const { return path_ + "/" + name; }
  dev_t dev() const { return dev_; }
  ino_t ino() const { return ino_; }

  // Creates a new file in it (create_new_file_at): `name`, or, when anything
  // is already there (left as it is), the first free numbered_name. Returns the
  // fd and the name used in *created; *note gets one line when it is not `name`.
  // -1 with *error (one line naming the path).
  int create(const std::string& name, std::string* created, std::string* note,
             std::string* error) const;
  // The name create() would use now (for a writer that takes a path: it then
  // creates path_of(name) exclusively, through the held descriptor).
  std::string free_name(const std::string& name) const;
  // The same as a stdio stream for writing.
  std::FILE* create_stream(const std::string& name, std::string* created, std::string* note,
                           std::string* error) const;

 private:
  bool hold(int fd, const std::string& path, std::string* error);

  int fd_ = -1;
  std::string path_;
  bool owned_ = false;  // open_owned_by: files are given to owner_:group_
  uid_t owner_ = 0;
  gid_t group_ = 0;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

// A command's output file (`fabtrace export ... -o PATH`): PATH's directory
// opened into *dir (OutputDir's rules, not created), the file created in it
// (OutputDir::create: the next free name when something is there, said in
// *note). *written is the path written. nullptr with *error (one line).
std::FILE* create_output_file(const std::string& path, OutputDir* dir, std::string* written,
                              std::string* note, std::string* error);

// `path` rewritten through the descriptor of the held directory it lies in
// ("/proc/self/fd/N/rest"), for a library that creates files by path (OTF2);
// any other path as it is.
std::string held_path(const std::string& path);

// The (device, inode) of the held directory `path`; false when it is not held.
bool held_dir_identity(const std::string& path, dev_t* dev, ino_t* ino);

// A directory for outputs of a trusted owner (OutputDir's rules), opened for
// the caller: created with kOutputDirMode when missing (create). Returns an fd
// opened with O_DIRECTORY|O_NOFOLLOW, or -1 with *error (one line with the path).
int open_own_dir(const std::string& path, bool create, std::string* error);

// A file that replaces an earlier one of ours (a report written again into its
// output directory): written under a fresh temporary name in the same
// directory and renamed over `path` by commit(), so whatever was planted at the
// name is replaced, never written through. The directory is a held OutputDir
// (through its descriptor), else it must pass open_own_dir(create = false).
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

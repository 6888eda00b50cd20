// The block framing shared by fabtrace's binary files (the kernel log; the
// per-op timeline uses the same layout, its CRC covering the payload only): a
// 16-byte file header, then blocks, each a 24-byte header (magic, type, payload
// length, entry count, CRC-32 of the header and the payload) and its payload. A
// block goes out in one writev(2), straight to the file, so a writer killed at
// any moment leaves a file that reads up to its last whole block. All integers
// are little-endian.
//
// The reader treats its input as hostile: it refuses non-regular files, checks
// every announced length against the file's size and a fixed cap before
// allocating, and stops at the first incomplete or corrupt block.
#pragma once

#include <sys/uio.h>
#include <cstddef>
#include <cstdint>

#include <functional>
#include <string>
#include <vector>

namespace fabtrace {

namespace blockfile {

struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_bytes;  // sizeof(FileHeader): where the first block starts
};
static_assert(sizeof(FileHeader) == 16, "layout");

constexpr uint32_t kBlockMagic = 0x4B4C4246;  // "FBLK"

struct BlockHeader {
  uint32_t magic;  // kBlockMagic
  uint16_t type;
  uint16_t reserved;
  uint32_t payload_bytes;  // bytes after this header
  uint32_t count;          // entries in the payload (format-defined), 0 for JSON blocks
  uint32_t crc32;          // CRC-32 (IEEE) of this header (with crc32 = 0), then the payload
  uint32_t reserved2;
};
static_assert(sizeof(BlockHeader) == 24, "layout");

// A block announcing a larger payload is corrupt.
constexpr uint32_t kMaxPayloadBytes = 64u << 20;

// CRC-32 of `data`, continuing from `crc` (the CRC of what came before it).
uint32_t crc32_of(const void* data, size_t len, uint32_t crc = 0);
// The checksum a block header carries: every header field but crc32 counts, so
// that a flipped type, count or reserved bit is caught like a flipped payload bit.
uint32_t block_crc(const BlockHeader& h, const void* payload, size_t len);

// Writes the n buffers of v to fd, a whole block in one writev(2): a short
// write (disk full, a signal) is finished with further calls (v is advanced
// over what went out), EINTR is retried, a write of nothing is ENOSPC. Adds
// the bytes written to *bytes. 0 when everything went out, else the errno.
int writev_all(int fd, ::iovec* v, int n, uint64_t* bytes);

}  // namespace blockfile

// Writes a new block file. Not thread-safe: one writer thread. Errors return
// false; after the first error every call returns false (error() says why).
class BlockFileWriter {
 public:
  BlockFileWriter() = default;
  ~BlockFileWriter();
  BlockFileWriter(const BlockFileWriter&) = delete;
  BlockFileWriter& operator=(const BlockFileWriter&) = delete;

  // Creates `path`, which must not exist (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0644:
  // a file or link planted at the name is refused, never written through), and
  // writes the file header.
  bool create(const std::string& path, const char magic[8], uint32_t version);
  // The same on a new file the caller created (OutputDir::create), which this
  // writer then owns; `path` names it in messages.
  bool create(int fd, const std::string& path, const char magic[8], uint32_t version);
  bool write_block(uint16_t type, uint32_t count, const void* payload, size_t len);
  // False when close(2) failed (an NFS server's late write error), said in error().
  bool close();
  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  // Goes on writing on `fd`, a copy of this file `bytes` long that the caller
  // made (and renamed over it); the old descriptor is closed.
  void adopt(int fd, uint64_t bytes);
  uint64_t bytes_written() const { return bytes_; }
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }

 private:
  bool fail(const char* what, int err);
  bool write_all(::iovec* v, int n);
  int fd_ = -1;
  bool failed_ = false;
  uint64_t bytes_ = 0;
  std::string path_, error_;
};

// One whole, checksummed block, valid during the callback.
struct BlockView {
  uint16_t type = 0;
  uint32_t count = 0;
  const uint8_t* payload = nullptr;
  size_t len = 0;
  uint64_t offset = 0;  // of the block header in the file
};

class BlockFileReader {
 public:
  BlockFileReader() = default;
  ~BlockFileReader();
  BlockFileReader(const BlockFileReader&) = delete;
  BlockFileReader& operator=(const BlockFileReader&) = delete;

  // Opens a regular file and checks its magic and version (1 ..= max_version).
  // False with one line naming the file in *error.
  bool open(const std::string& path, const char magic[8], uint32_t max_version, std::string* error);

  // Calls on_block for each whole block from the first, until it returns false,
  // EOF, or the first incomplete or corrupt block (then truncated() is true, with
  // the reason in truncation()). False only on a failing read(2).
  bool walk(const std::function<bool(const BlockView&)>& on_block, std::string* error);

  uint32_t version() const { return version_; }
  uint64_t file_size() const { return size_; }
  bool truncated() const { return truncated_; }
  const std::string& truncation() const { return truncation_; }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
  uint32_t version_ = 0;
  uint64_t size_ = 0, data_start_ = 0;
  bool truncated_ = false;
  std::string truncation_;
  std::vector<uint64_t> buf_;  // 8-byte aligned payload buffer
};

}  // namespace fabtrace

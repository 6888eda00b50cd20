#include "common/block_file.h"

#include "common/input_limits.h"
#include "common/safe_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

namespace fabtrace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "block files are little-endian and written as in memory");

namespace blockfile {
uint32_t crc32_of(const void* data, size_t len, uint32_t crc) {
  uLong c = crc;
  const Bytef* p = static_cast<const Bytef*>(data);
  while (len > 0) {
    const uInt n = len > (1u << 30) ? (1u << 30) : static_cast<uInt>(len);
    c = crc32(c, p, n);
    p += n;
    len -= n;
  }
  return static_cast<uint32_t>(c);
}

uint32_t block_crc(const BlockHeader& h, const void* payload, size_t len) {
  BlockHeader z = h;
  z.crc32 = 0;
  return crc32_of(payload, len, crc32_of(&z, sizeof(z)));
}
}  // namespace blockfile

// ---------------------------------------------------------------- writer

BlockFileWriter::~BlockFileWriter() { close(); }

bool BlockFileWriter::fail(const char* what, int err) {
  if (!failed_) error_ = path_ + ": " + what + ": " + std::strerror(err);
  failed_ = true;
  return false;
}

bool BlockFileWriter::create(const std::string& path, const char magic[8], uint32_t version) {
  std::string why;
  const int fd = create_new_file(path, &why);
  if (fd < 0) {
    const int err = errno;
    close();
    path_ = path;
    failed_ = false;
    return fail(
        err == EEXIST ? "cannot create (something already exists at that name)" : "cannot create",
        err);
  }
  return create(fd, path, magic, version);
}

bool BlockFileWriter::create(int fd, const std::string& path, const char magic[8],
                             uint32_t version) {
  close();
  path_ = path;
  failed_ = false;
  error_.clear();
  bytes_ = 0;
  fd_ = fd;
  if (fd_ < 0) return fail("cannot create", EBADF);
  blockfile::FileHeader fh{};
  std::memcpy(fh.magic, magic, sizeof(fh.magic));
  fh.version = version;
  fh.header_bytes = sizeof(fh);
  struct iovec v = {&fh, sizeof(fh)};
  return write_all(&v, 1);
}

int blockfile::writev_all(int fd, struct iovec* v, int n, uint64_t* bytes) {
  while (n > 0) {
    const ssize_t w = ::writev(fd, v, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (w == 0) return ENOSPC;
    *bytes += static_cast<uint64_t>(w);
    size_t left = static_cast<size_t>(w);
    while (n > 0 && left >= v->iov_len) {
      left -= v->iov_len;
      ++v;
      --n;
    }
    if (n > 0) {
      v->iov_base = static_cast<char*>(v->iov_base) + left;
      v->iov_len -= left;
    }
  }
  return 0;
}

bool BlockFileWriter::write_all(struct iovec* v, int n) {
  const int err = blockfile::writev_all(fd_, v, n, &bytes_);
  return err ? fail("write", err) : true;
}

bool BlockFileWriter::write_block(uint16_t type, uint32_t count, const void* payload, size_t len) {
  if (failed_) return false;
  if (fd_ < 0) return fail("write", EBADF);
  if (len > blockfile::kMaxPayloadBytes) return fail("write", EFBIG);
  blockfile::BlockHeader h{};
  h.magic = blockfile::kBlockMagic;
  h.type = type;
  h.payload_bytes = static_cast<uint32_t>(len);
  h.count = count;
  h.crc32 = blockfile::block_crc(h, payload, len);
  struct iovec iov[2];
  int n = 0;
  iov[n++] = {&h, sizeof(h)};
  if (len > 0) iov[n++] = {const_cast<void*>(payload), len};
  return write_all(iov, n);
}

void BlockFileWriter::adopt(int fd, uint64_t bytes) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  bytes_ = bytes;
}

bool BlockFileWriter::close() {
  if (fd_ < 0) return !failed_;
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0 && errno != EINTR) return fail("close", errno);
  return !failed_;
}

// ---------------------------------------------------------------- reader

BlockFileReader::~BlockFileReader() {
  if (fd_ >= 0) ::close(fd_);
}

bool BlockFileReader::open(const std::string& path, const char magic[8], uint32_t max_version,
                           std::string* error) {
  path_ = path;
  if (fd_ >= 0) ::close(fd_);
  // A FIFO or device planted at the name is refused before any read.
  std::string why;
  fd_ = open_regular_file(path, &why);
  if (fd_ < 0) {
    *error = path + ": " + why;
    return false;
  }
  struct stat st;
  if (::fstat(fd_, &st) != 0) {
    *error = path + ": cannot stat: " + std::strerror(errno);
    return false;
  }
  size_ = static_cast<uint64_t>(st.st_size);
  blockfile::FileHeader fh{};
  if (::pread(fd_, &fh, sizeof(fh), 0) != static_cast<ssize_t>(sizeof(fh)) ||
      std::memcmp(fh.magic, magic, sizeof(fh.magic)) != 0) {
    *error = path + ": not a " + std::string(magic, strnlen(magic, 8)) + " file";
    return false;
  }
  if (fh.version < 1 || fh.version > max_version) {
    *error = path + ": unsupported version " + std::to_string(fh.version);
    return false;
  }
  if (fh.header_bytes < sizeof(fh) || fh.header_bytes > size_) {
    *error = path + ": bad file header";
    return false;
  }
  version_ = fh.version;
  data_start_ = fh.header_bytes;
  return true;
}

bool BlockFileReader::walk(const std::function<bool(const BlockView&)>& on_block,
                           std::string* error) {
  truncated_ = false;
  truncation_.clear();
  uint64_t off = data_start_;
  auto stop = [&](const std::string& why) {
    truncated_ = true;
    truncation_ = why + " at byte " + std::to_string(off);
    return true;
  };
  for (;;) {
    if (off == size_) return true;
    blockfile::BlockHeader h{};
    if (size_ - off < sizeof(h)) return stop("incomplete block header");
    const ssize_t got = ::pread(fd_, &h, sizeof(h), static_cast<off_t>(off));
    if (got < 0) {
      *error = path_ + ": read: " + std::strerror(errno);
      return false;
    }
    if (got != static_cast<ssize_t>(sizeof(h))) return stop("incomplete block header");
    if (h.magic != blockfile::kBlockMagic) return stop("bad block magic");
    // The announced length is checked against what the file holds before any
    // allocation: a 40-byte file cannot make us allocate 64 MiB.
    if (h.payload_bytes > blockfile::kMaxPayloadBytes) return stop("oversized block");
    if (h.payload_bytes > size_ - off - sizeof(h)) return stop("incomplete block");
    buf_.resize((h.payload_bytes + 7) / 8 + 1);
    uint8_t* p = reinterpret_cast<uint8_t*>(buf_.data());
    size_t have = 0;
    while (have < h.payload_bytes) {
      const ssize_t r = ::pread(fd_, p + have, h.payload_bytes - have,
                                static_cast<off_t>(off + sizeof(h) + have));
      if (r < 0) {
        if (errno == EINTR) continue;
        *error = path_ + ": read: " + std::strerror(errno);
        return false;
      }
      if (r == 0) return stop("incomplete block");
      have += static_cast<size_t>(r);
    }
    if (blockfile::block_crc(h, p, h.payload_bytes) != h.crc32) return stop("checksum mismatch");
    BlockView v{h.type, h.count, p, h.payload_bytes, off};
    off += sizeof(h) + h.payload_bytes;
    if (!on_block(v)) return true;
  }
}

}  // namespace fabtrace

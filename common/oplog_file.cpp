#include "common/oplog_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "common/block_file.h"
#include "common/env.h"
#include "common/input_limits.h"
#include "common/json_writer.h"
#include "common/op_kinds.h"
#include "common/safe_output.h"
#include "common/version.h"

namespace fabtrace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the oplog file is little-endian and written as in memory");

namespace {

// The CRC of a block's payload (the block framing's, block_file.h; the
// oplog's covers the payload only).
using blockfile::crc32_of;

}  // namespace

const char* mark_kind_name(uint8_t kind) {
  switch (kind) {
    case oplog::kMarkInstant:
      return "mark";
    case oplog::kPhaseBegin:
      return "begin";
    case oplog::kPhaseEnd:
      return "end";
    case oplog::kCaptureOn:
      return "capture_on";
    case oplog::kCaptureOff:
      return "capture_off";
    default:
      return "?";
  }
}

// ---------------------------------------------------------------- writer

OplogFileWriter::~OplogFileWriter() { close(); }

bool OplogFileWriter::fail(const char* what, int err) {
  if (!failed_) {
    log_line("oplog %s: %s failed: %s", path_.c_str(), what, std::strerror(err));
  }
  failed_ = true;
  return false;
}

bool OplogFileWriter::open(const std::string& path, const OplogMeta& meta) {
  close();
  path_ = path;
  failed_ = false;
  bytes_ = 0;
  std::string why;
  fd_ = create_new_file(path, &why);
  if (fd_ < 0) {
    failed_ = true;
    log_line("warning: cannot create %s: %s; per-op timeline off", path_.c_str(), why.c_str());
    return false;
  }

  std::string text;
  const bool ok = json_text(&text, [&](JsonWriter& w) {
    w.begin_object();
    w.field("format", oplog::kFormatName);
    w.field("version", static_cast<uint64_t>(oplog::kVersion));
    w.field("host", meta.host);
    w.field("rank", meta.rank);
    w.field("pid", static_cast<int64_t>(meta.pid));
    w.field("fabtrace_version", version());
    w.key("op_names").begin_array();
    for (int k = 0; k < kOpKindCount; ++k) w.value(op_name(static_cast<OpKind>(k)));
    w.end_array();
    w.end_object();
  });
  if (!ok) return fail("formatting the metadata", ENOMEM);

  oplog::FileHeader fh{};
  std::memcpy(fh.magic, oplog::kMagic, sizeof(fh.magic));
  fh.version = oplog::kVersion;
  fh.header_bytes = sizeof(oplog::FileHeader);
  return write_block(oplog::kMeta, 0, text.data(), text.size(), &fh, sizeof(fh));
}

bool OplogFileWriter::write_block(uint16_t type, uint32_t count, const void* payload, size_t len,
                                  const void* prefix, size_t prefix_len) {
  if (failed_) return false;
  if (fd_ < 0) return fail("write", EBADF);
  if (len > oplog::kMaxPayloadBytes) return fail("write", EFBIG);
  oplog::BlockHeader h{};
  h.magic = oplog::kBlockMagic;
  h.type = type;
  h.payload_bytes = static_cast<uint32_t>(len);
  h.count = count;
  h.crc32 = crc32_of(payload, len);

  struct iovec iov[3];
  int n = 0;
  if (prefix_len > 0) iov[n++] = {const_cast<void*>(prefix), prefix_len};
  iov[n++] = {&h, sizeof(h)};
  if (len > 0) iov[n++] = {const_cast<void*>(payload), len};

  // One writev for the whole block (the block framing's, block_file.h).
  const int err = blockfile::writev_all(fd_, iov, n, &bytes_);
  return err ? fail("write", err) : true;
}

bool OplogFileWriter::write_calib(const OplogCalib& c) {
  if (failed_) return false;
  std::string text;
  const bool ok = json_text(&text, [&](JsonWriter& w) {
    w.begin_object();
    w.field("clock", c.tsc ? "tsc" : "clock_gettime");
    w.field("ns_per_tick", c.ns_per_tick);
    w.field("tick0", c.tick0);
    w.field("mono0_ns", c.mono0_ns);
    w.field("real0_ns", c.real0_ns);
    w.field("residual_ns", c.residual_ns);
    w.field("pairs", c.pairs);
    w.end_object();
  });
  if (!ok) return fail("formatting the calibration", ENOMEM);
  return write_block(oplog::kCalib, 0, text.data(), text.size());
}

bool OplogFileWriter::write_links(const std::vector<OplogLink>& links) {
  if (failed_) return false;
  std::string buf;
  size_t i = 0;
  while (i < links.size()) {
    buf.clear();
    const size_t end = std::min(links.size(), i + oplog::kMaxLinksPerBlock);
    const uint32_t count = static_cast<uint32_t>(end - i);
    for (; i < end; ++i) {
      const OplogLink& l = links[i];
      // Clipped to what the reader accepts (common/input_limits.h).
      const uint16_t ll =
          static_cast<uint16_t>(std::min<size_t>(l.local.size(), limits::kMaxStringBytes));
      const uint16_t rl =
          static_cast<uint16_t>(std::min<size_t>(l.remote.size(), limits::kMaxStringBytes));
      char head[8];
      std::memcpy(head, &l.id, 4);
      std::memcpy(head + 4, &ll, 2);
      std::memcpy(head + 6, &rl, 2);
      buf.append(head, sizeof(head));
      buf.append(l.local.data(), ll);
      buf.append(l.remote.data(), rl);
    }
    if (!write_block(oplog::kLinks, count, buf.data(), buf.size())) return false;
  }
  return true;
}

bool OplogFileWriter::write_entries(uint16_t type, const oplog::OpEntry* e, size_t n) {
  if (failed_) return false;
  while (n > 0) {
    const size_t k = std::min(n, oplog::kMaxOpsPerBlock);
    if (!write_block(type, static_cast<uint32_t>(k), e, k * sizeof(oplog::OpEntry))) return false;
    e += k;
    n -= k;
  }
  return true;
}

bool OplogFileWriter::write_ops(const oplog::OpEntry* ops, size_t n) {
  return write_entries(oplog::kOps, ops, n);
}

bool OplogFileWriter::write_marks(const oplog::OpEntry* marks, size_t n) {
  return write_entries(oplog::kMarks, marks, n);
}

bool OplogFileWriter::write_mark_names(const std::vector<OplogMarkName>& names) {
  if (failed_) return false;
  std::string buf;
  size_t i = 0;
  while (i < names.size()) {
    buf.clear();
    const size_t end = std::min(names.size(), i + oplog::kMaxMarkNamesPerBlock);
    const uint32_t count = static_cast<uint32_t>(end - i);
    for (; i < end; ++i) {
      const OplogMarkName& m = names[i];
      const uint16_t len =
          static_cast<uint16_t>(std::min<size_t>(m.name.size(), oplog::kMaxMarkNameBytes));
      char head[6];
      std::memcpy(head, &m.id, 4);
      std::memcpy(head + 4, &len, 2);
      buf.append(head, sizeof(head));
      buf.append(m.name.data(), len);
    }
    if (!write_block(oplog::kMarkNames, count, buf.data(), buf.size())) return false;
  }
  return true;
}

bool OplogFileWriter::write_capture(const OplogCaptureSpec& win) {
  if (failed_) return false;
  std::string text;
  const bool ok = json_text(&text, [&](JsonWriter& w) {
    w.begin_object();
    w.field("spec", win.spec.substr(0, limits::kMaxStringBytes));
    w.field("signal", win.signal.substr(0, limits::kMaxStringBytes));
    w.end_object();
  });
  if (!ok) return fail("formatting the capture window", ENOMEM);
  return write_block(oplog::kCapture, 0, text.data(), text.size());
}

bool OplogFileWriter::write_end(uint64_t ops_written, uint64_t dropped, uint64_t filtered,
                                uint64_t outside_capture) {
  if (failed_) return false;
  std::string text;
  const bool ok = json_text(&text, [&](JsonWriter& w) {
    w.begin_object();
    w.field("ops_written", ops_written);
    w.field("dropped", dropped);
    w.field("filtered", filtered);
    w.field("outside_window", outside_capture);
    w.end_object();
  });
  if (!ok) return fail("formatting the end record", ENOMEM);
  return write_block(oplog::kEnd, 0, text.data(), text.size());
}

void OplogFileWriter::close() {
  if (fd_ < 0) return;
  if (::close(fd_) != 0 && errno != EINTR) fail("close", errno);
  fd_ = -1;
}

}  // namespace fabtrace

// The oplog's reader (oplog_file.h): the file header, then block by block,
// each checked (magic, bounds, CRC) before its payload is used; a truncated or
// damaged tail ends the walk with what came before it kept.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/block_file.h"
#include "common/input_limits.h"
#include "common/oplog_file.h"

namespace fabtrace {

using blockfile::crc32_of;

namespace {

using nlohmann::json;

bool get_u64(const json& j, const char* k, uint64_t* out) {
  const auto it = j.find(k);
  if (it == j.end() || !it->is_number_unsigned()) return false;
  *out = it->get<uint64_t>();
  return true;
}

bool get_double(const json& j, const char* k, double* out) {
  const auto it = j.find(k);
  if (it == j.end() || !it->is_number()) return false;
  *out = it->get<double>();
  return true;
}

// A string of at most limits::kMaxStringBytes; a longer one is refused.
bool get_string(const json& j, const char* k, std::string* out) {
  const auto it = j.find(k);
  if (it == j.end() || !it->is_string()) return false;
  if (it->get_ref<const std::string&>().size() > limits::kMaxStringBytes) return false;
  *out = it->get<std::string>();
  return true;
}

json parse_object(const void* p, size_t len) {
  const char* c = static_cast<const char*>(p);
  if (len > oplog::kMaxJsonBlockBytes || !json_depth_within(c, len, limits::kMaxJsonDepth))
    return json();
  json j = json::parse(c, c + len, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return json();
  return j;
}

bool parse_meta(const void* p, size_t len, OplogHeaderInfo* h) {
  try {
    const json j = parse_object(p, len);
    if (j.is_null()) return false;
    std::string format;
    if (!get_string(j, "format", &format) || format != oplog::kFormatName) return false;
    for (const char* k : {"host", "rank"})
      if (j.contains(k) && !get_string(j, k, k[0] == 'h' ? &h->meta.host : &h->meta.rank))
        return false;  // not a string, or too long
    // Optional (files before 0.9.0 have none); a wrong one is left out.
    if (j.contains("fabtrace_version") &&
        !get_string(j, "fabtrace_version", &h->meta.fabtrace_version))
      h->meta.fabtrace_version.clear();
    const auto pid = j.find("pid");
    if (pid != j.end() && pid->is_number_integer()) {
      const int64_t v = pid->get<int64_t>();
      if (v < INT32_MIN || v > INT32_MAX) return false;
      h->meta.pid = static_cast<long>(v);
    }
    const auto names = j.find("op_names");
    if (names != j.end() && names->is_array()) {
      // OpEntry::kind is a byte: 256 names at most, each a short word.
      if (names->size() > 256) return false;
      for (const json& n : *names) {
        std::string name;
        if (n.is_string() && !get_string(json{{"n", n}}, "n", &name)) return false;
        h->op_names.push_back(name);
      }
    }
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

bool parse_calib(const void* p, size_t len, OplogCalib* c) {
  try {
    const json j = parse_object(p, len);
    if (j.is_null()) return false;
    OplogCalib r;
    std::string clock;
    if (!get_string(j, "clock", &clock) || !get_double(j, "ns_per_tick", &r.ns_per_tick) ||
        !get_u64(j, "tick0", &r.tick0) || !get_u64(j, "mono0_ns", &r.mono0_ns))
      return false;
    r.tsc = clock == "tsc";
    get_u64(j, "real0_ns", &r.real0_ns);
    get_double(j, "residual_ns", &r.residual_ns);
    get_u64(j, "pairs", &r.pairs);
    if (!r.valid_from_file()) return false;
    *c = r;
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

bool parse_end(const void* p, size_t len, uint64_t* ops, uint64_t* dropped, uint64_t* filtered,
               uint64_t* outside) {
  try {
    const json j = parse_object(p, len);
    if (j.is_null()) return false;
    *ops = *dropped = *filtered = *outside = 0;
    get_u64(j, "ops_written", ops);
    get_u64(j, "dropped", dropped);
    get_u64(j, "filtered", filtered);
    get_u64(j, "outside_window", outside);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

bool parse_capture(const void* p, size_t len, OplogCaptureSpec* out) {
  try {
    const json j = parse_object(p, len);
    if (j.is_null()) return false;
    OplogCaptureSpec w;
    if (j.contains("spec") && !get_string(j, "spec", &w.spec)) return false;
    if (j.contains("signal") && !get_string(j, "signal", &w.signal)) return false;
    *out = std::move(w);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

bool parse_mark_names(const char* p, size_t len, uint32_t count,
                      std::map<uint32_t, std::string>* out) {
  std::vector<std::pair<uint32_t, std::string>> got;
  size_t off = 0;
  for (uint32_t i = 0; i < count; ++i) {
    if (len - off < 6) return false;
    uint32_t id;
    uint16_t n;
    std::memcpy(&id, p + off, 4);
    std::memcpy(&n, p + off + 4, 2);
    off += 6;
    if (n > oplog::kMaxMarkNameBytes || len - off < n) return false;
    got.emplace_back(id, std::string(p + off, n));
    off += n;
  }
  if (off != len) return false;
  for (auto& m : got) {
    if (out->size() >= oplog::kMaxReaderMarkNames && !out->count(m.first)) return false;
    (*out)[m.first] = std::move(m.second);
  }
  return true;
}

bool parse_links(const char* p, size_t len, uint32_t count, std::map<uint32_t, OplogLink>* out) {
  std::vector<OplogLink> got;
  size_t off = 0;
  for (uint32_t i = 0; i < count; ++i) {
    if (len - off < 8) return false;
    uint32_t id;
    uint16_t ll, rl;
    std::memcpy(&id, p + off, 4);
    std::memcpy(&ll, p + off + 4, 2);
    std::memcpy(&rl, p + off + 6, 2);
    off += 8;
    if (len - off < static_cast<size_t>(ll) + rl) return false;
    if (ll > limits::kMaxStringBytes || rl > limits::kMaxStringBytes) return false;
    OplogLink l;
    l.id = id;
    l.local.assign(p + off, ll);
    l.remote.assign(p + off + ll, rl);
    got.push_back(std::move(l));
    off += static_cast<size_t>(ll) + rl;
  }
  if (off != len) return false;
  for (OplogLink& l : got) {
    if (out->size() >= oplog::kMaxReaderLinks && !out->count(l.id)) return false;
    (*out)[l.id] = std::move(l);
  }
  return true;
}

}  // namespace

OplogReader::~OplogReader() {
  if (fd_ >= 0) ::close(fd_);
}

OplogReader::ReadResult OplogReader::read_at(uint64_t off, void* buf, size_t len,
                                             std::string* error) {
  size_t got = 0;
  while (got < len) {
    const ssize_t r =
        ::pread(fd_, static_cast<char*>(buf) + got, len - got, static_cast<off_t>(off + got));
    if (r < 0) {
      if (errno == EINTR) continue;
      if (error) *error = "cannot read " + path_ + ": " + std::strerror(errno);
      return ReadResult::kError;
    }
    if (r == 0) return got == 0 ? ReadResult::kEof : ReadResult::kShort;
    got += static_cast<size_t>(r);
  }
  return ReadResult::kOk;
}

bool OplogReader::open(const std::string& path, std::string* error) {
  std::string dummy;
  if (!error) error = &dummy;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  path_ = path;
  header_ = OplogHeaderInfo();
  reset_tracking();
  // Not reset by a walk: the tables only grow, and a later walk needs the
  // whole of them from its first block on (a link's table may come after the
  // ops that use it).
  links_.clear();
  mark_names_.clear();
  std::string why;
  fd_ = open_regular_file(path, &why);
  if (fd_ < 0) {
    *error = path + ": " + why;
    return false;
  }
  const auto close_fail = [&](const std::string& msg) {
    *error = msg;
    ::close(fd_);
    fd_ = -1;
    return false;
  };
  // Nothing is read past the size the file states: a special file that
  // passes for a regular one (under /proc) states 0 and may block on a read.
  uint64_t size = 0;
  if (!file_size(&size, error)) return close_fail(*error);
  if (size < sizeof(oplog::FileHeader))
    return close_fail(path + " is not a fabtrace oplog file (too short)");
  oplog::FileHeader fh;
  switch (read_at(0, &fh, sizeof(fh), error)) {
    case ReadResult::kOk:
      break;
    case ReadResult::kError:
      return close_fail(*error);
    default:
      return close_fail(path + " is not a fabtrace oplog file (too short)");
  }
  if (std::memcmp(fh.magic, oplog::kMagic, sizeof(fh.magic)) != 0)
    return close_fail(path + " is not a fabtrace oplog file");
  if (fh.version < oplog::kMinVersion || fh.version > oplog::kVersion)
    return close_fail(path + " is oplog format version " + std::to_string(fh.version) +
                      "; this fabtrace reads versions " + std::to_string(oplog::kMinVersion) +
                      " to " + std::to_string(oplog::kVersion));
  header_.version = fh.version;
  if (fh.header_bytes < sizeof(fh) || fh.header_bytes > 65536)
    return close_fail(path + ": corrupt oplog file header");

  oplog::BlockHeader bh;
  const uint64_t off = fh.header_bytes;
  if (off + sizeof(bh) > size)
    return close_fail(path + ": oplog file cut short before its metadata block");
  switch (read_at(off, &bh, sizeof(bh), error)) {
    case ReadResult::kOk:
      break;
    case ReadResult::kError:
      return close_fail(*error);
    default:
      return close_fail(path + ": oplog file cut short before its metadata block");
  }
  if (bh.magic != oplog::kBlockMagic || bh.type != oplog::kMeta ||
      bh.payload_bytes > oplog::kMaxJsonBlockBytes)
    return close_fail(path + ": corrupt oplog metadata block");
  // Before allocating what the header claims: is it there at all?
  if (off + sizeof(bh) + bh.payload_bytes > size)
    return close_fail(path + ": oplog file cut short in its metadata block");
  std::string text(bh.payload_bytes, '\0');
  switch (read_at(off + sizeof(bh), &text[0], text.size(), error)) {
    case ReadResult::kOk:
      break;
    case ReadResult::kError:
      return close_fail(*error);
    default:
      return close_fail(path + ": oplog file cut short in its metadata block");
  }
  if (crc32_of(text.data(), text.size()) != bh.crc32 ||
      !parse_meta(text.data(), text.size(), &header_))
    return close_fail(path + ": corrupt oplog metadata block");
  data_start_ = off + sizeof(bh) + bh.payload_bytes;
  return true;
}

bool OplogReader::file_size(uint64_t* size, std::string* error) const {
  struct stat st;
  if (::fstat(fd_, &st) != 0) {
    if (error) *error = "cannot stat " + path_ + ": " + std::strerror(errno);
    return false;
  }
  *size = static_cast<uint64_t>(st.st_size);
  return true;
}

bool OplogReader::stop(const std::string& why) {
  truncated_ = true;
  stop_reason_ = why;
  return true;
}

void OplogReader::reset_tracking() {
  calib_ = OplogCalib();
  has_calib_ = false;
  capture_ = OplogCaptureSpec();
  has_capture_ = false;
  marks_read_ = 0;
  truncated_ = false;
  stop_reason_.clear();
  ops_read_ = 0;
  has_end_ = false;
  end_ops_ = end_dropped_ = end_filtered_ = end_outside_ = 0;
}

bool OplogReader::read_all(const std::function<void(const oplog::OpEntry*, size_t)>& on_ops,
                           std::string* error) {
  return walk(&on_ops, nullptr, false, error);
}

bool OplogReader::read_all(const EntriesFn& on_ops, const EntriesFn& on_marks, std::string* error) {
  return walk(&on_ops, &on_marks, false, error);
}

bool OplogReader::scan(std::string* error) { return walk(nullptr, nullptr, true, error); }

const std::string& OplogReader::mark_name(uint32_t id) const {
  static const std::string kNone;
  const auto it = mark_names_.find(id);
  return it == mark_names_.end() ? kNone : it->second;
}

bool OplogReader::walk(const EntriesFn* on_ops, const EntriesFn* on_marks, bool skip_ops,
                       std::string* error) {
  std::string dummy;
  if (!error) error = &dummy;
  if (fd_ < 0) {
    *error = "oplog reader: no file open";
    return false;
  }
  reset_tracking();
  uint64_t size = 0;  // the file's size, read again when a block reaches past it (it may grow)
  if (!file_size(&size, error)) return false;
  uint64_t off = data_start_;
  const auto at = [&off](const char* what) {
    return "block at offset " + std::to_string(off) + ": " + what;
  };
  for (;;) {
    oplog::BlockHeader h;
    if (off + sizeof(h) > size) {  // past the size seen so far: the file may have grown
      if (!file_size(&size, error)) return false;
      if (off >= size) break;
      if (off + sizeof(h) > size) return stop("");
    }
    const ReadResult hr = read_at(off, &h, sizeof(h), error);
    if (hr == ReadResult::kEof) break;
    if (hr == ReadResult::kError) return false;
    if (hr == ReadResult::kShort) return stop("");
    if (h.magic != oplog::kBlockMagic) return stop(at("no block header"));
    const bool json_block = h.type == oplog::kMeta || h.type == oplog::kCalib ||
                            h.type == oplog::kEnd || h.type == oplog::kCapture;
    const bool entries = h.type == oplog::kOps || h.type == oplog::kMarks;
    if (h.payload_bytes > (json_block ? oplog::kMaxJsonBlockBytes : oplog::kMaxPayloadBytes))
      return stop(at("payload size out of range"));
    if (entries && static_cast<uint64_t>(h.count) * sizeof(oplog::OpEntry) != h.payload_bytes)
      return stop(at("op count does not match its size"));
    const uint64_t payload_off = off + sizeof(h);
    const uint64_t next = payload_off + h.payload_bytes;
    // Never allocate for a payload the file does not hold.
    if (next > size) {
      if (!file_size(&size, error)) return false;
      if (next > size) return stop("");
    }
    if (entries && skip_ops) {
      (h.type == oplog::kOps ? ops_read_ : marks_read_) += h.count;
      off = next;
      continue;
    }
    buf_.resize((h.payload_bytes + 7) / 8);
    char* p = reinterpret_cast<char*>(buf_.data());
    if (h.payload_bytes > 0) {
      const ReadResult pr = read_at(payload_off, p, h.payload_bytes, error);
      if (pr == ReadResult::kError) return false;
      if (pr != ReadResult::kOk) return stop("");
    }
    if (crc32_of(p, h.payload_bytes) != h.crc32) return stop(at("checksum mismatch"));
    bool ok = true;
    switch (h.type) {
      case oplog::kOps:
        if (on_ops && *on_ops && h.count > 0)
          (*on_ops)(reinterpret_cast<const oplog::OpEntry*>(p), h.count);
        ops_read_ += h.count;
        break;
      case oplog::kCalib: {
        OplogCalib c;
        ok = parse_calib(p, h.payload_bytes, &c);
        if (ok) {
          calib_ = c;
          has_calib_ = true;
        }
        break;
      }
      case oplog::kLinks:
        ok = parse_links(p, h.payload_bytes, h.count, &links_);
        break;
      case oplog::kMarks:
        if (on_marks && *on_marks && h.count > 0)
          (*on_marks)(reinterpret_cast<const oplog::OpEntry*>(p), h.count);
        marks_read_ += h.count;
        break;
      case oplog::kMarkNames:
        ok = parse_mark_names(p, h.payload_bytes, h.count, &mark_names_);
        break;
      case oplog::kCapture:
        ok = parse_capture(p, h.payload_bytes, &capture_);
        if (ok) has_capture_ = true;
        break;
      case oplog::kEnd:
        ok = parse_end(p, h.payload_bytes, &end_ops_, &end_dropped_, &end_filtered_, &end_outside_);
        if (ok) has_end_ = true;
        break;
      default:  // a second kMeta, or a block type from a newer writer: skipped
        break;
    }
    if (!ok)  // checksum right but content malformed or out of range: a corrupt block
      return stop(at(h.type == oplog::kCalib       ? "clock calibration malformed or out of range"
                     : h.type == oplog::kLinks     ? "link dictionary malformed or too large"
                     : h.type == oplog::kMarkNames ? "mark name dictionary malformed or too large"
                     : h.type == oplog::kCapture   ? "capture window malformed"
                                                   : "end record malformed"));
    off = next;
  }
  return true;
}

}  // namespace fabtrace

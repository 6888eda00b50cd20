#include "userspace/report/job/report_rows.h"

// SSE2 is x86-64's baseline: blanks and strings scanned 16 bytes at a time,
// in unaligned loads within the text.
#if defined(__SSE2__)
#define FABTRACE_SCAN_SSE2 1
#include <emmintrin.h>
#endif

#include <time.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string_view>
#include <system_error>
#include <vector>

#include "common/input_limits.h"
#include "common/op_kinds.h"
#include "userspace/report/job/report_reader.h"

namespace fabtrace::report {

namespace {

// A scalar as the JSON tree holds it (json_tree.h): numbers as RawNumber
// reads them (unsigned unless negative, a float when not an integer or
// beyond 64 bits).
// Left uninitialized until read (a row holds 18: no stores for them per row).
struct Value {
  enum Kind : uint8_t { kNull, kBool, kUint, kInt, kFloat, kString } kind;
  bool b;
  uint64_t u;
  int64_t i;
  double d;
  std::string_view s;
};

// The strict subset of JSON read here; any step that finds something else
// sets failed() and the caller gives the text to the full parser.
class Scanner {
 public:
  Scanner(const char* p, const char* end) : p_(p), end_(end) {}
  bool failed() const { return failed_; }
  const char* at() const { return p_; }
  bool fail() { return failed_ = true, false; }

  // Blanks: the indentation of a pretty-printed report is half its bytes.
  void ws() {
    if (p_<end_&& static_cast<unsigned char>(*p_)> ' ') return;
#ifdef FABTRACE_SCAN_SSE2
    while (end_ - p_ >= 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p_));
      const __m128i blank = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(' ')),
                                                      _mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))),
                                         _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\r')),
                                                      _mm_cmpeq_epi8(v, _mm_set1_epi8('\t'))));
      const unsigned m = static_cast<unsigned>(_mm_movemask_epi8(blank));
      if (m != 0xffff) {
        p_ += __builtin_ctz(~m);
        return;
      }
      p_ += 16;
    }
#endif
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  // The next non-blank byte, not consumed ('\0' at the end).
  char peek() {
    ws();
    return p_ < end_ ? *p_ : '\0';
  }
  bool eat(char c) {
    if (peek() != c) return fail();
    ++p_;
    return true;
  }
  // A string of printable ASCII without escapes: its bytes are its value.
  bool string(std::string_view* out) {
    if (peek() != '"') return fail();
    const char* s = ++p_;
#ifdef FABTRACE_SCAN_SSE2
    // To the first '"', '\\', control byte or byte >= 0x80 (signed: below 0x20).
    while (end_ - p_ >= 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p_));
      const __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                                     _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
                                        _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));
      const unsigned m = static_cast<unsigned>(_mm_movemask_epi8(stop));
      if (m) {
        p_ += __builtin_ctz(m);
        break;
      }
      p_ += 16;
    }
#endif
    while (p_ < end_) {
      const unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        *out = std::string_view(s, static_cast<size_t>(p_ - s));
        ++p_;
        return true;
      }
      if (c == '\\' || c < 0x20 || c >= 0x80) return fail();
      ++p_;
    }
    return fail();
  }
  // A scalar (not an array or object).
  bool scalar(Value* v) {
    const char c = peek();
    if (c == '"') {
      v->kind = Value::kString;
      return string(&v->s);
    }
    if (c == 't' || c == 'f' || c == 'n') {
      const std::string_view rest(p_, static_cast<size_t>(end_ - p_));
      const std::string_view word = c == 't' ? "true" : c == 'f' ? "false" : "null";
      if (rest.substr(0, word.size()) != word) return fail();
      p_ += word.size();
      v->kind = c == 'n' ? Value::kNull : Value::kBool;
      v->b = c == 't';
      return true;
    }
    return number(v);
  }
  // Any value, checked and passed over; containers nested at most max_depth deep.
  bool skip(int max_depth) {
    const char c = peek();
    if (c != '[' && c != '{') {
      Value v;
      return scalar(&v);
    }
    if (max_depth <= 0) return fail();
    ++p_;
    const char close = c == '[' ? ']' : '}';
    if (peek() == close) return ++p_, true;
    for (;;) {
      if (c == '{') {
        std::string_view k;
        if (!string(&k) || !eat(':')) return false;
      }
      if (!skip(max_depth - 1)) return false;
      if (peek() == ',') {
        ++p_;
        continue;
      }
      return eat(close);
    }
  }

 private:
  static bool digit(char c) { return c >= '0' && c <= '9'; }
  // JSON's number grammar, read as RawNumber reads numbers (json_tree.cpp).
  bool number(Value* v) {
    const char* s = p_;
    if (p_ < end_ && *p_ == '-') ++p_;
    if (p_ >= end_ || !digit(*p_)) return fail();
    if (*p_ == '0') {
      ++p_;
    } else {
      while (p_ < end_ && digit(*p_)) ++p_;
    }
    bool integer = true;
    if (p_ < end_ && *p_ == '.') {
      integer = false;
      ++p_;
      if (p_ >= end_ || !digit(*p_)) return fail();
      while (p_ < end_ && digit(*p_)) ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      integer = false;
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ >= end_ || !digit(*p_)) return fail();
      while (p_ < end_ && digit(*p_)) ++p_;
    }
    if (integer) {
      if (*s == '-') {
        const auto r = std::from_chars(s, p_, v->i);
        if (r.ec == std::errc() && r.ptr == p_) return v->kind = Value::kInt, true;
      } else {
        const auto r = std::from_chars(s, p_, v->u);
        if (r.ec == std::errc() && r.ptr == p_) return v->kind = Value::kUint, true;
      }
    }
    const auto r = std::from_chars(s, p_, v->d);
    if (r.ec != std::errc() || r.ptr != p_) return fail();
    v->kind = Value::kFloat;
    return true;
  }

  const char* p_;
  const char* end_;
  bool failed_ = false;
};

// Field readers with report_reader.cpp's rules; false where it would throw.
// A count: get_u64 (absent or null: 0).
bool count_of(const Value* v, uint64_t* out) {
  *out = 0;
  if (!v || v->kind == Value::kNull) return true;
  switch (v->kind) {
    case Value::kUint:
      *out = v->u;
      break;
    case Value::kInt:
      if (v->i < 0) return false;
      *out = static_cast<uint64_t>(v->i);
      break;
    case Value::kFloat:
      if (!double_to_count(v->d, out)) return false;
      break;
    default:
      return false;
  }
  return count_ok(*out);
}

// A non-negative time or rate: get_double with its default bounds.
bool real_of(const Value* v, double* out) {
  *out = 0;
  if (!v || v->kind == Value::kNull) return true;
  switch (v->kind) {
    case Value::kUint:
      *out = static_cast<double>(v->u);
      break;
    case Value::kInt:
      *out = static_cast<double>(v->i);
      break;
    case Value::kFloat:
      *out = v->d;
      break;
    default:
      return false;
  }
  return finite_in(*out, 0.0, static_cast<double>(limits::kMaxTimeNs));
}

// The keys of an op row, as numbers: kOpRowKeys' (common/report_model.h)
// indices, in the order the writer puts them, which lookups try first.
#define FABTRACE_OUTCOME_KEY(m, words) k_##m,
#define FABTRACE_TIME_KEY(m) k_##m,
enum OpKey {
  kOp,
  kBytes,
  kSizeUnknown,
  kCount,
  FABTRACE_OP_OUTCOMES(FABTRACE_OUTCOME_KEY) kImm,
  kWithin50us,
  FABTRACE_OP_TIMES(FABTRACE_TIME_KEY) kOpKeys
};
#undef FABTRACE_OUTCOME_KEY
#undef FABTRACE_TIME_KEY
static_assert(std::size(kOpRowKeys) == kOpKeys, "OpKey follows kOpRowKeys");

// The key's index, looking from `from` on and round; kOpKeys if none.
int op_key(std::string_view k, int from) {
  for (int n = 0; n < kOpKeys; ++n) {
    const int i = (from + n) % kOpKeys;
    if (kOpRowKeys[i] == k) return i;
  }
  return kOpKeys;
}

// Names seen by this thread, interned (the one lock of intern() once per
// name): a table of 4096 entries indexed by a hash of the name's last 8 bytes
// and its length (addresses differ at their end), a miss replacing the entry.
Interned intern_cached(std::string_view s) {
  struct Entry {
    std::string_view key;  // the held copy's bytes
    Interned value;
  };
  thread_local std::vector<Entry> seen(4096);
  if (s.empty()) return Interned();  // ""
  uint64_t tail = 0;
  const size_t n = std::min<size_t>(8, s.size());
  std::memcpy(&tail, s.data() + s.size() - n, n);
  const uint64_t h = (tail ^ (uint64_t{s.size()} << 56)) * 0x9E3779B97F4A7C15ULL;
  Entry& e = seen[h >> 52];
  if (e.key.size() == s.size() && std::memcmp(e.key.data(), s.data(), s.size()) == 0)
    return e.value;
  e.value = intern(s);
  e.key = e.value.str();
  return e.value;
}

// The rows of the "links" array, from the scanner at its value.
class LinksReader {
 public:
  LinksReader(Scanner* sc, std::vector<LinkRow>* rows) : sc_(*sc), rows_(*rows) {}
  size_t links = 0;
  std::vector<const std::string*> locals;  // distinct local addresses (interned)

  bool read() {
    if (sc_.peek() == 'n') {  // null: no links
      Value v;
      return sc_.scalar(&v);
    }
    if (!sc_.eat('[')) return false;
    if (sc_.peek() == ']') return sc_.eat(']');
    do {
      if (!link()) return false;
    } while (next(']'));
    return !sc_.failed() && sc_.eat(']');
  }

 private:
  // After an element: true at a comma (consumed), false at anything else.
  bool next(char) {
    if (sc_.peek() != ',') return false;
    sc_.eat(',');
    return true;
  }

  bool link() {
    if (!sc_.eat('{')) return false;
    ++links;
    const size_t first = rows_.size();
    std::string_view local, remote;
    bool ops_seen = false;
    if (sc_.peek() != '}') {
      do {
        std::string_view k;
        if (!sc_.string(&k) || !sc_.eat(':')) return false;
        if (k == "local" || k == "remote") {
          Value v;
          if (!sc_.scalar(&v) || v.kind != Value::kString || v.s.size() > limits::kMaxStringBytes)
            return sc_.fail();
          (k == "local" ? local : remote) = v.s;  // a repeated key: the last one, as find()
        } else if (k == "ops") {
          if (ops_seen) return sc_.fail();  // the first one's rows are made already
          ops_seen = true;
          if (!ops()) return false;
        } else if (!sc_.skip(kDeepest - 3)) {
          return false;
        }
      } while (next('}'));
    }
    if (!sc_.eat('}')) return false;
    const Interned l = intern_cached(local), r = intern_cached(remote);
    for (size_t i = first; i < rows_.size(); ++i) rows_[i].set_link(l, r);
    if (!local.empty()) {
      bool seen = false;
      for (const std::string* s : locals) seen = seen || s == &l.str();
      if (!seen) locals.push_back(&l.str());
    }
    return true;
  }

  bool ops() {
    if (sc_.peek() == 'n') {
      Value v;
      return sc_.scalar(&v);
    }
    if (!sc_.eat('[')) return false;
    if (sc_.peek() == ']') return sc_.eat(']');
    do {
      if (!op_row()) return false;
    } while (next(']'));
    return !sc_.failed() && sc_.eat(']');
  }

  bool op_row() {
    if (!sc_.eat('{')) return false;
    Value vals[kOpKeys];
    bool have[kOpKeys] = {};
    if (sc_.peek() != '}') {
      int at = 0;
      do {
        std::string_view k;
        if (!sc_.string(&k) || !sc_.eat(':')) return false;
        const int i = op_key(k, at);
        if (i == kOpKeys) {
          if (!sc_.skip(kDeepest - 5)) return false;
          continue;
        }
        if (!sc_.scalar(&vals[i])) return false;  // arrays and objects: the full parser's
        have[i] = true;                           // a repeated key: the last one, as Members
        at = i + 1;
      } while (next('}'));
    }
    if (!sc_.eat('}')) return false;
    const auto get = [&](int i) { return have[i] ? &vals[i] : nullptr; };
    // read_op_row's order and rules.
    if (!have[kOp] || vals[kOp].kind != Value::kString ||
        vals[kOp].s.size() > limits::kMaxStringBytes)
      return sc_.fail();
    if (op_.str() != vals[kOp].s) {
      op_ = intern_cached(vals[kOp].s);
      op_recv_ = op_is_recv(op_from_name(op_.str().c_str()));
    }
    LinkRow row(no_owner_, op_, op_, op_);  // names set when the link ends
    OpStats& o = row.row;
    if (!count_of(get(kBytes), &o.bytes)) return sc_.fail();
    if (const Value* su = get(kSizeUnknown); su && su->kind != Value::kNull) {
      if (su->kind != Value::kBool) return sc_.fail();
      o.size_unknown = su->b;
    }
    if (!count_of(get(kCount), &o.count)) return sc_.fail();
#define FABTRACE_OUTCOME_OF(m, words) \
  if (!count_of(get(k_##m), &o.m)) return sc_.fail();
    FABTRACE_OP_OUTCOMES(FABTRACE_OUTCOME_OF)
#undef FABTRACE_OUTCOME_OF
    // Version 1 called completed_within_50us "imm".
    const int fast = have[kImm] ? kImm : kWithin50us;
    o.recv = have[fast] || op_recv_;
    if (!count_of(get(fast), &o.within_50us)) return sc_.fail();
#define FABTRACE_TIME_OF(m) \
  if (!real_of(get(k_##m), &o.m)) return sc_.fail();
    FABTRACE_OP_TIMES(FABTRACE_TIME_OF)
#undef FABTRACE_TIME_OF
    if (o.recv) row.set_posted_not_read();
    rows_.push_back(std::move(row));
    return true;
  }

  // Containers under the root: links array, link, ops array, op row; values
  // of unknown keys may nest up to the tree's bound from where they are.
  static constexpr int kDeepest = limits::kMaxJsonDepth;

  Scanner& sc_;
  std::vector<LinkRow>& rows_;
  Interned op_;  // the previous row's: a link's rows repeat a few ops
  bool op_recv_ = false;
  const RowOwner& no_owner_ = no_owner();
};

}  // namespace

namespace {

int64_t thread_cpu_ns() {
  timespec t;
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

// parse_report_rows_fast, but for clearing out->rows on the way out with false.
bool fast_rows(const std::string& text, ParsedReport* out, ParseTimes* times) {
  const int64_t t0 = times ? thread_cpu_ns() : 0;
  std::vector<LinkRow>& rows = out->rows;  // its space is used again (a pool's)
  rows.clear();
  Scanner sc(text.data(), text.data() + text.size());
  if (!sc.eat('{') || sc.peek() == '}') return false;
  const char* links_at = nullptr;
  const char* links_end = nullptr;
  LinksReader links(&sc, &rows);
  // The root's members: "links" read here, the others only passed over
  // (the rest's parse checks them).
  do {
    std::string_view k;
    if (!sc.string(&k) || !sc.eat(':')) return false;
    if (k == "links") {
      if (links_at) return false;  // repeated: the tree keeps the last one
      sc.ws();
      links_at = sc.at();
      if (!links.read()) return false;
      links_end = sc.at();
    } else if (!sc.skip(limits::kMaxJsonDepth - 1)) {
      return false;
    }
  } while (sc.peek() == ',' && sc.eat(','));
  if (!sc.eat('}') || !links_at) return false;
  const int64_t t1 = times ? thread_cpu_ns() : 0;

  // The rest of the report, its links left out.
  std::string rest;
  rest.reserve(text.size() - static_cast<size_t>(links_end - links_at) + 2);
  rest.append(text.data(), static_cast<size_t>(links_at - text.data()));
  rest += "[]";
  rest.append(links_end, static_cast<size_t>(text.data() + text.size() - links_end));
  ProcessReport head;
  std::string why;
  if (!parse_process_report(rest, &head, &why)) return false;

  const RowOwner& owner = intern_owner(head.host, head.rank, head.pid);
  for (LinkRow& r : rows) r.set_owner(owner);
  // count_unlisted_locals: the links' local addresses that no NIC row lists.
  size_t unlisted = 0;
  for (const std::string* a : links.locals) {
    bool listed = false;
    for (const NicReport& nic : head.nics)
      for (const std::string& l : nic.locals) listed = listed || l == *a;
    unlisted += !listed;
  }
  out->ok = true;
  out->why.clear();
  out->report = std::move(head);
  out->link_count = links.links;
  out->unlisted_locals = unlisted;
  if (times) {
    const int64_t t2 = thread_cpu_ns();
    times->rows_ns += t1 - t0;
    times->head_ns += t2 - t1;
  }
  return true;
}

}  // namespace

bool parse_report_rows_fast(const std::string& text, ParsedReport* out) {
  if (fast_rows(text, out, nullptr)) return true;
  out->rows.clear();
  return false;
}

void parse_report_rows(const std::string& text, ParsedReport* out, ParseTimes* times) {
  std::vector<LinkRow> rows = std::move(out->rows);  // kept for its space
  rows.clear();
  *out = ParsedReport();
  out->rows = std::move(rows);
  const int64_t t0 = times ? thread_cpu_ns() : 0;
  if (fast_rows(text, out, times)) return;
  out->rows.clear();
  out->report = ProcessReport();
  out->ok = parse_process_report(text, &out->report, &out->why);
  stage_rows(out);
  if (times) {
    times->fallback_ns += thread_cpu_ns() - t0;
    ++times->fallbacks;
  }
}

void read_report_rows(const std::string& path, ParsedReport* out, ParseTimes* times) {
  out->ok = false;
  out->rows.clear();
  // One text buffer per parsing thread, as read_process_report keeps.
  thread_local std::string text;
  struct Trim {
    ~Trim() {
      if (text.capacity() > (size_t{8} << 20)) std::string().swap(text);
    }
  } trim_after;
  std::string why;
  const int64_t t0 = times ? thread_cpu_ns() : 0;
  const bool read = read_report_text(path, &text, &why);
  if (times) times->open_read_ns += thread_cpu_ns() - t0;
  if (!read) {
    std::vector<LinkRow> rows = std::move(out->rows);
    *out = ParsedReport();
    out->rows = std::move(rows);
    out->why = why;
    return;
  }
  parse_report_rows(text, out, times);
}

}  // namespace fabtrace::report

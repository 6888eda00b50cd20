#include "common/env.h"

#include <strings.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/decimal.h"
#include "common/printable.h"

namespace fabtrace {

void log_line(const char* fmt, ...) {
  const int saved_errno = errno;  // callers may be in the middle of an interposed call
  static constexpr char kPrefix[] = "[fabtrace] ";
  static constexpr size_t kPrefixLen = sizeof(kPrefix) - 1;
  char buf[1024];
  std::memcpy(buf, kPrefix, kPrefixLen);
  size_t len = kPrefixLen;
  if (fmt) {
    char raw[1024];
    va_list ap;
    va_start(ap, fmt);
    const int n = std::vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    if (n > 0) {
      const size_t got =
          static_cast<size_t>(n) < sizeof(raw) ? static_cast<size_t>(n) : sizeof(raw) - 1;
      // Values in the message (settings, paths, names) may hold line breaks or
      // terminal controls: escaped, so every message is one line. The newline
      // below is the only one; one byte is left for it.
      len += printable_into(buf + len, sizeof(buf) - len - 1, raw, got);
    }
  }
  buf[len++] = '\n';
  const char* p = buf;
  while (len > 0) {
    const ssize_t w = ::write(2, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    // A partial write of a short line to stderr is rare; finish it rather than lose the tail.
    p += w;
    len -= static_cast<size_t>(w);
  }
  errno = saved_errno;
}

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// The value with surrounding white space removed, as [*begin, *end). False when
// the variable is unset or holds only white space.
bool trimmed(const char* raw, const char** begin, const char** end) {
  if (!raw) return false;
  const char* b = raw;
  while (*b && is_space(*b)) ++b;
  const char* e = b + std::strlen(b);
  while (e > b && is_space(e[-1])) --e;
  *begin = b;
  *end = e;
  return e > b;
}

bool word_eq(const char* b, const char* e, const char* word, bool ignore_case) {
  const size_t n = static_cast<size_t>(e - b);
  if (std::strlen(word) != n) return false;
  return ignore_case ? strncasecmp(b, word, n) == 0 : std::strncmp(b, word, n) == 0;
}

}  // namespace

bool env_bool(const char* name, bool def) {
  const char* raw = name ? std::getenv(name) : nullptr;
  const char *b, *e;
  if (!trimmed(raw, &b, &e)) return def;
  for (const char* w : {"1", "on", "yes", "true"})
    if (word_eq(b, e, w, true)) return true;
  for (const char* w : {"0", "off", "no", "false"})
    if (word_eq(b, e, w, true)) return false;
  log_line("warning: %s=%.256s is not a boolean (1/0, on/off, yes/no, true/false); using %s", name,
           raw, def ? "true" : "false");
  return def;
}

uint64_t env_u64(const char* name, uint64_t def, uint64_t lo, uint64_t hi) {
  const char* raw = name ? std::getenv(name) : nullptr;
  const char *b, *e;
  if (!trimmed(raw, &b, &e)) return def;

  uint64_t v = 0;
  const char* p = b;
  bool ok = parse_digits(b, e, &v, &p);  // also rejects signs
  if (ok && p < e) {
    int shift = 0;
    switch (*p) {
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      default:
        ok = false;
    }
    if (ok) {
      ++p;
      if (p != e || v > (UINT64_MAX >> shift))
        ok = false;
      else
        v <<= shift;
    }
  }
  if (ok && (v < lo || v > hi)) ok = false;
  if (ok) return v;

  if (lo == 0 && hi == UINT64_MAX)
    log_line(
        "warning: %s=%.256s is not an unsigned integer (optional k/m/g suffix); using %" PRIu64,
        name, raw, def);
  else if (hi == UINT64_MAX)
    log_line("warning: %s=%.256s is not an integer >= %" PRIu64
             " (optional k/m/g suffix); using %" PRIu64,
             name, raw, lo, def);
  else
    log_line("warning: %s=%.256s is not an integer in [%" PRIu64 ", %" PRIu64
             "] (optional k/m/g suffix); using %" PRIu64,
             name, raw, lo, hi, def);
  return def;
}

std::string env_trimmed(const char* name) {
  const char* raw = name ? std::getenv(name) : nullptr;
  const char *b, *e;
  if (!trimmed(raw, &b, &e)) return std::string();
  return std::string(b, e);
}

std::string env_str(const char* name, const char* def) {
  const char* raw = name ? std::getenv(name) : nullptr;
  if (raw) return std::string(raw);
  return std::string(def ? def : "");
}

std::string env_choice(const char* name, std::initializer_list<const char*> allowed,
                       const char* def) {
  const char* raw = name ? std::getenv(name) : nullptr;
  const char *b, *e;
  if (!def) def = "";
  if (!trimmed(raw, &b, &e)) return std::string(def);
  for (const char* w : allowed)
    if (w && word_eq(b, e, w, false)) return std::string(w);

  char list[256];
  size_t len = 0;
  list[0] = '\0';
  for (const char* w : allowed) {
    if (!w || len >= sizeof(list) - 1) continue;
    const int n = std::snprintf(list + len, sizeof(list) - len, "%s%s", len ? "|" : "", w);
    if (n < 0) break;
    len += static_cast<size_t>(n);
    if (len > sizeof(list) - 1) len = sizeof(list) - 1;
  }
  log_line("warning: %s=%.256s is not one of %s; using %s", name, raw, list, def);
  return std::string(def);
}

}  // namespace fabtrace

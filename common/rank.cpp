#include "common/rank.h"

#include <algorithm>
#include <climits>
#include <cstdlib>

namespace fabtrace {

namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// A non-negative decimal number filling [b, e) exactly (surrounding blanks allowed).
bool parse_nonneg(const char* b, const char* e, long* out) {
  while (b < e && is_blank(*b)) ++b;
  while (e > b && is_blank(e[-1])) --e;
  if (b == e) return false;
  long v = 0;
  for (const char* p = b; p < e; ++p) {
    if (*p < '0' || *p > '9') return false;
    const long d = *p - '0';
    if (v > (LONG_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

bool parse_env_number(const char* raw, long* out) {
  if (!raw) return false;
  const char* e = raw;
  while (*e) ++e;
  return parse_nonneg(raw, e, out);
}

}  // namespace

std::string output_token(const std::string& s) {
  constexpr size_t kMaxToken = 64;
  std::string out = s.empty() ? "?" : s.substr(0, kMaxToken);
  for (char& c : out) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u <= ' ' || c == ',' || c == '/' || u == 0x7f) c = '_';
  }
  return out;
}

RankId detect_rank() {
  RankId id;
  for (const char* name :
       {"SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "RANK"}) {
    const char* raw = std::getenv(name);
    if (!raw || !*raw) continue;
    id.text = output_token(raw);
    long v;
    id.value = parse_env_number(raw, &v) ? v : -1;
    return id;
  }
  id.text = "NA";
  id.value = -1;
  return id;
}

long detect_local_rank() {
  for (const char* name : {"SLURM_LOCALID", "MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK",
                           "PMI_LOCAL_RANK", "FLUX_TASK_LOCAL_ID"}) {
    long v;
    if (parse_env_number(std::getenv(name), &v)) return v;
  }
  return -1;
}

bool RankSpec::parse(const std::string& spec, std::string* error) {
  ranges_.clear();
  std::vector<std::pair<long, long>> out;
  auto fail = [&](const std::string& msg) {
    if (error) *error = msg;
    return false;
  };

  const char* s = spec.c_str();
  const char* end = s + spec.size();
  {
    const char* p = s;
    while (p < end && is_blank(*p)) ++p;
    if (p == end) return fail("empty rank list");
  }

  const char* tok = s;
  while (true) {
    const char* comma = tok;
    while (comma < end && *comma != ',') ++comma;
    // The token is [tok, comma), trimmed.
    const char* b = tok;
    const char* e = comma;
    while (b < e && is_blank(*b)) ++b;
    while (e > b && is_blank(e[-1])) --e;
    const std::string text(b, e);
    if (b == e) return fail("empty entry in rank list '" + spec + "'");
    if (*b == '-' || *b == '+') return fail("'" + text + "' is not a non-negative rank or range");

    const char* dash = b;
    while (dash < e && *dash != '-') ++dash;
    long lo, hi;
    if (dash == e) {
      if (!parse_nonneg(b, e, &lo)) return fail("'" + text + "' is not a rank or range");
      hi = lo;
    } else {
      if (!parse_nonneg(b, dash, &lo) || !parse_nonneg(dash + 1, e, &hi))
        return fail("'" + text + "' is not a rank or range (expected N or LO-HI)");
      if (lo > hi) return fail("range '" + text + "' has its start after its end");
    }
    out.emplace_back(lo, hi);

    if (comma == end) break;
    tok = comma + 1;
  }

  // Sorted, with overlapping and adjacent ranges merged, so contains() can bisect.
  std::sort(out.begin(), out.end());
  std::vector<std::pair<long, long>> merged;
  merged.reserve(out.size());
  for (const auto& r : out) {
    if (!merged.empty() &&
        (merged.back().second == LONG_MAX || r.first <= merged.back().second + 1)) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  merged.shrink_to_fit();
  ranges_.swap(merged);
  return true;
}

bool RankSpec::contains(long rank) const {
  // First range starting after rank; the one before it is the only candidate.
  auto it =
      std::upper_bound(ranges_.begin(), ranges_.end(), rank,
                       [](long r, const std::pair<long, long>& range) { return r < range.first; });
  if (it == ranges_.begin()) return false;
  --it;
  return rank >= it->first && rank <= it->second;
}

}  // namespace fabtrace

#include "stats.h"

#include <algorithm>

namespace ftapp {
namespace {
constexpr size_t kMaxMessages = 25;
}

void Stats::issued(const char* fn) {
  std::lock_guard<std::mutex> g(mu_);
  ++s_.issued[fn];
}

void Stats::eagain(const char* fn) {
  std::lock_guard<std::mutex> g(mu_);
  ++s_.eagain[fn];
}

void Stats::no_completion(const char* fn) {
  std::lock_guard<std::mutex> g(mu_);
  ++s_.no_completion[fn];
}

void Stats::other_call(const char* fn) {
  std::lock_guard<std::mutex> g(mu_);
  ++s_.other_calls[fn];
}

void Stats::kept_context(const char* fn) {
  std::lock_guard<std::mutex> g(mu_);
  ++s_.kept_context[fn];
}

void Stats::kept_context_error() {
  std::lock_guard<std::mutex> g(mu_);
  ++s_.kept_context_errors;
}

void Stats::received(const char* fn, uint64_t bytes) {
  std::lock_guard<std::mutex> g(mu_);
  ++s_.received_sizes[fn][bytes];
}

void Stats::opened(const char* what, uint64_t n) {
  std::lock_guard<std::mutex> g(mu_);
  s_.opened[what] += n;
}

void Stats::measured(const char* what, double v) {
  std::lock_guard<std::mutex> g(mu_);
  s_.measured[what] = v;
}

void Stats::link_ops(const std::string& fn, const std::string& local, const std::string& remote,
                     uint64_t n) {
  std::lock_guard<std::mutex> g(mu_);
  s_.link_ops[fn + "|" + local + "|" + remote] += n;
}

void Stats::completion() {
  std::lock_guard<std::mutex> g(mu_);
  ++s_.completions;
}

void Stats::completed(const char* fn) {
  std::lock_guard<std::mutex> g(mu_);
  ++s_.completed[fn];
}

void Stats::error_completion() {
  std::lock_guard<std::mutex> g(mu_);
  ++s_.error_completions;
}

void Stats::message(const std::string& m) {
  if (s_.messages.size() < kMaxMessages) s_.messages.push_back(m);
}

void Stats::context_error(const std::string& why) {
  std::lock_guard<std::mutex> g(mu_);
  ++s_.context_errors;
  message("context error: " + why);
}

void Stats::data_error(const std::string& why) {
  std::lock_guard<std::mutex> g(mu_);
  ++s_.data_errors;
  message("data error: " + why);
}

void Stats::failure(const std::string& why) {
  std::lock_guard<std::mutex> g(mu_);
  ++s_.failures;
  message(why);
}

void Stats::skip_function(const std::string& fn, const std::string& reason) {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<std::string>& list =
      fn.find(':') == std::string::npos ? s_.skipped : s_.skipped_features;
  if (std::find(list.begin(), list.end(), fn) == list.end()) {
    list.push_back(fn);
    s_.skip_reasons[fn] = reason;
  }
}

void Stats::family_ran(const std::string& fam, const std::string& caps) {
  std::lock_guard<std::mutex> g(mu_);
  s_.families_run.push_back(fam);
  s_.family_caps[fam] = caps;
}

void Stats::family_skipped(const std::string& fam, const std::string& reason) {
  std::lock_guard<std::mutex> g(mu_);
  s_.families_skipped[fam] = reason;
}

void Stats::note(const std::string& msg) {
  std::lock_guard<std::mutex> g(mu_);
  if (std::find(s_.notes.begin(), s_.notes.end(), msg) == s_.notes.end() &&
      s_.notes.size() < kMaxMessages) {
    s_.notes.push_back(msg);
  }
}

bool Stats::ok() const {
  std::lock_guard<std::mutex> g(mu_);
  return s_.failures == 0 && s_.context_errors == 0 && s_.data_errors == 0;
}

StatsSnapshot Stats::snapshot() const {
  std::lock_guard<std::mutex> g(mu_);
  return s_;
}

}  // namespace ftapp

// Per-rank counters of what the program did; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace ftapp {

struct StatsSnapshot {
  std::map<std::string, uint64_t> issued;         // accepted calls (returned 0)
  std::map<std::string, uint64_t> completed;      // successful completions, by the op's function
  std::map<std::string, uint64_t> eagain;         // -FI_EAGAIN refusals
  std::map<std::string, uint64_t> no_completion;  // accepted calls that generate no completion
  std::map<std::string, uint64_t> other_calls;    // e.g. fi_cancel
  // Accepted calls whose context reaches the provider unchanged (FI_PEEK, FI_CLAIM,
  // FI_MULTI_RECV, FI_TRIGGER): the tracer counts them untimed.
  std::map<std::string, uint64_t> kept_context;
  // Receives by function and by the size of the message they got (from the
  // sender's plan: known even when the CQ format carries no length).
  std::map<std::string, std::map<uint64_t, uint64_t>> received_sizes;
  std::map<std::string, uint64_t> opened;  // objects a family opened: "domains", "endpoints"
  std::map<std::string, double> measured;  // what a family measured itself: "bw_MB_per_s"
  // Accepted ops per link, "fn|local|remote" (the addresses as the provider's
  // fi_av_straddr prints them, the peer's looked up in the AV as a tracer
  // would; "(any)" for a receive from any source): families that spread ops
  // over several links say where each went (multiep).
  std::map<std::string, uint64_t> link_ops;
  uint64_t completions = 0;
  uint64_t error_completions = 0;
  uint64_t kept_context_errors = 0;  // error completions of those calls
  uint64_t context_errors = 0;
  uint64_t data_errors = 0;
  uint64_t failures = 0;
  std::vector<std::string> skipped;                 // function names
  std::vector<std::string> skipped_features;        // sub-features, e.g. "fi_cancel:fi_recv"
  std::map<std::string, std::string> skip_reasons;  // function -> reason
  std::vector<std::string> families_run;
  std::map<std::string, std::string> family_caps;       // family -> capabilities requested
  std::map<std::string, std::string> families_skipped;  // family -> reason
  std::vector<std::string> messages;                    // first errors, for humans
  std::vector<std::string> notes;
};

class Stats {
 public:
  void issued(const char* fn);
  void eagain(const char* fn);
  void no_completion(const char* fn);
  void other_call(const char* fn);
  void kept_context(const char* fn);
  void received(const char* fn, uint64_t bytes);
  void opened(const char* what, uint64_t n);
  void measured(const char* what, double v);
  void link_ops(const std::string& fn, const std::string& local, const std::string& remote,
                uint64_t n);
  void completion();
  // A successful completion of an op issued by function `fn`.
  void completed(const char* fn);
  void error_completion();
  void kept_context_error();
  void context_error(const std::string& why);
  void data_error(const std::string& why);
  void failure(const std::string& why);
  // A function (or "fn:detail" feature) that could not be exercised.
  void skip_function(const std::string& fn, const std::string& reason);
  void family_ran(const std::string& fam, const std::string& caps);
  void family_skipped(const std::string& fam, const std::string& reason);
  void note(const std::string& msg);
  bool ok() const;
  StatsSnapshot snapshot() const;

 private:
  void message(const std::string& m);
  mutable std::mutex mu_;
  StatsSnapshot s_;
};

}  // namespace ftapp

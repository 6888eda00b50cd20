// Per-rank counters of what the program did; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace ftapp {

using Counts = std::map<std::string, uint64_t>;
using SizeCounts = std::map<std::string, std::map<uint64_t, uint64_t>>;
using Numbers = std::map<std::string, double>;
using Texts = std::map<std::string, std::string>;
using Names = std::vector<std::string>;

// Each counter of a rank, as (type, name): one list from which the snapshot's
// members and the result file's keys (result.cpp) are made.
#define FTAPP_STATS_FIELDS(X)                                                  \
  X(Counts, issued)        /* accepted calls (returned 0) */                   \
  X(Counts, completed)     /* successful completions, by the op's function */  \
  X(Counts, eagain)        /* -FI_EAGAIN refusals */                           \
  X(Counts, no_completion) /* accepted calls that generate no completion */    \
  X(Counts, other_calls)   /* e.g. fi_cancel */                                \
  /* Accepted calls whose context reaches the provider unchanged (FI_PEEK,     \
     FI_CLAIM, FI_MULTI_RECV, FI_TRIGGER): the tracer counts them untimed. */  \
  X(Counts, kept_context)                                                      \
  /* Receives by function and by the size of the message they got (from the    \
     sender's plan: known even when the CQ format carries no length). */       \
  X(SizeCounts, received_sizes)                                                \
  X(Counts, opened)    /* objects a family opened: "domains", "endpoints" */   \
  X(Numbers, measured) /* what a family measured itself: "bw_MB_per_s" */      \
  /* Accepted ops per link, "fn|local|remote" (the addresses as the provider's \
     fi_av_straddr prints them, the peer's looked up in the AV as a tracer     \
     would; "(any)" for a receive from any source): families that spread ops   \
     over several links say where each went (multiep). */                      \
  X(Counts, link_ops)                                                          \
  X(uint64_t, completions)                                                     \
  X(uint64_t, error_completions)                                               \
  X(uint64_t, kept_context_errors) /* error completions of those calls */      \
  X(uint64_t, context_errors)                                                  \
  X(uint64_t, data_errors)                                                     \
  X(uint64_t, failures)                                                        \
  X(Names, skipped)          /* function names */                              \
  X(Names, skipped_features) /* sub-features, e.g. "fi_cancel:fi_recv" */      \
  X(Texts, skip_reasons)     /* function -> reason */                          \
  X(Names, families_run)                                                       \
  X(Texts, family_caps)      /* family -> capabilities requested */            \
  X(Texts, families_skipped) /* family -> reason */                            \
  X(Names, messages)         /* first errors, for humans */                    \
  X(Names, notes)

struct StatsSnapshot {
#define FTAPP_STATS_MEMBER(type, name) type name{};
  FTAPP_STATS_FIELDS(FTAPP_STATS_MEMBER)
#undef FTAPP_STATS_MEMBER
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

// The harness itself: starting programs from a test process that runs threads.
// A fork()ed child of a multithreaded process that allocates before exec can
// block forever on a lock another thread held at the fork (the allocator's, or
// the sanitizer's): the harness must start programs without running code of its
// own in the child, and pass the environment exactly.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"

namespace fabtrace::test {
namespace {

// Two threads allocate and free in a tight loop (malloc, strings, vectors) while
// the main thread starts 300 programs: under the old fork+setenv+exec harness
// this hung under ASan within a few hundred spawns. Each run is bounded (wait_for
// kills it after 30 s and reports 137), so a hang fails instead of blocking.
TEST(Harness, SpawnsWhileOtherThreadsAllocate) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> churn{0};
  std::vector<std::thread> allocators;
  for (int t = 0; t < 2; ++t)
    allocators.emplace_back([&, t] {
      uint64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        std::vector<std::string> v;
        for (int i = 0; i < 16; ++i) v.emplace_back(static_cast<size_t>(32 + (i + t) * 61), 'x');
        void* p = std::malloc(static_cast<size_t>(4096 + (n % 64) * 512));
        std::free(p);
        ++n;
      }
      churn += n;
    });
  int failures = 0;
  for (int i = 0; i < 300 && failures == 0; ++i) {
    const RunResult r = run({"true"}, {}, i % 2 == 0, 30);
    if (r.exit_code != 0) {
      ++failures;
      ADD_FAILURE() << "spawn " << i << " exited " << r.exit_code << ": " << r.output;
    }
  }
  stop = true;
  for (auto& t : allocators) t.join();
  EXPECT_GT(churn.load(), 0u);
}

TEST(Harness, PassesTheEnvironmentExactly) {
  setenv("FABTRACE_HARNESS_INHERITED", "from-parent", 1);
  const RunResult r =
      run({"sh", "-c", "echo \"$A|$B|$FABTRACE_HARNESS_INHERITED|${LD_PRELOAD:-none}\""},
          {{"A", "one two"}, {"B", ""}}, false);
  unsetenv("FABTRACE_HARNESS_INHERITED");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "one two||from-parent|none\n");
  // The test's value wins over the inherited one, and the preload is set when asked.
  const RunResult p = run({"sh", "-c", "echo \"$LD_PRELOAD\""}, {}, true);
  EXPECT_NE(p.output.find("libfabtrace.so"), std::string::npos) << p.output;
}

TEST(Harness, ExitCodesAndMissingPrograms) {
  EXPECT_EQ(run({"sh", "-c", "exit 3"}, {}, false).exit_code, 3);
  EXPECT_EQ(run({"sh", "-c", "kill -TERM $$"}, {}, false).exit_code, 128 + 15);
  const RunResult missing = run({"/nonexistent/fabtrace-no-such-program"}, {}, false);
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_NE(missing.output.find("No such file"), std::string::npos) << missing.output;
}

}  // namespace
}  // namespace fabtrace::test

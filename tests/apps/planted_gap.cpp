#include "planted_gap.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

namespace ftapp {

void planted_gap(const std::string& kind, size_t ms) {
  if (kind == "sleep") {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return;
  }
  int fds[2];
  if (pipe(fds) != 0) return;
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    const char b = 1;
    if (write(fds[1], &b, 1) != 1) return;
  });
  char b = 0;
  while (read(fds[0], &b, 1) < 0 && errno == EINTR) {
  }
  writer.join();
  close(fds[0]);
  close(fds[1]);
}

}  // namespace ftapp

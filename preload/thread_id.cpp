#include "preload/thread_id.h"

namespace fabtrace {

__thread uint32_t t_tid __attribute__((tls_model("initial-exec"))) = 0;

}  // namespace fabtrace

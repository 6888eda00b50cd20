// Shared engine of the "msg", "tagged" and "srx" families: rank 0 sends with every
// send variant, rank 1 receives with every receive variant (on Fabric::rx_ep) and
// verifies each payload.
#pragma once

namespace ftapp {

class Env;

void run_two_sided(Env& env, bool tagged);

}  // namespace ftapp

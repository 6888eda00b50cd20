// Shared engine of the "msg" and "tagged" families: rank 0 sends with every send
// variant, rank 1 receives with every receive variant and verifies each payload.
#pragma once

namespace ftapp {

class Env;

void run_two_sided(Env& env, bool tagged);

}  // namespace ftapp

// Subcommands of the `fabtrace` command.
#pragma once

namespace fabtrace {

// fabtrace run [--dir DIR] [--stderr] -- CMD [ARGS...]
int cmd_run(int argc, char** argv);

}  // namespace fabtrace

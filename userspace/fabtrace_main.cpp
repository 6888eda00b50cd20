// The `fabtrace` command (userspace/cli/cli.h declares its subcommands).
#include "userspace/cli/cli.h"

int main(int argc, char** argv) { return fabtrace::cli::main(argc, argv); }

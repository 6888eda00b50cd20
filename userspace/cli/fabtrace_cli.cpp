// The commands of `fabtrace`, declared on the one parser (cli.h).
#include <cstdio>
#include <memory>

#include "userspace/cli/cli.h"
#include "userspace/commands.h"

namespace fabtrace {
namespace cli {

void declare_fabtrace(Cli& cli) {
  CLI::App& app = cli.app();
  auto show_version = std::make_shared<bool>(false);
  app.add_flag("-V,--version", *show_version,
               "print fabtrace's version and the libfabric and libbpf it runs with");
  cli.set_work(&app,
               [show_version] { return *show_version ? print_version(stdout) : kUsageError; });
  app.footer(
      "Run `fabtrace CMD --help` for the options of a command; fabtrace(1), fabtrace-CMD(1) and "
      "fabtrace-env(7) are the whole reference.");
  add_run_command(cli, app);
  add_record_command(cli, app);
  add_report_command(cli, app);
  add_diff_command(cli, app);
  add_top_command(cli, app);
  add_metrics_command(cli, app);
  add_export_command(cli, app);
  add_version_command(cli, app);
  cli.add_help_command();
}

int main(int argc, char** argv) {
  Cli cli;
  declare_fabtrace(cli);
  return cli.run(argc, argv);
}

}  // namespace cli
}  // namespace fabtrace

// The `fabtrace` command line: one parser (CLI11, Debian's libcli11-dev) for
// every subcommand. Each command declares its options and calls its work
// (add_*_command in its cmd_*.cpp); this file holds what they share: the app,
// the help layout, the one number parser of the flags, the split of a traced
// command (`run -- CMD`, `record -- CMD`), and the errors: one line naming
// what is wrong, exit code 2.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fabtrace {
namespace cli {

// Exit code of a command line that does not parse (and of `fabtrace` alone).
constexpr int kUsageError = 2;

class Cli {
 public:
  // The app, without commands: main() declares fabtrace's (cli/fabtrace_cli.cpp),
  // a test the ones it tests.
  Cli();
  Cli(const Cli&) = delete;
  Cli& operator=(const Cli&) = delete;

  // Parses the arguments (without argv[0]) and runs the command given: its
  // exit code; 0 after --help; kUsageError after one line on stderr.
  int run(const std::vector<std::string>& args);
  int run(int argc, char** argv);

  CLI::App& app() { return *app_; }

  // For the commands' declarations. A subcommand with fabtrace's help
  // layout; `work` runs when it is the one given, its result the exit code.
  CLI::App* add_command(CLI::App& parent, const std::string& name, const std::string& description,
                        std::function<int()> work);
  // The traced command of run/record: shown in the help, filled by run() with
  // everything after `--` (without_dashes: also from the first argument that
  // is neither an option nor an option's value: `fabtrace run ./app -x`).
  CLI::Option* add_traced_command(CLI::App* app, std::vector<std::string>* command,
                                  bool without_dashes);
  // A positional the command needs ("DIR"). Checked after the parse, so that
  // an unknown flag is what a wrong command line is told first.
  void require(CLI::Option* positional);
  // What runs when `app` is given without a subcommand (the top level: its
  // flags, e.g. --version).
  void set_work(CLI::App* app, std::function<int()> work);
  // fabtrace help [CMD...]: the help of that command.
  void add_help_command();

 private:
  struct Command {
    std::function<int()> work;
    std::vector<std::string>* traced = nullptr;
    bool traced_without_dashes = false;
  };
  void split_traced_command(std::vector<std::string>* args);
  int help() const;  // fabtrace help [CMD...]

  std::unique_ptr<CLI::App> app_;
  std::map<const CLI::App*, Command> commands_;
  std::vector<std::string> help_of_, no_command_;
  std::vector<const CLI::Option*> required_;
};

// A flag taking a whole number in decimal from lo to hi (common/decimal.h):
// every numeric flag of every command goes through this one parser. `set`
// receives the value, once per occurrence (repeatable: --pid 1 --pid 2).
CLI::Option* add_number(CLI::App* app, const std::string& names, const std::string& description,
                        uint64_t lo, uint64_t hi, std::function<void(uint64_t)> set,
                        bool repeatable = false);

// A flag taking a ratio: a decimal number, with at most 6 digits after its
// point ("1", "1.2", "1.25"; no sign, no exponent), from lo to hi. The same
// rules as add_number otherwise.
CLI::Option* add_ratio(CLI::App* app, const std::string& names, const std::string& description,
                       double lo, double hi, std::function<void(double)> set);

// "fabtrace export ops" for that subcommand.
std::string full_name(const CLI::App* app);

// fabtrace's main(): every command declared, then run (cli/fabtrace_cli.cpp).
int main(int argc, char** argv);
// Declares every command of fabtrace on `cli`.
void declare_fabtrace(Cli& cli);

}  // namespace cli
}  // namespace fabtrace

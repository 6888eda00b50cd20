#include "userspace/cli/cli.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "common/decimal.h"

namespace fabtrace {
namespace cli {

namespace {

constexpr size_t kHelpWidth = 80;
constexpr size_t kHelpColumn = 28;

// Words of `text` on lines of at most `width` characters (a word longer than
// that has a line of its own); the text's own line breaks are kept.
std::string wrap(const std::string& text, size_t width) {
  std::string out, line, word;
  const auto put_word = [&] {
    if (word.empty()) return;
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    word.clear();
  };
  for (const char c : text + "\n") {
    if (c == ' ') {
      put_word();
    } else if (c == '\n') {
      put_word();
      out += line + "\n";
      line.clear();
    } else {
      word += c;
    }
  }
  out.pop_back();  // the newline added above
  return out;
}

// CLI11's layout, with descriptions wrapped to the terminal's customary width.
class Formatter : public CLI::Formatter {
 public:
  Formatter() { column_width(kHelpColumn); }
  std::string make_option_desc(const CLI::Option* opt) const override {
    return wrap(CLI::Formatter::make_option_desc(opt), kHelpWidth - kHelpColumn);
  }
  std::string make_subcommand(const CLI::App* sub) const override {
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true),
                             wrap(sub->get_description(), kHelpWidth - kHelpColumn), kHelpColumn);
    return out.str();
  }
  std::string make_description(const CLI::App* app) const override {
    const std::string d = app->get_description();
    return d.empty() ? "" : wrap(d, kHelpWidth) + "\n\n";
  }
  std::string make_footer(const CLI::App* app) const override {
    const std::string f = app->get_footer();
    return f.empty() ? "" : wrap(f, kHelpWidth) + "\n";
  }
};

CLI::App* subcommand_named(const CLI::App* app, const std::string& name) {
  for (CLI::App* s : const_cast<CLI::App*>(app)->get_subcommands({}))
    if (s->get_name() == name) return s;
  return nullptr;
}

// The subcommand that was given, deepest first ("export ops": ops).
CLI::App* given(CLI::App& app) {
  CLI::App* cur = &app;
  for (;;) {
    const std::vector<CLI::App*> subs = cur->get_subcommands();
    if (subs.empty()) return cur;
    cur = subs.front();
  }
}

// One line for a command line that does not parse, naming what is wrong.
std::string error_line(const CLI::App& app, const CLI::ParseError& e) {
  std::string what = e.what();
  const std::string name = e.get_name();
  if (name == "ExtrasError") {
    // "The following argument(s) was/were not expected: X Y"
    const size_t colon = what.find(": ");
    const std::string extra = colon == std::string::npos ? what : what.substr(colon + 2);
    const std::string first = extra.substr(0, extra.find(' '));
    what = first.size() > 1 && first[0] == '-' ? "unknown option " + first
                                               : "unexpected argument '" + first + "'";
  } else if (name == "ArgumentMismatch" && what.find("required") != std::string::npos) {
    what = what.substr(0, what.find(':')) + " needs a value";
  } else if (what.size() > 1 && what[0] >= 'A' && what[0] <= 'Z' && what[1] >= 'a' &&
             what[1] <= 'z') {  // "The ...", not "DIR is required"
    what[0] = static_cast<char>(what[0] - 'A' + 'a');
  }
  const std::string n = full_name(&app);
  return n + ": " + what + " (" + n + " --help)";
}

// A bound as the user writes one: "1.001", "1000000".
std::string plain(double v) {
  char b[64];
  std::snprintf(b, sizeof(b), "%.6f", v);
  std::string s = b;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

std::string full_name(const CLI::App* app) {
  std::string n;
  for (const CLI::App* a = app; a; a = a->get_parent())
    n = a->get_name() + (n.empty() ? "" : " " + n);
  return n;
}

// Takes the traced command off `args`: after "--", or (run) from the first
// argument that is neither an option nor an option's value.
void Cli::split_traced_command(std::vector<std::string>* args) {
  const CLI::App* cur = app_.get();
  for (size_t i = 0; i < args->size(); ++i) {
    const std::string& a = (*args)[i];
    const auto it = commands_.find(cur);
    if (it != commands_.end() && it->second.traced) {
      const Command& c = it->second;
      for (size_t j = i; j < args->size(); ++j) {
        const std::string& t = (*args)[j];
        if (t == "--") {
          c.traced->assign(args->begin() + static_cast<long>(j) + 1, args->end());
          args->resize(j);
          return;
        }
        if (t.size() > 1 && t[0] == '-') {
          const std::string name = t.substr(0, t.find('='));
          const CLI::Option* opt = cur->get_option_no_throw(name);
          // An option that takes a value (a flag takes none) takes the next one.
          if (opt && opt->get_items_expected_max() > 0 && name.size() == t.size()) ++j;
          continue;
        }
        if (c.traced_without_dashes) {
          c.traced->assign(args->begin() + static_cast<long>(j), args->end());
          args->resize(j);
        }
        return;
      }
      return;
    }
    if (const CLI::App* sub = subcommand_named(cur, a)) cur = sub;
  }
}

CLI::App* Cli::add_command(CLI::App& parent, const std::string& name,
                           const std::string& description, std::function<int()> work) {
  CLI::App* sub = parent.add_subcommand(name, description);
  sub->formatter(std::make_shared<Formatter>());
  sub->set_help_flag("-h,--help", "print this help and exit");
  if (work) commands_[sub].work = std::move(work);
  return sub;
}

CLI::Option* add_number(CLI::App* app, const std::string& names, const std::string& description,
                        uint64_t lo, uint64_t hi, std::function<void(uint64_t)> set,
                        bool repeatable) {
  const std::string shown = names.substr(names.rfind(',') + 1);
  const auto parse = [shown, lo, hi, set](const std::string& s) {
    uint64_t v = 0;
    if (!parse_decimal(s, &v) || v < lo || v > hi)
      throw CLI::ValidationError(shown, "takes a whole number from " + std::to_string(lo) + " to " +
                                            std::to_string(hi) + ", not '" + s + "'");
    set(v);
  };
  CLI::Option* o;
  if (repeatable) {
    o = app->add_option_function<std::vector<std::string>>(
        names,
        [parse](const std::vector<std::string>& vs) {
          for (const std::string& s : vs) parse(s);
        },
        description);
    o->allow_extra_args(false);
  } else {
    o = app->add_option_function<std::string>(names, parse, description);
  }
  return o->type_name("N");
}

CLI::Option* add_ratio(CLI::App* app, const std::string& names, const std::string& description,
                       double lo, double hi, std::function<void(double)> set) {
  const std::string shown = names.substr(names.rfind(',') + 1);
  const auto parse = [shown, lo, hi, set](const std::string& s) {
    // The whole part with the number parser of every flag, then the fraction.
    const char* const e = s.data() + s.size();
    const char* p = nullptr;
    uint64_t whole = 0, frac = 0;
    bool ok = parse_digits(s.data(), e, &whole, &p) && whole <= 1000000000;
    double v = static_cast<double>(whole);
    if (ok && p < e && *p == '.') {
      const char* f = p + 1;
      ok = parse_digits(f, e, &frac, &p) && p - f <= 6;
      if (ok) v += static_cast<double>(frac) / std::pow(10.0, static_cast<double>(p - f));
    }
    if (!ok || p != e || v < lo || v > hi)
      throw CLI::ValidationError(shown, "takes a number from " + plain(lo) + " to " + plain(hi) +
                                            " (digits, a point, at most 6 decimals), not '" + s +
                                            "'");
    set(v);
  };
  return app->add_option_function<std::string>(names, parse, description)->type_name("R");
}

CLI::Option* Cli::add_traced_command(CLI::App* app, std::vector<std::string>* command,
                                     bool without_dashes) {
  Command& c = commands_[app];
  c.traced = command;
  c.traced_without_dashes = without_dashes;
  // Shown in the usage line and the help; run() fills *command itself.
  return app->add_option("CMD", no_command_, "the command to run, and its arguments, after --")
      ->type_name("");
}

Cli::Cli() {
  app_ = std::make_unique<CLI::App>(
      "fabtrace traces libfabric traffic: every data-path op paired with its completion and "
      "timed per link and NIC (the preload, no root needed), and what the kernel did meanwhile "
      "(fabtrace record, as root).",
      "fabtrace");
  app_->formatter(std::make_shared<Formatter>());
  app_->set_help_flag("-h,--help", "print this help and exit");
  app_->allow_extras();  // an unknown command gets fabtrace's own message (run())
}

void Cli::set_work(CLI::App* app, std::function<int()> work) {
  commands_[app].work = std::move(work);
}

void Cli::require(CLI::Option* positional) {
  positional->type_name("");  // "DIR", not "DIR TEXT"
  required_.push_back(positional);
}

void Cli::add_help_command() {
  CLI::App* h = add_command(*app_, "help", "print the help of fabtrace or of one command",
                            [this] { return this->help(); });
  h->add_option("CMD", help_of_, "the command (e.g. record, or export ops)");
}

int Cli::help() const {
  const CLI::App* cur = app_.get();
  for (const std::string& n : help_of_) {
    cur = subcommand_named(cur, n);
    if (!cur) {
      std::fprintf(stderr, "fabtrace help: unknown command '%s' (fabtrace --help)\n", n.c_str());
      return kUsageError;
    }
  }
  std::fputs(cur->help(cur->get_parent() ? full_name(cur->get_parent()) : "").c_str(), stdout);
  return 0;
}

int Cli::run(const std::vector<std::string>& in) {
  std::vector<std::string> args = in;
  split_traced_command(&args);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11's order
  CLI::App& app = *app_;
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    const CLI::App* g = given(app);
    std::fputs(g->help(g->get_parent() ? full_name(g->get_parent()) : "").c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s\n", error_line(*given(app), e).c_str());
    return kUsageError;
  }
  CLI::App* g = given(app);
  if (!g->remaining().empty()) {
    const std::string first = g->remaining().front();
    const bool option = first.size() > 1 && first[0] == '-';
    const bool has_commands = !g->get_subcommands({}).empty();
    const std::string what = option         ? "unknown option " + first
                             : has_commands ? "unknown command '" + first + "'"
                                            : "unexpected argument '" + first + "'";
    std::fprintf(stderr, "%s: %s (%s --help)\n", full_name(g).c_str(), what.c_str(),
                 full_name(g).c_str());
    return kUsageError;
  }
  if (!no_command_.empty()) {  // a bare word where only `-- CMD` may stand
    std::fprintf(stderr, "%s: unexpected argument '%s' (%s --help)\n", full_name(g).c_str(),
                 no_command_.front().c_str(), full_name(g).c_str());
    return kUsageError;
  }
  for (const CLI::Option* o : g->get_options())
    if (o->count() == 0 && std::find(required_.begin(), required_.end(), o) != required_.end()) {
      std::fprintf(stderr, "%s: %s is required (%s --help)\n", full_name(g).c_str(),
                   o->get_name().c_str(), full_name(g).c_str());
      return kUsageError;
    }
  const auto it = commands_.find(g);
  if (it == commands_.end() || !it->second.work) {
    // A command of commands (export) given alone.
    std::string names;
    for (const CLI::App* s : g->get_subcommands({}))
      names += (names.empty() ? "" : ", ") + s->get_name();
    std::fprintf(stderr, "%s: one of its commands is needed: %s (%s --help)\n",
                 full_name(g).c_str(), names.c_str(), full_name(g).c_str());
    return kUsageError;
  }
  const int rc = it->second.work();
  if (g == &app && rc == kUsageError) std::fputs(app.help().c_str(), stderr);  // fabtrace alone
  return rc;
}

int Cli::run(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return run(args);
}

}  // namespace cli
}  // namespace fabtrace

// fabtrace-docgen: the parts of fabtrace's documentation that its option
// declarations already say (userspace/cli/cli.h), generated at build time so
// that the man pages, the bash completion and `--help` cannot drift apart.
//
//   fabtrace-docgen man SRC OUT   copies the man page source SRC (markdown,
//                                 docs/man) to OUT with each line
//                                 "<!-- options: CMD -->" replaced by CMD's
//                                 options and "<!-- commands -->" by the list
//                                 of commands, as pandoc markdown
//   fabtrace-docgen completion OUT  the bash completion of fabtrace
//   fabtrace-docgen commands      every command, one per line (for the tests)
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "userspace/cli/cli.h"

namespace {

using fabtrace::cli::Cli;

// Pandoc markdown takes any ASCII punctuation escaped as itself.
std::string md(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if ((c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') ||
        (c >= '{' && c <= '~'))
      out += '\\';
    out += c;
  }
  return out;
}

const CLI::App* find_command(const CLI::App* app, const std::string& path) {
  std::istringstream in(path);
  std::string name;
  while (in >> name) {
    const CLI::App* next = nullptr;
    for (const CLI::App* s : const_cast<CLI::App*>(app)->get_subcommands({}))
      if (s->get_name() == name) next = s;
    if (!next) return nullptr;
    app = next;
  }
  return app;
}

// "-o, --dir DIR" as the help writes it, in bold and italics.
std::string option_term(const CLI::Option* o) {
  std::string t;
  for (const std::string& s : o->get_snames())
    t += (t.empty() ? "" : ", ") + ("**-" + md(s) + "**");
  for (const std::string& l : o->get_lnames())
    t += (t.empty() ? "" : ", ") + ("**--" + md(l) + "**");
  if (o->get_positional()) t = "*" + md(o->get_name()) + "*";
  const std::string type = o->get_type_name();
  if (!o->get_positional() && o->get_type_size() > 0 && !type.empty()) t += " *" + md(type) + "*";
  return t;
}

std::string options_md(const CLI::App* app) {
  std::string out;
  for (const CLI::Option* o : app->get_options()) {
    out += option_term(o) + "\n:   " + md(o->get_description()) + "\n\n";
  }
  return out;
}

std::string commands_md(const CLI::App* app, const std::string& prefix) {
  std::string out;
  for (const CLI::App* s : const_cast<CLI::App*>(app)->get_subcommands({})) {
    const std::string name = prefix.empty() ? s->get_name() : prefix + " " + s->get_name();
    out += "**" + md(name) + "**\n:   " + md(s->get_description()) + "\n\n";
  }
  return out;
}

int man(const std::string& src, const std::string& dst) {
  Cli cli;
  declare_fabtrace(cli);
  std::ifstream in(src);
  if (!in) {
    std::cerr << "fabtrace-docgen: cannot read " << src << "\n";
    return 1;
  }
  std::ostringstream out;
  std::string line;
  const std::string kOptions = "<!-- options:", kCommands = "<!-- commands -->";
  while (std::getline(in, line)) {
    if (line.rfind(kOptions, 0) == 0 && line.size() >= kOptions.size() + 3 &&
        line.compare(line.size() - 3, 3, "-->") == 0) {
      // "<!-- options: export ops -->": the words between.
      const std::string path = line.substr(kOptions.size(), line.size() - 3 - kOptions.size());
      const CLI::App* app = find_command(&cli.app(), path);
      if (!app) {
        std::cerr << "fabtrace-docgen: " << src << ": no command '" << path << "'\n";
        return 1;
      }
      out << options_md(app);
    } else if (line == kCommands) {
      out << commands_md(&cli.app(), "");
    } else {
      out << line << "\n";
    }
  }
  std::ofstream f(dst);
  f << out.str();
  return f.good() ? 0 : 1;
}

// Words of a bash `case` pattern: "run --dir" -> "run --dir" quoted.
std::string q(const std::string& s) { return "\"" + s + "\""; }

void completion_of(const CLI::App* app, const std::string& path, std::ostringstream& words,
                   std::ostringstream& values, std::vector<std::string>* paths) {
  std::string w;
  for (const CLI::App* s : const_cast<CLI::App*>(app)->get_subcommands({}))
    w += (w.empty() ? "" : " ") + s->get_name();
  for (const CLI::Option* o : app->get_options()) {
    if (o->get_positional()) continue;
    std::vector<std::string> names;
    for (const std::string& s : o->get_snames()) names.push_back("-" + s);
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
    for (const std::string& n : names) {
      w += " " + n;
      if (o->get_type_size() > 0) {
        const std::string t = o->get_type_name();
        // Directories, file names, or values only the user knows.
        const char* what = t == "DIR" || t == "OUTDIR" ? "dirs"
                           : t == "FILE" || t == "OUT" ? "files"
                                                       : "none";
        values << "        " << q(path + " " + n) << ") _fabtrace_values=" << what << " ;;\n";
      }
    }
  }
  words << "        " << q(path) << ") _fabtrace_words=" << q(w) << " ;;\n";
  paths->push_back(path);
  for (const CLI::App* s : const_cast<CLI::App*>(app)->get_subcommands({}))
    completion_of(s, path.empty() ? s->get_name() : path + " " + s->get_name(), words, values,
                  paths);
}

int completion(const std::string& dst) {
  Cli cli;
  declare_fabtrace(cli);
  std::ostringstream words, values;
  std::vector<std::string> paths;
  completion_of(&cli.app(), "", words, values, &paths);
  std::string path_case;
  for (const std::string& p : paths)
    if (!p.empty()) path_case += (path_case.empty() ? "" : "|") + q(p);
  std::ostringstream s;
  s << "# bash completion of fabtrace: generated at build time by fabtrace-docgen from\n"
       "# fabtrace's own option declarations (userspace/cli/cli.h).\n"
       "_fabtrace()\n{\n"
       "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
       "    local path=\"\" i w _fabtrace_words=\"\" _fabtrace_values=\"\"\n"
       "    COMPREPLY=()\n"
       "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
       "        w=${COMP_WORDS[i]}\n"
       "        if [[ $w == -- ]]; then\n"
       "            # the traced command: a program, then its arguments (bash's own)\n"
       "            ((i == COMP_CWORD - 1)) && COMPREPLY=($(compgen -c -- \"$cur\"))\n"
       "            return\n"
       "        fi\n"
       "        local next=${path:+$path }$w\n"
       "        case \"$next\" in\n"
       "        "
    << path_case
    << ") path=$next ;;\n"
       "        esac\n"
       "    done\n"
       "    case \"${path:+$path }$prev\" in\n"
    << values.str()
    << "    esac\n"
       "    case $_fabtrace_values in\n"
       "    dirs) COMPREPLY=($(compgen -d -- \"$cur\")); return ;;\n"
       "    files) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n"
       "    none) return ;;\n"
       "    esac\n"
       "    case \"$path\" in\n"
    << words.str()
    << "    esac\n"
       "    if [[ $cur == -* ]]; then\n"
       "        COMPREPLY=($(compgen -W \"$_fabtrace_words\" -- \"$cur\"))\n"
       "    else\n"
       "        local cmds=\"\" x\n"
       "        for x in $_fabtrace_words; do [[ $x == -* ]] || cmds+=\" $x\"; done\n"
       "        if [[ -n $cmds ]]; then\n"
       "            COMPREPLY=($(compgen -W \"$cmds\" -- \"$cur\"))\n"
       "        else\n"
       "            COMPREPLY=($(compgen -f -- \"$cur\"))\n"
       "        fi\n"
       "    fi\n"
       "}\n"
       "complete -o filenames -F _fabtrace fabtrace\n";
  std::ofstream f(dst);
  f << s.str();
  return f.good() ? 0 : 1;
}

void list_commands(const CLI::App* app, const std::string& path) {
  for (const CLI::App* s : const_cast<CLI::App*>(app)->get_subcommands({})) {
    const std::string p = path.empty() ? s->get_name() : path + " " + s->get_name();
    std::cout << p << "\n";
    list_commands(s, p);
  }
}

// Every command ("run", "export ops", ...), one per line: what the tests
// try --help and an unknown flag on.
int commands() {
  Cli cli;
  declare_fabtrace(cli);
  list_commands(&cli.app(), "");
  return std::cout.good() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> a(argv + 1, argv + argc);
  if (a.size() == 3 && a[0] == "man") return man(a[1], a[2]);
  if (a.size() == 2 && a[0] == "completion") return completion(a[1]);
  if (a.size() == 1 && a[0] == "commands") return commands();
  std::cerr << "usage: fabtrace-docgen man SRC OUT | completion OUT | commands\n";
  return 2;
}

// cli::make_app / cli::parse (cli_app.h): the CLI11 setup shared by every command, the mapping of
// help and parse errors to exit codes, and the nearest-name suggestion for an unknown flag or
// subcommand.
#include "cli_app.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <set>
#include <sstream>

namespace olmo::cli {

const char* exit_code_table() {
  return "  0  ok\n"
         "  1  error: bad input or a runtime failure (the message names the file or key)\n"
         "  2  usage error: unknown command or flag, missing or malformed argument\n"
         "  3  findings: olmo audit found problems, olmo compare is out of tolerance, olmo\n"
         "     verify found a step that does not reproduce\n"
         "  4  preempted (train, launch): a checkpoint of the stop step was written; the same\n"
         "     command resumes from it\n";
}

namespace {

constexpr size_t kHelpWidth = 100;  // columns of the generated help

// text with its lines broken at spaces to at most `width` columns ('\n' kept).
std::string wrap(const std::string& text, size_t width) {
  std::string out;
  size_t col = 0;
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '\n') {
      out += '\n', col = 0, ++i;
      continue;
    }
    size_t j = text.find_first_of(" \n", i);
    if (j == std::string::npos) j = text.size();
    const std::string word = text.substr(i, j - i);
    if (col > 0 && col + 1 + word.size() > width) out += '\n', col = 0;
    else if (col > 0) out += ' ', ++col;
    out += word, col += word.size();
    i = j < text.size() && text[j] == ' ' ? j + 1 : j;
  }
  return out;
}

// CLI11's help (2.1 does not wrap) with descriptions and footers wrapped to kHelpWidth.
class WrapFormatter : public CLI::Formatter {
 public:
  std::string make_description(const CLI::App* app) const override {
    return wrap(CLI::Formatter::make_description(app), kHelpWidth);
  }
  std::string make_footer(const CLI::App* app) const override {
    return wrap(CLI::Formatter::make_footer(app), kHelpWidth);
  }
  std::string make_option_desc(const CLI::Option* opt) const override {
    return wrap(CLI::Formatter::make_option_desc(opt), kHelpWidth - get_column_width());
  }
  std::string make_subcommand(const CLI::App* sub) const override {
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true),
                             wrap(sub->get_description(), kHelpWidth - get_column_width()),
                             get_column_width());
    return out.str();
  }
};

// "' x' is not a number" / "must be > 0, got x" / "" (valid) for a flag's value.
std::string check_number(const std::string& v, bool zero_ok) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(x))
    return "'" + v + "' is not a number";
  if (x < 0 || (x == 0 && !zero_ok)) return std::string("must be ") + (zero_ok ? ">= 0" : "> 0") +
                                             ", got " + v;
  return "";
}

}  // namespace

CLI::Validator positive() {
  return CLI::Validator([](std::string& v) { return check_number(v, false); }, "POSITIVE");
}

CLI::Validator non_negative() {
  return CLI::Validator([](std::string& v) { return check_number(v, true); }, "NONNEGATIVE");
}

std::unique_ptr<CLI::App> make_app(const std::string& name, const std::string& description) {
  auto app = std::make_unique<CLI::App>(description, "olmo " + name);
  app->option_defaults()->always_capture_default()->multi_option_policy(
      CLI::MultiOptionPolicy::TakeLast);
  auto fmt = std::make_shared<WrapFormatter>();
  fmt->column_width(32);
  app->formatter(fmt);
  app->fallthrough();  // subcommands see the command's own flags (--parse-only, --help)
  app->add_flag("--parse-only")
      ->description("check the command line, print the parsed values, run nothing")
      ->group("");  // hidden: for tests/cli (the documented command lines)
  return app;
}

namespace {

// Optimal string alignment distance (Levenshtein plus adjacent swaps).
size_t edit_distance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i)
    for (size_t j = 1; j <= m; ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
                          d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

// The flags an App (and the subcommands in `subs`) declares: "--name", "-n".
struct Names {
  std::set<std::string> flags;        // every flag
  std::set<std::string> value_flags;  // those that take a value
};

// CLI11 keeps an option group (add_option_group) as a subcommand without a name.
bool is_option_group(const CLI::App* a) { return a->get_name().empty(); }
bool is_subcommand(const CLI::App* a) { return !is_option_group(a); }

// The names of app's real subcommands (its option groups left out).
std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::App* s : app.get_subcommands(is_subcommand))
    out.push_back(s->get_name());
  return out;
}

// The flags of app, its option groups included.
void add_names(const CLI::App& app, Names& n) {
  for (const CLI::Option* o : app.get_options()) {
    if (!o->nonpositional()) continue;
    for (const std::string& l : o->get_lnames()) {
      n.flags.insert("--" + l);
      if (o->get_type_size() > 0) n.value_flags.insert("--" + l);
    }
    for (const std::string& s : o->get_snames()) n.flags.insert("-" + s);
  }
  for (const CLI::App* g : app.get_subcommands(is_option_group)) add_names(*g, n);
}

// All flags of app and of every subcommand below it (parsed or not).
void add_names_recursive(const CLI::App& app, Names& n) {
  add_names(app, n);
  for (const CLI::App* s : app.get_subcommands(is_subcommand))
    add_names_recursive(*s, n);
}

// "--out=x" -> "--out"; "x" -> "x".
std::string flag_name(const std::string& arg) { return arg.substr(0, arg.find('=')); }

bool is_number(const std::string& s) {
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size();
}

// `--opt VALUE` where VALUE starts with '-' and is not one of the command's flags becomes
// `--opt=VALUE`, so CLI11 takes it as the value (the old parser's rule; --mpi-args '--mca ..').
void join_dash_values(const Names& n, std::vector<std::string>& args) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--") break;
    const std::string& next = args[i + 1];
    if (!n.value_flags.count(args[i]) || next.empty() || next[0] != '-' || next == "--" ||
        is_number(next) || n.flags.count(flag_name(next)))
      continue;
    args[i] += "=" + next;
    args.erase(args.begin() + std::ptrdiff_t(i) + 1);
  }
}

// The chain of selected subcommands below app, deepest last.
std::vector<const CLI::App*> selected_chain(const CLI::App& app) {
  std::vector<const CLI::App*> chain{&app};
  while (!chain.back()->get_subcommands().empty())
    chain.push_back(chain.back()->get_subcommands()[0]);
  return chain;
}

// "olmo data batches" for the deepest selected subcommand.
std::string full_name(const std::vector<const CLI::App*>& chain) {
  std::string s = chain[0]->get_name();
  for (size_t i = 1; i < chain.size(); ++i) s += " " + chain[i]->get_name();
  return s;
}

// One line per argument CLI11 could not place: an unknown flag with the nearest known one, an
// unknown subcommand with the nearest one, or an unexpected positional argument.
std::string describe_extras(const CLI::App& app, const std::vector<const CLI::App*>& chain) {
  Names n;
  for (const CLI::App* a : chain) add_names(*a, n);
  const CLI::App& last = *chain.back();
  const std::vector<std::string> subs = subcommand_names(last);
  std::vector<std::string> parts;
  bool unknown_sub = false;
  for (const std::string& arg : app.remaining(true)) {
    if (arg.size() > 1 && arg[0] == '-' && !is_number(arg)) {
      const std::string name = flag_name(arg);
      std::string near = nearest(name, {n.flags.begin(), n.flags.end()});
      if (near.empty() && name.rfind("--", 0) != 0)  // -dry-run for --dry-run
        near = nearest("-" + name, {n.flags.begin(), n.flags.end()});
      parts.push_back("unknown flag " + name +
                      (near.empty() ? "" : " (did you mean " + near + "?)"));
    } else if (unknown_sub) {
      continue;  // the arguments after an unknown subcommand were meant for it
    } else if (!subs.empty() && last.get_subcommands().empty()) {
      unknown_sub = true;
      const std::string near = nearest(arg, subs);
      parts.push_back("unknown subcommand '" + arg + "'" +
                      (near.empty() ? " (one of: " + CLI::detail::join(subs, ", ") + ")"
                                    : " (did you mean '" + near + "'?)"));
    } else {
      parts.push_back("unexpected argument '" + arg + "'");
    }
  }
  return CLI::detail::join(parts, "; ");
}

// CLI11's "Could not convert: --seq = abc" as "--seq: 'abc' is not a valid INT"; other
// messages unchanged.
std::string conversion_message(const std::vector<const CLI::App*>& chain, const std::string& msg) {
  const std::string prefix = "Could not convert: ";
  const size_t eq = msg.find(" = ");
  if (msg.rfind(prefix, 0) != 0 || eq == std::string::npos) return msg;
  const std::string name = msg.substr(prefix.size(), eq - prefix.size());
  const std::string value = msg.substr(eq + 3);
  for (const CLI::App* a : chain)
    if (const CLI::Option* o = a->get_option_no_throw(name))
      return name + ": '" + value + "' is not " +
             (o->get_type_name().empty() ? std::string("true or false (1 / 0, on / off)")
                                      : "a valid " + o->get_type_name());
  return msg;
}

// An empty vector's captured default "[]" is no default worth showing in the help.
void drop_empty_defaults(CLI::App& app) {
  for (CLI::Option* o : app.get_options())
    if (o->get_default_str() == "[]") o->default_str("");
  for (CLI::App* s : app.get_subcommands([](CLI::App*) { return true; })) drop_empty_defaults(*s);
}

}  // namespace

std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  // Within 1 edit for short words (x is not mix), max(2, |word| / 3) for longer ones.
  size_t best_d = (word.size() <= 4 ? 1 : std::max<size_t>(2, word.size() / 3)) + 1;
  for (const std::string& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_d) best_d = d, best = c;
  }
  if (best.empty())  // --tok for --tokenizer
    for (const std::string& c : candidates)
      if (word.size() >= 3 && c.rfind(word, 0) == 0) return c;
  return best;
}

void usage_error(const CLI::App& app, const std::string& msg) {
  const std::string name = full_name(selected_chain(app));
  std::fprintf(stderr, "%s: error: %s (see %s --help)\n", name.c_str(), msg.c_str(), name.c_str());
  throw Exit{kExitUsage};
}

void parse(CLI::App& app, int argc, char** argv) {
  drop_empty_defaults(app);
  if (argc <= 1) {
    std::fprintf(stderr, "%s", app.help().c_str());
    throw Exit{kExitUsage};
  }
  std::vector<std::string> args(argv + 1, argv + argc);
  Names all;
  add_names_recursive(app, all);
  join_dash_values(all, args);
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  try {
    app.parse(std::move(args));
  } catch (const CLI::CallForHelp&) {
    // A command with subcommands and none chosen (olmo data --help): every subcommand's options.
    const CLI::App& last = *selected_chain(app).back();
    const bool all = !subcommand_names(last).empty();
    std::printf("%s",
                app.help("", all ? CLI::AppFormatMode::All : CLI::AppFormatMode::Normal).c_str());
    throw Exit{kExitOk};
  } catch (const CLI::CallForAllHelp&) {
    std::printf("%s", app.help("", CLI::AppFormatMode::All).c_str());
    throw Exit{kExitOk};
  } catch (const CLI::ParseError& e) {
    const auto chain = selected_chain(app);
    // An unknown flag is named even when it also made a required argument look missing
    // (olmo audit --nosuch).
    std::string msg = !app.remaining(true).empty() ? describe_extras(app, chain)
                                                   : conversion_message(chain, e.what());
    if (msg == "A subcommand is required")
      msg = "a subcommand is required: " + CLI::detail::join(subcommand_names(*chain.back()), ", ");
    usage_error(app, msg);
  }
  if (app.get_option("--parse-only")->count()) {
    std::printf("%s: command line parsed (--parse-only), nothing run\n%s",
                full_name(selected_chain(app)).c_str(), app.config_to_str(true).c_str());
    throw Exit{kExitOk};
  }
}

}  // namespace olmo::cli

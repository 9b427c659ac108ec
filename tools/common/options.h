// One option parser for every tool (tempoctl, tempod, tempo-replay, tempo-sim): a table of
// options, one row each (long name, short name, value name, help), read by the parser and by
// the generated --help. GNU conventions: `--name value`, `--name=value`, `-x value`, `-xvalue`,
// bundled short flags (`-ah`), `--` ends the options. Every tool also gets `-h, --help` and
// `--version` (the library version). A usage error prints "<tool>: <message>" and exits 2.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tempo::cli {

struct Option {
  const char* long_name;
  char short_name;         // 0: none
  const char* value_name;  // nullptr: a flag
  const char* help;        // may hold '\n': continuation lines are indented under the first
  int id = 0;              // the caller's tag, for a switch over Args::given
};

// One option as given on the command line.
struct Given {
  const Option* option;
  std::string value;  // "" for a flag
};

struct Args {
  std::vector<Given> given;  // every option, in command-line order (repeats kept)
  std::vector<std::string> positional;
  bool has(std::string_view name) const;
  // The last value given to `name`, or `fallback`.
  std::string get(std::string_view name, const std::string& fallback = "") const;
  // Every value given to `name`, in order (a repeatable option).
  std::vector<std::string> all(std::string_view name) const;
};

// A program (or a subcommand: name "tempoctl stats") and its table.
struct Tool {
  const char* name;     // prefixes every message: "<name>: <message>"
  const char* usage;    // the synopsis after "usage: "
  const char* summary;  // a paragraph under it; nullptr: none
  std::span<const Option> options;
  bool positional = false;  // accepts operands (otherwise one is a usage error)
};

// Parses argv[0..argc) (no program name) against tool.options plus --help and --version.
// 0, or -EINVAL with *error naming the bad argument (unknown option, missing value, a value
// given to a flag, an operand where none is accepted).
int parse(const Tool& tool, int argc, char* const* argv, Args* out, std::string* error);

// What every tool's main does: parses; on --help prints the help to stdout (exit 0), on
// --version the version of the program (exit 0; "tempoctl" for "tempoctl stats"), on a usage error
// "<tool>: <message>" and a pointer to
// --help to stderr (exit 2). nullopt: go on with *out.
std::optional<int> parse_or_exit(const Tool& tool, int argc, char* const* argv, Args* out);

// The help generated from the table.
void print_help(const Tool& tool, std::FILE* to);
// "<program> (TempoKV) <library version>".
void print_version(const char* program);
// Prints "<tool>: <message>" to stderr; returns 2 (the usage-error exit status).
int usage_error(const char* tool, const std::string& message);

// Strict number syntax: the whole text, no sign for unsigned, no overflow, finite doubles.
bool parse_u64(std::string_view text, uint64_t* out);
bool parse_double(std::string_view text, double* out);

// The value of option `name` as a number in [min, max]: 0, or -EINVAL with *error
// "--name: 'text' is not a whole number" / "... is out of range [min, max]".
int to_u64(std::string_view name, std::string_view text, uint64_t min, uint64_t max, uint64_t* out,
           std::string* error);
int to_u32(std::string_view name, std::string_view text, uint32_t min, uint32_t max, uint32_t* out,
           std::string* error);
int to_double(std::string_view name, std::string_view text, double min, double max, double* out,
              std::string* error);

}  // namespace tempo::cli

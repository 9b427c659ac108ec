// tempoctl's shared plumbing: daxctl-style options (`-s, --socket=<path>`, `--json` on every
// subcommand), errors and output.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tempo::ctl {

using nlohmann::json;

struct OptionSpec {
  const char* long_name;
  char short_name;         // 0: none
  const char* value_name;  // nullptr: a flag
  const char* help;
};

struct Args {
  std::map<std::string, std::vector<std::string>> values;  // by long name; flags hold ""
  std::vector<std::string> positional;
  bool has(const std::string& name) const { return values.count(name) > 0; }
  std::string get(const std::string& name, const std::string& fallback = "") const;
  const std::vector<std::string>& all(const std::string& name) const;
  bool json() const { return has("json"); }
};

// A subcommand: its name, usage line, options (--json and --help are added) and body.
struct Command {
  const char* name;
  const char* usage;
  const char* summary;
  std::vector<OptionSpec> options;
  int (*run)(const Args& args);
};

// Parses argv (after the subcommand's name). 0, or 2 with `error` for usage errors.
int parse_args(const Command& cmd, int argc, char** argv, Args* out, std::string* error);
void print_usage(const Command& cmd);

// Prints "tempoctl <cmd>: <message>" to stderr and returns 1.
int fail(const char* cmd, const std::string& message);
// Prints the document (indented JSON) to stdout.
void print_json(const json& doc);
// 1.5 GiB, 512 KiB...
std::string human_bytes(double bytes);

// The claims table (or JSON with --json); a claim of the wrong shape throws json::exception.
int print_claims(const Args& args, const json& claims);
// tempoctl claims --daemon.
int daemon_claims(const Args& args);
// tempoctl stats --daemon: the document, or null with *status the failure's exit code.
json daemon_stats(const Args& args, int* status);

// Subcommands.
int cmd_list(const Args& args);
int cmd_stats(const Args& args);
int cmd_claims(const Args& args);
int cmd_store(const Args& args);
int cmd_calibrate(const Args& args);
int cmd_config(const Args& args);
int cmd_metrics(const Args& args);

}  // namespace tempo::ctl

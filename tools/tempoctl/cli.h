// tempoctl's shared plumbing: subcommands with daxctl-style options (`-s, --socket=<path>`,
// `--json` on every subcommand; parsed by tools/common/options.h), errors and output.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "options.h"

namespace tempo::ctl {

using nlohmann::json;

using cli::Args;

// A subcommand: its name, usage line, options (--json, --help and --version are added) and
// body.
struct Command {
  const char* name;
  const char* usage;
  const char* summary;
  std::vector<cli::Option> options;
  int (*run)(const Args& args);
  bool operands;  // takes operands (`store ls`, `config <key>`)
};

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

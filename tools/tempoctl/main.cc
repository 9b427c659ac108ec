// tempoctl: inspect and operate TempoKV from a shell. One program, daxctl-style subcommands,
// `--json` on every one (Documentation/tempoctl/).
#include <cstdio>
#include <cstring>
#include <string>

#include "cli.h"

namespace tempo::ctl {
namespace {

const Command kCommands[] = {
    {"list",
     "list [--store=<dir>]... [--config=<file>] [--json]",
     "Lists CXL memory devices and regions (libcxl), persistent-memory namespaces (libndctl),\n"
     "DAX devices (libdaxctl), tempo.ko devices (/dev/tempo*) and configured object stores.",
     {{"store", 'S', "dir", "an object store directory to include (repeatable)"},
      {"config", 'c', "file", "a configuration file: its uring.store_path is listed"}},
     cmd_list,
     false},
    {"stats",
     "stats (--socket=<path> | --daemon=<path> | --device=</dev/tempoN>) [--json] [--human]",
     "Live counters of a running libtempo instance (its control socket), of a tempod (its\n"
     "socket; JSON unless --human) or of a tempo.ko device (its STATS ioctl).",
     {{"socket", 's', "path", "the instance's control_socket"},
      {"daemon", 'D', "path", "a tempod's socket (daemon.socket)"},
      {"device", 'd', "path", "a tempo.ko character device, e.g. /dev/tempo0"},
      {"human", 'u', nullptr, "with --daemon: a table instead of JSON"}},
     cmd_stats,
     false},
    {"claims",
     "claims (--socket=<path> | --daemon=<path>) [--all] [--json]",
     "Current claims of a running libtempo instance: state, TTU, TTR, laxity; of a tempod,\n"
     "also the engine, client connection and engine request id each belongs to.",
     {{"socket", 's', "path", "the instance's control_socket"},
      {"daemon", 'D', "path", "a tempod's socket (daemon.socket)"},
      {"all", 'a', nullptr, "include ended claims (released, cancelled, ordinary, failed)"}},
     cmd_claims,
     false},
    {"store",
     "store (ls | verify | gc) (--store=<dir> | --daemon=<path>) [--json]",
     "Object store maintenance: list objects, verify every checksum, drop objects that\n"
     "fail verification and compact the catalog; a store at rest, or a tempod's live\n"
     "store through the daemon.",
     {{"store", 'S', "dir", "the object store directory"},
      {"daemon", 'D', "path", "a tempod's socket: its live store"},
      {"data", 0, "path", "the data file or block device if not <dir>/data"}},
     cmd_store,
     true},
    {"calibrate",
     "calibrate --store=<dir> [--output=<file>] [--fast-tier-bytes=<n>] [--objects=<n>]\n"
     "          [--object-bytes=<n>] [--queue-depth=<n>] [--json]",
     "Measures the uring device's staging rate and demand-read rate on a store and writes\n"
     "the calibration file libtempo starts from (calibration_file = <file>).",
     {{"store", 'S', "dir", "the object store directory"},
      {"output", 'o', "file", "where to write the calibration (default <dir>/calibration.conf)"},
      {"fast-tier-bytes", 0, "bytes", "fast tier (DRAM arena) size, default 256MiB"},
      {"objects", 'n', "n", "objects to measure with, default 32"},
      {"object-bytes", 0, "bytes",
       "size of test objects written when the store has too few, "
       "default 4MiB, at most 1GiB"},
      {"queue-depth", 0, "n", "reads in flight (1-4096), default 16"}},
     cmd_calibrate,
     false},
    {"config",
     "config [<key>] [--markdown] [--json]",
     "The settings libtempo reads (tempo_config_set, the configuration file, TEMPO_*):\n"
     "every key, or one, with its default and what it accepts.",
     {{"markdown", 0, nullptr, "the table as Documentation/configuration.md holds it"}},
     cmd_config,
     true},
    {"metrics",
     "metrics [--daemon=<path>] [--json]",
     "Prints a tempod's counters as a Prometheus text exposition (for a node-exporter\n"
     "textfile collector or a scrape wrapper); --json as one object.",
     {{"daemon", 'D', "path", "tempod's socket (default /run/tempo/tempod.sock)"}},
     cmd_metrics,
     false},
};

void usage(FILE* out) {
  std::fprintf(out, "usage: tempoctl <command> [<options>]\n\ncommands:\n");
  for (const Command& c : kCommands) {
    std::string first(c.summary);
    first = first.substr(0, first.find('\n'));
    std::fprintf(out, "    %-10s %s\n", c.name, first.c_str());
  }
  std::fprintf(out, "\n`tempoctl <command> --help` for its options; `tempoctl --version`.\n");
}

}  // namespace
}  // namespace tempo::ctl

int main(int argc, char** argv) {
  using namespace tempo::ctl;
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    tempo::cli::print_version("tempoctl");
    return 0;
  }
  for (const Command& c : kCommands) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    std::vector<tempo::cli::Option> options = c.options;
    options.push_back({"json", 0, nullptr, "print JSON instead of text"});
    const std::string name = std::string("tempoctl ") + c.name;
    const std::string synopsis = std::string("tempoctl ") + c.usage;
    const tempo::cli::Tool tool{name.c_str(), synopsis.c_str(), c.summary, options, c.operands};
    Args args;
    if (const auto exit = tempo::cli::parse_or_exit(tool, argc - 2, argv + 2, &args)) return *exit;
    return c.run(args);
  }
  std::fprintf(stderr, "tempoctl: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}

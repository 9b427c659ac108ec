#include "cli.h"

#include <cstdio>
#include <iostream>

namespace tempo::ctl {

std::string Args::get(const std::string& name, const std::string& fallback) const {
  auto it = values.find(name);
  return it == values.end() ? fallback : it->second.back();
}

const std::vector<std::string>& Args::all(const std::string& name) const {
  static const std::vector<std::string> kNone;
  auto it = values.find(name);
  return it == values.end() ? kNone : it->second;
}

namespace {

std::vector<OptionSpec> with_common(const Command& cmd) {
  std::vector<OptionSpec> all = cmd.options;
  all.push_back({"json", 0, nullptr, "print JSON instead of text"});
  all.push_back({"help", 'h', nullptr, "show this help"});
  return all;
}

}  // namespace

int parse_args(const Command& cmd, int argc, char** argv, Args* out, std::string* error) {
  const std::vector<OptionSpec> specs = with_common(cmd);
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a.size() < 2 || a[0] != '-') {
      out->positional.push_back(a);
      continue;
    }
    const OptionSpec* spec = nullptr;
    std::string value;
    bool inline_value = false;
    if (a.rfind("--", 0) == 0) {
      std::string name = a.substr(2);
      if (const size_t eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        inline_value = true;
      }
      for (const OptionSpec& s : specs)
        if (name == s.long_name) spec = &s;
    } else if (a.size() == 2) {
      for (const OptionSpec& s : specs)
        if (s.short_name == a[1]) spec = &s;
    }
    if (!spec) {
      *error = "unknown option '" + a + "' (see tempoctl " + cmd.name + " --help)";
      return 2;
    }
    if (spec->value_name && !inline_value) {
      if (i + 1 >= argc) {
        *error = "option '--" + std::string(spec->long_name) + "' needs a value <" +
                 spec->value_name + ">";
        return 2;
      }
      value = argv[++i];
    } else if (!spec->value_name && inline_value) {
      *error = "option '--" + std::string(spec->long_name) + "' takes no value";
      return 2;
    }
    out->values[spec->long_name].push_back(value);
  }
  return 0;
}

void print_usage(const Command& cmd) {
  std::printf("usage: tempoctl %s\n\n%s\n\n", cmd.usage, cmd.summary);
  for (const OptionSpec& s : with_common(cmd)) {
    std::string left = s.short_name ? std::string("-") + s.short_name + ", " : "    ";
    left += "--" + std::string(s.long_name);
    if (s.value_name) left += "=<" + std::string(s.value_name) + ">";
    std::printf("    %-30s %s\n", left.c_str(), s.help);
  }
}

int fail(const char* cmd, const std::string& message) {
  std::fprintf(stderr, "tempoctl %s: %s\n", cmd, message.c_str());
  return 1;
}

void print_json(const json& doc) { std::cout << doc.dump(2) << "\n"; }

std::string human_bytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.2f %s", bytes, kUnits[u]);
  return buf;
}

}  // namespace tempo::ctl

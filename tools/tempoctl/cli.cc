#include "cli.h"

#include <cstdio>
#include <iostream>

namespace tempo::ctl {

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

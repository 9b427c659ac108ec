// What the cluster read benchmarks (rados_tier_bench.cc, pool_staging_bench.cc) share: their
// arguments, CONF POOL write|read OBJECTS OBJECT_BYTES QUEUE_DEPTH [one more], the process's
// CPU time and the line they print.
#pragma once

#include <sys/resource.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace tempo::bench {

struct ReadBenchArgs {
  const char* conf = nullptr;
  const char* pool = nullptr;
  bool write = false;
  uint64_t objects = 0;
  size_t bytes = 0;
  size_t depth = 0;
  const char* extra = nullptr;  // the argument `extra_name` names, if any
};

// Parses argv; false (usage printed) when they are not well formed.
inline bool parse_read_bench(int argc, char** argv, const char* extra_name, ReadBenchArgs* a) {
  const int want = extra_name ? 8 : 7;
  if (argc == want) {
    const std::string mode = argv[3];
    a->conf = argv[1];
    a->pool = argv[2];
    a->write = mode == "write";
    a->objects = std::strtoull(argv[4], nullptr, 10);
    a->bytes = std::strtoull(argv[5], nullptr, 10);
    a->depth = std::strtoull(argv[6], nullptr, 10);
    a->extra = extra_name ? argv[7] : nullptr;
    if (a->objects && a->bytes && a->depth && (a->write || mode == "read")) return true;
  }
  std::fprintf(stderr, "usage: %s CONF POOL write|read OBJECTS OBJECT_BYTES QUEUE_DEPTH %s\n",
               argv[0], extra_name ? extra_name : "");
  return false;
}

inline double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// The result line (MiB, as `rados bench` counts): read_MiBps=... cpu_s_per_GiB=... objects=...
// errors=...
inline void print_read(uint64_t objects, size_t bytes, double seconds, double cpu_seconds,
                       uint64_t errors) {
  const double mib = static_cast<double>(objects * bytes) / (1 << 20);
  std::printf("read_MiBps=%.1f cpu_s_per_GiB=%.4f objects=%llu errors=%llu\n", mib / seconds,
              cpu_seconds / (mib / 1024), static_cast<unsigned long long>(objects),
              static_cast<unsigned long long>(errors));
}

}  // namespace tempo::bench

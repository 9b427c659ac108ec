// Read bandwidth and CPU of the RADOS cluster tier, for the side-by-side comparison with
// `rados bench seq` in scripts/bench/cluster_bench.sh. Usage:
//   bench_rados_tier CONF POOL write|read OBJECTS OBJECT_BYTES QUEUE_DEPTH
// `write` stores OBJECTS objects under the prefix "bench/"; `read` reads them all, keeping
// QUEUE_DEPTH reads in flight, into one buffer per slot, and prints one line:
//   read_MBps=... cpu_s_per_GB=... objects=... errors=...
#include <poll.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cluster/rados_tier.h"

namespace {

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s CONF POOL write|read OBJECTS OBJECT_BYTES QUEUE_DEPTH\n",
                 argv[0]);
    return 2;
  }
  tempo::RadosTierOptions o;
  o.conf_path = argv[1];
  o.pool = argv[2];
  o.prefix = "bench/";
  o.op_timeout_s = 30;
  const std::string mode = argv[3];
  const uint64_t objects = std::strtoull(argv[4], nullptr, 10);
  const size_t bytes = std::strtoull(argv[5], nullptr, 10);
  const size_t depth = std::strtoull(argv[6], nullptr, 10);
  if (objects == 0 || bytes == 0 || depth == 0 || (mode != "write" && mode != "read")) {
    std::fprintf(stderr, "%s: bad arguments\n", argv[0]);
    return 2;
  }
  std::unique_ptr<tempo::RadosTier> tier;
  std::string error;
  if (int r = tempo::RadosTier::open(o, &tier, &error); r < 0) {
    std::fprintf(stderr, "%s: %s\n", argv[0], error.c_str());
    return 1;
  }
  if (mode == "write") {
    std::vector<std::byte> data(bytes);
    for (uint64_t k = 0; k < objects; k++) {
      for (size_t i = 0; i < bytes; i += 4096) data[i] = static_cast<std::byte>(k + i);
      tier->put_async(k, data);
      if (k % depth == depth - 1 && tier->flush(tempo::kNever) < 0) return 1;
    }
    return tier->flush(tempo::kNever) < 0 ? 1 : 0;
  }
  std::vector<std::vector<std::byte>> slots(depth, std::vector<std::byte>(bytes));
  std::vector<size_t> free_slots;
  for (size_t s = 0; s < depth; s++) free_slots.push_back(s);
  std::vector<tempo::ClusterRead> done;
  uint64_t next = 0, completed = 0, errors = 0;
  const double cpu0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  while (completed < objects) {
    while (next < objects && !free_slots.empty()) {
      const size_t s = free_slots.back();
      free_slots.pop_back();
      tier->read_async(next++, slots[s], s);
    }
    pollfd p{tier->completion_fd(), POLLIN, 0};
    poll(&p, 1, 1000);
    done.clear();
    tier->reap(&done);
    for (const auto& d : done) {
      completed++;
      if (d.status < 0) errors++;
      free_slots.push_back(d.tag);
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double gb = static_cast<double>(objects * bytes) / 1e9;
  std::printf("read_MBps=%.1f cpu_s_per_GB=%.4f objects=%llu errors=%llu\n", gb * 1e3 / secs,
              (cpu_seconds() - cpu0) / gb, static_cast<unsigned long long>(objects),
              static_cast<unsigned long long>(errors));
  return errors ? 1 : 0;
}

// Read bandwidth and CPU of the RADOS cluster tier, for the side-by-side comparison with
// `rados bench seq` in scripts/bench/cluster_bench.sh. Usage:
//   bench_rados_tier CONF POOL write|read OBJECTS OBJECT_BYTES QUEUE_DEPTH
// `write` stores OBJECTS objects under the prefix "bench/"; `read` reads them all, keeping
// QUEUE_DEPTH reads in flight, into one buffer per slot, and prints one line:
//   read_MiBps=... cpu_s_per_GiB=... objects=... errors=...   (MiB, as `rados bench` counts)
#include <poll.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "cluster/rados_tier.h"
#include "read_bench.h"

int main(int argc, char** argv) {
  tempo::bench::ReadBenchArgs a;
  if (!tempo::bench::parse_read_bench(argc, argv, nullptr, &a)) return 2;
  tempo::RadosTierOptions o;
  o.conf_path = a.conf;
  o.pool = a.pool;
  o.prefix = "bench/";
  o.op_timeout_s = 30;
  const uint64_t objects = a.objects;
  const size_t bytes = a.bytes;
  const size_t depth = a.depth;
  std::unique_ptr<tempo::RadosTier> tier;
  std::string error;
  if (int r = tempo::RadosTier::open(o, &tier, &error); r < 0) {
    std::fprintf(stderr, "%s: %s\n", argv[0], error.c_str());
    return 1;
  }
  if (a.write) {
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
  const double cpu0 = tempo::bench::cpu_seconds();
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
  tempo::bench::print_read(objects, bytes, secs, tempo::bench::cpu_seconds() - cpu0, errors);
  return errors ? 1 : 0;
}

// Staging from the pool through the uring device, through the C ABI (an in-process context
// with cluster.backend = rados), for the side-by-side comparison with `rados bench seq` in
// scripts/bench/cluster_bench.sh. Usage:
//   bench_pool_staging CONF POOL write|read OBJECTS OBJECT_BYTES QUEUE_DEPTH DIR
// `write` saves OBJECTS objects (keys 1..OBJECTS) through a context on the store DIR/writer,
// written through to the pool under the prefix "bench/staging/", and waits for the pool;
// `read` opens a context on an empty store under DIR (every object is a local miss the pool
// holds) and stages them all, one claim per object, QUEUE_DEPTH claims reported and asked for
// ahead of the one waited for; each ready claim is transferred (its extents taken) and
// released. It prints one line (MiB, as `rados bench` counts):
//   read_MiBps=... cpu_s_per_GiB=... objects=... errors=...
// CPU is the process's user + system time over the reads: the device, the controller and
// librados' threads, checksum verification included.
#include <stdlib.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <string>
#include <vector>

#include "read_bench.h"
#include "tempo/tempo.h"

namespace {

// A uring context on `store` over the pool, fast tier for 2 x depth objects. nullptr on error.
tempo_ctx* open(const char* conf, const char* pool, const std::string& store, size_t bytes,
                size_t depth) {
  tempo_config* cfg = nullptr;
  if (tempo_config_new(&cfg) != 0) return nullptr;
  const std::string fast = std::to_string(2 * depth * bytes);
  const std::string budget = std::to_string((2 * depth - 1) * bytes);
  const char* kv[][2] = {{"device", "uring"},
                         {"uring.store_path", store.c_str()},
                         {"fast_tier_bytes", fast.c_str()},
                         {"budget_bytes", budget.c_str()},
                         {"policy", "immediate"},
                         {"uring.huge_pages", "false"},
                         {"cluster.backend", "rados"},
                         {"cluster.conf", conf},
                         {"cluster.pool", pool},
                         {"cluster.prefix", "bench/staging/"},
                         {"cluster.op_timeout_s", "30"}};
  tempo_ctx* ctx = nullptr;
  for (const auto& [k, v] : kv) {
    if (tempo_config_set(cfg, k, v) != 0) {
      std::fprintf(stderr, "bench_pool_staging: %s\n", tempo_config_error(cfg));
      tempo_config_free(cfg);
      return nullptr;
    }
  }
  if (const int r = tempo_ctx_new(cfg, &ctx); r != 0)
    std::fprintf(stderr, "bench_pool_staging: %s (%d)\n", tempo_config_error(cfg), r);
  tempo_config_free(cfg);
  return ctx;
}

int write(const char* conf, const char* pool, const std::string& dir, uint64_t objects,
          size_t bytes) {
  tempo_ctx* ctx = open(conf, pool, dir + "/writer", bytes, 1);
  if (!ctx) return 1;
  std::vector<unsigned char> data(bytes);
  for (uint64_t k = 1; k <= objects; k++) {
    for (size_t i = 0; i < bytes; i += 4096) data[i] = static_cast<unsigned char>(k + i);
    if (const int r = tempo_store_put(ctx, k, data.data(), data.size()); r != 0) {
      std::fprintf(stderr, "bench_pool_staging: put %llu: %d\n", static_cast<unsigned long long>(k),
                   r);
      tempo_ctx_unref(ctx);
      return 1;
    }
  }
  tempo_ctx_unref(ctx);  // waits for the write-throughs
  std::filesystem::remove_all(dir + "/writer");
  return 0;
}

// Stages claim `id` to readiness, takes its extents and releases it: 0 or the error.
int take(tempo_ctx* ctx, tempo_claim_id id, std::vector<tempo_extent>* ext) {
  int outcome = -1;
  if (const int r = tempo_claim_wait_ready(ctx, id, 60'000'000'000, &outcome); r != 0) return r;
  if (outcome != TEMPO_RETRIEVAL_READY) return -EIO;
  if (const int r = tempo_claim_transfer_begin(ctx, id); r != 0) return r;
  size_t count = 0;
  const int r = tempo_claim_extents(ctx, id, ext->data(), ext->size(), &count);
  tempo_claim_transfer_end(ctx, id);
  return r;
}

int read(const char* conf, const char* pool, const std::string& dir, uint64_t objects, size_t bytes,
         size_t depth) {
  const std::string store = dir + "/reader-XXXXXX";
  std::vector<char> tmpl(store.begin(), store.end());
  tmpl.push_back('\0');
  if (!mkdtemp(tmpl.data())) return 1;
  tempo_ctx* ctx = open(conf, pool, tmpl.data(), bytes, depth);
  if (!ctx) return 1;
  std::vector<tempo_extent> ext(bytes / 4096 + 2);
  std::deque<tempo_claim_id> ahead;
  uint64_t next = 1, errors = 0;
  const double cpu0 = tempo::bench::cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  while (next <= objects || !ahead.empty()) {
    while (next <= objects && ahead.size() < depth) {
      const tempo_object o{next++, bytes};
      tempo_claim_id id = 0;
      int outcome = 0;
      if (tempo_claim_report(ctx, &o, 1, 0, &id) != 0 ||
          tempo_claim_request_retrieval(ctx, id, &outcome) != 0) {
        errors++;
        continue;
      }
      ahead.push_back(id);
    }
    if (ahead.empty()) continue;
    if (take(ctx, ahead.front(), &ext) != 0) errors++;
    ahead.pop_front();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = tempo::bench::cpu_seconds() - cpu0;
  tempo_stats s{};
  tempo_ctx_stats(ctx, &s);
  tempo_ctx_unref(ctx);
  std::filesystem::remove_all(tmpl.data());
  if (s.staged_bytes != objects * bytes) errors++;
  tempo::bench::print_read(objects, bytes, secs, cpu, errors);
  return errors ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  tempo::bench::ReadBenchArgs a;
  if (!tempo::bench::parse_read_bench(argc, argv, "DIR", &a)) return 2;
  return a.write ? write(a.conf, a.pool, a.extra, a.objects, a.bytes)
                 : read(a.conf, a.pool, a.extra, a.objects, a.bytes, a.depth);
}

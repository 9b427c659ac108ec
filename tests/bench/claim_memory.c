/* claim_memory: resident memory of a libtempo context under claim churn, through the C ABI
 * as an engine links it. A sim context (nothing staged: TTUs an hour out) reports claims of
 * 4 objects and cancels the oldest whenever LIVE claims are live, for CYCLES report+cancel
 * cycles. Every STEP cycles it writes a CSV row: cycles, the process's VmRSS in KiB, claims
 * reported, claims live. Ended claims must not accumulate: RSS after CYCLES stays within
 * 16 MiB of RSS after the first 100,000 (Documentation/performance.md).
 *
 * Usage: claim_memory [CYCLES [LIVE [STEP]]]   (defaults 10000000 1000 100000) > out.csv
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tempo/tempo.h>
#include <tempo/tempo_sim.h>

static long rss_kib(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmRSS:", 6) == 0) kib = strtol(line + 6, NULL, 10);
  if (f) fclose(f);
  return kib;
}

static int check(int r, const char* what) {
  if (r != 0) fprintf(stderr, "claim_memory: %s: %d\n", what, r);
  return r;
}

int main(int argc, char** argv) {
  const uint64_t cycles = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000ull;
  const uint64_t live = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000;
  const uint64_t step = argc > 3 ? strtoull(argv[3], NULL, 10) : 100000;
  if (cycles == 0 || live == 0 || step == 0) {
    fprintf(stderr, "usage: claim_memory [CYCLES [LIVE [STEP]]], all positive\n");
    return 2;
  }
  struct tempo_config* cfg = NULL;
  struct tempo_ctx* ctx = NULL;
  if (check(tempo_config_new(&cfg), "config") || check(tempo_config_load(cfg, NULL), "load") ||
      check(tempo_config_set(cfg, "device", "sim"), "device") ||
      check(tempo_ctx_new(cfg, &ctx), tempo_config_error(cfg)))
    return 1;
  tempo_config_free(cfg);
  struct tempo_object objects[64];
  for (uint64_t k = 0; k < 64; ++k) objects[k] = (struct tempo_object){k + 1, 1u << 20};
  if (check(tempo_sim_add_objects(ctx, objects, 64), "objects")) return 1;

  tempo_claim_id* ring = calloc(live, sizeof *ring);
  if (!ring) return 1;
  printf("cycles,rss_kib,reported,live\n");
  uint64_t head = 0, held = 0;
  for (uint64_t i = 1; i <= cycles; ++i) {
    tempo_claim_id id = 0;
    if (check(tempo_claim_report(ctx, &objects[i % 61], 4, 3600000000000ll, &id), "report"))
      return 1;
    if (held == live) {
      if (check(tempo_claim_cancel(ctx, ring[head]), "cancel")) return 1;
      --held;
    }
    ring[head] = id;
    head = (head + 1) % live;
    ++held;
    if (i % step == 0 || i == cycles) {
      struct tempo_counters s;
      if (check(tempo_ctx_stats(ctx, &s, sizeof s), "stats")) return 1;
      printf("%" PRIu64 ",%ld,%" PRIu64 ",%" PRIu64 "\n", i, rss_kib(), s.claims_reported,
             s.claims_live);
      fflush(stdout);
    }
  }
  free(ring);
  tempo_ctx_unref(ctx);
  return 0;
}

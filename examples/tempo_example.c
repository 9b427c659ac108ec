/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A claim's whole lifecycle through libtempo's C ABI, built against an installed copy:
 *
 *   cc tempo_example.c $(pkg-config --cflags --libs tempokv) -o tempo_example
 *   ./tempo_example                      # the sim device, virtual time
 *   ./tempo_example /var/tmp/tempo-store # the uring device over an object store
 *
 * Prints the claim's commit and ready times and the bytes it copied; exits 0 on success.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tempo/tempo.h>
#include <tempo/tempo_sim.h>

#define OBJECT_BYTES (64 * 1024)
#define OBJECTS 4

static int check(int ret, const char* what, struct tempo_config* cfg) {
  if (ret < 0)
    fprintf(stderr, "%s: %s%s%s\n", what, strerror(-ret), cfg ? ": " : "",
            cfg ? tempo_config_error(cfg) : "");
  return ret;
}

int main(int argc, char** argv) {
  struct tempo_config* cfg;
  struct tempo_ctx* ctx;
  struct tempo_object manifest[OBJECTS];
  static unsigned char data[OBJECT_BYTES];
  tempo_claim_id id;
  int outcome, i;

  if (tempo_version_check(TEMPO_VERSION_MAJOR, TEMPO_VERSION_MINOR) < 0) {
    fprintf(stderr, "libtempo %s does not provide ABI %d.%d\n", tempo_version(),
            TEMPO_VERSION_MAJOR, TEMPO_VERSION_MINOR);
    return 1;
  }
  if (check(tempo_config_new(&cfg), "tempo_config_new", NULL) < 0) return 1;
  /* A configuration file and TEMPO_* variables may set more; these are the example's own. */
  if (check(tempo_config_load(cfg, NULL), "tempo_config_load", cfg) < 0 ||
      check(tempo_config_set(cfg, "fast_tier_bytes", "4MiB"), "fast_tier_bytes", cfg) < 0 ||
      check(tempo_config_set(cfg, "budget_bytes", "1MiB"), "budget_bytes", cfg) < 0 ||
      check(tempo_config_set(cfg, "policy", "tempo"), "policy", cfg) < 0)
    return 1;
  if (argc > 1 && (check(tempo_config_set(cfg, "device", "uring"), "device", cfg) < 0 ||
                   check(tempo_config_set(cfg, "uring.store_path", argv[1]), "store", cfg) < 0 ||
                   check(tempo_config_set(cfg, "uring.prefault", "false"), "prefault", cfg) < 0))
    return 1;
  if (check(tempo_ctx_new(cfg, &ctx), "tempo_ctx_new", cfg) < 0) return 1;
  tempo_config_free(cfg);

  for (i = 0; i < OBJECTS; i++) {
    manifest[i].key = 0xe0000000u + (uint64_t)i;
    manifest[i].bytes = OBJECT_BYTES;
    memset(data, 'a' + i, sizeof(data));
    if (argc > 1) {
      int r = tempo_store_put(ctx, manifest[i].key, data, sizeof(data));
      if (r < 0 && r != -EEXIST) return check(r, "tempo_store_put", NULL), 1;
    }
  }
  if (argc <= 1 && check(tempo_sim_add_objects(ctx, manifest, OBJECTS), "sim_add", NULL) < 0)
    return 1;

  /* A prefix-cache hit 100 ms before its retrieval: the claim commits when laxity is 0. */
  if (check(tempo_claim_report(ctx, manifest, OBJECTS, 100000000, &id), "report", NULL) < 0 ||
      check(tempo_claim_wait_ready(ctx, id, 10000000000LL, &outcome), "wait_ready", NULL) < 0 ||
      check(tempo_claim_request_retrieval(ctx, id, &outcome), "retrieval", NULL) < 0)
    return 1;
  if (outcome != TEMPO_RETRIEVAL_READY) {
    fprintf(stderr, "expected a stage-ready claim, got outcome %d\n", outcome);
    return 1;
  }
  if (check(tempo_claim_transfer_begin(ctx, id), "transfer_begin", NULL) < 0) return 1;
  if (argc > 1) {
    struct tempo_extent ext[64];
    size_t n = 0, k;
    unsigned long long copied = 0;
    if (check(tempo_claim_extents(ctx, id, ext, 64, &n), "extents", NULL) < 0) return 1;
    for (k = 0; k < n; k++) copied += ext[k].bytes; /* an engine copies these to the GPU */
    printf("copied %llu bytes in %zu extents, first byte '%c'\n", copied, n,
           *(const char*)ext[0].addr);
  }
  {
    struct tempo_claim_info info;
    if (check(tempo_claim_query(ctx, id, &info, sizeof info), "query", NULL) < 0) return 1;
    printf("device %s: reported at %lld ns, committed %+lld ns later, ready %+lld ns later\n",
           tempo_ctx_device(ctx), (long long)info.reported_ns,
           (long long)(info.committed_ns - info.reported_ns),
           (long long)(info.ready_ns - info.reported_ns));
  }
  if (check(tempo_claim_transfer_end(ctx, id), "transfer_end", NULL) < 0) return 1;
  tempo_ctx_unref(ctx);
  return 0;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * capi_client: a process that uses libtempo.so through its C ABI (sim device), as a serving
 * engine would, so that tests/ebpf/run.py can check that `tempostat -p PID` finds the USDT
 * probes in the mapped library rather than in the executable.
 *
 * Usage: capi_client CLAIMS   (prints {"pid":N}, waits for a line on stdin, serves CLAIMS
 *                              claims, prints the context's counters as JSON)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tempo/tempo.h"
#include "tempo/tempo_sim.h"

#define OBJECTS 64
#define CHUNKS 4
#define OBJ_BYTES (256u * 1024u)
#define MS 1000000LL

static int fail(const char* what, int err) {
  fprintf(stderr, "capi_client: %s: %s\n", what, strerror(-err));
  return 1;
}

int main(int argc, char** argv) {
  struct tempo_object store[OBJECTS];
  tempo_claim_id ids[256];
  unsigned long long transfers = 0, transfer_bytes = 0, ordinary = 0;
  struct tempo_config* cfg = NULL;
  struct tempo_ctx* ctx = NULL;
  struct tempo_counters st;
  char line[16];
  int claims, ret;

  if (argc != 2 || (claims = atoi(argv[1])) < 1 || claims > 256) {
    fprintf(stderr, "usage: capi_client CLAIMS (1..256)\n");
    return 2;
  }
  if ((ret = tempo_config_new(&cfg)) || (ret = tempo_config_set(cfg, "policy", "tempo")) ||
      (ret = tempo_config_set(cfg, "budget_bytes", "4MiB")) || (ret = tempo_ctx_new(cfg, &ctx)))
    return fail(cfg ? tempo_config_error(cfg) : "config", ret);
  for (int k = 0; k < OBJECTS; k++) {
    store[k].key = (uint64_t)k + 1;
    store[k].bytes = OBJ_BYTES;
  }
  if ((ret = tempo_sim_add_objects(ctx, store, OBJECTS))) return fail("add objects", ret);
  printf("{\"pid\":%d}\n", (int)getpid());
  fflush(stdout);
  if (!fgets(line, sizeof(line), stdin)) return 1;

  /* Claims reported 2 ms apart, each due 10 ms after its report. */
  for (int i = 0; i < claims; i++) {
    if ((ret = tempo_claim_report(ctx, &store[(i * 3) % (OBJECTS - CHUNKS)], CHUNKS, 10 * MS,
                                  &ids[i])))
      return fail("report", ret);
    if ((ret = tempo_sim_advance(ctx, 2 * MS))) return fail("advance", ret);
  }
  for (int i = 0; i < claims; i++) {
    struct tempo_claim_info info;
    int outcome = 0;

    if ((ret = tempo_claim_request_retrieval(ctx, ids[i], &outcome))) return fail("retrieve", ret);
    if (outcome == TEMPO_RETRIEVAL_ORDINARY) {
      ordinary++;
      continue;
    }
    while (!(ret = tempo_claim_query(ctx, ids[i], &info, sizeof info)) &&
           info.state == TEMPO_CLAIM_STAGING)
      tempo_sim_advance(ctx, MS);
    if (ret || (ret = tempo_claim_transfer_begin(ctx, ids[i])) ||
        (ret = tempo_claim_transfer_end(ctx, ids[i])))
      return fail("transfer", ret);
    transfers++;
    transfer_bytes += info.bytes;
  }
  if ((ret = tempo_ctx_stats(ctx, &st, sizeof st))) return fail("stats", ret);
  printf(
      "{\"claims_reported\":%llu,\"claims_committed\":%llu,\"capacity_deferral_attempts\":%llu,"
      "\"claims_ordinary\":%llu,\"stage_ops\":%llu,\"staged_bytes\":%llu,\"transfers\":%llu,"
      "\"transfer_bytes\":%llu,\"ordinary\":%llu}\n",
      (unsigned long long)st.claims_reported, (unsigned long long)st.claims_committed,
      (unsigned long long)st.capacity_deferral_attempts, (unsigned long long)st.claims_ordinary,
      (unsigned long long)st.stage_ops, (unsigned long long)st.staged_bytes, transfers,
      transfer_bytes, ordinary);
  tempo_ctx_unref(ctx);
  tempo_config_free(cfg);
  return 0;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * probe_driver: fires a known sequence of libtempo's USDT probes and prints what it fired
 * as one JSON object, so that tests/ebpf/run.py can compare it with what tempostat,
 * tempomargin and the bpftrace scripts report.
 *
 * Usage: probe_driver ROUNDS [PACE_MS]
 *   prints {"pid":N}, waits for a line on stdin, fires ROUNDS rounds (PACE_MS apart, for
 *   examples that span several intervals), then prints what it fired.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "core/probes.h"

#define OBJ_BYTES (256u * 1024u)
#define OBJS 4u
#define US 1000
#define MAX_EVENTS 4096

struct fired {
  uint64_t reports, revisions, commits, commit_bytes, defers, defer_bytes;
  uint64_t stage_submits, stage_submit_bytes, stage_completes, staged_bytes, stage_errors;
  uint64_t readies, ready_bytes, transfers, transfer_bytes, transfer_ends;
  uint64_t releases, freed_bytes, cancels, ordinary, ordinary_bytes, evictions, evicted_bytes;
  uint64_t ledger;
  int64_t margins[MAX_EVENTS];
  uint64_t margin_bytes[MAX_EVENTS];
  int n_margins;
  int64_t latencies[MAX_EVENTS];
  uint64_t latency_bytes[MAX_EVENTS];
  int n_latencies;
};

static struct fired f;

static void stage(uint64_t key, int64_t latency_ns, int64_t status) {
  TEMPO_PROBE_STAGE_SUBMIT(key, OBJ_BYTES);
  f.stage_submits++;
  f.stage_submit_bytes += OBJ_BYTES;
  TEMPO_PROBE_STAGE_COMPLETE(key, OBJ_BYTES, latency_ns, status);
  f.stage_completes++;
  if (status)
    f.stage_errors++;
  else
    f.staged_bytes += OBJ_BYTES;
  f.latencies[f.n_latencies] = latency_ns;
  f.latency_bytes[f.n_latencies++] = OBJ_BYTES;
}

/* Commits claim `id` for `reserved` new bytes and stages `objs` objects of it. */
static void commit_and_stage(uint64_t id, uint64_t reserved, uint32_t objs, int round) {
  f.ledger += reserved;
  TEMPO_PROBE_CLAIM_COMMIT(id, reserved, (int64_t)objs * 200 * US, 50 * US - round * 20 * US);
  f.commits++;
  f.commit_bytes += reserved;
  for (uint32_t k = 0; k < objs; k++) {
    int64_t latency = (int64_t)(k + 1) * 50 * US + round * US;

    if (round % 7 == 6 && k == 0) {
      stage(id * 16 + k, latency, -EIO);
      latency *= 2;
    }
    stage(id * 16 + k, latency, 0);
  }
}

static void round_of(int i) {
  uint64_t id = 1000 + (uint64_t)i, bytes = (uint64_t)OBJS * OBJ_BYTES;
  /* Every third claim shares one object already protected: it reserves one object less. */
  uint32_t objs = i % 3 == 2 ? OBJS - 1 : OBJS;
  uint64_t reserved = (uint64_t)objs * OBJ_BYTES;
  int64_t ttu = (int64_t)(i + 1) * 1000 * US, margin;

  TEMPO_PROBE_CLAIM_REPORT(id, bytes, OBJS, ttu);
  f.reports++;
  if (i % 2) {
    TEMPO_PROBE_CLAIM_REVISE(id, ttu / 2);
    f.revisions++;
  }
  if (i % 5 == 4) {
    TEMPO_PROBE_CLAIM_ORDINARY(id, bytes);
    f.ordinary++;
    f.ordinary_bytes += bytes;
    return;
  }
  if (i % 5 == 3) {
    TEMPO_PROBE_CLAIM_DEFER(id, reserved, f.ledger, 8u * OBJ_BYTES);
    f.defers++;
    f.defer_bytes += reserved;
  }
  commit_and_stage(id, reserved, objs, i);
  TEMPO_PROBE_CLAIM_READY(id, bytes);
  f.readies++;
  f.ready_bytes += bytes;
  if (i % 6 == 5) {
    TEMPO_PROBE_CLAIM_CANCEL(id, 2);
    f.cancels++;
  } else {
    /* Even rounds are ready early, odd ones late (the request waited). */
    margin = i % 2 ? -(int64_t)(i + 1) * 100 * US : (int64_t)(i + 1) * 1000 * US;
    TEMPO_PROBE_TRANSFER_BEGIN(id, bytes, margin);
    f.transfers++;
    f.transfer_bytes += bytes;
    f.margins[f.n_margins] = margin;
    f.margin_bytes[f.n_margins++] = bytes;
    TEMPO_PROBE_TRANSFER_END(id, bytes, 300 * US);
    f.transfer_ends++;
  }
  f.ledger -= reserved;
  TEMPO_PROBE_CLAIM_RELEASE(id, reserved, f.ledger);
  f.releases++;
  f.freed_bytes += reserved;
  if (i % 4 == 0) {
    TEMPO_PROBE_EVICT(id * 16, OBJ_BYTES);
    f.evictions++;
    f.evicted_bytes += OBJ_BYTES;
  }
}

static void print_array(const char* name, const int64_t* v, int n) {
  printf(",\"%s\":[", name);
  for (int i = 0; i < n; i++) printf("%s%lld", i ? "," : "", (long long)v[i]);
  printf("]");
}

#define P(x) printf(",\"" #x "\":%llu", (unsigned long long)f.x)

int main(int argc, char** argv) {
  char line[16];
  int rounds, pace_ms;

  if (argc < 2 || argc > 3 || (rounds = atoi(argv[1])) < 1 || rounds > 500 ||
      (pace_ms = argc == 3 ? atoi(argv[2]) : 0) < 0 || pace_ms > 10000) {
    fprintf(stderr, "usage: probe_driver ROUNDS [PACE_MS]  (1..500 rounds, 0..10000 ms apart)\n");
    return 2;
  }
  printf("{\"pid\":%d}\n", (int)getpid());
  fflush(stdout);
  if (!fgets(line, sizeof(line), stdin)) return 1;
  for (int i = 0; i < rounds; i++) {
    if (i && pace_ms) usleep((useconds_t)pace_ms * 1000);
    round_of(i);
  }
  /* One claim stays committed: the ledger ends at its bytes. */
  commit_and_stage(999999, 2u * OBJ_BYTES, 2, 0);

  printf("{\"rounds\":%d", rounds);
  P(reports), P(revisions), P(commits), P(commit_bytes), P(defers), P(defer_bytes);
  P(stage_submits), P(stage_submit_bytes), P(stage_completes), P(staged_bytes);
  P(stage_errors), P(readies), P(ready_bytes), P(transfers), P(transfer_bytes);
  P(transfer_ends), P(releases), P(freed_bytes), P(cancels), P(ordinary), P(ordinary_bytes);
  P(evictions), P(evicted_bytes), P(ledger);
  print_array("margins_ns", f.margins, f.n_margins);
  print_array("stage_latencies_ns", f.latencies, f.n_latencies);
  printf("}\n");
  return 0;
}

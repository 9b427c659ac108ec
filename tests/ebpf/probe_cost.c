// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * probe_cost: what one libtempo USDT site costs, detached and attached. Times N firings of
 * stage__submit against the same loop without the probe, and prints ns per iteration as
 * JSON. Run it alone (detached), then under tempostat -p (attached): Documentation/
 * observability.md quotes both.
 *
 * Usage: probe_cost N   (prints {"pid":P}, waits for a line on stdin, then measures)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "core/probes.h"

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int main(int argc, char** argv) {
  char line[16];
  long n;

  if (argc != 2 || (n = atol(argv[1])) < 1) {
    fprintf(stderr, "usage: probe_cost N\n");
    return 2;
  }
  printf("{\"pid\":%d}\n", (int)getpid());
  fflush(stdout);
  if (!fgets(line, sizeof(line), stdin)) return 1;

  int64_t t0 = now_ns();
  for (long i = 0; i < n; i++) __asm__ volatile("" : : "r"(i));
  int64_t t1 = now_ns();
  for (long i = 0; i < n; i++) TEMPO_PROBE_STAGE_SUBMIT(i, 4096);
  int64_t t2 = now_ns();

  printf("{\"iterations\":%ld,\"loop_ns\":%.3f,\"probe_ns\":%.3f}\n", n,
         (double)(t1 - t0) / (double)n, (double)(t2 - t1) / (double)n);
  return 0;
}

// Staging, faults, pins, queries and eviction from several threads on a small fast tier:
// every byte read through the mapping is always the disk's byte, and nothing is left over.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "vmtest.h"

enum { kThreads = 4, kMaxHeld = 4 };

struct worker {
  pthread_t tid;
  uint64_t rng;
  uint64_t ops, reads, stages, pins, resets, mismatches, bad_errno, last_errno;
  double seconds;
};

static uint64_t next(uint64_t* s) { return pattern_word((*s)++); }

static void note_errno(struct worker* w, int e) {
  if (e == EAGAIN || e == EDQUOT || e == ENOSPC) return;
  w->bad_errno++;
  w->last_errno = (uint64_t)e;
}

static void drain(struct worker* w, int fd, const uint8_t* m, int block) {
  struct tempo_completion c;
  while (wait_completion(fd, &c, block ? 20000 : 0) == 0) {
    if (c.status) note_errno(w, -c.status);
    if (!(c.flags & TEMPO_STAGE_F_PIN) || c.status) continue;
    // ticket = the staged extent: pinned data must be the disk's, then release it.
    w->pins++;
    uint64_t off = c.ticket * dut.info.extent_bytes;
    w->mismatches += pattern_mismatch(m + off, off, dut.info.extent_bytes) ? 1 : 0;
    if (unpin1(fd, off, dut.info.extent_bytes)) note_errno(w, errno);
  }
}

static void* worker_main(void* arg) {
  struct worker* w = arg;
  const uint64_t e = dut.info.extent_bytes, n = dut.info.size / e;
  int fd = dev_open();
  const uint8_t* m = mmap(NULL, dut.info.size, PROT_READ, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    w->bad_errno++;
    return NULL;
  }
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  // 3 s; longer (up to 30 s) on a slow tier, until this thread has staged and pinned.
  do {
    uint64_t r = next(&w->rng), ext = r % n, op = (r >> 32) % 100;
    if (op < 45) {  // a fault or a hit through the mapping
      uint64_t off = ext * e + ((r >> 16) % (e / 4096)) * 4096;
      w->mismatches += pattern_mismatch(m + off, off, 4096) ? 1 : 0;
      w->reads++;
    } else if (op < 70) {  // stage, half of them pinned
      uint32_t flags = op < 58 ? TEMPO_STAGE_F_PIN : 0;
      if (stage1(fd, ext * e, e, flags, ext))
        note_errno(w, errno);
      else
        w->stages++;
    } else if (op < 85) {  // pin what may be resident, read it, unpin
      if (pin1(fd, ext * e, e) == 0) {
        w->pins++;
        if (query1(fd, ext * e, e).resident_bytes != e) w->mismatches++;
        w->mismatches += pattern_mismatch(m + ext * e, ext * e, e) ? 1 : 0;
        if (unpin1(fd, ext * e, e)) note_errno(w, errno);
      } else {
        note_errno(w, errno);
      }
    } else if (op < 87) {
      if (ioctl(fd, TEMPO_IOC_RESET, 0)) note_errno(w, errno);
      w->resets++;
    } else {
      drain(w, fd, m, 0);
    }
    w->ops++;
    clock_gettime(CLOCK_MONOTONIC, &t);
    w->seconds = (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9;
  } while (w->seconds < 3.0 || (w->seconds < 30.0 && (!w->pins || !w->stages)));
  // Collect every outstanding completion (and drop its pins), then check none is left.
  for (;;) {
    struct tempo_stats s = stats(fd);
    drain(w, fd, m, 0);
    if (!s.inflight_batches) break;
    usleep(10000);
  }
  drain(w, fd, m, 0);
  if (query1(fd, 0, dut.info.size).own_min_pins != 0) w->bad_errno++;
  munmap((void*)m, dut.info.size);
  close(fd);
  return NULL;
}

static void test_mixed_ops(void) {
  struct worker w[kThreads];
  memset(w, 0, sizeof(w));
  int fd = dev_open();
  CHECK_OK(ioctl(fd, TEMPO_IOC_RESET, 0));
  struct tempo_stats s0 = stats(fd);
  for (int i = 0; i < kThreads; i++) {
    w[i].rng = 1000003ULL * (uint64_t)(i + 1);
    pthread_create(&w[i].tid, NULL, worker_main, &w[i]);
  }
  uint64_t ops = 0, reads = 0, stages = 0, pins = 0;
  for (int i = 0; i < kThreads; i++) {
    pthread_join(w[i].tid, NULL);
    CHECK(w[i].mismatches == 0, "thread %d read %llu wrong pages", i,
          (unsigned long long)w[i].mismatches);
    CHECK(w[i].bad_errno == 0, "thread %d: %llu unexpected errors, last %s", i,
          (unsigned long long)w[i].bad_errno, strerrorname((int)w[i].last_errno));
    ops += w[i].ops;
    reads += w[i].reads;
    stages += w[i].stages;
    pins += w[i].pins;
  }
  struct tempo_stats s1 = stats(fd);
  CHECK(s1.pins == 0 && s1.pinned_bytes == 0 && s1.inflight_batches == 0,
        "left: pins %llu pinned %llu inflight %llu", (unsigned long long)s1.pins,
        (unsigned long long)s1.pinned_bytes, (unsigned long long)s1.inflight_batches);
  CHECK(s1.evictions > s0.evictions && stages > 0 && pins > 0 && reads > 0,
        "the mix did not exercise eviction/stage/pin");
  CHECK(s1.resident_bytes <= dut.info.fast_bytes, "resident beyond the fast tier");
  printf(
      "# concurrency: %d threads, %llu ops (%llu reads, %llu stages, %llu pins), %llu evictions\n",
      kThreads, (unsigned long long)ops, (unsigned long long)reads, (unsigned long long)stages,
      (unsigned long long)pins, (unsigned long long)(s1.evictions - s0.evictions));
  close(fd);
}

void tests_concurrency(void) {
  // Every read is checked against the pattern: only the VM's disk holds it.
  if (!dut.pattern) {
    printf("SKIP concurrency.mixed_ops: the disk does not hold the test pattern (run -p)\n");
    return;
  }
  run_test("concurrency.mixed_ops", test_mixed_ops);
}

// Group fanout (loaded on the huge null_blk disk with a 256 MiB tier of 4 KiB extents:
// 65,536 slots): eviction notices cost nothing per subscriber. Subscribing takes no memory;
// one STAGE that evicts the whole tier takes about as long with 4,000 subscribed fds as
// with none, while another fd's STATS waits at most 100 ms more behind it than beside a
// stream of batches of 1023 extents (each one hold of the lock); every subscriber still
// learns that it missed them (one LOST record with their bytes).
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "vmtest.h"

enum { kSubscribers = 4000, kRounds = 7 };

// Opens kSubscribers read-only fds into subs (raising RLIMIT_NOFILE for them): how many.
static int open_subscribers(int* subs) {
  struct rlimit rl = {kSubscribers + 64, kSubscribers + 64};
  CHECK_OK(setrlimit(RLIMIT_NOFILE, &rl));
  for (int n = 0; n < kSubscribers; n++)
    if ((subs[n] = open(dut.path, O_RDONLY | O_CLOEXEC)) < 0) {
      tfail(__FILE__, __LINE__, "open subscriber %d: %s", n, strerrorname(errno));
      return n;
    }
  return kSubscribers;
}

static int cmp_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

// The floor a STATS can meet in this run: the slowest one while half the tier is evicted by
// STAGEs of 1023 extents from `off` on, each handled in one hold of dev->lock, as long as a
// piece of a big STAGE. What it waits beyond that hold is the host's (a vCPU descheduled by
// other work on it) and the guest's scheduling.
static double reference_stats(int fd, uint64_t off) {
  const uint64_t batch = 1023 * dut.info.extent_bytes;
  struct stats_probe p;
  stats_probe_start(&p, 2000);
  for (uint64_t at = 0; at + batch <= dut.info.fast_bytes / 2; at += batch) {
    struct tempo_completion c;
    CHECK(stage1(fd, off + at, batch, 0, at) == 0 && wait_completion(fd, &c, 60000) == 0 &&
              c.status == 0,
          "reference STAGE at %llu", (unsigned long long)(off + at));
  }
  return stats_probe_stop(&p);
}

// Subscribes (mask TEMPO_EVENT_EVICT) or unsubscribes (0) every fd of subs.
static int set_events(const int* subs, int n, uint32_t mask) {
  struct tempo_events ev = {.mask = mask};
  for (int i = 0; i < n; i++)
    if (ioctl(subs[i], TEMPO_IOC_SET_EVENTS, &ev)) return -errno;
  return 0;
}

// Stages [off, off + len) and waits for its record: seconds from the call to the record,
// and the slowest STATS another fd made meanwhile.
static double timed_stage(int fd, uint64_t off, uint64_t len, double* worst_stats) {
  struct stats_probe p;
  struct tempo_completion c = {0};
  stats_probe_start(&p, 2000);
  usleep(10000);
  double a = now_s();
  int r = stage1(fd, off, len, 0, off);
  int w = r ? -errno : wait_completion(fd, &c, 300000);
  double took = now_s() - a;
  *worst_stats = stats_probe_stop(&p);
  CHECK(r == 0 && w == 0 && c.status == 0 && c.read_bytes == len,
        "STAGE at %llu: %s, wait %d, status %d, read %llu", (unsigned long long)off,
        strerrorname(-w), w, c.status, (unsigned long long)c.read_bytes);
  return took;
}

static void test_stage_evicting_tier(void) {
  const uint64_t e = dut.info.extent_bytes, tier = dut.info.fast_bytes;
  static int subs[kSubscribers];
  static struct tempo_completion rec[16];
  double ratio[kRounds], worst_none = 0, worst_subs = 0, worst_ref = 0, w;
  int fd = dev_open(), n = open_subscribers(subs);
  CHECK_OK(ioctl(fd, TEMPO_IOC_RESET, 0));
  timed_stage(fd, 0, tier, &w);  // fills the tier: each STAGE below evicts all of it
  // Rounds without and with subscribers alternate: each pair is close in time, so the
  // host's load (other builds, the vCPUs descheduled) weighs alike on both of it, and the
  // median of the pairs' ratios is the figure. Each round first measures the STATS floor
  // with extents beyond both ranges, so each big STAGE still evicts a whole tier.
  for (int r = 0; r < kRounds; r++) {
    w = reference_stats(fd, 2 * tier);
    worst_ref = w > worst_ref ? w : worst_ref;
    const double alone = timed_stage(fd, tier, tier, &w);
    worst_none = w > worst_none ? w : worst_none;
    CHECK_OK(set_events(subs, n, TEMPO_EVENT_EVICT));
    const double with = timed_stage(fd, 0, tier, &w);
    worst_subs = w > worst_subs ? w : worst_subs;
    ratio[r] = with / alone;
    printf("# round %d: %.3f s alone, %.3f s with %d subscribers (x%.2f)\n", r, alone, with, n,
           ratio[r]);
    if (r + 1 < kRounds) CHECK_OK(set_events(subs, n, 0));
  }
  qsort(ratio, kRounds, sizeof(ratio[0]), cmp_double);
  const double median = ratio[kRounds / 2];
  printf(
      "# STAGE evicting %llu extents with %d subscribers: x%.2f its time alone (median of %d "
      "rounds); slowest STATS %.3f s with them, %.3f s without, %.3f s beside STAGEs of 1023 "
      "extents\n",
      (unsigned long long)(tier / e), n, median, kRounds, worst_subs, worst_none, worst_ref);
  CHECK(median <= 1.2, "STAGE took x%.2f its time alone with %d subscribers", median, n);
  // Within 100 ms of the floor measured beside it.
  CHECK(worst_subs < 0.1 + worst_ref,
        "STATS waited %.3f s behind a STAGE with %d subscribers (%.3f s without; %.3f s beside "
        "STAGEs of 1023 extents)",
        worst_subs, n, worst_none, worst_ref);
  // A subscriber that did not read through the last STAGE is 65,536 notices behind, more
  // than the device's log keeps (8192): it reads one LOST record with the bytes of them all
  // (one that falls fewer behind reads 511 EVICT records first: events.overflow_lost).
  if (n) {
    fcntl(subs[0], F_SETFL, O_NONBLOCK);
    ssize_t got = read(subs[0], rec, sizeof(rec));
    const int nrec = got > 0 ? (int)(got / (ssize_t)sizeof(rec[0])) : 0;
    CHECK(nrec == 1 && rec[0].kind == TEMPO_REC_LOST && rec[0].bytes == tier,
          "subscriber read %d records, the first of kind %u with %llu bytes; want one LOST "
          "record of %llu bytes",
          nrec, nrec ? rec[0].kind : 0, nrec ? (unsigned long long)rec[0].bytes : 0ULL,
          (unsigned long long)tier);
  }
  for (int i = 0; i < n; i++) close(subs[i]);
  close(fd);
}

// A subscriber costs nothing but its open file: subscribing 4,000 fds takes no memory (each
// took a 24 KiB notice queue before, 128 MiB for 4,000).
static void test_subscribers_take_no_memory(void) {
  static int subs[kSubscribers];
  const int n = open_subscribers(subs);
  const uint64_t free0 = meminfo_kb("MemFree");
  CHECK_OK(set_events(subs, n, TEMPO_EVENT_EVICT));
  const uint64_t free1 = meminfo_kb("MemFree");
  printf("# %d fds subscribed: MemFree %+lld kB\n", n, (long long)free1 - (long long)free0);
  CHECK(free1 + 4096 > free0, "subscribing %d fds took %llu kB", n,
        (unsigned long long)(free0 - free1));
  for (int i = 0; i < n; i++) close(subs[i]);
}

void tests_fanout(void) {
  run_test("fanout.subscribers_take_no_memory", test_subscribers_take_no_memory);
  run_test("fanout.stage_evicting_tier", test_stage_evicting_tier);
}

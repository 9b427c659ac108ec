// The hostile cases of issue 18, one test each: pins a batch no longer holds, unbounded
// completion memory, wrapping pin counts, per-fd pin caps, exec mappings, the exclusive
// backing open, lost records on a bad read() buffer, faults that hold mmap_lock across
// disk reads, a QUERY that holds the device lock for its whole range.
// Groups: hostile (any device), slow (backing: slow_bad_disk below), huge (a huge backing),
// fdlimit (loaded with fd_pin_limit_mb = pin_limit_mb / 2).
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vmtest.h"

// Unread completions cost a small record each, not their batch: 8 fds x 1024 unread
// 64-extent batches stay under 4 MiB of unreclaimable slab (they kept ~24 MiB before).
static void test_unread_completion_memory(void) {
  const uint64_t e = dut.info.extent_bytes, slots = dut.info.fast_bytes / e;
  const uint64_t len = (slots < 64 ? slots : 64) * e;
  int fds[8];
  struct tempo_completion c;
  fds[0] = dev_open();
  CHECK_OK(ioctl(fds[0], TEMPO_IOC_RESET, 0));
  CHECK(stage1(fds[0], 0, len, 0, 0) == 0 && wait_completion(fds[0], &c, 20000) == 0, "stage");
  uint64_t slab0 = meminfo_kb("SUnreclaim");
  for (int f = 0; f < 8; f++) {
    if (f) fds[f] = dev_open();
    for (int i = 0; i < 1024; i++)
      if (stage1(fds[f], 0, len, 0, (uint64_t)i)) {
        tfail(__FILE__, __LINE__, "fd %d batch %d: %s", f, i, strerrorname(errno));
        break;
      }
  }
  uint64_t slab1 = meminfo_kb("SUnreclaim");
  CHECK(slab1 < slab0 + 4096, "8192 unread records took %llu kB of slab",
        (unsigned long long)(slab1 - slab0));
  printf("# 8192 unread %llu-extent completions: SUnreclaim +%lld kB\n",
         (unsigned long long)(len / e), (long long)slab1 - (long long)slab0);
  for (int f = 0; f < 8; f++) close(fds[f]);
}

// One fd holds at most 4096 pins on one extent: the count cannot wrap.
static void test_pin_count_cap(void) {
  const uint64_t e = dut.info.extent_bytes;
  int fd = dev_open();
  struct tempo_completion c;
  CHECK(stage1(fd, 0, e, 0, 0) == 0 && wait_completion(fd, &c, 20000) == 0, "stage");
  int ok = 0;
  while (ok < 5000 && pin1(fd, 0, e) == 0) ok++;
  CHECK(ok == 4096 && errno == EDQUOT, "%d pins, then %s; want 4096 then EDQUOT", ok,
        ok == 5000 ? "no refusal" : strerrorname(errno));
  struct tempo_query q = query1(fd, 0, e);
  CHECK(q.min_pins == 4096 && q.own_min_pins == 4096, "pins %u own %u", q.min_pins, q.own_min_pins);
  CHECK(stats(fd).pins == 4096, "STATS pins %llu", (unsigned long long)stats(fd).pins);
  close(fd);
  int other = dev_open();
  CHECK(stats(other).pins == 0, "close left %llu pins", (unsigned long long)stats(other).pins);
  close(other);
}

static void test_no_exec_mapping(void) {
  int fd = dev_open();
  void* m = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
  CHECK(m == MAP_FAILED && errno == EPERM, "PROT_EXEC mapping: %s",
        m == MAP_FAILED ? strerrorname(errno) : "succeeded");
  if (m != MAP_FAILED) munmap(m, 4096);
  int e = mprotect_errno(fd, PROT_READ | PROT_EXEC);
  CHECK(e == EACCES, "mprotect to executable: %s", e < 0 ? "no mapping" : strerrorname(e));
  close(fd);
}

// tempo.ko holds its backing device exclusively: no one can O_EXCL it (or mount it).
static void test_backing_exclusive(void) {
  int d = open(dut.disk, O_RDONLY | O_EXCL | O_CLOEXEC);
  CHECK(d == -1 && errno == EBUSY, "O_EXCL open of the backing device: %s",
        d < 0 ? strerrorname(errno) : "succeeded");
  if (d >= 0) close(d);
}

// A read() whose buffer faults loses nothing: the records come with the next good read.
static void test_read_efault_keeps_records(void) {
  const uint64_t e = dut.info.extent_bytes;
  int fd = dev_open();
  CHECK_OK(stage1(fd, 0, e, 0, 71));
  CHECK_OK(stage1(fd, e, e, 0, 72));
  settled_stats(fd);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);  // a lost record fails, never hangs
  long pg = sysconf(_SC_PAGESIZE);
  char* buf =
      mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(buf != MAP_FAILED, "mmap");
  if (buf == MAP_FAILED) return;
  mprotect(buf + pg, (size_t)pg, PROT_READ);
  struct tempo_completion c[2];
  CHECK_ERRNO(read(fd, buf + pg, sizeof(c)), EFAULT);
  // The first record fits before the read-only page, the second does not.
  char* edge = buf + pg - sizeof(c[0]);
  CHECK(read(fd, edge, sizeof(c)) == sizeof(c[0]), "partial read");
  memcpy(&c[0], edge, sizeof(c[0]));
  CHECK(read(fd, &c[1], sizeof(c[1])) == sizeof(c[1]), "second read");
  CHECK(c[0].ticket == 71 && c[1].ticket == 72, "tickets %llu %llu",
        (unsigned long long)c[0].ticket, (unsigned long long)c[1].ticket);
  munmap(buf, 2 * (size_t)pg);
  close(fd);
}

void tests_hostile(void) {
  run_test("hostile.unread_completion_memory", test_unread_completion_memory);
  run_test("hostile.pin_count_cap", test_pin_count_cap);
  run_test("hostile.no_exec_mapping", test_no_exec_mapping);
  run_test("hostile.backing_exclusive", test_backing_exclusive);
  run_test("hostile.read_efault_keeps_records", test_read_efault_keeps_records);
}

// --- slow: the backing device completes every read after ~1 s and fails reads in
// [SLOW_BAD_OFFSET, SLOW_BAD_OFFSET + SLOW_BAD_BYTES) (null_blk, see init.sh).

// UNPIN cannot take the pin an in-flight STAGE|F_PIN batch holds; when the batch's other
// extent then fails and the first was evicted in between, nothing is dropped twice.
static void test_unpin_vs_failing_batch(void) {
  const uint64_t e = dut.info.extent_bytes, good = 0, bad = SLOW_BAD_OFFSET;
  int fd = dev_open();
  struct tempo_completion c;
  CHECK_OK(ioctl(fd, TEMPO_IOC_RESET, 0));
  struct tempo_stats s0 = stats(fd);
  CHECK(stage1(fd, good, e, 0, 1) == 0 && wait_completion(fd, &c, 20000) == 0 && c.status == 0,
        "stage the good extent");
  CHECK_OK(pin1(fd, good, e));
  struct tempo_range r[2] = {{good, e}, {bad, e}};
  CHECK_OK(stage(fd, r, 2, TEMPO_STAGE_F_PIN, 2));  // the bad extent is in flight for ~1 s
  CHECK_OK(unpin1(fd, good, e));                    // the fd's own pin
  CHECK_ERRNO(unpin1(fd, good, e), EINVAL);         // the batch's pin is not the fd's
  CHECK_OK(ioctl(fd, TEMPO_IOC_RESET, 0));          // cannot evict: the batch pins it
  CHECK(query1(fd, good, e).resident_bytes == e, "evicted while the batch pins it");
  CHECK(wait_completion(fd, &c, 20000) == 0 && c.ticket == 2 && c.status == -EIO,
        "batch ticket %llu status %d, want -EIO", (unsigned long long)c.ticket, c.status);
  struct tempo_stats s1 = stats(fd);
  CHECK(s1.pins == 0 && s1.pinned_bytes == 0, "pins %llu pinned %llu after the failed batch",
        (unsigned long long)s1.pins, (unsigned long long)s1.pinned_bytes);
  struct tempo_query q = query1(fd, 0, dut.info.size);
  CHECK(q.pinned_bytes == 0, "QUERY pinned %llu", (unsigned long long)q.pinned_bytes);
  // A failed read counts as an error, not as bytes read.
  CHECK(s1.staged_bytes - s0.staged_bytes == e && s1.stage_errors - s0.stage_errors == 1,
        "staged_bytes +%llu stage_errors +%llu",
        (unsigned long long)(s1.staged_bytes - s0.staged_bytes),
        (unsigned long long)(s1.stage_errors - s0.stage_errors));
#ifdef TEMPO_IOC_SET_EVENTS  // fill_errors came with the record stream
  CHECK(s1.fill_errors - s0.fill_errors == 1, "fill_errors +%llu",
        (unsigned long long)(s1.fill_errors - s0.fill_errors));
#endif
  close(fd);
}

struct faulter {
  const volatile uint8_t* p;
  double done;
};

static void* fault_main(void* arg) {
  struct faulter* f = arg;
  (void)f->p[0];
  f->done = now_s();
  return NULL;
}

// A fault waiting ~1 s for its disk read does not hold mmap_lock: another thread's mmap()
// and munmap() in the same process finish at once.
static void test_fault_releases_mmap_lock(void) {
  const uint64_t e = dut.info.extent_bytes;
  int fd = dev_open();
  CHECK_OK(ioctl(fd, TEMPO_IOC_RESET, 0));
  const uint8_t* m = mmap(NULL, dut.info.size, PROT_READ, MAP_SHARED, fd, 0);
  CHECK(m != MAP_FAILED, "mmap");
  if (m == MAP_FAILED) return;
  struct faulter f = {.p = m + 3 * e};
  pthread_t t;
  double t0 = now_s();
  pthread_create(&t, NULL, fault_main, &f);
  usleep(200000);
  double a = now_s();
  void* x = mmap(NULL, 1 << 20, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(x, 1 << 20);
  double b = now_s();
  pthread_join(t, NULL);
  CHECK(f.done - t0 > 0.5, "the fault took only %.2f s: the disk is not slow", f.done - t0);
  CHECK(b - a < 0.3, "mmap+munmap waited %.2f s behind a fault", b - a);
  munmap((void*)m, dut.info.size);
  close(fd);
}

void tests_slow(void) {
  run_test("slow.unpin_vs_failing_batch", test_unpin_vs_failing_batch);
  run_test("slow.fault_releases_mmap_lock", test_fault_releases_mmap_lock);
}

// --- huge: a backing device of many extents (unbacked null_blk, 4 KiB extents).

// QUERY of the whole device costs its resident extents, not its size, and never keeps
// another fd's STATS waiting.
static void test_query_whole_device(void) {
  const uint64_t e = dut.info.extent_bytes;
  int fd = dev_open();
  struct tempo_completion c;
  CHECK(stage1(fd, 0, 16 * e, TEMPO_STAGE_F_PIN, 0) == 0 && wait_completion(fd, &c, 20000) == 0,
        "stage");
  struct stats_probe p;
  stats_probe_start(&p, 1000);
  double a = now_s();
  struct tempo_query q = query1(fd, 0, dut.info.size);
  double took = now_s() - a;
  stats_probe_stop(&p);
  CHECK(q.resident_bytes == 16 * e && q.pinned_bytes == 16 * e && q.min_pins == 0 &&
            q.own_min_pins == 0,
        "resident %llu pinned %llu min %u own %u", (unsigned long long)q.resident_bytes,
        (unsigned long long)q.pinned_bytes, q.min_pins, q.own_min_pins);
  q = query1(fd, 0, 16 * e);
  CHECK(q.min_pins == 1 && q.own_min_pins == 1, "pinned range: min %u own %u", q.min_pins,
        q.own_min_pins);
  CHECK(took < 1.0, "QUERY of %llu extents took %.2f s", (unsigned long long)(dut.info.size / e),
        took);
  CHECK(p.worst < 0.5, "STATS waited %.2f s behind QUERY", p.worst);
  printf("# QUERY of %llu extents: %.3f s, slowest concurrent STATS %.3f s\n",
         (unsigned long long)(dut.info.size / e), took, p.worst);
  close(fd);
}

void tests_huge(void) { run_test("huge.query_whole_device", test_query_whole_device); }

// --- fdlimit: loaded with fd_pin_limit_mb at half the pin limit.

static void test_fd_pin_limit(void) {
  const uint64_t e = dut.info.extent_bytes, half = dut.info.pin_limit_bytes / 2;
  int a = dev_open(), b = dev_open();
  struct tempo_completion c;
  CHECK_OK(ioctl(a, TEMPO_IOC_RESET, 0));
  CHECK(stage1(a, 0, half, TEMPO_STAGE_F_PIN, 0) == 0 && wait_completion(a, &c, 20000) == 0 &&
            c.status == 0,
        "fd a pins its half");
  CHECK_ERRNO(stage1(a, half, e, TEMPO_STAGE_F_PIN, 1), EDQUOT);
  CHECK(stage1(a, half, e, 0, 2) == 0 && wait_completion(a, &c, 20000) == 0, "stage unpinned");
  CHECK_ERRNO(pin1(a, half, e), EDQUOT);
  CHECK_OK(pin1(a, 0, e));  // more pins on extents it already pins cost nothing
  // Another fd still gets its own half.
  CHECK(stage1(b, half, half, TEMPO_STAGE_F_PIN, 3) == 0 && wait_completion(b, &c, 20000) == 0 &&
            c.status == 0,
        "fd b pins the other half: status %d", c.status);
  close(b);
  CHECK_OK(pin1(a, 0, e));
  close(a);
}

void tests_fdlimit(void) { run_test("fdlimit.per_fd_pin_limit", test_fd_pin_limit); }

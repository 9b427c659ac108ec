// A process that exits or is killed while holding pins and in-flight staging leaves no pin,
// no in-flight batch and no kernel memory behind.
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vmtest.h"

// Child body: pins, staged pins, and batches still in flight when it dies.
static void child_work(int ready_fd, uint64_t seed, int batches) {
  int fd = dev_open();
  const uint64_t e = dut.info.extent_bytes, n = dut.info.size / e;
  const uint64_t pin_exts = dut.info.pin_limit_bytes / e / 2;
  struct tempo_completion c;
  if (stage1(fd, 0, pin_exts * e, TEMPO_STAGE_F_PIN, 1) || wait_completion(fd, &c, 20000)) _exit(3);
  if (pin1(fd, 0, e) || pin1(fd, e, e)) _exit(4);
  for (int i = 0; i < batches; i++) {
    uint64_t ext = pin_exts + (seed * 31 + (uint64_t)i * 17) % (n - pin_exts);
    // Errors such as EDQUOT are expected once the limit fills; the rest just stage.
    stage1(fd, ext * e, e, i % 2 ? TEMPO_STAGE_F_PIN : 0, (uint64_t)i);
  }
  if (write(ready_fd, "r", 1) != 1) _exit(5);
  pause();  // killed by the parent, or exits via SIGTERM default action
  _exit(0);
}

static int run_child(uint64_t seed, int batches, int sig) {
  int p[2];
  if (pipe(p)) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    child_work(p[1], seed, batches);
  }
  close(p[1]);
  char b;
  int ok = read(p[0], &b, 1) == 1;
  close(p[0]);
  kill(pid, sig);
  int status;
  waitpid(pid, &status, 0);
  return ok ? 0 : -1;
}

static void check_no_pins(int fd) {
  struct tempo_stats s = settled_stats(fd);
  CHECK(s.pins == 0 && s.pinned_bytes == 0, "pins %llu pinned_bytes %llu left",
        (unsigned long long)s.pins, (unsigned long long)s.pinned_bytes);
  CHECK(s.inflight_batches == 0 && s.filling_bytes == 0, "inflight %llu filling %llu",
        (unsigned long long)s.inflight_batches, (unsigned long long)s.filling_bytes);
  struct tempo_query q = query1(fd, 0, dut.info.size);
  CHECK(q.pinned_bytes == 0 && q.min_pins == 0, "QUERY sees pins");
}

static void test_exit_releases_pins(void) {
  int fd = dev_open();
  CHECK(run_child(1, 64, SIGTERM) == 0, "child failed to set up");
  check_no_pins(fd);
  close(fd);
}

static void test_kill_releases_pins(void) {
  int fd = dev_open();
  CHECK(run_child(2, 64, SIGKILL) == 0, "child failed to set up");
  check_no_pins(fd);
  // The released space is usable: pin up to the limit again.
  struct tempo_completion c;
  CHECK_OK(stage1(fd, 0, dut.info.pin_limit_bytes, TEMPO_STAGE_F_PIN, 1));
  CHECK(wait_completion(fd, &c, 20000) == 0 && c.status == 0, "pin to the limit after kill: %d",
        c.status);
  close(fd);
}

static void drop_caches(void) {
  FILE* f = fopen("/proc/sys/vm/drop_caches", "w");
  if (f) {
    fputs("3\n", f);
    fclose(f);
  }
}

static void test_no_leak(void) {
  int fd = dev_open();
  for (int i = 0; i < 5; i++) run_child(100 + (uint64_t)i, 200, SIGKILL);  // warm the slabs
  settled_stats(fd);
  drop_caches();
  uint64_t slab0 = meminfo_kb("SUnreclaim"), avail0 = meminfo_kb("MemAvailable");
  struct tempo_stats s0 = settled_stats(fd);
  for (int i = 0; i < 40; i++)
    CHECK(run_child(200 + (uint64_t)i, 200, i % 2 ? SIGKILL : SIGTERM) == 0, "child %d", i);
  struct tempo_stats s1 = settled_stats(fd);
  drop_caches();
  uint64_t slab1 = meminfo_kb("SUnreclaim"), avail1 = meminfo_kb("MemAvailable");
  check_no_pins(fd);
  CHECK(s1.stage_batches - s0.stage_batches >= 40 * 20, "only %llu batches ran",
        (unsigned long long)(s1.stage_batches - s0.stage_batches));
  // 8000+ batches: a leaked batch or pin entry each would show as megabytes.
  CHECK(slab1 < slab0 + 512, "SUnreclaim grew %llu -> %llu kB", (unsigned long long)slab0,
        (unsigned long long)slab1);
  // Per-cpu lists may keep a few freed 2 MiB bounce buffers: allow 8 MiB of slack.
  CHECK(avail1 + 8192 > avail0, "MemAvailable fell %llu -> %llu kB", (unsigned long long)avail0,
        (unsigned long long)avail1);
  printf("# leak check: %llu batches, SUnreclaim %llu -> %llu kB, MemAvailable %llu -> %llu kB\n",
         (unsigned long long)(s1.stage_batches - s0.stage_batches), (unsigned long long)slab0,
         (unsigned long long)slab1, (unsigned long long)avail0, (unsigned long long)avail1);
  close(fd);
}

void tests_fdclose(void) {
  run_test("fdclose.exit_releases_pins", test_exit_releases_pins);
  run_test("fdclose.kill_releases_pins", test_kill_releases_pins);
  run_test("fdclose.no_leak", test_no_leak);
}

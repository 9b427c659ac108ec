// Bad input: each call fails with its documented errno and changes nothing (STATS and a
// QUERY of the whole device are identical before and after).
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vmtest.h"

static int fd;
static struct tempo_stats st0;
static struct tempo_query q0;

static void snapshot(void) {
  st0 = stats(fd);
  q0 = query1(fd, 0, dut.info.size);
}

static void check_unchanged(void) {
  struct tempo_stats st1 = stats(fd);
  struct tempo_query q1 = query1(fd, 0, dut.info.size);
  CHECK(!memcmp(&st0, &st1, sizeof(st0)), "STATS changed");
  CHECK(!memcmp(&q0, &q1, sizeof(q0)), "residency or pins changed");
}

static struct tempo_stage stage_arg(struct tempo_range* r, uint32_t n) {
  struct tempo_stage s = {.ranges = (uintptr_t)r, .nr_ranges = n, .ticket = 1};
  return s;
}

static struct tempo_pin pin_arg(struct tempo_range* r, uint32_t n) {
  struct tempo_pin p = {.ranges = (uintptr_t)r, .nr_ranges = n};
  return p;
}

static void test_unknown_ioctl(void) {
  snapshot();
  CHECK_ERRNO(ioctl(fd, _IO(TEMPO_IOC_MAGIC, 0x3f)), ENOTTY);
  CHECK_ERRNO(ioctl(fd, _IOR(TEMPO_IOC_MAGIC, 0x00, uint64_t), 0), ENOTTY);  // wrong size
  CHECK_ERRNO(ioctl(fd, _IO('T', 0x02)), ENOTTY);
  check_unchanged();
}

static void test_reserved_and_flags(void) {
  struct tempo_range r = {0, 4096};
  snapshot();
  struct tempo_stage s = stage_arg(&r, 1);
  s.reserved[1] = 1;
  CHECK_ERRNO(ioctl(fd, TEMPO_IOC_STAGE, &s), EINVAL);
  s = stage_arg(&r, 1);
  s.flags = 1U << 7;
  CHECK_ERRNO(ioctl(fd, TEMPO_IOC_STAGE, &s), EINVAL);
  struct tempo_pin p = pin_arg(&r, 1);
  p.flags = 1;
  CHECK_ERRNO(ioctl(fd, TEMPO_IOC_PIN, &p), EINVAL);
  p = pin_arg(&r, 1);
  p.reserved[0] = 5;
  CHECK_ERRNO(ioctl(fd, TEMPO_IOC_UNPIN, &p), EINVAL);
  struct tempo_query q = {.offset = 0, .length = 4096, .reserved = {0, 1}};
  CHECK_ERRNO(ioctl(fd, TEMPO_IOC_QUERY, &q), EINVAL);
  CHECK_ERRNO(ioctl(fd, TEMPO_IOC_RESET, 1), EINVAL);
  check_unchanged();
}

// Every malformed range through STAGE, PIN, UNPIN and QUERY.
static void test_bad_ranges(void) {
  const uint64_t size = dut.info.size;
  const struct {
    struct tempo_range r;
    int err;
  } cases[] = {
      {{size, 4096}, ERANGE},                  // starts at the end
      {{size - 4096, 8192}, ERANGE},           // runs past the end
      {{UINT64_MAX - 4095, 8192}, EOVERFLOW},  // offset + length wraps
      {{100, 4096}, EINVAL},                   // unaligned offset
      {{0, 100}, EINVAL},                      // unaligned length
      {{4096, 0}, EINVAL},                     // zero length
  };
  snapshot();
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct tempo_range r[2] = {{0, 4096}, cases[i].r};  // a good range first: nothing of it sticks
    struct tempo_stage s = stage_arg(r, 2);
    struct tempo_pin p = pin_arg(r, 2);
    struct tempo_query q = {.offset = cases[i].r.offset, .length = cases[i].r.length};
    CHECK_ERRNO(ioctl(fd, TEMPO_IOC_STAGE, &s), cases[i].err);
    CHECK_ERRNO(ioctl(fd, TEMPO_IOC_PIN, &p), cases[i].err);
    CHECK_ERRNO(ioctl(fd, TEMPO_IOC_UNPIN, &p), cases[i].err);
    CHECK_ERRNO(ioctl(fd, TEMPO_IOC_QUERY, &q), cases[i].err);
  }
  check_unchanged();
}

static void test_batch_limits(void) {
  static struct tempo_range many[TEMPO_MAX_RANGES + 1];
  for (int i = 0; i <= TEMPO_MAX_RANGES; i++) many[i] = (struct tempo_range){0, 4096};
  snapshot();
  struct tempo_stage s = stage_arg(many, TEMPO_MAX_RANGES + 1);
  CHECK_ERRNO(ioctl(fd, TEMPO_IOC_STAGE, &s), E2BIG);
  s = stage_arg(many, 0);
  CHECK_ERRNO(ioctl(fd, TEMPO_IOC_STAGE, &s), EINVAL);
  struct tempo_pin p = pin_arg(many, TEMPO_MAX_RANGES + 1);
  CHECK_ERRNO(ioctl(fd, TEMPO_IOC_PIN, &p), E2BIG);
  // A batch touching more extents than the fast tier holds.
  struct tempo_range big = {0, dut.info.fast_bytes + dut.info.extent_bytes};
  s = stage_arg(&big, 1);
  CHECK_ERRNO(ioctl(fd, TEMPO_IOC_STAGE, &s), E2BIG);
  // Ranges in unmapped user memory.
  s = stage_arg((struct tempo_range*)8, 1);
  CHECK_ERRNO(ioctl(fd, TEMPO_IOC_STAGE, &s), EFAULT);
  CHECK_ERRNO(ioctl(fd, TEMPO_IOC_STAGE, (void*)8), EFAULT);
  check_unchanged();
}

static void test_pin_state_errors(void) {
  uint64_t e = dut.info.extent_bytes;
  CHECK_OK(ioctl(fd, TEMPO_IOC_RESET, 0));
  snapshot();
  CHECK_ERRNO(unpin1(fd, 0, e), EINVAL);    // never pinned
  CHECK_ERRNO(pin1(fd, 3 * e, e), EAGAIN);  // not resident
  check_unchanged();
  // Resident but pinned by another fd: still not ours to unpin.
  int other = dev_open();
  struct tempo_completion c;
  CHECK_OK(stage1(other, 0, e, TEMPO_STAGE_F_PIN, 1));
  CHECK(wait_completion(other, &c, 10000) == 0 && c.status == 0, "stage");
  snapshot();
  CHECK_ERRNO(unpin1(fd, 0, e), EINVAL);
  check_unchanged();
  close(other);
}

static void test_pin_limit_and_space(void) {
  const uint64_t e = dut.info.extent_bytes, limit = dut.info.pin_limit_bytes;
  struct tempo_completion c;
  CHECK_OK(ioctl(fd, TEMPO_IOC_RESET, 0));
  // Pin exactly up to the limit, in one batch.
  CHECK_OK(stage1(fd, 0, limit, TEMPO_STAGE_F_PIN, 1));
  CHECK(wait_completion(fd, &c, 20000) == 0 && c.status == 0, "stage to limit: %d", c.status);
  CHECK_OK(stage1(fd, limit, e, 0, 2));
  CHECK(wait_completion(fd, &c, 20000) == 0 && c.status == 0, "stage unpinned");
  snapshot();
  CHECK_ERRNO(pin1(fd, limit, e), EDQUOT);
  CHECK_ERRNO(stage1(fd, limit + e, e, TEMPO_STAGE_F_PIN, 3), EDQUOT);
  // Unpinned room left is fast - limit: a batch needing more has no space.
  uint64_t room = dut.info.fast_bytes - limit;
  CHECK_ERRNO(stage1(fd, limit + e, room + e, 0, 4), ENOSPC);
  check_unchanged();
  CHECK_OK(unpin1(fd, 0, limit));
}

// A fd holds at most 1024 batches in flight or unread; the next is refused until one is read.
static void test_completion_queue_limit(void) {
  const uint64_t e = dut.info.extent_bytes;
  int q = dev_open();
  struct tempo_completion c[64];
  CHECK_OK(stage1(q, 0, e, 0, 0));
  CHECK(wait_completion(q, c, 10000) == 0, "first stage");
  for (int i = 0; i < 1024; i++) {  // resident: each completes at once and stays unread
    if (stage1(q, 0, e, 0, (uint64_t)i)) {
      tfail(__FILE__, __LINE__, "batch %d: %s", i, strerrorname(errno));
      break;
    }
  }
  CHECK_ERRNO(stage1(q, 0, e, 0, 1024), EAGAIN);
  CHECK(read(q, c, sizeof(c[0])) == sizeof(c[0]) && c[0].ticket == 0, "oldest record first");
  CHECK_OK(stage1(q, 0, e, 0, 1025));
  uint64_t records = 1;
  ssize_t n;
  int fl = fcntl(q, F_GETFL);
  CHECK_OK(fcntl(q, F_SETFL, fl | O_NONBLOCK));
  while ((n = read(q, c, sizeof(c))) > 0) records += (uint64_t)n / sizeof(c[0]);
  CHECK(records == 1025, "read %llu records, want 1025", (unsigned long long)records);
  close(q);
}

static void test_read_and_mmap_errors(void) {
  char small[8];
  snapshot();
  CHECK_ERRNO(read(fd, small, sizeof(small)), EINVAL);
  CHECK(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED && errno == EPERM,
        "writable mapping: %s", strerrorname(errno));
  CHECK(mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, (off_t)dut.info.size - 4096) == MAP_FAILED &&
            errno == EINVAL,
        "mapping past the end: %s", strerrorname(errno));
  int e = mprotect_errno(fd, PROT_READ | PROT_WRITE);
  CHECK(e == EACCES, "mprotect to writable: %s", e < 0 ? "no mapping" : strerrorname(e));
  check_unchanged();
}

void tests_badinput(void) {
  fd = dev_open();
  run_test("badinput.unknown_ioctl", test_unknown_ioctl);
  run_test("badinput.reserved_and_flags", test_reserved_and_flags);
  run_test("badinput.bad_ranges", test_bad_ranges);
  run_test("badinput.batch_limits", test_batch_limits);
  run_test("badinput.pin_state_errors", test_pin_state_errors);
  run_test("badinput.pin_limit_and_space", test_pin_limit_and_space);
  run_test("badinput.completion_queue_limit", test_completion_queue_limit);
  run_test("badinput.read_and_mmap_errors", test_read_and_mmap_errors);
  close(fd);
}

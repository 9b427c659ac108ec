// Data read through mmap equals the bytes on the backing disk: after staging, on demand
// through the fault path, and again after eviction.
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vmtest.h"

static const uint8_t* map_all(int fd) {
  void* m = mmap(NULL, dut.info.size, PROT_READ, MAP_SHARED, fd, 0);
  CHECK(m != MAP_FAILED, "mmap: %s", strerrorname(errno));
  return m == MAP_FAILED ? NULL : m;
}

// Compares [off, off + len) of the mapping with an O_DIRECT read of the disk.
static void check_equals_disk(const uint8_t* m, uint64_t off, uint64_t len) {
  void* buf;
  if (posix_memalign(&buf, 4096, len)) {
    tfail(__FILE__, __LINE__, "no memory");
    return;
  }
  CHECK(disk_read(buf, off, len) == 0, "disk read at %llu", (unsigned long long)off);
  const uint64_t *got = (const uint64_t*)(m + off), *want = buf;
  uint64_t i = 0;
  while (i < len / 8 && got[i] == want[i]) i++;
  CHECK(i == len / 8, "mapping differs from disk at %llu: %016llx, disk %016llx",
        (unsigned long long)(off + 8 * i), (unsigned long long)got[i], (unsigned long long)want[i]);
  CHECK(!dut.pattern || pattern_mismatch(buf, off, len) == 0,
        "disk does not hold the pattern at %llu", (unsigned long long)off);
  free(buf);
}

static void test_staged_equals_disk(void) {
  int fd = dev_open();
  const uint64_t e = dut.info.extent_bytes;
  CHECK_OK(ioctl(fd, TEMPO_IOC_RESET, 0));
  struct tempo_range r[3] = {{0, e}, {7 * e + 4096, 2 * e}, {dut.info.size - e, e}};
  CHECK_OK(stage(fd, r, 3, TEMPO_STAGE_F_PIN, 5));
  struct tempo_completion c;
  CHECK(wait_completion(fd, &c, 20000) == 0 && c.status == 0, "stage");
  struct tempo_stats s0 = stats(fd);
  const uint8_t* m = map_all(fd);
  if (!m) return;
  for (int i = 0; i < 3; i++) check_equals_disk(m, r[i].offset, r[i].length);
  struct tempo_stats s1 = stats(fd);
  CHECK(s1.faults > s0.faults && s1.fault_fills == s0.fault_fills,
        "faults %llu fills %llu on staged data", (unsigned long long)(s1.faults - s0.faults),
        (unsigned long long)(s1.fault_fills - s0.fault_fills));
  munmap((void*)m, dut.info.size);
  close(fd);
}

static void test_fault_fill_equals_disk(void) {
  int fd = dev_open();
  const uint64_t e = dut.info.extent_bytes, n = dut.info.size / e;
  CHECK_OK(ioctl(fd, TEMPO_IOC_RESET, 0));
  struct tempo_stats s0 = stats(fd);
  const uint8_t* m = map_all(fd);
  if (!m) return;
  // Walk more extents than the fast tier holds, one page of each, in a scattered order.
  uint64_t touched = 0;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t ext = (i * 7919) % n, off = ext * e + (i % (e / 4096)) * 4096;
    if (disk_mismatch(m + off, off, 4096)) {
      tfail(__FILE__, __LINE__, "page at %llu differs", (unsigned long long)off);
      break;
    }
    touched++;
  }
  struct tempo_stats s1 = stats(fd);
  CHECK(s1.fault_fills - s0.fault_fills == touched, "fault fills %llu for %llu extents",
        (unsigned long long)(s1.fault_fills - s0.fault_fills), (unsigned long long)touched);
  CHECK(s1.fault_bytes - s0.fault_bytes == touched * e, "fault bytes");
  const uint64_t slots = dut.info.fast_bytes / e;
  CHECK(s1.evictions - s0.evictions == (touched > slots ? touched - slots : 0), "evictions %llu",
        (unsigned long long)(s1.evictions - s0.evictions));
  check_equals_disk(m, 3 * e, e);
  munmap((void*)m, dut.info.size);
  close(fd);
}

static void test_refault_after_eviction(void) {
  int fd = dev_open();
  const uint64_t e = dut.info.extent_bytes;
  const uint8_t* m = map_all(fd);
  if (!m) return;
  CHECK_OK(ioctl(fd, TEMPO_IOC_RESET, 0));
  CHECK(disk_mismatch(m + 5 * e, 5 * e, e) == 0, "first read");
  struct tempo_stats s0 = stats(fd);
  CHECK_OK(ioctl(fd, TEMPO_IOC_RESET, 0));  // evicts and unmaps extent 5
  CHECK(query1(fd, 5 * e, e).resident_bytes == 0, "still resident after RESET");
  CHECK(disk_mismatch(m + 5 * e, 5 * e, e) == 0, "read after eviction");
  struct tempo_stats s1 = stats(fd);
  CHECK(s1.fault_fills == s0.fault_fills + 1, "refill count %llu",
        (unsigned long long)(s1.fault_fills - s0.fault_fills));
  // A private read-only mapping sees the same bytes.
  void* p = mmap(NULL, e, PROT_READ, MAP_PRIVATE, fd, (off_t)(9 * e));
  CHECK(p != MAP_FAILED && disk_mismatch(p, 9 * e, e) == 0, "private mapping");
  if (p != MAP_FAILED) munmap(p, e);
  munmap((void*)m, dut.info.size);
  close(fd);
}

void tests_data(void) {
  run_test("data.staged_equals_disk", test_staged_equals_disk);
  run_test("data.fault_fill_equals_disk", test_fault_fill_equals_disk);
  run_test("data.refault_after_eviction", test_refault_after_eviction);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * kstage_driver: issues a known set of tempo.ko operations (STAGE batches, a pin and an
 * unpin, demand faults, a RESET that evicts) on /dev/tempoN and prints, as one JSON object, what it
 * issued and the module's own TEMPO_IOC_STATS differences, for tests/ebpf/vm_kstage.sh to compare
 * with what tempostat and tempomargin counted from the tempo:* tracepoints.
 *
 * Usage: kstage_driver DEVICE BATCHES
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/tempo.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

static int fail(const char* what) {
  fprintf(stderr, "kstage_driver: %s: %s\n", what, strerror(errno));
  return 1;
}

static int wait_completion(int fd, struct tempo_completion* c) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  if (poll(&p, 1, 30000) != 1) return -ETIMEDOUT;
  return read(fd, c, sizeof(*c)) == (ssize_t)sizeof(*c) ? 0 : -EIO;
}

static int pin_call(int fd, unsigned long cmd, uint64_t off, uint64_t len) {
  struct tempo_range r = {.offset = off, .length = len};
  struct tempo_pin p = {.ranges = (uintptr_t)&r, .nr_ranges = 1};
  return ioctl(fd, cmd, &p);
}

int main(int argc, char** argv) {
  struct tempo_stats before, after;
  struct tempo_info info;
  uint64_t stage_bytes = 0, ok = 0, failed = 0, last_off = 0, last_n = 0;
  long batches;
  int fd;

  if (argc != 3 || (batches = atol(argv[2])) < 1) {
    fprintf(stderr, "usage: kstage_driver DEVICE BATCHES\n");
    return 2;
  }
  fd = open(argv[1], O_RDWR | O_CLOEXEC);
  if (fd < 0) return fail(argv[1]);
  if (ioctl(fd, TEMPO_IOC_GET_INFO, &info) || ioctl(fd, TEMPO_IOC_STATS, &before))
    return fail("GET_INFO/STATS");
  const uint64_t e = info.extent_bytes, slots = info.fast_bytes / e;

  /* Batch i stages 1..3 extents somewhere in the first half of the fast tier's worth. */
  for (long i = 0; i < batches; i++) {
    uint64_t n = (uint64_t)(i % 3) + 1, first = ((uint64_t)i * 5) % (slots / 2);
    struct tempo_range r = {.offset = first * e, .length = n * e};
    struct tempo_stage s = {.ranges = (uintptr_t)&r, .nr_ranges = 1, .ticket = (uint64_t)i};
    struct tempo_completion c;

    if (ioctl(fd, TEMPO_IOC_STAGE, &s)) return fail("STAGE");
    if (wait_completion(fd, &c)) return fail("completion");
    stage_bytes += n * e;
    last_off = r.offset;
    last_n = n;
    if (c.status)
      failed++;
    else
      ok++;
  }
  /* The last batch is resident: pin and unpin its extents (one event per extent each). */
  if (pin_call(fd, TEMPO_IOC_PIN, last_off, last_n * e) ||
      pin_call(fd, TEMPO_IOC_UNPIN, last_off, last_n * e))
    return fail("PIN/UNPIN");
  /* Faults past the staged area read the backing device; a second touch is resident. */
  const volatile uint8_t* m = mmap(NULL, info.size, PROT_READ, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return fail("mmap");
  for (uint64_t k = 0; k < 4; k++) {
    uint8_t v = m[(slots + 2 * k) * e + 64];
    v = (uint8_t)(v + m[(slots + 2 * k) * e + 128]);
    (void)v;
  }
  munmap((void*)m, info.size);
  /* RESET evicts every resident extent. */
  if (ioctl(fd, TEMPO_IOC_RESET, 0) || ioctl(fd, TEMPO_IOC_STATS, &after))
    return fail("RESET/STATS");
  printf(
      "{\"batches\":%ld,\"ok\":%llu,\"failed\":%llu,\"stage_bytes\":%llu,\"pins\":%llu,"
      "\"unpins\":%llu,\"faults\":%llu,\"fault_fills\":%llu,\"fault_bytes\":%llu,"
      "\"evictions\":%llu,\"evicted_bytes\":%llu}\n",
      batches, (unsigned long long)ok, (unsigned long long)failed, (unsigned long long)stage_bytes,
      (unsigned long long)last_n, (unsigned long long)last_n,
      (unsigned long long)(after.faults - before.faults),
      (unsigned long long)(after.fault_fills - before.fault_fills),
      (unsigned long long)(after.fault_bytes - before.fault_bytes),
      (unsigned long long)(after.evictions - before.evictions),
      (unsigned long long)(after.evicted_bytes - before.evicted_bytes));
  close(fd);
  return 0;
}

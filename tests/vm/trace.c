// The tempo:* tracepoints fire once per event with the right bytes.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vmtest.h"

#define TRACEFS "/sys/kernel/tracing"

static int write_file(const char* path, const char* s) {
  int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return -errno;
  ssize_t n = write(fd, s, strlen(s));
  close(fd);
  return n == (ssize_t)strlen(s) ? 0 : -EIO;
}

struct event_sum {
  const char* name;
  uint64_t count, bytes;
};

// Counts "name:" lines of the trace buffer and sums their bytes= fields.
static void read_trace(struct event_sum* ev, size_t n) {
  FILE* f = fopen(TRACEFS "/trace", "r");
  char line[512];
  CHECK(f != NULL, "cannot read " TRACEFS "/trace");
  while (f && fgets(line, sizeof(line), f)) {
    for (size_t i = 0; i < n; i++) {
      char key[64];
      snprintf(key, sizeof(key), " %s:", ev[i].name);
      if (!strstr(line, key)) continue;
      ev[i].count++;
      const char* b = strstr(line, "bytes=");
      if (b) ev[i].bytes += strtoull(b + 6, NULL, 10);
    }
  }
  if (f) fclose(f);
}

static void test_event_counts(void) {
  const uint64_t e = dut.info.extent_bytes;
  int fd = dev_open();
  CHECK_OK(ioctl(fd, TEMPO_IOC_RESET, 0));
  if (write_file(TRACEFS "/events/tempo/enable", "1") || write_file(TRACEFS "/trace", "")) {
    tfail(__FILE__, __LINE__, "tracefs not usable at " TRACEFS);
    close(fd);
    return;
  }
  struct tempo_completion c;
  CHECK_OK(stage1(fd, 0, 3 * e, 0, 7));  // 1 submit + 1 complete, 3 extents
  CHECK(wait_completion(fd, &c, 10000) == 0, "stage");
  CHECK_OK(pin1(fd, 0, 2 * e));    // 2 pin events
  CHECK_OK(unpin1(fd, 0, 2 * e));  // 2 unpin events
  const uint8_t* m = mmap(NULL, dut.info.size, PROT_READ, MAP_SHARED, fd, 0);
  CHECK(m != MAP_FAILED, "mmap");
  if (m != MAP_FAILED) {
    volatile uint8_t sink = m[10 * e + 4096];  // fault that fills one extent, maps all of it
    sink = m[10 * e + 8192];                   // mapped by that fault: no second fault
    (void)sink;
    munmap((void*)m, dut.info.size);
  }
  CHECK_OK(ioctl(fd, TEMPO_IOC_RESET, 0));  // evicts extents 0, 1, 2 and 10
  write_file(TRACEFS "/events/tempo/enable", "0");
  struct event_sum ev[] = {
      {"tempo_stage_submit", 0, 0}, {"tempo_stage_complete", 0, 0}, {"tempo_pin", 0, 0},
      {"tempo_unpin", 0, 0},        {"tempo_fault", 0, 0},          {"tempo_evict", 0, 0},
  };
  read_trace(ev, sizeof(ev) / sizeof(ev[0]));
  const uint64_t want[][2] = {{1, 3 * e}, {1, 3 * e}, {2, 2 * e}, {2, 2 * e}, {1, e}, {4, 4 * e}};
  for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++)
    CHECK(ev[i].count == want[i][0] && ev[i].bytes == want[i][1],
          "%s: %llu events, %llu bytes; want %llu, %llu", ev[i].name,
          (unsigned long long)ev[i].count, (unsigned long long)ev[i].bytes,
          (unsigned long long)want[i][0], (unsigned long long)want[i][1]);
  close(fd);
}

void tests_trace(void) { run_test("trace.event_counts", test_event_counts); }

// Guest-side test helpers for tempo.ko: a tiny PASS/FAIL harness, the disk pattern,
// and thin ioctl wrappers. Every test prints one line, "PASS name" or "FAIL name: why";
// the guest init counts them into "N passed, N failed".
#pragma once

#include <errno.h>
#include <linux/tempo.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

// The backing disk holds pattern_word(i) at byte offset 8 * i (little endian).
static inline uint64_t pattern_word(uint64_t i) {
  uint64_t z = i + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Per-test failure state: the first failure's message is kept.
struct tcase {
  const char* name;
  int failed;
  char why[256];
};

extern struct tcase* cur;

void tfail(const char* file, int line, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

#define CHECK(cond, ...)                                 \
  do {                                                   \
    if (!(cond)) tfail(__FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
// An ioctl-style call that must fail with errno `e` (returns -1).
#define CHECK_ERRNO(call, e)                                                                  \
  do {                                                                                        \
    errno = 0;                                                                                \
    long r_ = (long)(call);                                                                   \
    int e_ = errno;                                                                           \
    if (r_ != -1 || e_ != (e))                                                                \
      tfail(__FILE__, __LINE__, "%s: got %ld errno %s, want %s", #call, r_, strerrorname(e_), \
            strerrorname(e));                                                                 \
  } while (0)
#define CHECK_OK(call)                                                                             \
  do {                                                                                             \
    errno = 0;                                                                                     \
    long r_ = (long)(call);                                                                        \
    if (r_ < 0) tfail(__FILE__, __LINE__, "%s: got %ld errno %s", #call, r_, strerrorname(errno)); \
  } while (0)

const char* strerrorname(int e);

// Runs fn as test `name` and prints its PASS/FAIL line.
void run_test(const char* name, void (*fn)(void));

// The device under test.
struct dut {
  const char* path;
  const char* disk;  // the backing block device, read with O_DIRECT to compare
  bool pattern;      // the disk holds pattern_word() (the VM's disk), not someone's data
  struct tempo_info info;
};
extern struct dut dut;

int dev_open(void);
int stage(int fd, const struct tempo_range* r, uint32_t n, uint32_t flags, uint64_t ticket);
int stage1(int fd, uint64_t off, uint64_t len, uint32_t flags, uint64_t ticket);
int pin1(int fd, uint64_t off, uint64_t len);
int unpin1(int fd, uint64_t off, uint64_t len);
struct tempo_query query1(int fd, uint64_t off, uint64_t len);
struct tempo_stats stats(int fd);
// STATS once no batch is in flight (up to 10 s: TCG on a loaded host is slow). A batch's
// record is queued under the same lock that counts it finished, so its record is there too.
struct tempo_stats settled_stats(int fd);
// Waits (poll) for one completion; returns 0 or -errno.
int wait_completion(int fd, struct tempo_completion* c, int timeout_ms);
// Bytes of the pattern at [off, off + len) in `buf` that differ from the disk pattern.
uint64_t pattern_mismatch(const void* buf, uint64_t off, uint64_t len);
// Reads [off, off + len) of the backing disk with O_DIRECT into buf (page aligned).
int disk_read(void* buf, uint64_t off, uint64_t len);
// Bytes of mem that differ from [off, off + len) of the backing disk (len on a read error).
uint64_t disk_mismatch(const void* mem, uint64_t off, uint64_t len);
uint64_t meminfo_kb(const char* field);
// Maps the device's first page read-only and changes it to prot: mprotect's errno, 0 when
// it succeeded, -1 when the page could not be mapped.
int mprotect_errno(int fd, int prot);
// Staging bandwidth: stages `bytes` from offset 0 in fast-tier-sized batches.
int stage_bench(uint64_t bytes);
// Seconds of CLOCK_MONOTONIC.
double now_s(void);
// Another fd's STATS, called every period_us on a thread of its own while a test works:
// how long the slowest one waited.
struct stats_probe {
  int fd;
  unsigned period_us;
  volatile int stop;
  double worst;
  pthread_t thread;
};
void stats_probe_start(struct stats_probe* p, unsigned period_us);
double stats_probe_stop(struct stats_probe* p);

// Test groups (one file each).
void tests_api(void);
void tests_badinput(void);
void tests_data(void);
void tests_fdclose(void);
void tests_concurrency(void);
void tests_trace(void);
void tests_events(void);
void tests_hostile(void);
void tests_slow(void);
void tests_huge(void);
void tests_fdlimit(void);
void tests_memcg(void);
void tests_fuzz(void);
void tests_fanout(void);

// tempo-vmtest teardown (teardown.c).
int teardown_main(const char* name, const char* dev, const char* disk, char** cmd);

// The slow test disk (init.sh): reads in this range fail with EIO.
#define SLOW_BAD_OFFSET (4ULL << 20)
#define SLOW_BAD_BYTES (256ULL << 10)

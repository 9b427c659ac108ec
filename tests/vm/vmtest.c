// tempo-vmtest: the guest suite for tempo.ko.
//   tempo-vmtest mkimage FILE BYTES            write the pattern disk image (runs on the host)
//   tempo-vmtest run [-p] DEV DISK GROUP...    run test groups against DEV backed by DISK
//                                              (-p: DISK holds the mkimage pattern)
//   tempo-vmtest bench DEV DISK BYTES          staging bandwidth over the first BYTES
//   tempo-vmtest stage-exit DEV OFFSET LENGTH  stage a range and exit without waiting
//   tempo-vmtest daxhold DAXDEV BYTES READY    use a dax device as another program would
//   tempo-vmtest teardown NAME DEV DISK CMD... run CMD (a teardown of the DAX tier's namespace
//                                              or region) under load (teardown.c)
// Groups: api badinput data fdclose concurrency trace events hostile slow huge fdlimit fuzz
// memcg fanout (TEMPO_VMTEST_ONLY=name,name... runs only the tests named).
// Nothing writes to DISK.
#define _GNU_SOURCE
#include "vmtest.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

struct tcase* cur;
struct dut dut;

const char* strerrorname(int e) {
  const char* s = strerrorname_np(e);
  return s ? s : "0";
}

void tfail(const char* file, int line, const char* fmt, ...) {
  if (cur->failed++) return;
  int n = snprintf(cur->why, sizeof(cur->why), "%s:%d: ", file, line);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cur->why + n, sizeof(cur->why) - (size_t)n, fmt, ap);
  va_end(ap);
}

// TEMPO_VMTEST_ONLY (a comma-separated list of test names) runs only those tests.
static bool selected(const char* name) {
  const char* only = getenv("TEMPO_VMTEST_ONLY");
  const size_t n = strlen(name);
  for (const char* p = only; p && *p; p += strcspn(p, ","), p += *p == ',')
    if (!strncmp(p, name, n) && (p[n] == ',' || p[n] == '\0')) return true;
  return !only;
}

void run_test(const char* name, void (*fn)(void)) {
  if (!selected(name)) return;
  struct tcase t = {.name = name};
  cur = &t;
  fn();
  if (t.failed)
    printf("FAIL %s: %s\n", name, t.why);
  else
    printf("PASS %s\n", name);
  fflush(stdout);
}

int dev_open(void) {
  int fd = open(dut.path, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    fprintf(stderr, "open %s: %s\n", dut.path, strerror(errno));
    exit(2);
  }
  return fd;
}

int stage(int fd, const struct tempo_range* r, uint32_t n, uint32_t flags, uint64_t ticket) {
  struct tempo_stage s = {.ranges = (uintptr_t)r, .nr_ranges = n, .flags = flags, .ticket = ticket};
  return ioctl(fd, TEMPO_IOC_STAGE, &s);
}

int stage1(int fd, uint64_t off, uint64_t len, uint32_t flags, uint64_t ticket) {
  struct tempo_range r = {off, len};
  return stage(fd, &r, 1, flags, ticket);
}

static int pin_call(int fd, unsigned long cmd, uint64_t off, uint64_t len) {
  struct tempo_range r = {off, len};
  struct tempo_pin p = {.ranges = (uintptr_t)&r, .nr_ranges = 1};
  return ioctl(fd, cmd, &p);
}

int pin1(int fd, uint64_t off, uint64_t len) { return pin_call(fd, TEMPO_IOC_PIN, off, len); }
int unpin1(int fd, uint64_t off, uint64_t len) { return pin_call(fd, TEMPO_IOC_UNPIN, off, len); }

struct tempo_query query1(int fd, uint64_t off, uint64_t len) {
  struct tempo_query q = {.offset = off, .length = len};
  if (ioctl(fd, TEMPO_IOC_QUERY, &q)) tfail(__FILE__, __LINE__, "QUERY: %s", strerrorname(errno));
  return q;
}

struct tempo_stats stats(int fd) {
  struct tempo_stats s;
  memset(&s, 0, sizeof(s));
  if (ioctl(fd, TEMPO_IOC_STATS, &s)) tfail(__FILE__, __LINE__, "STATS: %s", strerrorname(errno));
  return s;
}

struct tempo_stats settled_stats(int fd) {
  struct tempo_stats s = stats(fd);
  for (int i = 0; i < 200 && s.inflight_batches; i++) {
    usleep(50000);
    s = stats(fd);
  }
  return s;
}

int wait_completion(int fd, struct tempo_completion* c, int timeout_ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  int r = poll(&p, 1, timeout_ms);
  if (r < 0) return -errno;
  if (r == 0) return -ETIMEDOUT;
  ssize_t n = read(fd, c, sizeof(*c));
  if (n < 0) return -errno;
  return n == (ssize_t)sizeof(*c) ? 0 : -EIO;
}

uint64_t pattern_mismatch(const void* buf, uint64_t off, uint64_t len) {
  const uint64_t* w = buf;
  uint64_t bad = 0;
  for (uint64_t i = 0; i < len / 8; i++)
    if (w[i] != pattern_word(off / 8 + i)) bad += 8;
  return bad;
}

int disk_read(void* buf, uint64_t off, uint64_t len) {
  int fd = open(dut.disk, O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (fd < 0) return -errno;
  ssize_t n = pread(fd, buf, len, (off_t)off);
  int e = errno;
  close(fd);
  if (n < 0) return -e;
  return (uint64_t)n == len ? 0 : -EIO;
}

uint64_t disk_mismatch(const void* mem, uint64_t off, uint64_t len) {
  void* buf;
  if (posix_memalign(&buf, 4096, len)) return len;
  uint64_t bad = len;
  if (disk_read(buf, off, len) == 0) {
    const uint8_t *a = mem, *b = buf;
    bad = 0;
    for (uint64_t i = 0; i < len; i++) bad += a[i] != b[i];
  }
  free(buf);
  return bad;
}

int mprotect_errno(int fd, int prot) {
  void* m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return -1;
  int e = mprotect(m, 4096, prot) ? errno : 0;
  munmap(m, 4096);
  return e;
}

double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void* stats_probe_main(void* arg) {
  struct stats_probe* p = arg;
  struct tempo_stats s;
  while (!p->stop) {
    double a = now_s();
    ioctl(p->fd, TEMPO_IOC_STATS, &s);
    double d = now_s() - a;
    if (d > p->worst) p->worst = d;
    usleep(p->period_us);
  }
  return NULL;
}

void stats_probe_start(struct stats_probe* p, unsigned period_us) {
  *p = (struct stats_probe){.fd = dev_open(), .period_us = period_us};
  pthread_create(&p->thread, NULL, stats_probe_main, p);
}

double stats_probe_stop(struct stats_probe* p) {
  p->stop = 1;
  pthread_join(p->thread, NULL);
  close(p->fd);
  return p->worst;
}

uint64_t meminfo_kb(const char* field) {
  FILE* f = fopen("/proc/meminfo", "r");
  char line[256];
  uint64_t v = 0;
  size_t n = strlen(field);
  while (f && fgets(line, sizeof(line), f))
    if (!strncmp(line, field, n) && line[n] == ':') v = strtoull(line + n + 1, NULL, 10);
  if (f) fclose(f);
  return v;
}

static int mkimage(const char* path, uint64_t bytes) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return perror(path), 1;
  enum { kChunk = 1 << 20 };
  static uint64_t buf[kChunk / 8];
  for (uint64_t off = 0; off < bytes; off += kChunk) {
    for (uint64_t i = 0; i < kChunk / 8; i++) buf[i] = pattern_word(off / 8 + i);
    if (write(fd, buf, kChunk) != kChunk) return perror(path), 1;
  }
  return close(fd) ? 1 : 0;
}

// Built against the uapi of the module before issue 18 too (`make vm-test-before`), which
// lacks the record stream: the groups that need it are left out there.
static const struct {
  const char* name;
  void (*fn)(void);
} kGroups[] = {
#ifdef TEMPO_IOC_SET_EVENTS
    {"api", tests_api},           {"events", tests_events},
    {"fuzz", tests_fuzz},         {"fanout", tests_fanout},
#endif
    {"badinput", tests_badinput}, {"data", tests_data},
    {"fdclose", tests_fdclose},   {"concurrency", tests_concurrency},
    {"trace", tests_trace},       {"hostile", tests_hostile},
    {"slow", tests_slow},         {"huge", tests_huge},
    {"fdlimit", tests_fdlimit},   {"memcg", tests_memcg},
};

int stage_bench(uint64_t bytes) {
  int fd = dev_open();
  const uint64_t chunk = dut.info.fast_bytes / 2;
  uint64_t read_bytes = 0, ns = 0;
  if (ioctl(fd, TEMPO_IOC_RESET, 0)) return perror("RESET"), 1;
  bytes = bytes < dut.info.size ? bytes : dut.info.size;
  for (uint64_t off = 0; off < bytes; off += chunk) {
    struct tempo_completion c;
    uint64_t len = bytes - off < chunk ? bytes - off : chunk;
    if (stage1(fd, off, (len + 4095) / 4096 * 4096, 0, off) || wait_completion(fd, &c, 60000) ||
        c.status)
      return fprintf(stderr, "stage at %llu failed\n", (unsigned long long)off), 1;
    read_bytes += c.read_bytes;
    ns += c.complete_ns - c.submit_ns;
  }
  close(fd);
  printf("stage_bytes=%llu stage_ns=%llu stage_mibps=%.1f\n", (unsigned long long)read_bytes,
         (unsigned long long)ns, ns ? (double)read_bytes / (1 << 20) / ((double)ns / 1e9) : 0.0);
  return 0;
}

// Another user of a dax device: maps BYTES of it, writes its own data (the disk's pattern
// inverted, so staging the disk into the range cannot look like it), creates READY, waits
// for SIGTERM, then exits 0 only if every byte it wrote is still there.
static volatile sig_atomic_t stop_hold;
static void on_term(int sig) { stop_hold = sig; }

static int dax_hold(const char* path, const char* bytes_s, const char* ready) {
  const uint64_t bytes = strtoull(bytes_s, 0, 0);
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return perror(path), 2;
  uint64_t* m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return perror("mmap"), 2;
  for (uint64_t i = 0; i < bytes / 8; i++) m[i] = ~pattern_word(i);
  signal(SIGTERM, on_term);
  int r = open(ready, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (r < 0) return perror(ready), 2;
  close(r);
  while (!stop_hold) pause();
  uint64_t bad = 0;
  for (uint64_t i = 0; i < bytes / 8; i++) bad += m[i] != ~pattern_word(i);
  if (bad) fprintf(stderr, "daxhold: %llu words changed\n", (unsigned long long)bad);
  return bad ? 1 : 0;
}

// Stages [off, off + len) and exits without waiting: the fill outlives the fd.
static int stage_exit(const char* path, const char* off, const char* len) {
  dut.path = path;
  int fd = dev_open();
  if (stage1(fd, strtoull(off, 0, 0), strtoull(len, 0, 0), 0, 0)) return perror("STAGE"), 1;
  return 0;
}

static int usage(const char* argv0) {
  fprintf(stderr,
          "usage: %s mkimage FILE BYTES | run [-p] DEV DISK GROUP... | bench DEV DISK BYTES | "
          "stage-exit DEV OFFSET LENGTH | daxhold DAXDEV BYTES READY | "
          "teardown NAME DEV DISK CMD...\n",
          argv0);
  return 2;
}

int main(int argc, char** argv) {
  if (argc == 4 && !strcmp(argv[1], "mkimage")) return mkimage(argv[2], strtoull(argv[3], 0, 0));
  if (argc == 5 && !strcmp(argv[1], "stage-exit")) return stage_exit(argv[2], argv[3], argv[4]);
  if (argc == 5 && !strcmp(argv[1], "daxhold")) return dax_hold(argv[2], argv[3], argv[4]);
  if (argc >= 6 && !strcmp(argv[1], "teardown"))
    return teardown_main(argv[2], argv[3], argv[4], argv + 5);
  if (argc < 2) return usage(argv[0]);
  int a = 2;
  const bool bench = !strcmp(argv[1], "bench");
  if (!bench && strcmp(argv[1], "run")) return usage(argv[0]);
  if (!bench && a < argc && !strcmp(argv[a], "-p")) {
    dut.pattern = true;
    a++;
  }
  if (argc - a < 3) return usage(argv[0]);
  dut.path = argv[a++];
  dut.disk = argv[a++];
  int fd = dev_open();
  if (ioctl(fd, TEMPO_IOC_GET_INFO, &dut.info)) return perror("GET_INFO"), 2;
  close(fd);
  if (bench) return stage_bench(strtoull(argv[a], 0, 0));
  for (; a < argc; a++) {
    size_t g = 0;
    while (g < sizeof(kGroups) / sizeof(kGroups[0]) && strcmp(kGroups[g].name, argv[a])) g++;
    if (g == sizeof(kGroups) / sizeof(kGroups[0])) {
      printf("FAIL %s: no such test group\n", argv[a]);
      continue;
    }
    kGroups[g].fn();
  }
  return 0;
}

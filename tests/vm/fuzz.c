// A bounded-time ioctl fuzzer with concurrent races: threads throw random and neighbouring
// command numbers and sizes, garbage structs and bad pointers (NULL, kernel, unmapped,
// misaligned, read-only, the device's own mapping) at every entry point, while others
// stage, pin, unpin, reset, subscribe, read, fault, remap and close fds other threads are
// using, and children holding pins are SIGKILLed. Afterwards nothing may be left: no pin,
// no batch in flight. The caller checks dmesg and rmmod (init.sh).
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vmtest.h"

enum { kThreads = 8, kFds = 4 };

static int fds[kFds];  // shared: any thread may close and reopen any of them
static uint8_t* ro_page;
static const uint8_t* devmap;
static volatile int stop;
static uint64_t ops[kThreads];

static uint64_t rnd(uint64_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

// A pointer a fuzzed struct may carry: valid, NULL, kernel, unmapped, misaligned, read-only
// or into the device mapping.
static void* bad_ptr(uint64_t* s, void* valid) {
  switch (rnd(s) % 7) {
    case 0:
      return NULL;
    case 1:
      return (void*)0xffff888000000000ULL;
    case 2:
      return (void*)0x10;
    case 3:
      return (char*)valid + 1;
    case 4:
      return ro_page;
    case 5:
      return (void*)devmap;
    default:
      return valid;
  }
}

static void fill_garbage(uint64_t* s, void* p, size_t n) {
  uint8_t* b = p;
  for (size_t i = 0; i < n; i++) b[i] = (uint8_t)rnd(s);
}

// A range that is valid, or off by a little in one of the ways the kernel must refuse.
static struct tempo_range fuzz_range(uint64_t* s) {
  const uint64_t e = dut.info.extent_bytes, n = dut.info.size / e;
  struct tempo_range r = {(rnd(s) % n) * e, (1 + rnd(s) % 4) * e};
  switch (rnd(s) % 8) {
    case 0:
      r.offset += 1;
      break;
    case 1:
      r.length = 0;
      break;
    case 2:
      r.length = UINT64_MAX - 4095;
      break;
    case 3:
      r.offset = dut.info.size;
      break;
    default:
      if (r.offset + r.length > dut.info.size) r.length = dut.info.size - r.offset;
  }
  return r;
}

// Every shared fd is non-blocking from its open: a read racing a close and reopen of the
// same fd number must not block after the run stops (a blocked reader hung the join).
static int fuzz_open(void) { return open(dut.path, O_RDWR | O_CLOEXEC | O_NONBLOCK); }

static void fuzz_ioctl(uint64_t* s, int fd) {
  static const unsigned long cmds[] = {
      TEMPO_IOC_GET_INFO, TEMPO_IOC_GET_FEATURES, TEMPO_IOC_STAGE, TEMPO_IOC_PIN,
      TEMPO_IOC_UNPIN,    TEMPO_IOC_QUERY,        TEMPO_IOC_STATS, TEMPO_IOC_SET_EVENTS,
  };
  union {
    struct tempo_stage st;
    struct tempo_pin pin;
    struct tempo_query q;
    struct tempo_events ev;
    uint8_t raw[256];
  } arg;
  struct tempo_range ranges[8];
  uint32_t nr = 1 + (uint32_t)(rnd(s) % 8);
  for (uint32_t i = 0; i < nr; i++) ranges[i] = fuzz_range(s);
  unsigned long cmd = cmds[rnd(s) % (sizeof(cmds) / sizeof(cmds[0]))];
  memset(&arg, 0, sizeof(arg));
  switch (rnd(s) % 6) {
    case 0:  // neighbouring number or size
      cmd = _IOC(_IOC_DIR(cmd) ^ (rnd(s) % 4), TEMPO_IOC_MAGIC, rnd(s) % 16, rnd(s) % 256);
      fill_garbage(s, &arg, sizeof(arg));
      break;
    case 1:
      fill_garbage(s, &arg, sizeof(arg));
      break;
    default:  // well formed, with fuzzed ranges, flags and pointers
      arg.st.ranges = (uintptr_t)bad_ptr(s, ranges);
      arg.st.nr_ranges = rnd(s) % 16 ? nr : (uint32_t)rnd(s);
      arg.st.flags = rnd(s) % 8 ? (uint32_t)(rnd(s) % 2) : (uint32_t)rnd(s);
      arg.st.ticket = rnd(s);
      if (cmd == TEMPO_IOC_QUERY)
        arg.q = (struct tempo_query){.offset = ranges[0].offset, .length = ranges[0].length};
      if (cmd == TEMPO_IOC_SET_EVENTS)
        arg.ev = (struct tempo_events){.mask = (uint32_t)(rnd(s) % 3)};
  }
  ioctl(fd, cmd, rnd(s) % 8 ? (void*)&arg : bad_ptr(s, &arg));
  if (rnd(s) % 64 == 0) ioctl(fd, TEMPO_IOC_RESET, rnd(s) % 4 ? 0 : rnd(s));
}

static void fuzz_other(uint64_t* s, int slot) {
  int fd = fds[slot];
  struct tempo_completion c[4];
  switch (rnd(s) % 10) {
    case 0: {  // close a fd another thread may be using, then reopen it
      int nfd = fuzz_open();
      int old = __atomic_exchange_n(&fds[slot], nfd, __ATOMIC_SEQ_CST);
      if (old >= 0) close(old);
      break;
    }
    case 1: {
      ssize_t n = read(fd, rnd(s) % 4 ? (void*)c : bad_ptr(s, c), rnd(s) % (sizeof(c) + 8));
      (void)n;
      break;
    }
    case 2: {
      struct pollfd p = {.fd = fd, .events = POLLIN};
      poll(&p, 1, 0);
      break;
    }
    case 3: {  // a mapping: fault a page, mprotect, unmap
      const uint64_t e = dut.info.extent_bytes, off = (rnd(s) % (dut.info.size / e)) * e;
      uint8_t* m = mmap(NULL, e, PROT_READ, MAP_SHARED, fd, (off_t)off);
      if (m == MAP_FAILED) break;
      volatile uint8_t v = m[(rnd(s) % (e / 4096)) * 4096];
      (void)v;
      mprotect(m, e, PROT_READ | (rnd(s) % 2 ? PROT_WRITE : PROT_EXEC));
      munmap(m, e);
      break;
    }
    case 4: {  // a child that pins and stages, killed mid-flight
      if (rnd(s) % 8) break;
      pid_t pid = fork();
      if (pid == 0) {
        int cfd = open(dut.path, O_RDWR | O_CLOEXEC);
        uint64_t cs = *s + 1;
        for (int i = 0; i < 64; i++) fuzz_ioctl(&cs, cfd);
        pause();
        _exit(0);
      }
      usleep((useconds_t)(rnd(s) % 2000));
      kill(pid, SIGKILL);
      waitpid(pid, NULL, 0);
      break;
    }
    default:
      fuzz_ioctl(s, fd);
  }
}

static void* fuzz_main(void* arg) {
  int id = (int)(intptr_t)arg;
  uint64_t s = 0x9e3779b97f4a7c15ULL * (uint64_t)(id + 1);
  while (!stop) {
    fuzz_other(&s, (int)(rnd(&s) % kFds));
    ops[id]++;
  }
  return NULL;
}

static void test_fuzz(void) {
  const char* env = getenv("TEMPO_FUZZ_SECONDS");
  const int seconds = env ? atoi(env) : 20;
  long pg = sysconf(_SC_PAGESIZE);
  ro_page = mmap(NULL, (size_t)pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  int mfd = dev_open();
  devmap = mmap(NULL, dut.info.size, PROT_READ, MAP_SHARED, mfd, 0);
  CHECK(ro_page != MAP_FAILED && devmap != MAP_FAILED, "setup mappings");
  for (int i = 0; i < kFds; i++) {
    fds[i] = fuzz_open();
    CHECK(fds[i] >= 0, "open %s: %s", dut.path, strerror(errno));
  }
  signal(SIGPIPE, SIG_IGN);
  pthread_t t[kThreads];
  for (int i = 0; i < kThreads; i++) pthread_create(&t[i], NULL, fuzz_main, (void*)(intptr_t)i);
  sleep((unsigned)seconds);
  stop = 1;
  uint64_t total = 0;
  for (int i = 0; i < kThreads; i++) {
    pthread_join(t[i], NULL);
    total += ops[i];
  }
  for (int i = 0; i < kFds; i++) close(fds[i]);
  munmap((void*)devmap, dut.info.size);
  // Every fd but mfd is closed: once the fills of dead fds end, nothing may be left.
  struct tempo_stats st = stats(mfd);
  for (int i = 0; i < 400 && st.inflight_batches; i++) {
    usleep(50000);
    st = stats(mfd);
  }
  CHECK(st.pins == 0 && st.pinned_bytes == 0 && st.inflight_batches == 0 && st.filling_bytes == 0,
        "left: pins %llu pinned %llu inflight %llu filling %llu", (unsigned long long)st.pins,
        (unsigned long long)st.pinned_bytes, (unsigned long long)st.inflight_batches,
        (unsigned long long)st.filling_bytes);
  CHECK(total > 1000, "only %llu operations", (unsigned long long)total);
  printf("# fuzz: %d threads x %d s, %llu operations, %llu batches, %llu evictions\n", kThreads,
         seconds, (unsigned long long)total, (unsigned long long)st.stage_batches,
         (unsigned long long)st.evictions);
  close(mfd);
}

void tests_fuzz(void) { run_test("fuzz.ioctl_races", test_fuzz); }

// tempo-vmtest teardown NAME DEV DISK CMD [ARG...]: the namespace or region under a loaded
// DAX tier torn down by CMD while the tier works. Two threads stage one extent at a time
// (F_PIN), check a sample of its bytes through the device mapping against the disk's
// pattern and unpin; a third reads extents through the mapping without staging (faults).
// Once all three got data, CMD runs; the load goes on meanwhile and for a second after.
// Then every kind of access is tried once more. Prints:
//   NAME.no_wrong_bytes    no byte read, before, during or after, differed from the disk
//   NAME.refused_or_ended  CMD failed and the tier still works, or CMD succeeded and every
//                          later access fails: ioctls, read() and open() with EIO, a load
//                          from the mapping with SIGBUS
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vmtest.h"

enum { kStagers = 2, kThreads = kStagers + 1, kSampleWords = 512 };

static const volatile uint64_t* map;
static volatile int stop;

struct loader {
  unsigned seed;
  int fd;
  bool faulter;
  uint64_t good;    // rounds whose bytes matched
  uint64_t bad;     // words that differed from the disk
  uint64_t fails;   // accesses that failed (an errno or SIGBUS)
  int first_errno;  // of the first failure; -SIGBUS for a signal
};

// where a SIGBUS of this thread's mapping loads returns to (volatile: set around the loads)
static __thread sigjmp_buf* volatile bus_jmp;

static void on_bus(int sig) {
  if (bus_jmp) siglongjmp(*bus_jmp, 1);
  signal(sig, SIG_DFL);
  raise(sig);
}

// Words of a sample of extent ext (one in kSampleWords, and the last) that differ from
// the disk, read through the mapping; -1 on SIGBUS.
static long sample_mismatch(uint64_t ext) {
  const uint64_t e = dut.info.extent_bytes, first = ext * e / 8, words = e / 8;
  sigjmp_buf jb;
  if (sigsetjmp(jb, 1)) {
    bus_jmp = NULL;
    return -1;
  }
  bus_jmp = &jb;
  long bad = 0;
  for (uint64_t i = 0; i < words; i += kSampleWords)
    bad += map[first + i] != pattern_word(first + i);
  bad += map[first + words - 1] != pattern_word(first + words - 1);
  bus_jmp = NULL;
  return bad;
}

static void failed(struct loader* l, int e) {
  if (!l->fails++) l->first_errno = e;
}

// One round: stage and pin an extent, check its bytes, unpin (a stager); or read an
// extent through the mapping, which faults it in (the faulter).
static void round_once(struct loader* l) {
  const uint64_t e = dut.info.extent_bytes, ext = rand_r(&l->seed) % (dut.info.size / e);
  if (!l->faulter) {
    struct tempo_completion c;
    if (stage1(l->fd, ext * e, e, TEMPO_STAGE_F_PIN, ext)) {
      failed(l, errno);
      return;
    }
    int w = wait_completion(l->fd, &c, 60000);
    if (w || c.status) {
      failed(l, w ? -w : -c.status);
      return;
    }
  }
  long bad = sample_mismatch(ext);
  if (bad < 0)
    failed(l, -SIGBUS);
  else if (bad)
    l->bad += (uint64_t)bad;
  else
    l->good++;
  if (!l->faulter && unpin1(l->fd, ext * e, e)) failed(l, errno);
}

static void* loader_main(void* arg) {
  struct loader* l = arg;
  while (!stop) round_once(l);
  return NULL;
}

// Runs argv, its output into the console as comments; its exit status (-1: not run).
static int run_cmd(char** argv) {
  const char* log = "/tmp/teardown-cmd.log";
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execvp(argv[0], argv);
    _exit(127);
  }
  int status = -1;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) return -1;
  FILE* f = fopen(log, "r");
  char line[256];
  while (f && fgets(line, sizeof(line), f)) printf("#   %s", line);
  if (f) fclose(f);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// After CMD: what each kind of access gets now (0: it worked).
struct after {
  int stage, query, stats, rd, load, open_, mmap_;
};

static struct after try_everything(int fd) {
  const uint64_t e = dut.info.extent_bytes;
  struct after a = {0};
  struct tempo_completion c;
  struct tempo_query q = {.offset = 0, .length = e};
  struct tempo_stats s;
  if (stage1(fd, 0, e, 0, 1))
    a.stage = errno;
  else if (wait_completion(fd, &c, 60000) || c.status)
    a.stage = c.status ? -c.status : ETIMEDOUT;
  a.query = ioctl(fd, TEMPO_IOC_QUERY, &q) ? errno : 0;
  a.stats = ioctl(fd, TEMPO_IOC_STATS, &s) ? errno : 0;
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  a.rd = read(fd, &c, sizeof(c)) < 0 && errno != EAGAIN ? errno : 0;
  long bad = sample_mismatch(0);
  a.load = bad < 0 ? SIGBUS : bad ? -1 : 0;
  int other = open(dut.path, O_RDWR | O_CLOEXEC);
  a.open_ = other < 0 ? errno : 0;
  if (other >= 0) close(other);
  void* m = mmap(NULL, e, PROT_READ, MAP_SHARED, fd, 0);
  a.mmap_ = m == MAP_FAILED ? errno : 0;
  if (m != MAP_FAILED) munmap(m, e);
  return a;
}

int teardown_main(const char* name, const char* dev, const char* disk, char** cmd) {
  setvbuf(stdout, NULL, _IOLBF, 0);  // every line reaches the console, whatever happens
  dut.path = dev;
  dut.disk = disk;
  dut.pattern = true;
  int fd = dev_open();
  if (ioctl(fd, TEMPO_IOC_GET_INFO, &dut.info)) return perror("GET_INFO"), 2;
  map = mmap(NULL, dut.info.size, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return perror("mmap"), 2;
  struct sigaction sa = {.sa_handler = on_bus};
  sigaction(SIGBUS, &sa, NULL);

  struct loader l[kThreads];
  pthread_t t[kThreads];
  for (int i = 0; i < kThreads; i++) {
    l[i] =
        (struct loader){.seed = 17u * (unsigned)i + 1, .fd = dev_open(), .faulter = i >= kStagers};
    pthread_create(&t[i], NULL, loader_main, &l[i]);
  }
  // Every loader got data at least twice, so the load is on when CMD runs.
  bool ready = false;
  for (double t0 = now_s(); !ready && now_s() - t0 < 120; usleep(100000)) {
    ready = true;
    for (int i = 0; i < kThreads; i++) ready = ready && l[i].good >= 2;
  }
  uint64_t good_before = 0, fails_before = 0;
  for (int i = 0; i < kThreads; i++) good_before += l[i].good, fails_before += l[i].fails;
  const int status = ready ? run_cmd(cmd) : -1;
  sleep(1);
  stop = 1;
  for (int i = 0; i < kThreads; i++) pthread_join(t[i], NULL);
  uint64_t good = 0, bad = 0, fails = 0;
  int first_errno = 0;
  for (int i = 0; i < kThreads; i++) {
    good += l[i].good;
    bad += l[i].bad;
    fails += l[i].fails;
    if (!first_errno) first_errno = l[i].first_errno;
    close(l[i].fd);
  }
  const struct after a = try_everything(fd);
  printf(
      "# %s: %s exit %d; %llu good rounds before it (%llu failed), %llu in all; "
      "%llu failed accesses (first: %s), %llu wrong words\n",
      name, cmd[0], status, (unsigned long long)good_before, (unsigned long long)fails_before,
      (unsigned long long)good, (unsigned long long)fails,
      first_errno == -SIGBUS ? "SIGBUS" : strerrorname(first_errno), (unsigned long long)bad);
  printf("# %s: then STAGE %s, QUERY %s, STATS %s, read %s, load %s, open %s, mmap %s\n", name,
         strerrorname(a.stage), strerrorname(a.query), strerrorname(a.stats), strerrorname(a.rd),
         a.load == SIGBUS ? "SIGBUS"
         : a.load         ? "wrong bytes"
                          : "ok",
         strerrorname(a.open_), strerrorname(a.mmap_));

  printf("%s %s.no_wrong_bytes", bad || a.load < 0 ? "FAIL" : "PASS", name);
  if (bad || a.load < 0) printf(": %llu words differed from the disk", (unsigned long long)bad);
  printf("\n");
  const bool refused = status > 0 && !fails && !a.stage && !a.query && !a.stats && !a.rd &&
                       !a.load && !a.open_ && !a.mmap_;
  const bool ended = status == 0 && a.stage == EIO && a.query == EIO && a.stats == EIO &&
                     a.rd == EIO && a.load == SIGBUS && a.open_ == EIO && a.mmap_ == EIO;
  if (refused || ended)
    printf("PASS %s.refused_or_ended\n", name);
  else if (!ready)
    printf("FAIL %s.refused_or_ended: the load never got data (%llu good rounds)\n", name,
           (unsigned long long)good);
  else
    printf("FAIL %s.refused_or_ended: `%s` exit %d, and the tier %s\n", name, cmd[0], status,
           status == 0 ? "still serves (or fails only in part)" : "fails");
  fflush(stdout);
  munmap((void*)map, dut.info.size);
  close(fd);
  return 0;
}

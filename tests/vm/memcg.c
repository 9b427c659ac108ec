// Group memcg: the kernel memory an fd's unread completions keep is charged to the caller's
// memory cgroup (__GFP_ACCOUNT). A process alone in a cgroup v2 group queues 8 fds x 1024
// unread completions: the group's memory.current rises by about what the kernel's
// unreclaimable slab rose. With memory.max just above that, more queuing fails in that
// process with ENOMEM, and nothing is OOM-killed. TEMPO_CGROUP2 names the cgroup2 mount
// (default /sys/fs/cgroup), whose children must have the memory controller (init.sh).
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vmtest.h"

enum { kFds = 8, kPerFd = 1024, kMoreFds = 16 };

// A number from a cgroup file: the first one, or the one after "key ".
static uint64_t cg_read(const char* group, const char* file, const char* key) {
  char path[512], line[256];
  snprintf(path, sizeof(path), "%s/%s", group, file);
  FILE* f = fopen(path, "r");
  uint64_t v = UINT64_MAX;
  const size_t n = key ? strlen(key) : 0;
  while (f && v == UINT64_MAX && fgets(line, sizeof(line), f))
    if (!key)
      v = strtoull(line, NULL, 10);
    else if (!strncmp(line, key, n) && line[n] == ' ')
      v = strtoull(line + n + 1, NULL, 10);
  if (f) fclose(f);
  return v;
}

static int cg_write(const char* group, const char* file, const char* val) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", group, file);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  int r = write(fd, val, strlen(val)) == (ssize_t)strlen(val) ? 0 : -errno;
  close(fd);
  return r;
}

struct report {
  int queued;  // unread completions queued in this phase
  int err;     // errno of the STAGE (or open) that failed; 0 if none did
};

// Queues up to per_fd unread completions of [0, len) on each of nr_fds new fds.
static struct report queue_records(int* fds, int nr_fds, uint64_t len) {
  struct report r = {0, 0};
  for (int f = 0; f < nr_fds && !r.err; f++) {
    fds[f] = open(dut.path, O_RDWR | O_CLOEXEC);
    if (fds[f] < 0) r.err = errno;
    for (int i = 0; i < kPerFd && !r.err; i++)
      if (stage1(fds[f], 0, len, 0, (uint64_t)i))
        r.err = errno;
      else
        r.queued++;
  }
  return r;
}

// The process in the group: joins it, then queues in two phases, each started by a byte
// from the parent and answered with a report.
static void queuing_child(const char* group, int to_parent, int from_parent, uint64_t len) {
  char pid[32], go;
  int fds[kFds + kMoreFds];
  snprintf(pid, sizeof(pid), "%d", getpid());
  struct report r = {0, -cg_write(group, "cgroup.procs", pid)};
  if (write(to_parent, &r, sizeof(r)) != sizeof(r) || r.err || read(from_parent, &go, 1) != 1)
    _exit(3);
  r = queue_records(fds, kFds, len);
  if (write(to_parent, &r, sizeof(r)) != sizeof(r) || read(from_parent, &go, 1) != 1) _exit(3);
  for (int f = kFds; f < kFds + kMoreFds; f++) fds[f] = -1;
  r = queue_records(fds + kFds, kMoreFds, len);
  // Closed before reporting: the pipe's page is charged to the group too.
  for (int f = kFds; f < kFds + kMoreFds; f++)
    if (fds[f] >= 0) close(fds[f]);
  _exit(write(to_parent, &r, sizeof(r)) == sizeof(r) ? 0 : 3);
}

static void test_unread_records_charged(void) {
  const char* root = getenv("TEMPO_CGROUP2") ? getenv("TEMPO_CGROUP2") : "/sys/fs/cgroup";
  const uint64_t e = dut.info.extent_bytes, slots = dut.info.fast_bytes / e;
  const uint64_t len = (slots < 64 ? slots : 64) * e;
  char group[256], max[32];
  snprintf(group, sizeof(group), "%s/tempo-vmtest", root);
  rmdir(group);
  if (mkdir(group, 0755)) {
    tfail(__FILE__, __LINE__, "mkdir %s: %s (cgroup2 with memory mounted?)", group,
          strerrorname(errno));
    return;
  }
  int fd = dev_open();
  struct tempo_completion c;
  CHECK_OK(ioctl(fd, TEMPO_IOC_RESET, 0));
  CHECK(stage1(fd, 0, len, 0, 0) == 0 && wait_completion(fd, &c, 20000) == 0, "stage");
  int up[2], down[2];
  CHECK_OK(pipe(up));
  CHECK_OK(pipe(down));
  pid_t child = fork();
  if (child == 0) queuing_child(group, up[1], down[0], len);
  close(up[1]);
  close(down[0]);
  struct report joined, r1 = {-1, 0}, r2 = {-1, 0};
  CHECK(read(up[0], &joined, sizeof(joined)) == sizeof(joined) && !joined.err,
        "joining the group: %s", strerrorname(joined.err));
  const uint64_t cur0 = cg_read(group, "memory.current", NULL), slab0 = meminfo_kb("SUnreclaim");
  CHECK(write(down[1], "1", 1) == 1 && read(up[0], &r1, sizeof(r1)) == sizeof(r1), "phase 1");
  const uint64_t cur1 = cg_read(group, "memory.current", NULL), slab1 = meminfo_kb("SUnreclaim");
  const long long charged_kb = ((long long)cur1 - (long long)cur0) / 1024;
  const long long slab_kb = (long long)slab1 - (long long)slab0;
  printf("# %d unread completions in a cgroup: memory.current +%lld kB, SUnreclaim +%lld kB\n",
         r1.queued, charged_kb, slab_kb);
  CHECK(r1.queued == kFds * kPerFd, "queued %d, then %s", r1.queued, strerrorname(r1.err));
  CHECK(charged_kb >= 256 && 2 * charged_kb >= slab_kb,
        "memory.current +%lld kB while SUnreclaim rose %lld kB: not charged to the caller",
        charged_kb, slab_kb);
  // A limit 256 KiB above what the group uses: the next records cannot all fit.
  snprintf(max, sizeof(max), "%llu", (unsigned long long)cur1 + (256 << 10));
  CHECK_OK(cg_write(group, "memory.max", max));
  CHECK(write(down[1], "2", 1) == 1, "phase 2");
  const bool reported = read(up[0], &r2, sizeof(r2)) == sizeof(r2);
  int status = 0;
  waitpid(child, &status, 0);
  const uint64_t oom_kills = cg_read(group, "memory.events", "oom_kill");
  printf("# under memory.max: %d more queued, then %s; oom_kill %llu\n", r2.queued,
         strerrorname(r2.err), (unsigned long long)oom_kills);
  CHECK(reported && r2.err == ENOMEM && r2.queued < kMoreFds * kPerFd,
        "under memory.max: %d more queued, then %s; want ENOMEM (child %s %d)", r2.queued,
        strerrorname(r2.err), WIFSIGNALED(status) ? "killed by signal" : "exit",
        WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0 && oom_kills == 0,
        "the queuing process: status %#x, oom_kill %llu", status, (unsigned long long)oom_kills);
  close(up[0]);
  close(down[1]);
  close(fd);
  CHECK_OK(rmdir(group));
}

void tests_memcg(void) { run_test("memcg.unread_records_charged", test_unread_records_charged); }

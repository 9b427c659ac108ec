#define _GNU_SOURCE
#include "capi_vmtest_uapi.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/tempo.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

int kmod_open(const char* dev) {
  const int fd = open(dev, O_RDWR | O_CLOEXEC);
  return fd < 0 ? -errno : fd;
}

int kmod_geometry(const char* dev, struct kmod_geometry* out) {
  const int fd = kmod_open(dev);
  if (fd < 0) return fd;
  struct tempo_info in = {0};
  const int r = ioctl(fd, TEMPO_IOC_GET_INFO, &in) == 0 ? 0 : -errno;
  close(fd);
  *out = (struct kmod_geometry){in.size, in.fast_bytes, in.extent_bytes, in.pin_limit_bytes};
  return r;
}

int kmod_reset(int fd) { return ioctl(fd, TEMPO_IOC_RESET, 0) == 0 ? 0 : -errno; }

int kmod_stage_unpinned(int fd, uint64_t offset, uint64_t length, uint64_t ticket) {
  struct tempo_range range = {offset, length};
  struct tempo_stage st = {.ranges = (uintptr_t)&range, .nr_ranges = 1, .ticket = ticket};
  return ioctl(fd, TEMPO_IOC_STAGE, &st) == 0 ? 0 : -errno;
}

int kmod_wait_stages(int fd, int n, int timeout_ms) {
  int seen = 0;
  struct tempo_completion recs[16];
  while (seen < n) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    const int ready = poll(&p, 1, timeout_ms);
    if (ready < 0) return -errno;
    if (ready == 0) break;
    const ssize_t got = read(fd, recs, sizeof(recs));
    if (got < 0) return -errno;
    for (const char* at = (const char*)recs; at < (const char*)recs + got;) {
      const struct tempo_completion* rec = (const struct tempo_completion*)at;
      seen += rec->kind == TEMPO_REC_STAGE;
      at += rec->len;
    }
  }
  return seen;
}

uint64_t kmod_pins(const char* dev) {
  struct tempo_stats s = {0};
  const int fd = kmod_open(dev);
  if (fd < 0) return UINT64_MAX;
  const int r = ioctl(fd, TEMPO_IOC_STATS, &s);
  close(fd);
  return r == 0 ? s.pins : UINT64_MAX;
}

// The few tempo.ko calls tempo-capi-vmtest makes beside the C ABI, in their own translation
// unit: the uapi's struct tempo_stats and the C ABI's share a name.
#pragma once

#include <stdint.h>

struct kmod_geometry {
  uint64_t size, fast_bytes, extent_bytes, pin_limit_bytes;
};

// The device's geometry (GET_INFO) through a new fd: 0 or -errno.
int kmod_geometry(const char* dev, struct kmod_geometry* out);
// Opens the device read-write: the fd or -errno.
int kmod_open(const char* dev);
// RESET on fd: 0 or -errno.
int kmod_reset(int fd);
// STAGE of [offset, offset + length) on fd without a pin: 0 or -errno.
int kmod_stage_unpinned(int fd, uint64_t offset, uint64_t length, uint64_t ticket);
// Reads fd's records until `n` STAGE completions have come (up to timeout_ms without one):
// how many came, or -errno.
int kmod_wait_stages(int fd, int n, int timeout_ms);
// The kernel-wide sum of pin counts (STATS) through a new fd, UINT64_MAX on error.
uint64_t kmod_pins(const char* dev);

// Semantics of every ioctl on a quiet device (one test process, nothing else running).
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmtest.h"

static uint64_t ext_bytes(void) { return dut.info.extent_bytes; }

static void read_param(const char* name, char* buf, size_t n) {
  char path[128];
  snprintf(path, sizeof(path), "/sys/module/tempo/parameters/%s", name);
  FILE* f = fopen(path, "r");
  buf[0] = '\0';
  if (!f || !fgets(buf, (int)n, f)) tfail(__FILE__, __LINE__, "cannot read %s", path);
  if (f) fclose(f);
  buf[strcspn(buf, "\n")] = '\0';
}

static uint64_t param(const char* name) {
  char buf[64];
  read_param(name, buf, sizeof(buf));
  return strtoull(buf, NULL, 0);
}

// The dax device the module owns ("" for a kernel-page tier).
static bool dax_tier(void) {
  char buf[64];
  read_param("dax", buf, sizeof(buf));
  return buf[0] && strcmp(buf, "(null)");
}

static void reset(int fd) { CHECK_OK(ioctl(fd, TEMPO_IOC_RESET, 0)); }

static void test_info_matches_params(void) {
  const struct tempo_info* in = &dut.info;
  int disk = open(dut.disk, O_RDONLY | O_CLOEXEC);
  uint64_t disk_bytes = 0;
  struct stat st;
  CHECK(disk >= 0 && ioctl(disk, BLKGETSIZE64, &disk_bytes) == 0, "disk size");
  CHECK(fstat(disk, &st) == 0, "stat disk");
  close(disk);
  uint64_t ext = param("extent_kb") * 1024;
  // fast_mb 0: 64 MiB of pages (the DAX suites always name fast_mb)
  uint64_t fast = param("fast_mb") ? param("fast_mb") << 20 : 64ULL << 20;
  uint64_t pin_limit = param("pin_limit_mb") ? param("pin_limit_mb") << 20 : fast / 4 * 3;
  CHECK(in->extent_bytes == ext, "extent_bytes %llu want %llu",
        (unsigned long long)in->extent_bytes, (unsigned long long)ext);
  CHECK(in->fast_bytes == fast / ext * ext, "fast_bytes %llu want %llu",
        (unsigned long long)in->fast_bytes, (unsigned long long)fast);
  CHECK(in->pin_limit_bytes == pin_limit, "pin_limit_bytes %llu want %llu",
        (unsigned long long)in->pin_limit_bytes, (unsigned long long)pin_limit);
  CHECK(in->size == disk_bytes / ext * ext, "size %llu, disk %llu", (unsigned long long)in->size,
        (unsigned long long)disk_bytes);
  CHECK(in->backing_dev == st.st_rdev, "backing_dev %llx want %llx",
        (unsigned long long)in->backing_dev, (unsigned long long)st.st_rdev);
  CHECK(in->fast_kind == (dax_tier() ? TEMPO_FAST_DAX : TEMPO_FAST_PAGES), "fast_kind %u",
        in->fast_kind);
  CHECK(in->max_ranges == TEMPO_MAX_RANGES, "max_ranges %u", in->max_ranges);
  CHECK(in->record_bytes == sizeof(struct tempo_completion), "record_bytes %u", in->record_bytes);
  CHECK(in->reserved0 == 0, "reserved0 not zero");
  for (int i = 0; i < 3; i++) CHECK(in->reserved[i] == 0, "reserved[%d] not zero", i);
}

static void test_features(void) {
  int fd = dev_open();
  struct tempo_features f;
  memset(&f, 0xff, sizeof(f));
  CHECK_OK(ioctl(fd, TEMPO_IOC_GET_FEATURES, &f));
  CHECK(f.stage_flags == TEMPO_STAGE_F_ALL, "stage_flags %llx", (unsigned long long)f.stage_flags);
  CHECK(f.pin_flags == TEMPO_PIN_F_ALL, "pin_flags %llx", (unsigned long long)f.pin_flags);
  CHECK(f.event_mask == TEMPO_EVENT_ALL, "event_mask %llx", (unsigned long long)f.event_mask);
  for (int i = 0; i < 5; i++) CHECK(f.reserved[i] == 0, "reserved[%d] not zero", i);
  close(fd);
}

static void test_stage_completion(void) {
  int fd = dev_open();
  uint64_t e = ext_bytes();
  reset(fd);
  struct tempo_stats before = stats(fd);
  struct tempo_range r[2] = {{0, e}, {2 * e, 4096}};
  CHECK_OK(stage(fd, r, 2, 0, 42));
  struct tempo_completion c;
  CHECK(wait_completion(fd, &c, 10000) == 0, "no completion");
  CHECK(c.ticket == 42 && c.status == 0 && c.flags == 0, "ticket %llu status %d flags %u",
        (unsigned long long)c.ticket, c.status, c.flags);
  CHECK(c.len == sizeof(c) && c.kind == TEMPO_REC_STAGE && c.offset == 0 && c.reserved0 == 0,
        "len %u kind %u offset %llu", c.len, c.kind, (unsigned long long)c.offset);
  for (int i = 0; i < 4; i++) CHECK(c.reserved[i] == 0, "record reserved[%d] not zero", i);
  CHECK(c.bytes == e + 4096, "bytes %llu", (unsigned long long)c.bytes);
  CHECK(c.read_bytes == 2 * e, "read_bytes %llu", (unsigned long long)c.read_bytes);
  CHECK(c.submit_ns > 0 && c.complete_ns >= c.submit_ns, "times %llu %llu",
        (unsigned long long)c.submit_ns, (unsigned long long)c.complete_ns);
  struct tempo_query q = query1(fd, 0, 4 * e);
  CHECK(q.resident_bytes == 2 * e && q.filling_bytes == 0 && q.pinned_bytes == 0,
        "query resident %llu filling %llu pinned %llu", (unsigned long long)q.resident_bytes,
        (unsigned long long)q.filling_bytes, (unsigned long long)q.pinned_bytes);
  q = query1(fd, 2 * e, 4096);
  CHECK(q.resident_bytes == 4096, "partial query %llu", (unsigned long long)q.resident_bytes);
  struct tempo_stats after = stats(fd);
  CHECK(after.stage_batches == before.stage_batches + 1, "stage_batches");
  CHECK(after.staged_bytes == before.staged_bytes + 2 * e, "staged_bytes");
  CHECK(after.resident_bytes == 2 * e, "resident_bytes %llu",
        (unsigned long long)after.resident_bytes);
  CHECK(after.inflight_batches == 0, "inflight %llu", (unsigned long long)after.inflight_batches);

  // Staging what is resident reads nothing and completes at once.
  CHECK_OK(stage1(fd, 0, e, 0, 43));
  CHECK(wait_completion(fd, &c, 10000) == 0 && c.ticket == 43 && c.read_bytes == 0,
        "restage ticket %llu read_bytes %llu", (unsigned long long)c.ticket,
        (unsigned long long)c.read_bytes);
  close(fd);
}

static void test_read_many_and_nonblock(void) {
  int fd = dev_open();
  uint64_t e = ext_bytes();
  CHECK_OK(stage1(fd, 4 * e, e, 0, 1));
  CHECK_OK(stage1(fd, 5 * e, e, 0, 2));
  struct tempo_completion c[3];
  uint64_t got = 0;
  for (int tries = 0; got < 2 && tries < 1000; tries++) {
    CHECK(wait_completion(fd, &c[got], 10000) == 0, "completion %llu", (unsigned long long)got);
    got++;
  }
  CHECK(c[0].ticket + c[1].ticket == 3, "tickets %llu %llu", (unsigned long long)c[0].ticket,
        (unsigned long long)c[1].ticket);
  // Two queued records come back from one read() of a three-record buffer.
  CHECK_OK(stage1(fd, 4 * e, e, 0, 3));
  CHECK_OK(stage1(fd, 5 * e, e, 0, 4));
  settled_stats(fd);
  ssize_t n = read(fd, c, sizeof(c));
  CHECK(n == 2 * (ssize_t)sizeof(c[0]), "read returned %zd", n);
  int fl = fcntl(fd, F_GETFL);
  CHECK_OK(fcntl(fd, F_SETFL, fl | O_NONBLOCK));
  CHECK_ERRNO(read(fd, c, sizeof(c)), EAGAIN);
  close(fd);
}

static void test_pin_refcount_per_fd(void) {
  int a = dev_open(), b = dev_open();
  uint64_t e = ext_bytes();
  CHECK_OK(stage1(a, 0, e, 0, 1));
  struct tempo_completion c;
  CHECK(wait_completion(a, &c, 10000) == 0, "stage");
  struct tempo_stats s0 = stats(a);
  CHECK_OK(pin1(a, 0, e));
  CHECK_OK(pin1(a, 0, 4096));
  CHECK_OK(pin1(b, 0, e));
  struct tempo_query q = query1(a, 0, e);
  CHECK(q.min_pins == 3 && q.own_min_pins == 2 && q.pinned_bytes == e, "pins %u own %u pinned %llu",
        q.min_pins, q.own_min_pins, (unsigned long long)q.pinned_bytes);
  struct tempo_stats s1 = stats(a);
  CHECK(s1.pins == s0.pins + 3 && s1.pinned_bytes == s0.pinned_bytes + e, "stats pins %llu",
        (unsigned long long)s1.pins);
  CHECK(s1.pin_calls == s0.pin_calls + 3, "pin_calls");
  CHECK_OK(unpin1(b, 0, e));
  CHECK_ERRNO(unpin1(b, 0, e), EINVAL);  // b holds no more pins there
  CHECK_OK(unpin1(a, 0, e));
  CHECK_OK(unpin1(a, 0, e));
  CHECK_ERRNO(unpin1(a, 0, e), EINVAL);
  q = query1(a, 0, e);
  CHECK(q.min_pins == 0 && q.pinned_bytes == 0 && q.resident_bytes == e, "after unpin");
  struct tempo_stats s2 = stats(a);
  CHECK(s2.pins == s0.pins && s2.unpin_calls == s0.unpin_calls + 3, "unpin stats");
  close(a);
  close(b);
}

static void test_stage_pin_flag(void) {
  int fd = dev_open();
  uint64_t e = ext_bytes();
  reset(fd);
  CHECK_OK(stage1(fd, 8 * e, 2 * e, TEMPO_STAGE_F_PIN, 9));
  struct tempo_completion c;
  CHECK(wait_completion(fd, &c, 10000) == 0 && c.status == 0 && c.flags == TEMPO_STAGE_F_PIN,
        "completion status %d flags %u", c.status, c.flags);
  struct tempo_query q = query1(fd, 8 * e, 2 * e);
  CHECK(q.resident_bytes == 2 * e && q.own_min_pins == 1, "resident %llu own pins %u",
        (unsigned long long)q.resident_bytes, q.own_min_pins);
  // RESET keeps pinned extents and drops the rest.
  CHECK_OK(stage1(fd, 12 * e, e, 0, 10));
  CHECK(wait_completion(fd, &c, 10000) == 0, "stage 12");
  reset(fd);
  CHECK(query1(fd, 8 * e, 2 * e).resident_bytes == 2 * e, "pinned extents dropped by RESET");
  CHECK(query1(fd, 12 * e, e).resident_bytes == 0, "unpinned extent survived RESET");
  CHECK(stats(fd).resets >= 1, "resets");
  CHECK_OK(unpin1(fd, 8 * e, 2 * e));
  close(fd);
}

static void test_lru_eviction(void) {
  int fd = dev_open();
  uint64_t e = ext_bytes(), slots = dut.info.fast_bytes / e;
  struct tempo_completion c;
  reset(fd);
  for (uint64_t i = 0; i < slots; i++) {
    CHECK_OK(stage1(fd, i * e, e, 0, i));
    CHECK(wait_completion(fd, &c, 10000) == 0 && c.status == 0, "fill %llu", (unsigned long long)i);
  }
  struct tempo_stats s0 = stats(fd);
  CHECK(s0.resident_bytes == slots * e, "tier not full: %llu",
        (unsigned long long)s0.resident_bytes);
  // Touch extent 0, then bring in one more: extent 1 is now the least recently used.
  CHECK_OK(stage1(fd, 0, e, 0, 100));
  CHECK(wait_completion(fd, &c, 10000) == 0 && c.read_bytes == 0, "touch");
  CHECK_OK(stage1(fd, slots * e, e, 0, 101));
  CHECK(wait_completion(fd, &c, 10000) == 0 && c.read_bytes == e, "one more");
  CHECK(query1(fd, 0, e).resident_bytes == e, "touched extent evicted");
  CHECK(query1(fd, e, e).resident_bytes == 0, "LRU extent kept");
  CHECK(query1(fd, 2 * e, e).resident_bytes == e, "extent 2 evicted");
  struct tempo_stats s1 = stats(fd);
  CHECK(s1.evictions == s0.evictions + 1 && s1.evicted_bytes == s0.evicted_bytes + e,
        "evictions %llu -> %llu", (unsigned long long)s0.evictions,
        (unsigned long long)s1.evictions);
  reset(fd);
  CHECK(stats(fd).resident_bytes == 0, "RESET left residency");
  close(fd);
}

// A file opened read-only may look (INFO, STATS, QUERY, records, a read-only mapping) but not
// change what the fast tier holds: STAGE, PIN, UNPIN and RESET are -EBADF and change nothing.
static void test_read_only_file_cannot_stage_or_pin(void) {
  int rw = dev_open();
  int ro = open(dut.path, O_RDONLY | O_CLOEXEC);
  CHECK(ro >= 0, "open %s read-only: %s", dut.path, strerror(errno));
  uint64_t e = ext_bytes();
  CHECK_OK(stage1(rw, 0, e, 0, 1));
  struct tempo_completion c;
  CHECK(wait_completion(rw, &c, 10000) == 0, "stage");
  struct tempo_stats s0 = stats(ro);
  CHECK_ERRNO(stage1(ro, e, e, 0, 2), EBADF);
  CHECK_ERRNO(stage1(ro, e, e, TEMPO_STAGE_F_PIN, 3), EBADF);
  CHECK_ERRNO(pin1(ro, 0, e), EBADF);
  CHECK_ERRNO(unpin1(ro, 0, e), EBADF);
  CHECK_ERRNO(ioctl(ro, TEMPO_IOC_RESET, 0), EBADF);
  struct tempo_query q = query1(ro, 0, e);
  CHECK(q.resident_bytes == e && q.min_pins == 0, "query through the read-only file");
  struct tempo_stats s1 = stats(ro);
  CHECK(s1.pins == s0.pins && s1.pin_calls == s0.pin_calls &&
            s1.resident_bytes == s0.resident_bytes && s1.resets == s0.resets,
        "a refused call changed the device");
  const volatile uint8_t* m = mmap(NULL, e, PROT_READ, MAP_SHARED, ro, 0);
  CHECK(m != MAP_FAILED, "read-only mapping: %s", strerror(errno));
  if (m != MAP_FAILED) {
    (void)m[0];
    munmap((void*)m, e);
  }
  close(ro);
  close(rw);
}

void tests_api(void) {
  run_test("api.info_matches_params", test_info_matches_params);
  run_test("api.features", test_features);
  run_test("api.stage_completion_and_query", test_stage_completion);
  run_test("api.read_many_and_nonblock", test_read_many_and_nonblock);
  run_test("api.pin_refcount_per_fd", test_pin_refcount_per_fd);
  run_test("api.stage_pin_flag_and_reset", test_stage_pin_flag);
  run_test("api.lru_eviction", test_lru_eviction);
  run_test("api.read_only_file_cannot_stage_or_pin", test_read_only_file_cannot_stage_or_pin);
}

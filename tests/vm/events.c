// Eviction notices (TEMPO_IOC_SET_EVENTS): a subscribed fd reads one EVICT record per
// eviction of an unpinned extent, whoever caused it, in order with its own STAGE records;
// RESET gives one RESET record; a full notice queue collapses into one LOST record; an
// unsubscribed fd reads only its own STAGE records.
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "vmtest.h"

static int subscribe(int fd, uint32_t mask) {
  struct tempo_events e = {.mask = mask};
  return ioctl(fd, TEMPO_IOC_SET_EVENTS, &e);
}

// Reads every queued record (non-blocking) into out; returns how many.
static int read_all(int fd, struct tempo_completion* out, int max) {
  int n = 0, fl = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, fl | O_NONBLOCK);
  ssize_t got;
  while (n < max && (got = read(fd, out + n, (size_t)(max - n) * sizeof(*out))) > 0)
    n += (int)(got / (ssize_t)sizeof(*out));
  fcntl(fd, F_SETFL, fl);
  return n;
}

// Stages extent i and waits for its record.
static void fill(int fd, uint64_t i) {
  struct tempo_completion c;
  CHECK(stage1(fd, i * dut.info.extent_bytes, dut.info.extent_bytes, 0, i) == 0 &&
            wait_completion(fd, &c, 20000) == 0 && c.status == 0,
        "stage extent %llu", (unsigned long long)i);
}

static void test_bad_mask(void) {
  int fd = dev_open();
  struct tempo_events e = {.mask = 1U << 5};
  CHECK_ERRNO(ioctl(fd, TEMPO_IOC_SET_EVENTS, &e), EINVAL);
  e = (struct tempo_events){.mask = TEMPO_EVENT_EVICT, .reserved = {0, 0, 1}};
  CHECK_ERRNO(ioctl(fd, TEMPO_IOC_SET_EVENTS, &e), EINVAL);
  close(fd);
}

static void test_evict_and_reset_records(void) {
  const uint64_t e = dut.info.extent_bytes, slots = dut.info.fast_bytes / e;
  int sub = dev_open(), other = dev_open();
  static struct tempo_completion rec[64];
  CHECK_OK(ioctl(other, TEMPO_IOC_RESET, 0));
  CHECK_OK(subscribe(sub, TEMPO_EVENT_EVICT));
  // The subscriber's own STAGE record comes first (left queued: read below).
  CHECK_OK(stage1(sub, 0, e, 0, 0));
  for (int i = 0; i < 2000 && query1(sub, 0, e).resident_bytes != e; i++) usleep(5000);
  for (uint64_t i = 1; i < slots; i++) fill(other, i);
  fill(other, slots);  // evicts extent 0, the least recently used
  int n = read_all(sub, rec, 64);
  CHECK(n == 2, "subscriber read %d records, want STAGE then EVICT", n);
  CHECK(rec[0].kind == TEMPO_REC_STAGE && rec[0].ticket == 0, "first record kind %u", rec[0].kind);
  CHECK(rec[1].kind == TEMPO_REC_EVICT && rec[1].offset == 0 && rec[1].bytes == e &&
            rec[1].len == sizeof(rec[1]) && rec[1].complete_ns >= rec[0].complete_ns,
        "EVICT record kind %u offset %llu bytes %llu", rec[1].kind,
        (unsigned long long)rec[1].offset, (unsigned long long)rec[1].bytes);
  // The fd that caused the eviction did not subscribe: nothing but its STAGE records.
  CHECK(read_all(other, rec, 64) == 0, "unsubscribed fd got records");
  // A pinned extent is never evicted, so never reported; RESET reports the rest at once.
  CHECK_OK(pin1(other, slots * e, e));
  uint64_t resident = stats(sub).resident_bytes;
  CHECK_OK(ioctl(other, TEMPO_IOC_RESET, 0));
  n = read_all(sub, rec, 64);
  CHECK(n == 1 && rec[0].kind == TEMPO_REC_RESET && rec[0].bytes == resident - e,
        "%d records, kind %u bytes %llu want RESET of %llu", n, rec[0].kind,
        (unsigned long long)rec[0].bytes, (unsigned long long)(resident - e));
  CHECK_OK(unpin1(other, slots * e, e));
  // Unsubscribed again: evictions are no longer reported.
  CHECK_OK(subscribe(sub, 0));
  CHECK_OK(ioctl(other, TEMPO_IOC_RESET, 0));
  CHECK(read_all(sub, rec, 64) == 0, "records after unsubscribing");
  close(other);
  close(sub);
}

// More evictions than the notice queue holds (512): 511 EVICT records, then one LOST record
// carrying the bytes of every notice that did not fit.
static void test_overflow_lost(void) {
  const uint64_t e = dut.info.extent_bytes, slots = dut.info.fast_bytes / e;
  const uint64_t n_ext = dut.info.size / e, evictions = 600;
  int sub = dev_open(), other = dev_open();
  static struct tempo_completion rec[1024];
  if (slots + evictions > n_ext) {
    printf("SKIP events.overflow_lost: the device holds only %llu extents\n",
           (unsigned long long)n_ext);
    return;
  }
  CHECK_OK(ioctl(other, TEMPO_IOC_RESET, 0));
  for (uint64_t i = 0; i < slots; i++) fill(other, i);
  CHECK_OK(subscribe(sub, TEMPO_EVENT_EVICT));
  for (uint64_t i = 0; i < evictions; i++) fill(other, slots + i);
  int n = read_all(sub, rec, 1024);
  CHECK(n == 512, "%d records, want 512", n);
  uint64_t evict = 0;
  for (int i = 0; i < n - 1; i++)
    if (rec[i].kind == TEMPO_REC_EVICT && rec[i].offset == (uint64_t)i * e) evict++;
  CHECK(evict == 511, "%llu EVICT records in LRU order, want 511", (unsigned long long)evict);
  CHECK(n > 0 && rec[n - 1].kind == TEMPO_REC_LOST && rec[n - 1].bytes == (evictions - 511) * e,
        "last record kind %u bytes %llu, want LOST of %llu", rec[n - 1].kind,
        (unsigned long long)rec[n - 1].bytes, (unsigned long long)((evictions - 511) * e));
  // Read: the queue takes new notices again.
  CHECK_OK(ioctl(other, TEMPO_IOC_RESET, 0));
  CHECK(read_all(sub, rec, 4) == 1 && rec[0].kind == TEMPO_REC_RESET, "RESET after LOST");
  close(other);
  close(sub);
}

void tests_events(void) {
  run_test("events.bad_mask", test_bad_mask);
  run_test("events.evict_and_reset_records", test_evict_and_reset_records);
  run_test("events.overflow_lost", test_overflow_lost);
}

// tempo-capi-vmtest: the public C ABI (libtempo.so) on a real device, in the guest
// (tests/vm/init.sh). One "PASS name" or "FAIL name: why" line per check.
//
//   tempo-capi-vmtest kmod NAME DEV DISK
//       device = kmod over DEV (tempo.ko); objects are placed on DISK's bytes (the module's
//       backing device), read back through the claim's extents and compared with DISK.
//   tempo-capi-vmtest uring NAME STORE_DIR [KEY=VALUE...]
//       device = uring with its store in STORE_DIR and the given settings (a fast tier on
//       /dev/dax0.0, or on a NUMA node); objects are put, staged and read back.
//   tempo-capi-vmtest daemon NAME SOCKET DEV DISK
//       device = daemon against a tempod serving DEV (device = kmod): objects placed through
//       the daemon, two engine processes each report, stage, read their mapped extents
//       (compared with DISK) and release; then no protected byte and no kernel pin is left.
//   tempo-capi-vmtest daemon-kill NAME SOCKET DEV
//       the same tempod on a slow disk: an engine process is killed (SIGKILL) while its
//       claim stages; its protected bytes and the kernel's pins return, the daemon serves on.
//
// On a machine without the device every check fails: the guest runs it where it exists.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/mempolicy.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capi_vmtest_uapi.h"
#include "tempo/tempo.h"
#include "tempo/tempo_sim.h"

#define NOBJ 8
#define WAIT_NS (20LL * 1000 * 1000 * 1000)

static const char* g_name;  // the check names' prefix ("capi.kmod_pages")
static int g_failed;

static void result(bool ok, const char* check, const char* fmt, ...) {
  if (ok) {
    printf("PASS %s.%s\n", g_name, check);
  } else {
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    printf("FAIL %s.%s: %s\n", g_name, check, why);
    g_failed++;
  }
  fflush(stdout);
}

// What the run works with: the context, its objects and the bytes each one holds.
struct run {
  struct tempo_ctx* ctx;
  const char* device;
  uint64_t obj_bytes;
  uint64_t budget;
  uint8_t* want[NOBJ + 1];  // want[k]: object k's bytes
  // kmod only
  const char* dev_path;
  const char* disk;
  struct kmod_geometry info;
  uint64_t offset[NOBJ + 1];
  const char* socket;
};

static int set(struct tempo_config* c, const char* key, const char* value) {
  const int r = tempo_config_set(c, key, value);
  if (r != 0) result(false, "config", "%s=%s: %s", key, value, tempo_config_error(c));
  return r;
}

static int set_u64(struct tempo_config* c, const char* key, uint64_t v) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
  return set(c, key, buf);
}

static void manifest(const struct run* r, uint64_t first, size_t n, struct tempo_object* out) {
  for (size_t i = 0; i < n; i++) out[i] = (struct tempo_object){first + i, r->obj_bytes};
}

static int state_of(struct run* r, tempo_claim_id id, struct tempo_claim_info* info) {
  struct tempo_claim_info tmp;
  if (!info) info = &tmp;
  const int rc = tempo_claim_query(r->ctx, id, info, sizeof *info);
  return rc != 0 ? rc : (int)info->state;
}

// The TTR of reading `bytes` anew at the context's learned staging rate: a lower bound of a
// claim's TTR when those bytes are absent (work conservation).
static int64_t read_ttr(struct run* r, uint64_t bytes) {
  struct tempo_counters s;
  tempo_ctx_stats(r->ctx, &s, sizeof s);
  return s.effective_rate_bps > 0 ? (int64_t)((double)bytes * 1e9 / s.effective_rate_bps) : -1;
}

// TTR of a PLANNED claim, as the claim view gives it: TTU - laxity.
static int64_t ttr_of(struct run* r, tempo_claim_id id) {
  struct tempo_claim_info in;
  if (tempo_claim_query(r->ctx, id, &in, sizeof in) != 0 || in.laxity_ns == TEMPO_LAXITY_NONE)
    return -1;
  return in.ttu_ns - in.laxity_ns;
}

// Request retrieval and wait until stage-ready. 0, or the failing call's result.
static int make_ready(struct run* r, tempo_claim_id id) {
  int out = -1;
  int rc = tempo_claim_request_retrieval(r->ctx, id, &out);
  if (rc != 0) return rc;
  if (out == TEMPO_RETRIEVAL_ORDINARY) return -ENOSPC;
  rc = tempo_claim_wait_ready(r->ctx, id, WAIT_NS, &out);
  if (rc != 0) return rc;
  return out == TEMPO_RETRIEVAL_READY ? 0 : -EPROTO;
}

// Copies the claim's extents and compares them with the objects' bytes.
static bool extents_hold_objects(struct run* r, tempo_claim_id id, uint64_t first, size_t n,
                                 char* why, size_t why_len) {
  struct tempo_extent ext[NOBJ];
  size_t count = 0;
  int rc = tempo_claim_extents(r->ctx, id, ext, 0, &count);
  if (rc != -ENOSPC || count != n) {
    snprintf(why, why_len, "capacity 0: %d count %zu (want -ENOSPC, %zu)", rc, count, n);
    return false;
  }
  rc = tempo_claim_extents(r->ctx, id, ext, NOBJ, &count);
  if (rc != 0 || count != n) {
    snprintf(why, why_len, "extents: %d count %zu", rc, count);
    return false;
  }
  for (size_t i = 0; i < n; i++) {
    if (ext[i].bytes != r->obj_bytes || memcmp(ext[i].addr, r->want[first + i], r->obj_bytes)) {
      snprintf(why, why_len, "object %llu: %llu bytes, %s", (unsigned long long)(first + i),
               (unsigned long long)ext[i].bytes,
               ext[i].bytes == r->obj_bytes ? "other bytes than its disk/put" : "wrong size");
      return false;
    }
  }
  return true;
}

static void check_lifecycle(struct run* r) {
  struct tempo_object m[NOBJ];
  struct tempo_counters s0, s1;
  tempo_ctx_stats(r->ctx, &s0, sizeof s0);
  // report -> revise -> order -> commit -> stage -> ready -> transfer -> release
  tempo_claim_id id = 0;
  manifest(r, 1, 3, m);
  int rc = tempo_claim_report(r->ctx, m, 3, 60LL * 1000000000, &id);
  result(rc == 0 && state_of(r, id, NULL) == TEMPO_CLAIM_PLANNED, "report", "report %d", rc);
  rc = tempo_claim_revise(r->ctx, id, 30LL * 1000000000);
  const tempo_claim_id order[] = {TEMPO_NO_CLAIM, id};
  const int rc2 = tempo_order_update(r->ctx, order, 2);
  result(rc == 0 && rc2 == 0, "revise_and_order", "revise %d order %d", rc, rc2);
  result(tempo_claim_transfer_begin(r->ctx, id) == -EINVAL, "transfer_refused_while_planned",
         "not -EINVAL");
  rc = make_ready(r, id);
  result(rc == 0 && state_of(r, id, NULL) == TEMPO_CLAIM_STAGE_READY, "commit_stage_ready",
         "%d, state %d", rc, state_of(r, id, NULL));
  rc = tempo_claim_transfer_begin(r->ctx, id);
  result(rc == 0, "transfer_begin", "%d", rc);
  char why[256] = "";
  result(extents_hold_objects(r, id, 1, 3, why, sizeof(why)), "mapped_bytes_equal_source", "%s",
         why);
  struct tempo_counters mid;
  tempo_ctx_stats(r->ctx, &mid, sizeof mid);
  result(mid.ledger_bytes == 3 * r->obj_bytes && mid.pinned_bytes >= 3 * r->obj_bytes,
         "protected_while_transferring", "ledger %llu pinned %llu",
         (unsigned long long)mid.ledger_bytes, (unsigned long long)mid.pinned_bytes);
  rc = tempo_claim_transfer_end(r->ctx, id);
  result(rc == 0 && state_of(r, id, NULL) == TEMPO_CLAIM_RELEASED, "release", "%d", rc);
  result(tempo_claim_transfer_end(r->ctx, id) == -EINVAL, "second_release_refused", "not -EINVAL");
  tempo_ctx_stats(r->ctx, &s1, sizeof s1);
  result(s1.claims_released == s0.claims_released + 1 && s1.ledger_bytes == 0 &&
             s1.pinned_bytes == 0 && s1.stage_ops >= s0.stage_ops + 3 &&
             s1.staged_bytes >= s0.staged_bytes + 3 * r->obj_bytes,
         "stats_after_release", "released %llu ledger %llu pinned %llu stage_ops %llu",
         (unsigned long long)s1.claims_released, (unsigned long long)s1.ledger_bytes,
         (unsigned long long)s1.pinned_bytes, (unsigned long long)s1.stage_ops);

  // cancel: PLANNED at once, STAGE_READY at once, TRANSFERRING when the transfer ends
  tempo_claim_id planned = 0, ready = 0, moving = 0;
  manifest(r, 4, 2, m);
  tempo_claim_report(r->ctx, m, 2, 60LL * 1000000000, &planned);
  rc = tempo_claim_cancel(r->ctx, planned);
  result(rc == 0 && state_of(r, planned, NULL) == TEMPO_CLAIM_CANCELLED &&
             tempo_claim_cancel(r->ctx, planned) == -EINVAL,
         "cancel_planned", "%d", rc);
  tempo_claim_report(r->ctx, m, 2, 60LL * 1000000000, &ready);
  rc = make_ready(r, ready);
  const int rc_cancel = tempo_claim_cancel(r->ctx, ready);
  result(rc == 0 && rc_cancel == 0 && state_of(r, ready, NULL) == TEMPO_CLAIM_CANCELLED,
         "cancel_stage_ready", "ready %d cancel %d", rc, rc_cancel);
  manifest(r, 6, 2, m);
  tempo_claim_report(r->ctx, m, 2, 60LL * 1000000000, &moving);
  rc = make_ready(r, moving);
  if (rc == 0) rc = tempo_claim_transfer_begin(r->ctx, moving);
  struct tempo_claim_info info;
  const int c1 = tempo_claim_cancel(r->ctx, moving), c2 = tempo_claim_cancel(r->ctx, moving);
  state_of(r, moving, &info);
  const bool pending =
      info.state == TEMPO_CLAIM_TRANSFERRING && (info.flags & TEMPO_CLAIM_F_CANCEL_PENDING);
  const int end = tempo_claim_transfer_end(r->ctx, moving);
  result(rc == 0 && c1 == 0 && c2 == -EALREADY && pending && end == 0 &&
             state_of(r, moving, NULL) == TEMPO_CLAIM_CANCELLED,
         "cancel_transferring", "ready %d cancel %d/%d pending %d end %d", rc, c1, c2, pending,
         end);

  // the ordinary path: more bytes than the budget
  const size_t big = r->budget / r->obj_bytes + 1;
  tempo_claim_id ord = 0;
  manifest(r, 1, big, m);
  int out = -1;
  tempo_ctx_stats(r->ctx, &s0, sizeof s0);
  tempo_claim_report(r->ctx, m, big, 0, &ord);
  rc = tempo_claim_request_retrieval(r->ctx, ord, &out);
  state_of(r, ord, &info);
  result(rc == 0 && out == TEMPO_RETRIEVAL_ORDINARY && info.state == TEMPO_CLAIM_ORDINARY &&
             (info.flags & TEMPO_CLAIM_F_NEVER_FITS),
         "never_fits_takes_ordinary_path", "%d outcome %d state %u flags %u", rc, out, info.state,
         info.flags);
  rc = tempo_claim_ordinary_read(r->ctx, ord);
  result(rc == 0 && tempo_claim_ordinary_read(r->ctx, ord) == -EINVAL, "ordinary_read_once", "%d",
         rc);
  tempo_ctx_stats(r->ctx, &s1, sizeof s1);
  result(
      s1.claims_ordinary == s0.claims_ordinary + 1 && s1.ledger_bytes == 0 && s1.pinned_bytes == 0,
      "stats_after_ordinary", "ordinary %llu ledger %llu pinned %llu",
      (unsigned long long)s1.claims_ordinary, (unsigned long long)s1.ledger_bytes,
      (unsigned long long)s1.pinned_bytes);

  // misuse: the same codes as sim and uring (tests/stack/lifecycle_test.cc)
  const struct tempo_object none[] = {{4242, 4096}};
  tempo_claim_id unknown_obj = 0;
  tempo_claim_report(r->ctx, none, 1, 0, &unknown_obj);
  rc = tempo_claim_request_retrieval(r->ctx, unknown_obj, &out);
  state_of(r, unknown_obj, &info);
  result(rc == -ENOENT && info.state == TEMPO_CLAIM_FAILED && info.error == -ENOENT,
         "object_not_held_fails_claim", "%d state %u error %d", rc, info.state, info.error);
  result(tempo_claim_cancel(r->ctx, 999999) == -ENOENT &&
             tempo_claim_query(r->ctx, 999999, &info, sizeof info) == -ENOENT &&
             tempo_claim_wait_ready(r->ctx, 999999, 0, &out) == -ENOENT,
         "unknown_claim_enoent", "not -ENOENT");
}

// kmod only: the provider's residency follows the kernel's eviction notices, so a claim's
// TTR goes from 0 (its objects resident) to the time to read them again once another fd
// evicts them, without the context asking the kernel.
static void check_eviction_notices(struct run* r) {
  struct tempo_object m[3];
  manifest(r, 1, 3, m);
  tempo_claim_id id = 0;
  // objects 1..3 are resident and unpinned (released above)
  tempo_claim_report(r->ctx, m, 3, 60LL * 1000000000, &id);
  const int64_t before = ttr_of(r, id);
  const int fd = kmod_open(r->dev_path);
  struct tempo_counters s0;
  tempo_ctx_stats(r->ctx, &s0, sizeof s0);
  const int rc = kmod_reset(fd);
  const int64_t read1 = read_ttr(r, 3 * r->obj_bytes);
  int64_t after = before;
  for (int i = 0; i < 500 && after * 2 < read1; i++) {
    usleep(10000);
    after = ttr_of(r, id);
  }
  // Resident, the claim's TTR is well under a tenth of reading its objects; evicted, at
  // least half of it (the learned rate moves a little).
  result(before >= 0 && before * 10 < read1 && rc == 0 && after * 2 >= read1,
         "reset_notice_raises_ttr", "ttr %lld -> %lld, reading takes %lld (reset %d)",
         (long long)before, (long long)after, (long long)read1, rc);
  // Resident again, released: then another fd fills the whole fast tier (LRU evicts ours).
  int rr = make_ready(r, id);
  if (rr == 0) rr = tempo_claim_transfer_begin(r->ctx, id);
  if (rr == 0) rr = tempo_claim_transfer_end(r->ctx, id);
  tempo_claim_id again = 0;
  tempo_claim_report(r->ctx, m, 3, 60LL * 1000000000, &again);
  const int64_t resident = ttr_of(r, again);
  // Extents from NOBJ + 2 on (the objects are in 1..NOBJ): a fast tier's worth, unpinned.
  const uint64_t e = r->info.extent_bytes, n = r->info.fast_bytes / e;
  int staged = 0;
  for (uint64_t i = 0; i < n; i++)
    staged += kmod_stage_unpinned(fd, (NOBJ + 2 + i) * e, e, i + 1) == 0;
  const int64_t read2 = read_ttr(r, 3 * r->obj_bytes);
  int64_t evicted = resident;
  for (int i = 0; i < 1000 && evicted * 2 < read2; i++) {
    usleep(10000);
    evicted = ttr_of(r, again);
  }
  struct tempo_counters s1;
  tempo_ctx_stats(r->ctx, &s1, sizeof s1);
  result(rr == 0 && resident >= 0 && resident * 10 < read2 && staged == (int)n &&
             evicted * 2 >= read2 && s1.evictions >= s0.evictions + 3,
         "lru_eviction_notice_raises_ttr",
         "ready %d ttr %lld -> %lld, reading takes %lld, staged %d/%llu, evictions %llu", rr,
         (long long)resident, (long long)evicted, (long long)read2, staged, (unsigned long long)n,
         (unsigned long long)(s1.evictions - s0.evictions));
  tempo_claim_cancel(r->ctx, again);
  // Its fills hold their slots until they end (a filling slot is neither free nor evictable):
  // closing the fd does not wait for them, and a STAGE meanwhile finds no room (-ENOSPC).
  const int filled = kmod_wait_stages(fd, staged, 30000);
  result(filled == staged, "other_fds_fills_end", "%d of %d STAGE records", filled, staged);
  close(fd);
}

// kmod only: placements refused whole, and the calls that belong to other devices.
static void check_kmod_placement_errors(struct run* r) {
  const uint64_t e = r->info.extent_bytes;
  struct tempo_kmod_object good = {100, 20 * e, r->obj_bytes, 0};
  struct tempo_kmod_object bad[][2] = {
      {good, {101, 21 * e + 4096, r->obj_bytes, 0}},
      {good, {101, 21 * e, 0, 0}},
      {good, {101, 21 * e, r->obj_bytes, 7}},
      {good, {101, r->info.size, r->obj_bytes, 0}},
      {good, good},
      {good, {101, 20 * e, r->obj_bytes, 0}},
  };
  const int want[] = {-EINVAL, -EINVAL, -EINVAL, -ERANGE, -EEXIST, -EBUSY};
  const char* what[] = {"misaligned", "zero bytes", "reserved", "beyond", "twice", "shared"};
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
    const int rc = tempo_kmod_add_objects(r->ctx, bad[i], 2);
    size_t prefix = 9;
    const uint64_t key = 100;
    tempo_store_lookup(r->ctx, &key, 1, &prefix);
    result(rc == want[i] && prefix == 0, "place_refuses_whole_batch",
           "%s: %d (want %d), placed %zu", what[i], rc, want[i], prefix);
  }
  result(tempo_kmod_add_objects(r->ctx, NULL, 1) == -EINVAL &&
             tempo_kmod_add_objects(r->ctx, NULL, 0) == 0,
         "place_null", "not -EINVAL / 0");
  // ABI 0.7: the kmod handle's placement reads each element at the caller's stride (a later
  // library's wider struct, its new field zero). The second element is an object placed
  // already, so the batch is refused whole with -EEXIST; read at sizeof instead, it would
  // start in the wide field and be -EINVAL. A nonzero field this library does not know is
  // -EINVAL (it cannot honour it).
  struct tempo_kmod* kmod = NULL;
  struct wide_object {
    struct tempo_kmod_object o;
    uint64_t later;
  } wide[2] = {{good, 0}, {{1, r->offset[1], r->obj_bytes, 0}, 0}};
  const int got = tempo_ctx_get_kmod(r->ctx, &kmod);
  const int strided =
      got == 0 ? tempo_kmod_add_objects_sized(kmod, &wide[0].o, 2, sizeof wide[0]) : got;
  const int narrow =
      got == 0 ? tempo_kmod_add_objects_sized(kmod, &wide[0].o, 1, sizeof wide[0].o - 1) : got;
  wide[0].later = 1;
  const int unknown =
      got == 0 ? tempo_kmod_add_objects_sized(kmod, &wide[0].o, 1, sizeof wide[0]) : got;
  size_t none = 9;
  tempo_store_lookup(r->ctx, &good.key, 1, &none);
  result(strided == -EEXIST && narrow == -EINVAL && unknown == -EINVAL && none == 0,
         "place_through_handle",
         "strided %d (want -EEXIST), narrow %d, unknown field %d (want -EINVAL), placed %zu",
         strided, narrow, unknown, none);
  const struct tempo_object o = {1, 4096};
  const char byte = 1;
  void* base = NULL;
  uint64_t bytes = 0;
  result(tempo_sim_add_objects(r->ctx, &o, 1) == -EOPNOTSUPP &&
             tempo_store_put(r->ctx, 1, &byte, 1) == -EOPNOTSUPP &&
             tempo_store_delete(r->ctx, 1) == -EOPNOTSUPP &&
             tempo_sim_advance(r->ctx, 1) == -EOPNOTSUPP &&
             tempo_ctx_fast_tier(r->ctx, &base, &bytes) == -EOPNOTSUPP,
         "other_devices_calls_eopnotsupp", "a call of another device was accepted");
  const uint64_t keys[] = {1, 2, 3, 4242};
  size_t prefix = 0;
  const int rc = tempo_store_lookup(r->ctx, keys, 4, &prefix);
  result(rc == 0 && prefix == 3, "lookup_finds_placed_objects", "%d prefix %zu", rc, prefix);
}

// kmod only: contexts the settings cannot give.
static void check_kmod_open_errors(struct run* r) {
  struct {
    const char* key;
    const char* value;
    int want;
    const char* in_error;
  } cases[] = {
      {"kmod.path", "/nonexistent/tempo0", -ENOENT, "/nonexistent/tempo0"},
      {"kmod.path", "/dev/null", -ENOTTY, "not a tempo device"},
      {"budget_bytes", "", -EINVAL, "pin limit"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct tempo_config* c = NULL;
    tempo_config_new(&c);
    set(c, "device", "kmod");
    set(c, "kmod.path", r->dev_path);
    set_u64(c, "fast_tier_bytes", r->info.fast_bytes * 2);
    set_u64(c, "budget_bytes", r->budget);
    if (cases[i].value[0]) {
      set(c, cases[i].key, cases[i].value);
    } else {
      set_u64(c, "budget_bytes", r->info.pin_limit_bytes + 4096);
    }
    struct tempo_ctx* ctx = NULL;
    const int rc = tempo_ctx_new(c, &ctx);
    const char* err = tempo_config_error(c);
    result(rc == cases[i].want && ctx == NULL && strstr(err, cases[i].in_error), "open_errors",
           "%s=%s: %d (want %d) '%s'", cases[i].key, cases[i].value, rc, cases[i].want, err);
    tempo_config_free(c);
  }
}

// tempoctl stats reads the context through its control socket.
static void check_tempoctl(struct run* r) {
  char cmd[256], out[8192] = "";
  snprintf(cmd, sizeof(cmd), "tempoctl stats --socket %s --json 2>&1", r->socket);
  FILE* p = popen(cmd, "r");
  size_t n = p ? fread(out, 1, sizeof(out) - 1, p) : 0;
  out[n] = 0;
  const int status = p ? pclose(p) : -1;
  struct tempo_counters s;
  tempo_ctx_stats(r->ctx, &s, sizeof s);
  char want_dev[64], want_released[64];
  snprintf(want_dev, sizeof(want_dev), "\"device\": \"%s\"", r->device);
  snprintf(want_released, sizeof(want_released), "\"claims_released\": %llu",
           (unsigned long long)s.claims_released);
  result(status == 0 && strstr(out, want_dev) && strstr(out, want_released), "tempoctl_stats",
         "exit %d, want %s and %s in: %.300s", status, want_dev, want_released, out);
}

// Waits (up to 60 s: TCG on a loaded host is slow; the check is the state, not the time)
// until the context's ledger, live claims, pinned bytes and operations in flight and the
// kernel's pins are all zero.
static bool all_drained(struct run* r, struct tempo_counters* s, uint64_t* pins) {
  for (int i = 0; i < 600; i++) {
    tempo_ctx_stats(r->ctx, s, sizeof *s);
    *pins = kmod_pins(r->dev_path);
    if (s->ledger_bytes == 0 && s->claims_live == 0 && s->pinned_bytes == 0 &&
        s->outstanding_ops == 0 && *pins == 0)
      return true;
    usleep(100000);
  }
  return false;
}

static int run_kmod(struct run* r, const char* dev, const char* disk) {
  r->device = "kmod";
  r->dev_path = dev;
  r->disk = disk;
  r->socket = "/tmp/tempo-capi.sock";
  const int fd = kmod_open(dev);
  const int rc0 = fd < 0 ? fd : kmod_geometry(dev, &r->info);
  const int rc1 = fd < 0 ? fd : kmod_reset(fd);
  if (fd >= 0) close(fd);
  if (rc0 != 0 || rc1 != 0) {
    result(false, "device", "%s: %s", dev, strerror(rc0 ? -rc0 : -rc1));
    return 1;
  }
  r->obj_bytes = r->info.extent_bytes;  // one extent each
  r->budget = 4 * r->obj_bytes;
  check_kmod_open_errors(r);

  struct tempo_config* c = NULL;
  tempo_config_new(&c);
  if (set(c, "device", "kmod") || set(c, "kmod.path", dev) || set(c, "policy", "demand") ||
      set_u64(c, "fast_tier_bytes", r->info.fast_bytes) || set_u64(c, "budget_bytes", r->budget) ||
      set(c, "control_socket", r->socket) || set(c, "calibration_rate", "100MiB"))
    return 1;
  unlink(r->socket);
  int rc = tempo_ctx_new(c, &r->ctx);
  result(rc == 0, "ctx_new", "%d: %s", rc, tempo_config_error(c));
  tempo_config_free(c);
  if (rc != 0) return 1;
  const char* kind = tempo_ctx_device(r->ctx);
  result(kind && !strcmp(kind, "kmod"), "ctx_device", "'%s'", kind ? kind : "(null)");

  // Objects 1..NOBJ: extents 1..NOBJ of the disk, whose bytes they hold.
  struct tempo_kmod_object placed[NOBJ];
  const int disk_fd = open(disk, O_RDONLY | O_CLOEXEC);
  bool read_ok = disk_fd >= 0;
  for (int k = 1; k <= NOBJ; k++) {
    r->offset[k] = k * r->obj_bytes;
    placed[k - 1] = (struct tempo_kmod_object){k, r->offset[k], r->obj_bytes, 0};
    r->want[k] = malloc(r->obj_bytes);
    read_ok =
        read_ok && pread(disk_fd, r->want[k], r->obj_bytes, r->offset[k]) == (ssize_t)r->obj_bytes;
  }
  if (disk_fd >= 0) close(disk_fd);
  result(read_ok, "disk_read", "%s: %s", disk, strerror(errno));
  rc = tempo_kmod_add_objects(r->ctx, placed, NOBJ);
  result(rc == 0 && tempo_kmod_add_objects(r->ctx, placed, 1) == -EEXIST, "place_objects", "%d",
         rc);
  check_kmod_placement_errors(r);
  check_lifecycle(r);
  check_eviction_notices(r);
  check_tempoctl(r);

  // Every claim above has ended: nothing stays protected or pinned, nothing in flight.
  struct tempo_counters idle;
  uint64_t idle_pins = 0;
  result(all_drained(r, &idle, &idle_pins), "nothing_protected_after_the_checks",
         "ledger %llu live %llu outstanding %llu kernel pins %llu",
         (unsigned long long)idle.ledger_bytes, (unsigned long long)idle.claims_live,
         (unsigned long long)idle.outstanding_ops, (unsigned long long)idle_pins);

  // The last reference cancels live claims and closes the fd: the kernel holds no pin.
  tempo_claim_id live = 0;
  struct tempo_object m[2];
  manifest(r, 1, 2, m);
  tempo_claim_report(r->ctx, m, 2, 0, &live);
  rc = make_ready(r, live);
  struct tempo_counters s;
  tempo_ctx_stats(r->ctx, &s, sizeof s);
  const uint64_t held = kmod_pins(dev);
  tempo_ctx_unref(r->ctx);
  const uint64_t after = kmod_pins(dev);
  result(rc == 0 && held > 0 && after == 0, "unref_drops_every_pin",
         "ready %d pins %llu -> %llu (ledger %llu of %llu, live %llu)", rc,
         (unsigned long long)held, (unsigned long long)after, (unsigned long long)s.ledger_bytes,
         (unsigned long long)s.budget_bytes, (unsigned long long)s.claims_live);
  return 0;
}

// A client context of the tempod at `socket`, as engine `engine`. NULL on failure (a FAIL).
static struct tempo_ctx* daemon_ctx(const char* socket, const char* engine) {
  struct tempo_config* c = NULL;
  struct tempo_ctx* ctx = NULL;
  tempo_config_new(&c);
  if (set(c, "device", "daemon") || set(c, "daemon.socket", socket) ||
      set(c, "daemon.engine", engine)) {
    tempo_config_free(c);
    return NULL;
  }
  const int rc = tempo_ctx_new(c, &ctx);
  result(rc == 0, "daemon_connect", "%s: %d: %s", engine, rc, tempo_config_error(c));
  tempo_config_free(c);
  return ctx;
}

// Objects 1..n at extents 1..n of the device, placed through the daemon.
static int daemon_place(struct run* r, size_t n) {
  struct tempo_kmod_object placed[NOBJ];
  for (size_t k = 1; k <= n; k++) {
    r->offset[k] = k * r->obj_bytes;
    placed[k - 1] = (struct tempo_kmod_object){k, r->offset[k], r->obj_bytes, 0};
  }
  const int rc = tempo_kmod_add_objects(r->ctx, placed, n);
  const int again = tempo_kmod_add_objects(r->ctx, placed, 1);
  const struct tempo_kmod_object bad = {NOBJ + 1, r->obj_bytes / 2, r->obj_bytes, 0};
  const int misaligned = tempo_kmod_add_objects(r->ctx, &bad, 1);
  result(rc == 0 && again == -EEXIST && misaligned == -EINVAL, "place_through_daemon",
         "%d, again %d (want -EEXIST), misaligned %d (want -EINVAL)", rc, again, misaligned);
  return rc;
}

// One engine process: report objects first..first+1, stage them, read them in place and
// release. Its checks are named client<i>.*; returns the number that failed.
static int daemon_engine(struct run* r, const char* socket, int i) {
  char engine[24], prefix[64];
  snprintf(engine, sizeof(engine), "engine-%d", i);
  snprintf(prefix, sizeof(prefix), "%s.client%d", g_name, i);
  g_name = prefix;
  g_failed = 0;
  r->ctx = daemon_ctx(socket, engine);
  if (!r->ctx) return 1;
  const uint64_t first = 1 + 2 * (uint64_t)i;
  struct tempo_object m[2];
  manifest(r, first, 2, m);
  tempo_claim_id id = 0;
  int rc = tempo_claim_report(r->ctx, m, 2, 60LL * 1000000000, &id);
  if (rc == 0) rc = make_ready(r, id);
  result(rc == 0 && state_of(r, id, NULL) == TEMPO_CLAIM_STAGE_READY, "stage_ready", "%d", rc);
  rc = tempo_claim_transfer_begin(r->ctx, id);
  char why[256] = "";
  result(rc == 0 && extents_hold_objects(r, id, first, 2, why, sizeof(why)),
         "mapped_bytes_equal_disk", "begin %d: %s", rc, why);
  // The device file tempod passed is read-only: its mapping cannot be made writable.
  struct tempo_extent ext[2];
  size_t n = 0;
  tempo_claim_extents(r->ctx, id, ext, 2, &n);
  void* page = n ? (void*)((uintptr_t)ext[0].addr & ~(uintptr_t)4095) : NULL;
  const int wr = page ? mprotect(page, 4096, PROT_READ | PROT_WRITE) : 0;
  result(page && wr == -1 && errno == EACCES, "mapping_read_only", "mprotect: %d (%s)", wr,
         strerror(errno));
  rc = tempo_claim_transfer_end(r->ctx, id);
  result(rc == 0 && state_of(r, id, NULL) == TEMPO_CLAIM_RELEASED, "release", "%d", rc);
  tempo_ctx_unref(r->ctx);
  return g_failed;
}

// The device's geometry (objects are one extent each) and a first client, `engine`. 0, or
// 1 after a FAIL.
static int daemon_start(struct run* r, const char* socket, const char* dev, const char* engine) {
  r->dev_path = dev;
  if (kmod_geometry(dev, &r->info) != 0) {
    result(false, "device", "%s: no geometry", dev);
    return 1;
  }
  r->obj_bytes = r->info.extent_bytes;
  r->ctx = daemon_ctx(socket, engine);
  return r->ctx ? 0 : 1;
}

static int run_daemon(struct run* r, const char* socket, const char* dev, const char* disk) {
  if (daemon_start(r, socket, dev, "placer") != 0) return 1;
  const char* kind = tempo_ctx_device(r->ctx);
  void* base = NULL;
  uint64_t bytes = 0;
  result(kind && !strcmp(kind, "kmod") &&
             tempo_ctx_fast_tier(r->ctx, &base, &bytes) == -EOPNOTSUPP &&
             tempo_store_put(r->ctx, 1, &bytes, 1) == -EOPNOTSUPP,
         "daemon_device_kmod", "device '%s', or a uring call accepted", kind ? kind : "(null)");
  const int disk_fd = open(disk, O_RDONLY | O_CLOEXEC);
  bool read_ok = disk_fd >= 0;
  for (int k = 1; k <= 4; k++) {
    r->want[k] = malloc(r->obj_bytes);
    read_ok = read_ok && pread(disk_fd, r->want[k], r->obj_bytes, (off_t)(k * r->obj_bytes)) ==
                             (ssize_t)r->obj_bytes;
  }
  if (disk_fd >= 0) close(disk_fd);
  result(read_ok, "disk_read", "%s: %s", disk, strerror(errno));
  if (daemon_place(r, 4) != 0) return 1;
  // Two engine processes at once, each with its own claim.
  pid_t pids[2];
  fflush(stdout);
  for (int i = 0; i < 2; i++) {
    pids[i] = fork();
    if (pids[i] == 0) {
      tempo_ctx_unref(r->ctx);  // the child's own connections only
      _exit(daemon_engine(r, socket, i) ? 1 : 0);
    }
  }
  for (int i = 0; i < 2; i++) {
    int status = 0;
    waitpid(pids[i], &status, 0);
    result(WIFEXITED(status) && WEXITSTATUS(status) == 0, "engine_process", "client%d: status %d",
           i, status);
  }
  struct tempo_counters s;
  uint64_t pins = 0;
  const bool drained = all_drained(r, &s, &pins);
  result(drained && s.claims_released >= 2, "nothing_left_after_release",
         "ledger %llu live %llu pinned %llu kernel pins %llu released %llu",
         (unsigned long long)s.ledger_bytes, (unsigned long long)s.claims_live,
         (unsigned long long)s.pinned_bytes, (unsigned long long)pins,
         (unsigned long long)s.claims_released);
  tempo_ctx_unref(r->ctx);
  return 0;
}

static int run_daemon_kill(struct run* r, const char* socket, const char* dev) {
  if (daemon_start(r, socket, dev, "observer") != 0 || daemon_place(r, 2) != 0) return 1;
  int ready[2];
  if (pipe(ready) != 0) return 1;
  fflush(stdout);
  const pid_t victim = fork();
  if (victim == 0) {
    // The victim: commits a claim (its read takes a second on this disk), says so, waits.
    close(ready[0]);
    tempo_ctx_unref(r->ctx);
    r->ctx = daemon_ctx(socket, "victim");
    struct tempo_object m[2];
    manifest(r, 1, 2, m);
    tempo_claim_id id = 0;
    int out = -1;
    int rc = r->ctx ? tempo_claim_report(r->ctx, m, 2, 60LL * 1000000000, &id) : -1;
    if (rc == 0) rc = tempo_claim_request_retrieval(r->ctx, id, &out);
    const int st = rc == 0 ? state_of(r, id, NULL) : -1;
    const char c = rc == 0 && out == TEMPO_RETRIEVAL_WAIT && st == TEMPO_CLAIM_STAGING ? 'S' : 'F';
    if (c != 'S') printf("# victim: report/retrieval %d, outcome %d, state %d\n", rc, out, st);
    fflush(stdout);
    if (write(ready[1], &c, 1) != 1) _exit(1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char c = 0;
  const ssize_t got = read(ready[0], &c, 1);
  close(ready[0]);
  struct tempo_counters mid;
  tempo_ctx_stats(r->ctx, &mid, sizeof mid);
  const uint64_t held = kmod_pins(dev);
  result(got == 1 && c == 'S' && mid.ledger_bytes == 2 * r->obj_bytes && held > 0, "victim_staging",
         "victim said '%c', ledger %llu, kernel pins %llu", got == 1 ? c : '-',
         (unsigned long long)mid.ledger_bytes, (unsigned long long)held);
  kill(victim, SIGKILL);
  int status = 0;
  waitpid(victim, &status, 0);
  struct tempo_counters s;
  uint64_t pins = 0;
  const bool drained = all_drained(r, &s, &pins);
  result(drained && s.claims_cancelled >= mid.claims_cancelled + 1, "killed_client_leaves_nothing",
         "ledger %llu live %llu pinned %llu kernel pins %llu cancelled %llu -> %llu",
         (unsigned long long)s.ledger_bytes, (unsigned long long)s.claims_live,
         (unsigned long long)s.pinned_bytes, (unsigned long long)pins,
         (unsigned long long)mid.claims_cancelled, (unsigned long long)s.claims_cancelled);
  // The daemon serves on: the same objects, now resident, for another engine.
  struct tempo_object m[2];
  manifest(r, 1, 2, m);
  tempo_claim_id id = 0;
  int rc = tempo_claim_report(r->ctx, m, 2, 60LL * 1000000000, &id);
  if (rc == 0) rc = make_ready(r, id);
  if (rc == 0) rc = tempo_claim_transfer_begin(r->ctx, id);
  if (rc == 0) rc = tempo_claim_transfer_end(r->ctx, id);
  result(rc == 0 && all_drained(r, &s, &pins), "daemon_serves_after_kill", "%d", rc);
  tempo_ctx_unref(r->ctx);
  return 0;
}

// Why pages may not be on `node`: the arena's memory policy, the process's allowed nodes,
// and whether the kernel takes an MPOL_BIND to the node for a fresh page at all.
static void explain_numa(void* base, int node) {
  int mode = -1;
  unsigned long mask[16] = {0};
  const long pol = syscall(SYS_get_mempolicy, &mode, mask, 1024, base, MPOL_F_ADDR);
  char allowed[256] = "?\n";
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  while (f && fgets(line, sizeof(line), f))
    if (!strncmp(line, "Mems_allowed_list:", 18))
      snprintf(allowed, sizeof(allowed), "%s", line + 18);
  if (f) fclose(f);
  unsigned long want[16] = {0};
  want[node / 64] = 1ul << (node % 64);
  void* page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  const long bind = syscall(SYS_mbind, page, 4096, MPOL_BIND, want, 1024, 0);
  const int bind_errno = errno;
  int got = -1;
  if (bind == 0) {
    *(volatile char*)page = 1;
    syscall(SYS_get_mempolicy, &got, NULL, 0, page, MPOL_F_NODE | MPOL_F_ADDR);
  }
  printf("# arena policy: %ld mode %d nodes 0x%lx; Mems_allowed_list %s", pol, mode, mask[0],
         allowed);
  printf("# mbind(MPOL_BIND, node %d) of a fresh page: %ld (%s), its page on node %d\n", node, bind,
         bind ? strerror(bind_errno) : "ok", got);
  munmap(page, 4096);
}

// The fast tier's pages (prefaulted at start) lie on `node`: first, middle and last page.
static void check_numa_node(void* base, uint64_t bytes, int node) {
  const uint64_t at[] = {0, bytes / 2 / 4096 * 4096, bytes - 4096};
  bool all = true;
  for (size_t i = 0; i < 3; i++) {
    int got = -1;
    const long rc =
        syscall(SYS_get_mempolicy, &got, NULL, 0, (char*)base + at[i], MPOL_F_NODE | MPOL_F_ADDR);
    result(rc == 0 && got == node, "fast_tier_on_numa_node", "page at %llu: %ld, node %d (want %d)",
           (unsigned long long)at[i], rc, got, node);
    all = all && rc == 0 && got == node;
  }
  if (!all) explain_numa(base, node);
}

static int run_uring(struct run* r, const char* store, int argc, char** argv) {
  r->device = "uring";
  r->obj_bytes = 256 * 1024;
  r->budget = 4 * r->obj_bytes;
  r->socket = "/tmp/tempo-capi-uring.sock";
  struct tempo_config* c = NULL;
  tempo_config_new(&c);
  if (set(c, "device", "uring") || set(c, "uring.store_path", store) ||
      set(c, "policy", "demand") || set_u64(c, "budget_bytes", r->budget) ||
      set(c, "control_socket", r->socket))
    return 1;
  int numa_node = -1;
  for (int i = 0; i < argc; i++) {
    char* eq = strchr(argv[i], '=');
    if (!eq) return 2;
    *eq = 0;
    if (set(c, argv[i], eq + 1)) return 1;
    if (!strcmp(argv[i], "uring.numa_node")) numa_node = atoi(eq + 1);
  }
  unlink(r->socket);
  int rc = tempo_ctx_new(c, &r->ctx);
  result(rc == 0, "ctx_new", "%d: %s", rc, tempo_config_error(c));
  tempo_config_free(c);
  if (rc != 0) return 1;
  void* base = NULL;
  uint64_t bytes = 0;
  rc = tempo_ctx_fast_tier(r->ctx, &base, &bytes);
  result(rc == 0 && base && bytes > r->budget, "fast_tier", "%d: %llu bytes", rc,
         (unsigned long long)bytes);
  srand(7);
  bool put_ok = true;
  for (int k = 1; k <= NOBJ; k++) {
    r->want[k] = malloc(r->obj_bytes);
    for (uint64_t i = 0; i < r->obj_bytes; i++) r->want[k][i] = (uint8_t)(rand() >> 7);
    put_ok = put_ok && tempo_store_put(r->ctx, k, r->want[k], r->obj_bytes) == 0;
  }
  result(put_ok, "store_put", "a put failed");
  check_lifecycle(r);
  check_tempoctl(r);
  if (numa_node >= 0) check_numa_node(base, bytes, numa_node);
  tempo_ctx_unref(r->ctx);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr,
            "usage: %s kmod NAME DEV DISK | uring NAME STORE_DIR [KEY=VALUE...] |\n"
            "       daemon NAME SOCKET DEV DISK | daemon-kill NAME SOCKET DEV\n",
            argv[0]);
    return 2;
  }
  g_name = argv[2];
  struct run r = {0};
  result(tempo_version_check(TEMPO_VERSION_MAJOR, TEMPO_VERSION_MINOR) == 0, "version_check",
         "libtempo %s is older than this header", tempo_version());
  int rc = 2;
  if (!strcmp(argv[1], "kmod") && argc == 5) rc = run_kmod(&r, argv[3], argv[4]);
  if (!strcmp(argv[1], "uring")) rc = run_uring(&r, argv[3], argc - 4, argv + 4);
  if (!strcmp(argv[1], "daemon") && argc == 6) rc = run_daemon(&r, argv[3], argv[4], argv[5]);
  if (!strcmp(argv[1], "daemon-kill") && argc == 5) rc = run_daemon_kill(&r, argv[3], argv[4]);
  for (int k = 0; k <= NOBJ; k++) free(r.want[k]);
  if (rc == 2) fprintf(stderr, "%s: bad arguments\n", argv[0]);
  return rc != 0 || g_failed ? 1 : 0;
}

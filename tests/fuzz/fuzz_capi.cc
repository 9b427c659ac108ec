// libFuzzer target: the public C ABI (libtempo.so's calls, compiled into the target) driven
// by an engine that misuses it. The input picks a device (sim, or uring with its objects in
// a real store, on the threaded driver and the wall clock), a policy and a budget, then is
// read as a sequence of calls: reports (known, unknown, zero-size and huge objects,
// shared objects), revisions, layer groups, waiting orders, retrievals, queries of any size,
// transfers begun and ended out of order, cancels, waits, ordinary reads, virtual time, and
// a runtime side fed arbitrary steps. Properties:
//   - every call returns 0 or a negative errno; a call naming an id the context never issued
//     returns -ENOENT;
//   - after every call the accounting holds (controller and provider seen from the loop):
//     ledger <= budget, ledger == its recount (shared objects once), reserved <= ledger,
//     the device's pins == the provider's, used <= capacity; every claim the context still
//     knows is in a valid state;
//   - after the engine cancels what it holds, ends its transfers and lets staging finish:
//     ledger 0, no pin, nothing outstanding, no live claim.
#include <stdlib.h>
#include <unistd.h>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "capi/capi_context.h"
#include "stack/stack.h"
#include "surface/stack_surface.h"
#include "tempo/tempo.h"
#include "tempo/tempo_sim.h"

namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kKnownKeys = 12;  // keys 1..12 are the sim's objects, 13..15 are not
constexpr size_t kMaxClaims = 48;

// The input as a stream of numbers; past its end every read is 0.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  bool done() const { return p_ == end_; }
  uint8_t u8() { return p_ == end_ ? 0 : *p_++; }
  uint64_t bits(int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v = v << 8 | u8();
    return v;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

// Sizes, fast tier and budgets are divided by 2^shift on uring (smaller files, faster runs).
uint64_t object_bytes(uint64_t key, unsigned shift) {
  static constexpr uint64_t kSizes[] = {4096, 64 << 10, kMiB, 3 * kMiB, 9 * kMiB, 100 << 10};
  return kSizes[key % 6] >> shift;
}

[[noreturn]] void fail(const char* what, long value) {
  fprintf(stderr, "fuzz_capi: %s (%ld)\n", what, value);
  __builtin_trap();
}

bool is_errno(int r) {
  switch (r) {
    case 0:
    case -EINVAL:
    case -ENOENT:
    case -EOVERFLOW:
    case -EAGAIN:
    case -EALREADY:
    case -ENOSPC:
    case -EBUSY:
    case -ETIMEDOUT:
    case -EIO:
    case -ENOMEM:
    case -EOPNOTSUPP:
    case -ERANGE:
    case -ENODATA:
    case -ECANCELED:
      return true;
    default:
      return false;
  }
}

// The calls that take only a claim id.
struct OneIdCall {
  const char* name;
  int (*fn)(tempo_ctx*, tempo_claim_id);
};
constexpr OneIdCall kOneIdCalls[] = {{"tempo_claim_transfer_begin", tempo_claim_transfer_begin},
                                     {"tempo_claim_transfer_end", tempo_claim_transfer_end},
                                     {"tempo_claim_cancel", tempo_claim_cancel},
                                     {"tempo_claim_ordinary_read", tempo_claim_ordinary_read}};

struct Engine {
  tempo_ctx* ctx = nullptr;
  tempo_runtime* rt = nullptr;
  unsigned shift = 0;
  std::vector<tempo_claim_id> issued;
  uint64_t next_junk = 1'000'000'007;

  ~Engine() {
    tempo_runtime_free(rt);
    tempo_ctx_unref(ctx);
  }

  // An id to act on: one the context issued, TEMPO_NO_CLAIM, or one it never issued.
  tempo_claim_id pick(Input& in, bool* never_issued) {
    const uint8_t b = in.u8();
    *never_issued = false;
    if (b < 0xf0 && !issued.empty()) return issued[b % issued.size()];
    if (b == 0xff) return TEMPO_NO_CLAIM;
    *never_issued = true;
    return next_junk += 1 + b;
  }

  void check_result(const char* call, int r, bool never_issued) const {
    if (!is_errno(r)) fail(call, r);
    if (never_issued && r != -ENOENT) fail(call, r);
  }

  void one_id_call(Input& in, const OneIdCall& call) {
    bool junk = false;
    const tempo_claim_id id = pick(in, &junk);
    check_result(call.name, call.fn(ctx, id), junk);
  }

  void report(Input& in) {
    const size_t count = in.u8() % 6;  // 0: an empty manifest
    std::vector<tempo_object> objs(count);
    for (auto& o : objs) {
      o.key = 1 + in.u8() % 15;
      o.bytes = object_bytes(o.key, shift);
      const uint8_t twist = in.u8();
      if (twist == 1) o.bytes = 0;
      if (twist == 2) o.bytes = 1ull << 62;
      if (twist == 3) o.bytes += 1;  // not the size the device has
    }
    const int64_t ttu = static_cast<int64_t>(in.bits(5)) - (1ll << 30);
    tempo_claim_id id = 0;
    const int r = tempo_claim_report(ctx, objs.data(), objs.size(), ttu, &id);
    check_result("tempo_claim_report", r, false);
    if (r == 0 && issued.size() < kMaxClaims) issued.push_back(id);
    if (r == 0 && id == TEMPO_NO_CLAIM) fail("report issued TEMPO_NO_CLAIM", 0);
  }

  void runtime(Input& in) {
    if (rt == nullptr || in.u8() < 16) {
      tempo_runtime_free(rt);
      rt = nullptr;
      tempo_runtime_config cfg{{1e6, 5e4, 1.0, 5e6, 2e4, 10.0, 1e10, {0, 0}},
                               static_cast<uint32_t>(in.u8() % 5),
                               static_cast<uint32_t>(in.u8() % 200),
                               in.u8() & 1u,
                               in.u8(),
                               {0, 0, 0, 0}};
      if (in.u8() == 7) cfg.costs.retrieval_bps = 0;
      const int r = tempo_runtime_new(ctx, &cfg, &rt);
      if (!is_errno(r)) fail("tempo_runtime_new", r);
      if (r != 0) rt = nullptr;
      return;
    }
    if (in.u8() < 64) {
      check_result("tempo_runtime_finished", tempo_runtime_finished(rt, in.u8()), false);
      return;
    }
    std::vector<tempo_running_seq> running(in.u8() % 4);
    for (auto& s : running) {
      s.prompt_tokens = in.bits(2);
      s.computed_tokens = in.bits(2);
      s.tokens_generated = in.u8();
      s.output_tokens = in.u8() < 128 ? 0 : in.u8();  // ABI 0.6: a known output length
      s.retrieval_bytes = in.bits(3);
    }
    std::vector<tempo_waiting_seq> waiting(in.u8() % 6);
    bool any_junk = false;
    for (auto& w : waiting) {
      w.prompt_tokens = in.bits(2);
      w.cached_tokens = in.bits(2);
      bool junk = false;
      w.claim = pick(in, &junk);
      any_junk |= junk;
      w.retrieval_bytes = in.bits(3);
    }
    tempo_step step{};
    step.running = running.data();
    step.running_count = running.size();
    step.waiting = waiting.data();
    step.waiting_count = waiting.size();
    step.duration_ns = static_cast<int64_t>(in.bits(3));
    step.prefill_tokens = in.bits(2);
    step.decode_seqs = in.u8() % 4;
    step.decode_context_tokens = in.bits(2);
    // ABI 0.6: a call mid-step, the step in flight's remaining time (negative ones refused).
    if (in.u8() < 64) step.busy_ns = static_cast<int64_t>(in.bits(4)) - (1ll << 24);
    const int r = tempo_runtime_step(rt, &step);
    if (!is_errno(r)) fail("tempo_runtime_step", r);
    if (any_junk && r == 0) fail("tempo_runtime_step took an unknown claim", r);
  }

  void call(Input& in) {
    bool junk = false;
    int outcome = -1;
    tempo_claim_info info{};
    switch (in.u8() % 17) {
      case 0:
      case 1:
        report(in);
        break;
      case 2: {
        const tempo_claim_id id = pick(in, &junk);
        const int64_t ttu = static_cast<int64_t>(in.bits(5)) - (1ll << 30);
        check_result("tempo_claim_revise", tempo_claim_revise(ctx, id, ttu), junk);
        break;
      }
      case 3: {
        const tempo_claim_id id = pick(in, &junk);
        const uint32_t groups = in.u8() % 8;
        const int64_t per = static_cast<int64_t>(in.bits(4)) - (1ll << 20);
        check_result("tempo_claim_set_layers", tempo_claim_set_layers(ctx, id, groups, per), junk);
        break;
      }
      case 4: {
        std::vector<tempo_claim_id> order(in.u8() % 8);
        bool any_junk = false;
        for (auto& id : order) {
          id = pick(in, &junk);
          any_junk |= junk;
        }
        check_result("tempo_order_update", tempo_order_update(ctx, order.data(), order.size()),
                     any_junk);
        break;
      }
      case 5: {
        const tempo_claim_id id = pick(in, &junk);
        const int r = tempo_claim_request_retrieval(ctx, id, &outcome);
        check_result("tempo_claim_request_retrieval", r, junk);
        if (r == 0 && (outcome < TEMPO_RETRIEVAL_READY || outcome > TEMPO_RETRIEVAL_ORDINARY))
          fail("retrieval outcome", outcome);
        break;
      }
      case 6: {
        const tempo_claim_id id = pick(in, &junk);
        static const size_t kSizes[] = {sizeof info, 0, 8, TEMPO_CLAIM_INFO_SIZE_0_1,
                                        TEMPO_STRUCT_SIZE_MAX + 1};
        const size_t size = kSizes[in.u8() % 5];
        std::vector<uint8_t> buf(std::max<size_t>(size, sizeof info), 0xa5);
        const int r =
            tempo_claim_query(ctx, id, reinterpret_cast<tempo_claim_info*>(buf.data()), size);
        if (size == 0 || size > TEMPO_STRUCT_SIZE_MAX) {
          if (r != -EINVAL) fail("query of a bad size", r);
          if (buf[0] != 0xa5) fail("query of a bad size wrote", 0);
          break;
        }
        check_result("tempo_claim_query", r, junk);
        if (r == 0 && size < buf.size() && buf[size] != 0xa5) fail("query wrote past size", 0);
        break;
      }
      case 7:
      case 8:
      case 9:
        one_id_call(in, kOneIdCalls[in.u8() % 4]);
        break;
      case 10: {
        const int64_t ns = static_cast<int64_t>(in.bits(4)) - (1ll << 24);
        const int r = tempo_sim_advance(ctx, in.u8() == 9 ? INT64_MAX : ns);
        if (!is_errno(r)) fail("tempo_sim_advance", r);
        break;
      }
      case 11:
        check_result("tempo_ctx_tick", tempo_ctx_tick(ctx), false);
        break;
      case 12: {
        const tempo_claim_id id = pick(in, &junk);
        const int64_t timeout = static_cast<int64_t>(in.bits(3));
        const int r = tempo_claim_wait_ready(ctx, id, timeout, &outcome);
        check_result("tempo_claim_wait_ready", r, junk);
        break;
      }
      case 13: {
        const tempo_claim_id id = pick(in, &junk);
        tempo_extent ext[4];
        size_t n = 0;
        const size_t capacity = in.u8() % 5;
        const int r = tempo_claim_extents(ctx, id, ext, capacity, &n);
        check_result("tempo_claim_extents", r, junk);
        // *count is the number of extents: written when they fit, else -ENOSPC.
        if ((r == 0 && n > capacity) || (r == -ENOSPC && n <= capacity))
          fail("tempo_claim_extents count against its capacity", static_cast<long>(n));
        break;
      }
      case 14:
        one_id_call(in, kOneIdCalls[3]);
        break;
      case 15:
      case 16:
        runtime(in);
        break;
    }
  }
};

void check_accounting(tempo_ctx* ctx, const char* when) {
  struct Seen {
    uint64_t ledger, recount, budget, provider_pins, device_pins;
  } s{};
  auto* surface = dynamic_cast<tempo::StackSurface*>(tempo_capi_surface(ctx));
  if (!surface) fail("a sim context without an in-process stack", 0);
  surface->inspect([&](tempo::Stack& st) {
    const tempo::ProviderStats ps = st.provider().stats();
    s = Seen{ps.ledger_bytes, st.provider().recompute_ledger_bytes(), ps.budget_bytes,
             st.provider().held_pins(), st.device().stats().pins};
  });
  if (s.ledger > s.budget) fail(when, static_cast<long>(s.ledger));
  if (s.ledger != s.recount) fail(when, static_cast<long>(s.recount));
  if (s.device_pins != s.provider_pins) fail(when, static_cast<long>(s.device_pins));
  tempo_counters c{};
  if (tempo_ctx_stats(ctx, &c, sizeof c) != 0) fail("tempo_ctx_stats", 0);
  if (c.reserved_bytes > c.ledger_bytes) fail(when, static_cast<long>(c.reserved_bytes));
  if (c.fast_tier_used_bytes > c.fast_tier_capacity_bytes) fail(when, 0);
  if (c.claims_planned > c.claims_live) fail(when, static_cast<long>(c.claims_planned));
}

void check_states(Engine& e) {
  for (const tempo_claim_id id : e.issued) {
    tempo_claim_info info{};
    const int r = tempo_claim_query(e.ctx, id, &info, sizeof info);
    if (r == -ENOENT) continue;  // forgotten after its retention
    if (r != 0) fail("query of an issued claim", r);
    if (info.state > TEMPO_CLAIM_FAILED) fail("claim state", info.state);
    if (info.bytes == 0) fail("claim bytes", 0);
  }
}

// The engine lets go of everything: ends transfers, cancels the rest, lets staging finish
// (in virtual time on sim; on uring the reads in flight get up to 10 s of wall time).
void drain(Engine& e, bool wall_clock) {
  for (int round = 0; round < 8; ++round) {
    for (const tempo_claim_id id : e.issued) {
      tempo_claim_info info{};
      if (tempo_claim_query(e.ctx, id, &info, sizeof info) != 0) continue;
      if (info.state == TEMPO_CLAIM_TRANSFERRING) tempo_claim_transfer_end(e.ctx, id);
      tempo_claim_cancel(e.ctx, id);
    }
    if (!wall_clock && tempo_sim_advance(e.ctx, 60'000'000'000) != 0)
      fail("advance while draining", 0);
    check_accounting(e.ctx, "accounting while draining");
  }
  tempo_counters c{};
  for (int waited_ms = 0;; ++waited_ms) {
    if (tempo_ctx_stats(e.ctx, &c, sizeof c) != 0) fail("tempo_ctx_stats", 0);
    if (!wall_clock || (c.outstanding_ops == 0 && c.ledger_bytes == 0) || waited_ms == 10'000)
      break;
    usleep(1000);
  }
  if (c.ledger_bytes != 0) fail("ledger left after drain", static_cast<long>(c.ledger_bytes));
  if (c.pinned_bytes != 0) fail("pins left after drain", static_cast<long>(c.pinned_bytes));
  if (c.outstanding_ops != 0) fail("ops left after drain", static_cast<long>(c.outstanding_ops));
  if (c.claims_live != 0) fail("live claims after drain", static_cast<long>(c.claims_live));
}

// The uring device's object store: made once per process in a new directory under $TMPDIR
// (or /tmp), removed at exit; buffered I/O (tmpfs has no O_DIRECT); objects 1..kKnownKeys.
const std::string& uring_store() {
  static const std::string path = [] {
    const char* tmp = getenv("TMPDIR");
    std::string dir = std::string(tmp != nullptr && *tmp != 0 ? tmp : "/tmp") + "/fuzz_capi.XXXXXX";
    if (mkdtemp(dir.data()) == nullptr) fail("mkdtemp", errno);
    static std::string made;
    made = dir;
    atexit([] { std::filesystem::remove_all(made); });
    return dir + "/store";
  }();
  return path;
}

tempo_ctx* open_context(Input& in, bool uring, unsigned shift) {
  static const char* const kPolicies[] = {"demand", "immediate",    "queue-1",   "queue-4",
                                          "tempo",  "tempo-static", "tempo-risk"};
  static constexpr uint64_t kBudgets[] = {kMiB, 4 * kMiB, 12 * kMiB, 20 * kMiB};
  const std::pair<const char*, std::string> common[] = {
      {"device", uring ? "uring" : "sim"},
      {"policy", kPolicies[in.u8() % 7]},
      {"fast_tier_bytes", std::to_string((24 * kMiB) >> shift)},
      {"budget_bytes", std::to_string(kBudgets[in.u8() % 4] >> shift)},
      {"staging_rate", "1GiB"}};
  const std::pair<const char*, std::string> on_uring[] = {{"uring.store_path", uring_store()},
                                                          {"uring.direct_io", "false"},
                                                          {"uring.prefault", "false"},
                                                          {"tick", "2ms"}};
  tempo_config* cfg = nullptr;
  if (tempo_config_new(&cfg) != 0) fail("tempo_config_new", 0);
  for (const auto& [k, v] : common)
    if (tempo_config_set(cfg, k, v.c_str()) != 0) fail(tempo_config_error(cfg), 0);
  for (const auto& [k, v] : on_uring)
    if (uring && tempo_config_set(cfg, k, v.c_str()) != 0) fail(tempo_config_error(cfg), 0);
  tempo_ctx* ctx = nullptr;
  if (const int r = tempo_ctx_new(cfg, &ctx); r != 0) fail(tempo_config_error(cfg), r);
  tempo_config_free(cfg);
  for (uint64_t k = 1; k <= kKnownKeys; ++k) {
    const tempo_object o{k, object_bytes(k, shift)};
    // On uring the objects are written once; later contexts find them in the store.
    const std::vector<uint8_t> bytes(uring ? o.bytes : 0, static_cast<uint8_t>(k));
    const int r = uring ? tempo_store_put(ctx, k, bytes.data(), bytes.size())
                        : tempo_sim_add_objects(ctx, &o, 1);
    if (r != 0) fail("placing the objects", r);
  }
  return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const bool uring = in.u8() == 0x75;  // 'u'
  Engine e;
  e.shift = uring ? 4 : 0;
  e.ctx = open_context(in, uring, e.shift);
  for (int calls = 0; !in.done() && calls < 256; ++calls) {
    e.call(in);
    check_accounting(e.ctx, "accounting after a call");
    check_states(e);
  }
  drain(e, uring);
  return 0;
}

// ABI 0.7: a locked configuration, reference-counted handles, getters that return -errno,
// strides on the arrays that cross the ABI, TEMPO_TTU_UNKNOWN and checked retrieval bytes.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "capi_ctx.h"
#include "tempo/tempo.h"
#include "tempo/tempo_sim.h"

namespace {

constexpr int64_t kMs = 1'000'000;

// Two threads set two keys of one configuration while a third sets bad values and reads the
// error: every last value lands (an unlocked copy-and-assign loses one) and no error string
// is torn.
TEST(CApiAbi07, AConfigurationSharedByThreadsKeepsEveryThreadsLastValue) {
  tempo_config* cfg = nullptr;
  ASSERT_EQ(tempo_config_new(&cfg), 0);
  for (const auto& [k, v] : small_config("tempo"))
    ASSERT_EQ(tempo_config_set(cfg, k.c_str(), v.c_str()), 0);
  constexpr int kRounds = 3000;
  std::thread budget([&] {
    for (int i = 1; i <= kRounds; ++i)
      tempo_config_set(cfg, "budget_bytes", std::to_string(1000 + i).c_str());
  });
  std::thread tier([&] {
    for (int i = 1; i <= kRounds; ++i)
      tempo_config_set(cfg, "fast_tier_bytes", std::to_string(10000 + i).c_str());
  });
  bool torn = false;
  std::thread errors([&] {
    char buf[256];
    for (int i = 0; i < kRounds; ++i) {
      tempo_config_set(cfg, "tick", "soon");
      if (tempo_config_get_error(cfg, buf, sizeof buf) == 0 &&
          std::strstr(buf, "tick") == nullptr && buf[0] != '\0')
        torn = true;
    }
  });
  budget.join();
  tier.join();
  errors.join();
  EXPECT_FALSE(torn);
  tempo_ctx* ctx = nullptr;
  ASSERT_EQ(tempo_ctx_new(cfg, &ctx), 0) << tempo_config_error(cfg);
  tempo_counters s{};
  ASSERT_EQ(tempo_ctx_get_stats(ctx, &s, sizeof s), 0);
  EXPECT_EQ(s.budget_bytes, uint64_t{1000 + kRounds});
  EXPECT_EQ(s.fast_tier_capacity_bytes, uint64_t{10000 + kRounds});
  tempo_ctx_unref(ctx);
  tempo_config_unref(cfg);
}

TEST(CApiAbi07, TheErrorIsCopiedAndTruncationSaysSo) {
  tempo_config* cfg = nullptr;
  ASSERT_EQ(tempo_config_new(&cfg), 0);
  char buf[8] = "xxxxxxx";
  ASSERT_EQ(tempo_config_get_error(cfg, buf, sizeof buf), 0);
  EXPECT_STREQ(buf, "");
  ASSERT_EQ(tempo_config_set(cfg, "no_such_key", "1"), -EINVAL);
  EXPECT_EQ(tempo_config_get_error(cfg, buf, sizeof buf), -ENOSPC);
  EXPECT_EQ(std::string(buf), std::string(tempo_config_error(cfg)).substr(0, 7));
  std::vector<char> big(std::strlen(tempo_config_error(cfg)) + 1);
  ASSERT_EQ(tempo_config_get_error(cfg, big.data(), big.size()), 0);
  EXPECT_STREQ(big.data(), tempo_config_error(cfg));
  EXPECT_EQ(tempo_config_get_error(cfg, buf, 0), -EINVAL);
  EXPECT_EQ(tempo_config_get_error(nullptr, buf, sizeof buf), -EINVAL);
  tempo_config_unref(cfg);
}

// A reference outlives the one new gave: the handle still works after it is dropped.
TEST(CApiAbi07, EveryHandleIsReferenceCounted) {
  tempo_config* cfg = nullptr;
  ASSERT_EQ(tempo_config_new(&cfg), 0);
  EXPECT_EQ(tempo_config_ref(cfg), cfg);
  tempo_config_free(cfg);  // the 0.6 name drops one reference
  EXPECT_EQ(tempo_config_set(cfg, "policy", "tempo"), 0);
  tempo_config_unref(cfg);
  EXPECT_EQ(tempo_config_ref(nullptr), nullptr);
  tempo_config_unref(nullptr);

  Ctx c(small_config("tempo"));
  tempo_writer* w = nullptr;
  ASSERT_EQ(tempo_writer_new(c.ctx, 1, &w), 0);
  EXPECT_EQ(tempo_writer_ref(w), w);
  tempo_writer_unref(w);
  EXPECT_EQ(tempo_writer_wait(w, 0), 0);
  tempo_writer_free(w);
  EXPECT_EQ(tempo_writer_ref(nullptr), nullptr);

  tempo_runtime_config rc{};
  rc.costs.retrieval_bps = 1e9;
  rc.max_active = 4;
  rc.generation_limit = 16;
  tempo_runtime* rt = nullptr;
  ASSERT_EQ(tempo_runtime_new(c.ctx, &rc, &rt), 0);
  EXPECT_EQ(tempo_runtime_ref(rt), rt);
  tempo_runtime_free(rt);
  EXPECT_EQ(tempo_runtime_finished(rt, 3), 0);
  tempo_runtime_unref(rt);
  tempo_runtime_unref(nullptr);
}

TEST(CApiAbi07, GettersReturnAnErrnoAndTheValueApart) {
  Ctx c(small_config("tempo"));
  int64_t now = -1;
  ASSERT_EQ(tempo_sim_advance(c.ctx, 7 * kMs), 0);
  ASSERT_EQ(tempo_ctx_get_now(c.ctx, &now), 0);
  EXPECT_EQ(now, 7 * kMs);
  now = 42;
  EXPECT_EQ(tempo_ctx_get_now(nullptr, &now), -EINVAL);
  EXPECT_EQ(now, 42);  // untouched on error, unlike tempo_ctx_now's one value
  EXPECT_EQ(tempo_ctx_get_now(c.ctx, nullptr), -EINVAL);
  const char* device = nullptr;
  ASSERT_EQ(tempo_ctx_get_device(c.ctx, &device), 0);
  EXPECT_STREQ(device, "sim");
  EXPECT_EQ(tempo_ctx_get_device(nullptr, &device), -EINVAL);
  void* base = nullptr;
  uint64_t bytes = 0;
  EXPECT_EQ(tempo_ctx_get_fast_tier(c.ctx, &base, &bytes), -EOPNOTSUPP);
  uint64_t key = 0;
  ASSERT_EQ(tempo_key_get_layer_group(99, 3, &key), 0);
  EXPECT_EQ(key, tempo_key_layer_group(99, 3));
  EXPECT_EQ(tempo_key_get_layer_group(99, 3, nullptr), -EINVAL);
  tempo_counters s{};
  EXPECT_EQ(tempo_ctx_get_stats(c.ctx, &s, 0), -EINVAL);
  tempo_claim_info info{};
  EXPECT_EQ(tempo_claim_get_info(c.ctx, 12345, &info, sizeof info), -ENOENT);
}

// A caller built against a struct tempo_object of 24 B (a field a later minor may add).
struct Object24 {
  uint64_t key;
  uint64_t bytes;
  uint64_t future;
};

TEST(CApiAbi07, AManifestCarriesItsStrideAndUnknownFieldsMustBeZero) {
  Ctx c(small_config("tempo"));
  std::vector<tempo_object> objs;
  for (uint64_t k = 1; k <= 4; ++k) objs.push_back({k, 100});
  ASSERT_EQ(tempo_sim_add_objects(c.ctx, objs.data(), objs.size()), 0);
  std::vector<Object24> wide;
  for (uint64_t k = 1; k <= 4; ++k) wide.push_back({k, 100, 0});
  const auto* as_objects = reinterpret_cast<const tempo_object*>(wide.data());
  tempo_claim_id id = 0;
  ASSERT_EQ(tempo_claim_report_sized(c.ctx, as_objects, 4, sizeof(Object24), 2'000 * kMs, &id), 0);
  tempo_claim_info info{};
  ASSERT_EQ(tempo_claim_get_info(c.ctx, id, &info, sizeof info), 0);
  EXPECT_EQ(info.bytes, 400u);  // at a 16 B stride the second object would read {0, 2}
  wide[2].future = 1;
  tempo_claim_id other = 0;
  EXPECT_EQ(tempo_claim_report_sized(c.ctx, as_objects, 4, sizeof(Object24), 0, &other), -EINVAL);
  EXPECT_EQ(tempo_claim_report_sized(c.ctx, objs.data(), 4, 8, 0, &other), -EINVAL);
  EXPECT_EQ(tempo_claim_report_sized(c.ctx, objs.data(), 4, TEMPO_STRUCT_SIZE_MAX + 1, 0, &other),
            -EINVAL);
  EXPECT_EQ(other, 0u);
  ASSERT_EQ(tempo_claim_report_sized(c.ctx, objs.data(), 2, sizeof(tempo_object), 0, &other), 0);
  ASSERT_EQ(tempo_claim_get_info(c.ctx, other, &info, sizeof info), 0);
  EXPECT_EQ(info.bytes, 200u);
  // Extents take a stride too; a stride below the 0.2 struct is refused before the device
  // says it has no bytes.
  size_t count = 0;
  tempo_extent ext[4];
  EXPECT_EQ(tempo_claim_get_extents(c.ctx, id, ext, 8, 4, &count), -EINVAL);
  EXPECT_EQ(tempo_claim_get_extents(c.ctx, id, ext, sizeof(tempo_extent), 4, &count), -EINVAL);
}

// A claim reported at the hit, before the runtime knows when it is needed: it does not
// commit on laxity, reads back as unknown, and commits once a near TTU is given.
TEST(CApiAbi07, AClaimReportedWithAnUnknownTtuWaitsForOne) {
  Ctx c(small_config("tempo"));
  std::vector<tempo_object> objs;
  for (uint64_t k = 1; k <= 5; ++k) objs.push_back({k, 100});
  ASSERT_EQ(tempo_sim_add_objects(c.ctx, objs.data(), objs.size()), 0);
  tempo_claim_id id = 0;
  ASSERT_EQ(tempo_claim_report(c.ctx, objs.data(), 5, TEMPO_TTU_UNKNOWN, &id), 0);
  ASSERT_EQ(tempo_sim_advance(c.ctx, 5'000 * kMs), 0);
  tempo_claim_info info{};
  ASSERT_EQ(tempo_claim_get_info(c.ctx, id, &info, sizeof info), 0);
  EXPECT_EQ(info.state, TEMPO_CLAIM_PLANNED);
  EXPECT_EQ(info.ttu_ns, TEMPO_TTU_UNKNOWN);
  EXPECT_EQ(info.laxity_ns, TEMPO_LAXITY_NONE);
  EXPECT_EQ(info.ttr_ns, 500 * kMs);
  // 500 B at 1000 B/s: a TTU of 0.5 s commits now.
  ASSERT_EQ(tempo_claim_revise(c.ctx, id, 500 * kMs), 0);
  ASSERT_EQ(tempo_sim_advance(c.ctx, 100 * kMs), 0);
  ASSERT_EQ(tempo_claim_get_info(c.ctx, id, &info, sizeof info), 0);
  EXPECT_EQ(info.state, TEMPO_CLAIM_STAGING);
  EXPECT_EQ(info.ttu_ns, 400 * kMs);
}

struct Runtime {
  explicit Runtime(tempo_ctx* ctx) {
    tempo_runtime_config rc{};
    rc.costs.prefill_pass_ns = 1e6;
    rc.costs.prefill_token_ns = 1e4;
    rc.costs.decode_pass_ns = 1e6;
    rc.costs.retrieval_bps = 1e9;
    rc.max_active = 4;
    rc.generation_limit = 16;
    EXPECT_EQ(tempo_runtime_new(ctx, &rc, &rt), 0);
  }
  ~Runtime() { tempo_runtime_unref(rt); }
  tempo_runtime* rt = nullptr;
};

TEST(CApiAbi07, RetrievalBytesBelowTheClaimsAreRefusedWithAMessage) {
  std::vector<std::string> logs;  // outlives the context, which logs as it closes
  Ctx c(small_config("tempo"));
  tempo_ctx_set_log_fn(
      c.ctx,
      [](void* d, int, const char* m) { static_cast<std::vector<std::string>*>(d)->push_back(m); },
      &logs);
  std::vector<tempo_object> objs;
  for (uint64_t k = 1; k <= 5; ++k) objs.push_back({k, 100});
  ASSERT_EQ(tempo_sim_add_objects(c.ctx, objs.data(), objs.size()), 0);
  tempo_claim_id id = 0;
  ASSERT_EQ(tempo_claim_report(c.ctx, objs.data(), 5, TEMPO_TTU_UNKNOWN, &id), 0);
  Runtime r(c.ctx);
  tempo_waiting_seq w{1000, 500, id, 200};  // a 500 B claim said to move 200 B
  tempo_step step{};
  step.waiting = &w;
  step.waiting_count = 1;
  EXPECT_EQ(tempo_runtime_step(r.rt, &step), -EINVAL);
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(logs[0].find("waiting[0] retrieval_bytes 200 below the 500 bytes of its claim"),
            std::string::npos)
      << logs[0];
  tempo_claim_info info{};
  ASSERT_EQ(tempo_claim_get_info(c.ctx, id, &info, sizeof info), 0);
  EXPECT_EQ(info.ttu_ns, TEMPO_TTU_UNKNOWN);  // nothing changed
  // 0 (none given) is taken as in 0.6; the step gives the claim its TTU.
  w.retrieval_bytes = 0;
  ASSERT_EQ(tempo_runtime_step(r.rt, &step), 0);
  ASSERT_EQ(tempo_claim_get_info(c.ctx, id, &info, sizeof info), 0);
  EXPECT_NE(info.ttu_ns, TEMPO_TTU_UNKNOWN);
  EXPECT_GE(info.ttu_ns, 0);
  w.retrieval_bytes = 500;
  EXPECT_EQ(tempo_runtime_step(r.rt, &step), 0);
}

// A caller built against 40 B waiting entries: the stride says where each one starts.
struct Waiting40 {
  tempo_waiting_seq w;
  uint64_t future;
};

TEST(CApiAbi07, StepArraysCarryTheirStrides) {
  Ctx c(small_config("tempo"));
  std::vector<tempo_object> objs;
  for (uint64_t k = 1; k <= 4; ++k) objs.push_back({k, 100});
  ASSERT_EQ(tempo_sim_add_objects(c.ctx, objs.data(), objs.size()), 0);
  tempo_claim_id a = 0, b = 0;
  ASSERT_EQ(tempo_claim_report(c.ctx, objs.data(), 2, TEMPO_TTU_UNKNOWN, &a), 0);
  ASSERT_EQ(tempo_claim_report(c.ctx, objs.data() + 2, 2, TEMPO_TTU_UNKNOWN, &b), 0);
  Runtime r(c.ctx);
  Waiting40 w[2] = {{{1000, 200, a, 200}, 0}, {{1000, 200, b, 200}, 0}};
  tempo_step step{};
  step.waiting = &w[0].w;
  step.waiting_count = 2;
  step.waiting_size = sizeof(Waiting40);
  ASSERT_EQ(tempo_runtime_step(r.rt, &step), 0);
  tempo_claim_info ia{}, ib{};
  ASSERT_EQ(tempo_claim_get_info(c.ctx, a, &ia, sizeof ia), 0);
  ASSERT_EQ(tempo_claim_get_info(c.ctx, b, &ib, sizeof ib), 0);
  EXPECT_NE(ib.ttu_ns, TEMPO_TTU_UNKNOWN);  // the second entry was read where it lies
  EXPECT_GT(ib.ttu_ns, ia.ttu_ns);          // and waits behind the first
  w[1].future = 1;
  EXPECT_EQ(tempo_runtime_step(r.rt, &step), -EINVAL);
  w[1].future = 0;
  step.waiting_size = 8;
  EXPECT_EQ(tempo_runtime_step(r.rt, &step), -EINVAL);
  step.waiting_size = 0;  // the 0.6 stride
  step.waiting = reinterpret_cast<const tempo_waiting_seq*>(&w[0].w);
  step.waiting_count = 1;
  EXPECT_EQ(tempo_runtime_step(r.rt, &step), 0);
  tempo_running_seq running{100, 100, 1, 0, 0};
  step.running = &running;
  step.running_count = 1;
  step.running_size = TEMPO_STRUCT_SIZE_MAX + 1;
  EXPECT_EQ(tempo_runtime_step(r.rt, &step), -EINVAL);
  step.running_size = sizeof running;
  EXPECT_EQ(tempo_runtime_step(r.rt, &step), 0);
}

TEST(CApiAbi07, CostsComeBackSized) {
  Ctx c(small_config("tempo"));
  Runtime r(c.ctx);
  std::vector<unsigned char> buf(sizeof(tempo_step_costs) + 16, 0xAB);
  uint64_t learned = 99;
  ASSERT_EQ(tempo_runtime_get_costs_sized(r.rt, reinterpret_cast<tempo_step_costs*>(buf.data()),
                                          sizeof(tempo_step_costs) + 8, &learned),
            0);
  EXPECT_EQ(learned, 0u);
  tempo_step_costs got;
  std::memcpy(&got, buf.data(), sizeof got);
  EXPECT_EQ(got.prefill_pass_ns, 1e6);
  EXPECT_EQ(got.retrieval_bps, 1e9);
  for (size_t i = sizeof(tempo_step_costs); i < sizeof(tempo_step_costs) + 8; ++i)
    EXPECT_EQ(buf[i], 0) << i;
  EXPECT_EQ(buf[sizeof(tempo_step_costs) + 8], 0xAB);
  std::fill(buf.begin(), buf.end(), 0xAB);
  ASSERT_EQ(tempo_runtime_get_costs_sized(r.rt, reinterpret_cast<tempo_step_costs*>(buf.data()), 8,
                                          nullptr),
            0);
  EXPECT_EQ(buf[8], 0xAB);
  EXPECT_EQ(tempo_runtime_get_costs_sized(r.rt, &got, 0, nullptr), -EINVAL);
}

// Two 3000 B claims of the same TTU against a 5000 B budget: their laxity runs out at the
// same tick and the waiting order says which one commits. The 0.7 name and the 0.6 one set
// the same order.
tempo_claim_id first_committed(bool new_name, bool b_first) {
  Ctx c(small_config("tempo"));
  std::vector<tempo_object> objs;
  for (uint64_t k = 1; k <= 6; ++k) objs.push_back({k, 1000});
  EXPECT_EQ(tempo_sim_add_objects(c.ctx, objs.data(), objs.size()), 0);
  tempo_claim_id a = 0, b = 0;
  EXPECT_EQ(tempo_claim_report(c.ctx, objs.data(), 3, 10'000 * kMs, &a), 0);
  EXPECT_EQ(tempo_claim_report(c.ctx, objs.data() + 3, 3, 10'000 * kMs, &b), 0);
  const tempo_claim_id order[] = {b_first ? b : a, b_first ? a : b};
  EXPECT_EQ(new_name ? tempo_ctx_set_order(c.ctx, order, 2) : tempo_order_update(c.ctx, order, 2),
            0);
  EXPECT_EQ(tempo_sim_advance(c.ctx, 8'000 * kMs), 0);
  tempo_claim_info ia{}, ib{};
  EXPECT_EQ(tempo_claim_get_info(c.ctx, a, &ia, sizeof ia), 0);
  EXPECT_EQ(tempo_claim_get_info(c.ctx, b, &ib, sizeof ib), 0);
  EXPECT_NE(ia.state == TEMPO_CLAIM_PLANNED, ib.state == TEMPO_CLAIM_PLANNED);  // one committed
  return ia.state == TEMPO_CLAIM_PLANNED ? b : a;
}

TEST(CApiAbi07, TheWaitingOrderIsTheContextsUnderEitherName) {
  EXPECT_EQ(first_committed(true, true), 2u);
  EXPECT_EQ(first_committed(true, false), 1u);
  EXPECT_EQ(first_committed(false, true), 2u);
  EXPECT_EQ(first_committed(false, false), 1u);
  Ctx c(small_config("tempo"));
  const tempo_claim_id unknown[] = {77};
  EXPECT_EQ(tempo_ctx_set_order(c.ctx, unknown, 1), -ENOENT);
  EXPECT_EQ(tempo_ctx_set_order(c.ctx, nullptr, 1), -EINVAL);
  EXPECT_EQ(tempo_ctx_set_order(c.ctx, nullptr, 0), 0);
  EXPECT_EQ(tempo_ctx_set_order(nullptr, unknown, 1), -EINVAL);
}

static_assert(sizeof(tempo_retrieval_t) == 4);

// The 0.7 calls write the outcome as 32 bits and nothing else; the int* ones still answer.
TEST(CApiAbi07, RetrievalOutcomesCrossAsFixedSizeWords) {
  Ctx c(small_config("tempo"));
  std::vector<tempo_object> objs;
  for (uint64_t k = 1; k <= 3; ++k) objs.push_back({k, 100});
  ASSERT_EQ(tempo_sim_add_objects(c.ctx, objs.data(), objs.size()), 0);
  tempo_claim_id a = 0, b = 0, big = 0;
  ASSERT_EQ(tempo_claim_report(c.ctx, objs.data(), 1, TEMPO_TTU_UNKNOWN, &a), 0);
  ASSERT_EQ(tempo_claim_report(c.ctx, objs.data() + 1, 1, TEMPO_TTU_UNKNOWN, &b), 0);
  struct {
    tempo_retrieval_t outcome;
    uint32_t after;
  } out{0xFFFFFFFFu, 0xA5A5A5A5u};
  ASSERT_EQ(tempo_claim_retrieve(c.ctx, a, &out.outcome), 0);
  EXPECT_EQ(out.outcome, uint32_t{TEMPO_RETRIEVAL_WAIT});  // 100 B staging at 1000 B/s
  EXPECT_EQ(out.after, 0xA5A5A5A5u);
  out.outcome = 0xFFFFFFFFu;
  ASSERT_EQ(tempo_claim_wait(c.ctx, a, 1'000 * kMs, &out.outcome), 0);
  EXPECT_EQ(out.outcome, uint32_t{TEMPO_RETRIEVAL_READY});
  EXPECT_EQ(out.after, 0xA5A5A5A5u);
  int old = -1;
  ASSERT_EQ(tempo_claim_request_retrieval(c.ctx, b, &old), 0);
  EXPECT_EQ(old, TEMPO_RETRIEVAL_WAIT);
  old = -1;
  ASSERT_EQ(tempo_claim_wait_ready(c.ctx, b, 1'000 * kMs, &old), 0);
  EXPECT_EQ(old, TEMPO_RETRIEVAL_READY);
  // Beyond the 5000 B budget: the ordinary path.
  const tempo_object huge{99, 6000};
  ASSERT_EQ(tempo_sim_add_objects(c.ctx, &huge, 1), 0);
  ASSERT_EQ(tempo_claim_report(c.ctx, &huge, 1, TEMPO_TTU_UNKNOWN, &big), 0);
  ASSERT_EQ(tempo_claim_retrieve(c.ctx, big, &out.outcome), 0);
  EXPECT_EQ(out.outcome, uint32_t{TEMPO_RETRIEVAL_ORDINARY});
  out.outcome = 7;
  EXPECT_EQ(tempo_claim_retrieve(c.ctx, 12345, &out.outcome), -ENOENT);
  EXPECT_EQ(out.outcome, 7u);  // untouched on error
  EXPECT_EQ(tempo_claim_retrieve(c.ctx, a, nullptr), -EINVAL);
  EXPECT_EQ(tempo_claim_wait(c.ctx, a, -1, &out.outcome), -EINVAL);
  EXPECT_EQ(tempo_claim_wait(c.ctx, a, 0, nullptr), -EINVAL);
}

// The sim's calls take the handle only a sim context hands out; it is part of the context.
TEST(CApiAbi07, TheSimIsASubObjectOfASimContextOnly) {
  std::vector<std::string> logs;
  Ctx c(small_config("tempo"));
  tempo_ctx_set_log_fn(
      c.ctx,
      [](void* d, int, const char* m) { static_cast<std::vector<std::string>*>(d)->push_back(m); },
      &logs);
  tempo_sim* sim = nullptr;
  ASSERT_EQ(tempo_ctx_get_sim(c.ctx, &sim), 0);
  ASSERT_NE(sim, nullptr);
  tempo_sim* again = nullptr;
  ASSERT_EQ(tempo_ctx_get_sim(c.ctx, &again), 0);
  EXPECT_EQ(again, sim);
  ASSERT_EQ(tempo_sim_run(sim, 3 * kMs), 0);
  int64_t now = 0;
  ASSERT_EQ(tempo_ctx_get_now(c.ctx, &now), 0);
  EXPECT_EQ(now, 3 * kMs);
  EXPECT_EQ(tempo_sim_run(sim, -1), -EINVAL);
  EXPECT_EQ(tempo_sim_run(nullptr, 1), -EINVAL);
  EXPECT_TRUE(logs.empty());

  tempo_store* store = reinterpret_cast<tempo_store*>(0x1);
  EXPECT_EQ(tempo_ctx_get_store(c.ctx, &store), -EOPNOTSUPP);
  EXPECT_EQ(store, reinterpret_cast<tempo_store*>(0x1));  // untouched
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_EQ(logs[0], "tempo_ctx_get_store: the context's device is sim, not uring");
  tempo_kmod* kmod = nullptr;
  EXPECT_EQ(tempo_ctx_get_kmod(c.ctx, &kmod), -EOPNOTSUPP);
  EXPECT_EQ(kmod, nullptr);
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_EQ(logs[1], "tempo_ctx_get_kmod: the context's device is sim, not kmod");
  EXPECT_EQ(tempo_ctx_get_sim(nullptr, &sim), -EINVAL);
  EXPECT_EQ(tempo_ctx_get_sim(c.ctx, nullptr), -EINVAL);
  EXPECT_EQ(tempo_store_write(nullptr, 1, "x", 1), -EINVAL);
  size_t prefix = 0;
  const uint64_t key = 1;
  EXPECT_EQ(tempo_store_get_prefix(nullptr, &key, 1, &prefix), -EINVAL);
  EXPECT_EQ(tempo_store_remove(nullptr, 1), -EINVAL);
  const tempo_kmod_object placed{1, 0, 4096, 0};
  EXPECT_EQ(tempo_kmod_add_objects_sized(nullptr, &placed, 1, sizeof placed), -EINVAL);

  // Borrowed: valid while any reference on the context is held.
  tempo_ctx* held = tempo_ctx_ref(c.ctx);
  ASSERT_EQ(tempo_sim_run(sim, kMs), 0);
  tempo_ctx_unref(held);
}

TEST(CApiAbi07, SimObjectsCarryTheirStride) {
  Ctx c(small_config("tempo"));
  tempo_sim* sim = nullptr;
  ASSERT_EQ(tempo_ctx_get_sim(c.ctx, &sim), 0);
  std::vector<Object24> wide;
  for (uint64_t k = 1; k <= 3; ++k) wide.push_back({k, 100 * k, 0});
  const auto* as_objects = reinterpret_cast<const tempo_object*>(wide.data());
  wide[2].future = 1;  // a field this library does not know, set: nothing is added
  EXPECT_EQ(tempo_sim_add_objects_sized(sim, as_objects, 3, sizeof(Object24)), -EINVAL);
  EXPECT_EQ(tempo_sim_add_objects_sized(sim, as_objects, 3, 8), -EINVAL);
  EXPECT_EQ(tempo_sim_add_objects_sized(sim, as_objects, 3, TEMPO_STRUCT_SIZE_MAX + 1), -EINVAL);
  EXPECT_EQ(tempo_sim_add_objects_sized(sim, nullptr, 3, sizeof(tempo_object)), -EINVAL);
  EXPECT_EQ(tempo_sim_add_objects_sized(nullptr, as_objects, 3, sizeof(Object24)), -EINVAL);
  wide[2].future = 0;
  ASSERT_EQ(tempo_sim_add_objects_sized(sim, as_objects, 3, sizeof(Object24)), 0);
  EXPECT_EQ(tempo_sim_add_objects_sized(sim, as_objects, 1, sizeof(Object24)), -EEXIST);
  // Read at a 16 B stride, the second object would be {0, 200}, one the tier does not hold:
  // its claim would fail at commit. Each key stages with its own size.
  const tempo_object manifest[] = {{2, 200}, {3, 300}};
  tempo_claim_id id = 0;
  ASSERT_EQ(tempo_claim_report(c.ctx, manifest, 2, 0, &id), 0);
  tempo_retrieval_t outcome = 0;
  ASSERT_EQ(tempo_claim_wait(c.ctx, id, 1'000 * kMs, &outcome), 0);
  EXPECT_EQ(outcome, uint32_t{TEMPO_RETRIEVAL_READY});
  tempo_claim_info info{};
  ASSERT_EQ(tempo_claim_get_info(c.ctx, id, &info, sizeof info), 0);
  EXPECT_EQ(info.state, TEMPO_CLAIM_STAGE_READY);
  EXPECT_EQ(info.resident_bytes, 500u);
}

// Completions come out at the caller's stride: zeros past the 24 B this library knows,
// nothing past the element.
TEST(CApiAbi07, WriterCompletionsCarryTheirStride) {
  Ctx c(small_config("tempo"));
  tempo_writer* w = nullptr;
  ASSERT_EQ(tempo_writer_new(c.ctx, 1, &w), 0);
  const char data[] = "abc";
  ASSERT_EQ(tempo_writer_put(w, 5, data, 3, 77), 0);
  ASSERT_EQ(tempo_writer_put(w, 6, data, 3, 78), 0);
  ASSERT_EQ(tempo_writer_wait(w, 10'000 * kMs), 0);
  std::vector<unsigned char> buf(3 * 32, 0xAB);
  auto* out = reinterpret_cast<tempo_put_completion*>(buf.data());
  size_t count = 9;
  EXPECT_EQ(tempo_writer_get_completions(w, out, 16, 2, &count), -EINVAL);
  EXPECT_EQ(tempo_writer_get_completions(w, out, TEMPO_STRUCT_SIZE_MAX + 1, 2, &count), -EINVAL);
  EXPECT_EQ(count, 9u);
  ASSERT_EQ(tempo_writer_get_completions(w, out, 32, 2, &count), 0);
  ASSERT_EQ(count, 2u);
  for (size_t i = 0; i < 2; ++i) {
    tempo_put_completion got;
    std::memcpy(&got, buf.data() + i * 32, sizeof got);
    EXPECT_EQ(got.key, 5 + i);
    EXPECT_EQ(got.cookie, 77 + i);
    EXPECT_EQ(got.status, -EOPNOTSUPP);  // no store to put into on sim
    for (size_t b = sizeof got; b < 32; ++b) EXPECT_EQ(buf[i * 32 + b], 0) << i << " " << b;
  }
  EXPECT_EQ(buf[64], 0xAB);
  ASSERT_EQ(tempo_writer_get_completions(w, out, 32, 2, &count), 0);
  EXPECT_EQ(count, 0u);
  tempo_writer_unref(w);
}

// A queue of a claim, a request without one, and a claim: the request without one gets its
// TTU too, in queue order between the two, and each claim's is the TTU its claim was given.
TEST(CApiAbi07, TheProjectionCoversRequestsWithoutAClaim) {
  Ctx c(small_config("tempo"));
  std::vector<tempo_object> objs;
  for (uint64_t k = 1; k <= 2; ++k) objs.push_back({k, 100});
  ASSERT_EQ(tempo_sim_add_objects(c.ctx, objs.data(), objs.size()), 0);
  tempo_claim_id a = 0, b = 0;
  ASSERT_EQ(tempo_claim_report(c.ctx, &objs[0], 1, TEMPO_TTU_UNKNOWN, &a), 0);
  ASSERT_EQ(tempo_claim_report(c.ctx, &objs[1], 1, TEMPO_TTU_UNKNOWN, &b), 0);
  tempo_runtime_config rc{};
  rc.costs.prefill_pass_ns = 1e6;
  rc.costs.prefill_token_ns = 1e4;
  rc.costs.decode_pass_ns = 1e6;
  rc.costs.retrieval_bps = 1e9;
  rc.max_active = 1;  // one slot: each request waits for the one before it to finish
  rc.generation_limit = 16;
  tempo_runtime* rt = nullptr;
  ASSERT_EQ(tempo_runtime_new(c.ctx, &rc, &rt), 0);
  size_t count = 9;
  ASSERT_EQ(tempo_runtime_get_projection(rt, nullptr, sizeof(tempo_waiting_projection), 0, &count),
            0);
  EXPECT_EQ(count, 0u);  // no step yet
  ASSERT_EQ(tempo_runtime_finished(rt, 4), 0);
  const tempo_waiting_seq w[] = {
      {1000, 500, a, 0}, {2000, 0, TEMPO_NO_CLAIM, 0}, {1000, 500, b, 0}};
  tempo_step step{};
  step.waiting = w;
  step.waiting_count = 3;
  ASSERT_EQ(tempo_runtime_step(rt, &step), 0);
  tempo_waiting_projection p[3];
  EXPECT_EQ(tempo_runtime_get_projection(rt, p, sizeof p[0], 2, &count), -ENOSPC);
  EXPECT_EQ(count, 3u);
  ASSERT_EQ(tempo_runtime_get_projection(rt, p, sizeof p[0], 3, &count), 0);
  tempo_claim_info ia{}, ib{};
  ASSERT_EQ(tempo_claim_get_info(c.ctx, a, &ia, sizeof ia), 0);
  ASSERT_EQ(tempo_claim_get_info(c.ctx, b, &ib, sizeof ib), 0);
  EXPECT_EQ(p[0].ttu_ns, ia.ttu_ns);
  EXPECT_EQ(p[2].ttu_ns, ib.ttu_ns);
  EXPECT_GT(p[1].ttu_ns, p[0].ttu_ns);
  EXPECT_LT(p[1].ttu_ns, p[2].ttu_ns);
  EXPECT_EQ(p[0].flags, TEMPO_PROJECTION_F_CLAIM);
  EXPECT_EQ(p[1].flags, 0u);
  EXPECT_EQ(p[2].flags, TEMPO_PROJECTION_F_CLAIM);
  for (const auto& e : p) EXPECT_EQ(e.output_tokens, 4u);  // the one completed output
  // Aged with the clock, as a claim's TTU is.
  ASSERT_EQ(tempo_sim_advance(c.ctx, kMs), 0);
  tempo_waiting_projection later[3];
  ASSERT_EQ(tempo_runtime_get_projection(rt, later, sizeof later[0], 3, &count), 0);
  EXPECT_EQ(later[1].ttu_ns, p[1].ttu_ns - kMs);
  // At a larger stride: zeros past the 16 B this library knows.
  std::vector<unsigned char> buf(3 * 24, 0xAB);
  ASSERT_EQ(tempo_runtime_get_projection(
                rt, reinterpret_cast<tempo_waiting_projection*>(buf.data()), 24, 3, &count),
            0);
  tempo_waiting_projection second;
  std::memcpy(&second, buf.data() + 24, sizeof second);
  EXPECT_EQ(second.ttu_ns, later[1].ttu_ns);
  for (size_t i = 16; i < 24; ++i) EXPECT_EQ(buf[24 + i], 0);
  EXPECT_EQ(tempo_runtime_get_projection(rt, p, 8, 3, &count), -EINVAL);
  EXPECT_EQ(tempo_runtime_get_projection(rt, nullptr, sizeof p[0], 3, &count), -EINVAL);
  EXPECT_EQ(tempo_runtime_get_projection(nullptr, p, sizeof p[0], 3, &count), -EINVAL);
  // A refused step leaves the last one's projection.
  tempo_waiting_seq twice[] = {w[0], w[0]};
  step.waiting = twice;
  step.waiting_count = 2;
  EXPECT_EQ(tempo_runtime_step(rt, &step), -EINVAL);
  ASSERT_EQ(tempo_runtime_get_projection(rt, p, sizeof p[0], 3, &count), 0);
  EXPECT_EQ(count, 3u);
  tempo_runtime_unref(rt);
}

}  // namespace

// The outputs that condition the projections read back, oldest first, the window's last only.
TEST(CApiAbi07, TheHistoryReadsBackTheWindowOldestFirst) {
  Ctx c(small_config("tempo"));
  tempo_runtime_config rc{};
  rc.costs.decode_pass_ns = 1e6;
  rc.costs.retrieval_bps = 1e9;
  rc.max_active = 1;
  rc.generation_limit = 16;
  rc.history_window = 3;
  tempo_runtime* rt = nullptr;
  ASSERT_EQ(tempo_runtime_new(c.ctx, &rc, &rt), 0);
  size_t count = 9;
  ASSERT_EQ(tempo_runtime_get_history(rt, nullptr, 0, &count), 0);
  EXPECT_EQ(count, 0u);
  for (uint32_t n : {5u, 6u, 7u, 8u, 9u}) ASSERT_EQ(tempo_runtime_finished(rt, n), 0);
  uint32_t lengths[3] = {};
  EXPECT_EQ(tempo_runtime_get_history(rt, lengths, 2, &count), -ENOSPC);
  EXPECT_EQ(count, 3u);
  EXPECT_EQ(lengths[0], 0u);  // nothing written
  ASSERT_EQ(tempo_runtime_get_history(rt, lengths, 3, &count), 0);
  EXPECT_EQ(lengths[0], 7u);
  EXPECT_EQ(lengths[1], 8u);
  EXPECT_EQ(lengths[2], 9u);
  EXPECT_EQ(tempo_runtime_get_history(rt, nullptr, 3, &count), -EINVAL);
  EXPECT_EQ(tempo_runtime_get_history(rt, lengths, 3, nullptr), -EINVAL);
  EXPECT_EQ(tempo_runtime_get_history(nullptr, lengths, 3, &count), -EINVAL);
  tempo_runtime_free(rt);
}

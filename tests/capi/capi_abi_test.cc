// The ABI grows safely: sized structs (a caller built against a smaller struct gets exactly
// the bytes it asked for), the 0.1 symbols old binaries call, and the claim view's TTR,
// residency and deferral counts.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "capi_ctx.h"
#include "tempo/tempo.h"
#include "tempo/tempo_sim.h"

namespace {

constexpr int64_t kMs = 1'000'000;
constexpr unsigned char kFill = 0xAB;

// Bytes that stayed kFill from `from` to the end.
bool untouched(const std::vector<unsigned char>& buf, size_t from) {
  for (size_t i = from; i < buf.size(); ++i)
    if (buf[i] != kFill) return false;
  return true;
}

// Ten objects of 100 B on the sim SSD tier; one claim over the first five (500 B).
struct OneClaim {
  explicit OneClaim(const char* policy, int64_t ttu_ns = 2'000 * kMs) : c(small_config(policy)) {
    for (uint64_t k = 1; k <= 10; ++k) objs.push_back({k, 100});
    EXPECT_EQ(tempo_sim_add_objects(c.ctx, objs.data(), objs.size()), 0);
    EXPECT_EQ(tempo_claim_report(c.ctx, objs.data(), 5, ttu_ns, &id), 0);
  }
  tempo_claim_info query() {
    tempo_claim_info info{};
    EXPECT_EQ(tempo_claim_query(c.ctx, id, &info, sizeof info), 0);
    return info;
  }
  Ctx c;
  std::vector<tempo_object> objs;
  tempo_claim_id id = 0;
};

TEST(CApiAbi, ASmallerClaimInfoGetsItsBytesAndTheTailIsUntouched) {
  OneClaim t("tempo");
  const tempo_claim_info full = t.query();
  std::vector<unsigned char> buf(sizeof(tempo_claim_info) + 16, kFill);
  auto* info = reinterpret_cast<tempo_claim_info*>(buf.data());
  ASSERT_EQ(tempo_claim_query(t.c.ctx, t.id, info, TEMPO_CLAIM_INFO_SIZE_0_1), 0);
  EXPECT_EQ(std::memcmp(buf.data(), &full, TEMPO_CLAIM_INFO_SIZE_0_1), 0);
  EXPECT_TRUE(untouched(buf, TEMPO_CLAIM_INFO_SIZE_0_1));
  // Any prefix, even one that ends inside a field.
  std::fill(buf.begin(), buf.end(), kFill);
  ASSERT_EQ(tempo_claim_query(t.c.ctx, t.id, info, 13), 0);
  EXPECT_EQ(std::memcmp(buf.data(), &full, 13), 0);
  EXPECT_TRUE(untouched(buf, 13));
}

TEST(CApiAbi, ALargerStructGetsZerosForFieldsThisLibraryLacks) {
  OneClaim t("tempo");
  std::vector<unsigned char> buf(sizeof(tempo_claim_info) + 24, kFill);
  ASSERT_EQ(tempo_claim_query(t.c.ctx, t.id, reinterpret_cast<tempo_claim_info*>(buf.data()),
                              sizeof(tempo_claim_info) + 16),
            0);
  for (size_t i = sizeof(tempo_claim_info); i < sizeof(tempo_claim_info) + 16; ++i)
    EXPECT_EQ(buf[i], 0) << i;
  EXPECT_TRUE(untouched(buf, sizeof(tempo_claim_info) + 16));
}

TEST(CApiAbi, ASizeOfZeroOrBeyondTheLimitIsRefusedAndNothingIsWritten) {
  OneClaim t("tempo");
  std::vector<unsigned char> buf(TEMPO_STRUCT_SIZE_MAX + 8, kFill);
  auto* info = reinterpret_cast<tempo_claim_info*>(buf.data());
  auto* counters = reinterpret_cast<tempo_counters*>(buf.data());
  EXPECT_EQ(tempo_claim_query(t.c.ctx, t.id, info, 0), -EINVAL);
  EXPECT_EQ(tempo_claim_query(t.c.ctx, t.id, info, TEMPO_STRUCT_SIZE_MAX + 1), -EINVAL);
  EXPECT_EQ(tempo_claim_query(t.c.ctx, 999, info, sizeof(tempo_claim_info)), -ENOENT);
  EXPECT_EQ(tempo_ctx_stats(t.c.ctx, counters, 0), -EINVAL);
  EXPECT_EQ(tempo_ctx_stats(t.c.ctx, counters, SIZE_MAX), -EINVAL);
  EXPECT_EQ(tempo_ctx_stats(nullptr, counters, sizeof(tempo_counters)), -EINVAL);
  EXPECT_TRUE(untouched(buf, 0));
  EXPECT_EQ(tempo_claim_query(t.c.ctx, t.id, info, TEMPO_STRUCT_SIZE_MAX), 0);
  EXPECT_TRUE(untouched(buf, TEMPO_STRUCT_SIZE_MAX));
}

TEST(CApiAbi, ASmallerCountersStructGetsItsBytesAndTheTailIsUntouched) {
  OneClaim t("immediate");
  tempo_counters full{};
  ASSERT_EQ(tempo_ctx_stats(t.c.ctx, &full, sizeof full), 0);
  constexpr size_t kOld = offsetof(tempo_counters, capacity_deferral_attempts);
  std::vector<unsigned char> buf(sizeof(tempo_counters), kFill);
  ASSERT_EQ(tempo_ctx_stats(t.c.ctx, reinterpret_cast<tempo_counters*>(buf.data()), kOld), 0);
  EXPECT_EQ(std::memcmp(buf.data(), &full, kOld), 0);  // the sim clock did not move
  EXPECT_TRUE(untouched(buf, kOld));
}

// What a binary linked against ABI 0.1-0.2 calls: the same names at version TEMPO_0.1,
// without a size.
template <typename Fn>
Fn symbol_0_1(const char* name) {
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&tempo_version), &self) == 0) return nullptr;
  void* lib = dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return nullptr;
  void* sym = dlvsym(lib, name, "TEMPO_0.1");
  dlclose(lib);  // still loaded: the test links it
  return reinterpret_cast<Fn>(sym);
}

TEST(CApiAbi, BinariesBuiltAgainst01KeepTheirClaimInfoLayout) {
  using Query01 = int (*)(tempo_ctx*, tempo_claim_id, void*);
  const auto query01 = symbol_0_1<Query01>("tempo_claim_query");
  ASSERT_NE(query01, nullptr) << dlerror();
  EXPECT_NE(reinterpret_cast<void*>(query01), reinterpret_cast<void*>(&tempo_claim_query));
  OneClaim t("tempo");
  const tempo_claim_info full = t.query();
  std::vector<unsigned char> buf(sizeof(tempo_claim_info), kFill);
  ASSERT_EQ(query01(t.c.ctx, t.id, buf.data()), 0);
  EXPECT_EQ(std::memcmp(buf.data(), &full, TEMPO_CLAIM_INFO_SIZE_0_1), 0);
  EXPECT_TRUE(untouched(buf, TEMPO_CLAIM_INFO_SIZE_0_1));
  EXPECT_EQ(query01(t.c.ctx, t.id, nullptr), -EINVAL);
}

// Two claims of 300 B against a 500 B budget under `immediate`: the second is refused at
// every tick until the first is released.
TEST(CApiAbi, CapacityDeferralsCountClaimsAndAttemptsApart) {
  ConfigKeys keys = small_config("immediate");
  keys.emplace_back("budget_bytes", "500");
  Ctx c(keys);
  tempo_ctx* ctx = c.ctx;
  std::vector<tempo_object> objs;
  for (uint64_t k = 1; k <= 6; ++k) objs.push_back({k, 100});
  ASSERT_EQ(tempo_sim_add_objects(ctx, objs.data(), objs.size()), 0);
  tempo_claim_id first = 0, second = 0;
  ASSERT_EQ(tempo_claim_report(ctx, objs.data(), 3, 10'000 * kMs, &first), 0);
  ASSERT_EQ(tempo_claim_report(ctx, objs.data() + 3, 3, 10'000 * kMs, &second), 0);
  ASSERT_EQ(tempo_sim_advance(ctx, 200 * kMs), 0);  // four 50 ms ticks refuse it again
  tempo_claim_info info{};
  ASSERT_EQ(tempo_claim_query(ctx, second, &info, sizeof info), 0);
  EXPECT_EQ(info.state, TEMPO_CLAIM_PLANNED);
  EXPECT_EQ(info.flags, 0u);  // blocked for now, not NEVER_FITS: 300 B fits an empty budget
  EXPECT_GE(info.deferrals, 4u);
  tempo_counters s{};
  ASSERT_EQ(tempo_ctx_stats(ctx, &s, sizeof s), 0);
  EXPECT_EQ(s.deferred_claims, 1u);
  EXPECT_EQ(s.capacity_deferral_attempts, info.deferrals);

  // ABI 0.1's struct tempo_stats counted attempts as capacity_deferrals and claims as
  // deferred_claims, the next field.
  using Stats01 = int (*)(tempo_ctx*, void*);
  const auto stats01 = symbol_0_1<Stats01>("tempo_ctx_stats");
  ASSERT_NE(stats01, nullptr) << dlerror();
  std::vector<uint64_t> old(sizeof(tempo_counters) / 8, 0);
  ASSERT_EQ(stats01(ctx, old.data()), 0);
  EXPECT_EQ(old[offsetof(tempo_counters, deferred_claims) / 8], info.deferrals);
  EXPECT_EQ(old[offsetof(tempo_counters, capacity_deferral_attempts) / 8], 1u);
  EXPECT_EQ(old[offsetof(tempo_counters, claims_reported) / 8], 2u);
}

TEST(CApiAbi, AClaimAboveTheBudgetNeverFitsAndSaysSo) {
  Ctx c(small_config("immediate"));
  std::vector<tempo_object> objs;
  for (uint64_t k = 1; k <= 60; ++k) objs.push_back({k, 100});
  ASSERT_EQ(tempo_sim_add_objects(c.ctx, objs.data(), objs.size()), 0);
  tempo_claim_id id = 0;
  ASSERT_EQ(tempo_claim_report(c.ctx, objs.data(), 60, 10'000 * kMs, &id), 0);  // 6000 B > 5000
  ASSERT_EQ(tempo_sim_advance(c.ctx, 100 * kMs), 0);
  tempo_claim_info info{};
  ASSERT_EQ(tempo_claim_query(c.ctx, id, &info, sizeof info), 0);
  EXPECT_EQ(info.state, TEMPO_CLAIM_PLANNED);
  EXPECT_EQ(info.flags, TEMPO_CLAIM_F_NEVER_FITS);
  int outcome = -1;
  ASSERT_EQ(tempo_claim_request_retrieval(c.ctx, id, &outcome), 0);
  EXPECT_EQ(outcome, TEMPO_RETRIEVAL_ORDINARY);
  ASSERT_EQ(tempo_claim_query(c.ctx, id, &info, sizeof info), 0);
  EXPECT_EQ(info.state, TEMPO_CLAIM_ORDINARY);
  EXPECT_EQ(info.ttr_ns, TEMPO_TTR_NONE);
  EXPECT_EQ(info.laxity_ns, TEMPO_LAXITY_NONE);
}

// 500 B at 1000 B/s over 2 slots: TTR 0.5 s; TTU 2 s commits at 1.5 s, ready at 2 s (pairs of
// 100 B objects complete at 1.7 s and 1.9 s, the last at 2.0 s).
TEST(CApiAbi, TheClaimViewReportsTtrAndResidencyThroughTheLifecycle) {
  OneClaim t("tempo");
  tempo_claim_info info = t.query();
  EXPECT_EQ(info.state, TEMPO_CLAIM_PLANNED);
  EXPECT_EQ(info.ttr_ns, 500 * kMs);
  EXPECT_EQ(info.ttu_ns - info.laxity_ns, info.ttr_ns);
  EXPECT_EQ(info.resident_bytes, 0u);
  ASSERT_EQ(tempo_sim_advance(t.c.ctx, 1'800 * kMs), 0);
  info = t.query();
  EXPECT_EQ(info.state, TEMPO_CLAIM_STAGING);
  EXPECT_GT(info.ttr_ns, 0);
  EXPECT_LE(info.ttr_ns, 200 * kMs + kMs);  // ready at 2.0 s
  EXPECT_EQ(info.laxity_ns, TEMPO_LAXITY_NONE);
  EXPECT_EQ(info.resident_bytes, 200u);  // the first pair
  ASSERT_EQ(tempo_sim_advance(t.c.ctx, 200 * kMs), 0);
  info = t.query();
  EXPECT_EQ(info.state, TEMPO_CLAIM_STAGE_READY);
  EXPECT_EQ(info.ttr_ns, 0);
  EXPECT_EQ(info.resident_bytes, 500u);
  int outcome = -1;
  ASSERT_EQ(tempo_claim_request_retrieval(t.c.ctx, t.id, &outcome), 0);
  ASSERT_EQ(tempo_claim_transfer_begin(t.c.ctx, t.id), 0);
  EXPECT_EQ(t.query().ttr_ns, 0);
  ASSERT_EQ(tempo_claim_transfer_end(t.c.ctx, t.id), 0);
  info = t.query();
  EXPECT_EQ(info.state, TEMPO_CLAIM_RELEASED);
  EXPECT_EQ(info.ttr_ns, TEMPO_TTR_NONE);
  EXPECT_EQ(info.resident_bytes, 500u);  // released objects stay resident, evictable
  // An ended claim's TTU stops where it ended.
  ASSERT_EQ(tempo_sim_advance(t.c.ctx, 3'000 * kMs), 0);
  EXPECT_EQ(t.query().ttu_ns, info.ttu_ns);
}

// The structs a caller passes in grow as liburing's do: through reserved words that must be
// zero, so a later minor can give them a meaning without old callers sending garbage in it.
TEST(CApiAbi, InputStructsRefuseNonzeroReservedWords) {
  Ctx c(small_config("tempo"));
  tempo_runtime_config cfg{};
  cfg.costs.retrieval_bps = 1e9;
  cfg.max_active = 4;
  cfg.generation_limit = 16;
  tempo_runtime* rt = nullptr;
  for (int i = 0; i < 4; ++i) {
    tempo_runtime_config bad = cfg;
    bad.reserved[i] = 1;
    EXPECT_EQ(tempo_runtime_new(c.ctx, &bad, &rt), -EINVAL) << i;
  }
  for (int i = 0; i < 2; ++i) {
    tempo_runtime_config bad = cfg;
    bad.costs.reserved[i] = 1;
    EXPECT_EQ(tempo_runtime_new(c.ctx, &bad, &rt), -EINVAL) << i;
  }
  EXPECT_EQ(rt, nullptr);
  ASSERT_EQ(tempo_runtime_new(c.ctx, &cfg, &rt), 0);
  tempo_running_seq running{100, 100, 1, 0, 0};
  tempo_step step{};
  step.running = &running;
  step.running_count = 1;
  for (int i = 0; i < 2; ++i) {
    tempo_step bad = step;
    bad.reserved[i] = 1;
    EXPECT_EQ(tempo_runtime_step(rt, &bad), -EINVAL) << i;
  }
  // ABI 0.6 gave the first step word and the running sequence's word a meaning: a
  // negative step in flight is refused, any output length is taken. A step in flight past
  // the clock's range (2^62 ns) is -EOVERFLOW, as a TTU past it is: INT64_MAX was -EINVAL
  // while INT64_MAX - 1 was -EOVERFLOW.
  tempo_step bad = step;
  bad.busy_ns = -1;
  EXPECT_EQ(tempo_runtime_step(rt, &bad), -EINVAL);
  for (int64_t busy : {(int64_t{1} << 62) + 1, INT64_MAX - 1, INT64_MAX}) {
    bad.busy_ns = busy;
    EXPECT_EQ(tempo_runtime_step(rt, &bad), -EOVERFLOW) << busy;
  }
  running.output_tokens = 1;
  EXPECT_EQ(tempo_runtime_step(rt, &step), 0);
  running.output_tokens = 0;
  EXPECT_EQ(tempo_runtime_step(rt, &step), 0);
  tempo_runtime_free(rt);
}

}  // namespace

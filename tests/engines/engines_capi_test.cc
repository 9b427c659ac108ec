// The engines' C ABI (ABI 0.3) through libtempo.so: the key scheme, the store's lookup,
// idempotent put, delete and asynchronous put on the uring device, and the per-step
// runtime call on sim.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "../common/straddling_step.h"
#include "tempo/tempo.h"
#include "tempo/tempo_sim.h"

namespace {

struct Ctx {
  explicit Ctx(std::vector<std::pair<const char*, std::string>> kv) {
    EXPECT_EQ(tempo_config_new(&cfg), 0);
    for (const auto& [k, v] : kv)
      EXPECT_EQ(tempo_config_set(cfg, k, v.c_str()), 0) << tempo_config_error(cfg);
    EXPECT_EQ(tempo_ctx_new(cfg, &ctx), 0) << tempo_config_error(cfg);
  }
  ~Ctx() {
    tempo_ctx_unref(ctx);
    tempo_config_free(cfg);
  }
  tempo_config* cfg = nullptr;
  tempo_ctx* ctx = nullptr;
};

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "engines_capi_XXXXXX";  // in the build directory: a real file system
    EXPECT_NE(mkdtemp(tmpl), nullptr);
    path_ = std::filesystem::absolute(tmpl).string();
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::vector<std::pair<const char*, std::string>> uring(const std::string& dir) {
  return {{"device", "uring"},
          {"uring.store_path", dir + "/store"},
          {"fast_tier_bytes", "4MiB"},
          {"budget_bytes", "1MiB"},
          {"uring.prefault", "false"}};
}

std::vector<unsigned char> bytes_of(uint64_t key, size_t n) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((key * 29 + i * 3) & 0xff);
  return v;
}

TEST(EnginesCApi, KeyScheme) {
  tempo_key_namespace ns{"llama", "bfloat16", 0, 2, {0, 0}};
  uint64_t seed = 0, other = 0;
  ASSERT_EQ(tempo_key_seed(&ns, &seed), 0);
  ns.tp_rank = 1;
  ASSERT_EQ(tempo_key_seed(&ns, &other), 0);
  EXPECT_NE(seed, other);
  ns.tp_rank = 2;
  EXPECT_EQ(tempo_key_seed(&ns, &other), -EINVAL);
  ns.tp_rank = 0;
  ns.dtype = "";
  EXPECT_EQ(tempo_key_seed(&ns, &other), -EINVAL);
  ns.dtype = "bfloat16";
  ns.reserved[1] = 1;
  EXPECT_EQ(tempo_key_seed(&ns, &other), -EINVAL);

  std::vector<uint32_t> tokens(700);
  std::iota(tokens.begin(), tokens.end(), 0u);
  uint64_t keys[2] = {0, 0};
  size_t n = 0;
  EXPECT_EQ(tempo_key_chain(seed, tokens.data(), tokens.size(), 256, keys, 1, &n), -ENOSPC);
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(keys[0], 0u);  // nothing written
  ASSERT_EQ(tempo_key_chain(seed, tokens.data(), tokens.size(), 256, keys, 2, &n), 0);
  uint64_t next = 0;
  ASSERT_EQ(tempo_key_chain(keys[0], tokens.data() + 256, 256, 256, &next, 1, &n), 0);
  EXPECT_EQ(next, keys[1]);
  EXPECT_EQ(tempo_key_chain(seed, tokens.data(), 10, 0, keys, 2, &n), -EINVAL);
  EXPECT_NE(tempo_key_layer_group(keys[0], 0), tempo_key_layer_group(keys[0], 1));
}

TEST(EnginesCApi, LookupFindsTheLongestHeldPrefixOnSim) {
  Ctx c({{"fast_tier_bytes", "10000"}, {"budget_bytes", "5000"}});
  const tempo_object objs[] = {{11, 100}, {12, 100}, {14, 100}};
  ASSERT_EQ(tempo_sim_add_objects(c.ctx, objs, 3), 0);
  const uint64_t chain[] = {11, 12, 13, 14};
  size_t prefix = 99;
  ASSERT_EQ(tempo_store_lookup(c.ctx, chain, 4, &prefix), 0);
  EXPECT_EQ(prefix, 2u);
  ASSERT_EQ(tempo_store_lookup(c.ctx, chain + 2, 2, &prefix), 0);
  EXPECT_EQ(prefix, 0u);
  ASSERT_EQ(tempo_store_lookup(c.ctx, chain, 0, &prefix), 0);
  EXPECT_EQ(prefix, 0u);
  EXPECT_EQ(tempo_store_lookup(c.ctx, nullptr, 2, &prefix), -EINVAL);
  EXPECT_EQ(tempo_store_delete(c.ctx, 11), -EOPNOTSUPP);
}

TEST(EnginesCApi, IdempotentPutDeleteAndAFreshProcessSeesTheStore) {
  TempDir dir;
  const auto a = bytes_of(1, 8192);
  const auto b = bytes_of(2, 8192);
  {
    Ctx c(uring(dir.path()));
    ASSERT_EQ(tempo_store_put(c.ctx, 1, a.data(), a.size()), 0);
    EXPECT_EQ(tempo_store_put(c.ctx, 1, a.data(), a.size()), 0);  // a re-run
    EXPECT_EQ(tempo_store_put(c.ctx, 1, b.data(), b.size()), -EEXIST);
    EXPECT_EQ(tempo_store_put(c.ctx, 1, a.data(), 4096), -EEXIST);  // other size
    ASSERT_EQ(tempo_store_put(c.ctx, 2, b.data(), b.size()), 0);
    ASSERT_EQ(tempo_store_put(c.ctx, 3, b.data(), b.size()), 0);
    EXPECT_EQ(tempo_store_delete(c.ctx, 2), 0);
    EXPECT_EQ(tempo_store_delete(c.ctx, 2), -ENOENT);
  }
  Ctx c(uring(dir.path()));  // a fresh process over the same store
  const uint64_t chain[] = {1, 2, 3};
  size_t prefix = 0;
  ASSERT_EQ(tempo_store_lookup(c.ctx, chain, 3, &prefix), 0);
  EXPECT_EQ(prefix, 1u);
  ASSERT_EQ(tempo_store_put(c.ctx, 2, a.data(), a.size()), 0);  // deleted: may be put anew
  ASSERT_EQ(tempo_store_lookup(c.ctx, chain, 3, &prefix), 0);
  EXPECT_EQ(prefix, 3u);
  EXPECT_EQ(tempo_store_put(c.ctx, 1, b.data(), b.size()), -EEXIST);  // the old bytes stay
}

TEST(EnginesCApi, FastTierMemoryHoldsEveryExtent) {
  Ctx sim({{"fast_tier_bytes", "10000"}, {"budget_bytes", "5000"}});
  void* base = nullptr;
  uint64_t bytes = 0;
  EXPECT_EQ(tempo_ctx_fast_tier(sim.ctx, &base, &bytes), -EOPNOTSUPP);
  TempDir dir;
  Ctx c(uring(dir.path()));
  ASSERT_EQ(tempo_ctx_fast_tier(c.ctx, &base, &bytes), 0);
  EXPECT_EQ(bytes, 4u << 20);
  const auto a = bytes_of(5, 8192);
  ASSERT_EQ(tempo_store_put(c.ctx, 5, a.data(), a.size()), 0);
  const tempo_object obj{5, 8192};
  tempo_claim_id id = 0;
  ASSERT_EQ(tempo_claim_report(c.ctx, &obj, 1, 0, &id), 0);
  int outcome = -1;
  ASSERT_EQ(tempo_claim_request_retrieval(c.ctx, id, &outcome), 0);
  ASSERT_EQ(tempo_claim_wait_ready(c.ctx, id, 10'000'000'000, &outcome), 0);
  ASSERT_EQ(tempo_claim_transfer_begin(c.ctx, id), 0);
  tempo_extent ext[4];
  size_t n = 0;
  ASSERT_EQ(tempo_claim_extents(c.ctx, id, ext, 4, &n), 0);
  ASSERT_EQ(n, 1u);
  const auto* lo = static_cast<const unsigned char*>(base);
  const auto* p = static_cast<const unsigned char*>(ext[0].addr);
  EXPECT_GE(p, lo);
  EXPECT_LE(p + ext[0].bytes, lo + bytes);
  EXPECT_EQ(std::memcmp(p, a.data(), a.size()), 0);
  ASSERT_EQ(tempo_claim_transfer_end(c.ctx, id), 0);
}

TEST(EnginesCApi, WriterPutsInTheBackgroundAndReportsEachCompletion) {
  TempDir dir;
  Ctx c(uring(dir.path()));
  tempo_writer* w = nullptr;
  EXPECT_EQ(tempo_writer_new(c.ctx, 0, &w), -EINVAL);
  ASSERT_EQ(tempo_writer_new(c.ctx, 3, &w), 0);
  std::vector<std::vector<unsigned char>> data;
  for (uint64_t k = 0; k < 16; ++k) data.push_back(bytes_of(100 + k, 16384));
  for (uint64_t k = 0; k < 16; ++k)
    ASSERT_EQ(tempo_writer_put(w, 100 + k, data[k].data(), data[k].size(), 1000 + k), 0);
  EXPECT_EQ(tempo_writer_put(w, 1, data[0].data(), 0, 0), -EINVAL);
  ASSERT_EQ(tempo_writer_wait(w, 10'000'000'000), 0);
  std::vector<tempo_put_completion> done(32);
  size_t n = 0;
  ASSERT_EQ(tempo_writer_completions(w, done.data(), done.size(), &n), 0);
  ASSERT_EQ(n, 16u);
  uint64_t cookies = 0;
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(done[i].status, 0) << done[i].key;
    EXPECT_EQ(done[i].cookie, done[i].key + 900);
    cookies += done[i].cookie;
  }
  EXPECT_EQ(cookies, 16u * 1000 + 120);
  // Other bytes under a stored key: the completion carries the refusal.
  ASSERT_EQ(tempo_writer_put(w, 100, data[1].data(), data[1].size(), 7), 0);
  ASSERT_EQ(tempo_writer_wait(w, 10'000'000'000), 0);
  ASSERT_EQ(tempo_writer_completions(w, done.data(), done.size(), &n), 0);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(done[0].key, 100u);
  EXPECT_EQ(done[0].cookie, 7u);
  EXPECT_EQ(done[0].status, -EEXIST);
  ASSERT_EQ(tempo_writer_completions(w, done.data(), done.size(), &n), 0);
  EXPECT_EQ(n, 0u);
  tempo_writer_free(w);
  std::vector<uint64_t> keys(16);
  std::iota(keys.begin(), keys.end(), 100u);
  size_t prefix = 0;
  ASSERT_EQ(tempo_store_lookup(c.ctx, keys.data(), keys.size(), &prefix), 0);
  EXPECT_EQ(prefix, 16u);
}

tempo_runtime_config runtime_config(uint32_t max_active, uint32_t learn) {
  return tempo_runtime_config{tempo_test::kRoundCosts, max_active, 64, learn, 0, {0, 0, 0, 0}};
}

int64_t prefill_ns(uint64_t n, uint64_t ctx) {
  return static_cast<int64_t>(1e6 + 5e4 * double(n) +
                              double(n) * (double(ctx) + (double(n) + 1) / 2));
}

// `steps` decode steps of `batch` sequences from `ctx` KV tokens.
int64_t decode_ns(uint64_t batch, uint64_t ctx, uint64_t steps) {
  const double s = double(steps);
  return static_cast<int64_t>(s * (5e6 + 2e4 * double(batch)) +
                              10.0 * (s * double(ctx) + double(batch) * s * (s - 1) / 2));
}

// One claim (one 1000-byte object, reported with a 60 s TTU) waiting behind one running
// sequence (1 token out over a 1000-token prompt) on an engine with `max_active` slots.
struct ClaimBehindOneSequence {
  explicit ClaimBehindOneSequence(uint32_t max_active)
      : c({{"fast_tier_bytes", "100MB"}, {"budget_bytes", "50MB"}, {"policy", "tempo"}}),
        cfg(runtime_config(max_active, 0)) {
    const tempo_object obj{1, 1000};
    EXPECT_EQ(tempo_sim_add_objects(c.ctx, &obj, 1), 0);
    EXPECT_EQ(tempo_claim_report(c.ctx, &obj, 1, 60'000'000'000, &a), 0);
    EXPECT_EQ(tempo_runtime_new(c.ctx, &cfg, &rt), 0);
    waiting = {1256, 256, a, 0};
    step.running = &running;
    step.running_count = 1;
    step.waiting = &waiting;
    step.waiting_count = 1;
  }
  ~ClaimBehindOneSequence() { tempo_runtime_free(rt); }
  // The claim's TTU after a step call.
  double ttu() {
    EXPECT_EQ(tempo_runtime_step(rt, &step), 0);
    tempo_claim_info info{};
    EXPECT_EQ(tempo_claim_query(c.ctx, a, &info, sizeof info), 0);
    return double(info.ttu_ns);
  }

  Ctx c;
  tempo_runtime_config cfg;
  tempo_claim_id a = 0;
  tempo_runtime* rt = nullptr;
  tempo_running_seq running{1000, 1000, 1, 0, 0};
  tempo_waiting_seq waiting{};
  tempo_step step{};
};

// ABI 0.6: a running sequence's known output length, and a call made while a step runs.
TEST(EnginesCApi, KnownOutputLengthAndAStepInFlightShapeTheTtu) {
  ClaimBehindOneSequence f(1);  // one slot, held by the running sequence
  // No completed output yet: it runs to the limit, 63 more decode steps.
  EXPECT_NEAR(f.ttu(), double(decode_ns(1, 1000, 63)), 2.0);
  // Its output is known to be 4 tokens: 3 more.
  f.running.output_tokens = 4;
  EXPECT_NEAR(f.ttu(), double(decode_ns(1, 1000, 3)), 2.0);
  // Called 7 ms before the step in flight ends: the projection starts then.
  f.step.busy_ns = 7'000'000;
  EXPECT_NEAR(f.ttu(), double(7'000'000 + decode_ns(1, 1000, 3)), 2.0);
}

// A TTU past the clock's range (2^62 ns, some 146 years) cannot be given: -EOVERFLOW, as
// tempo.h says, and the claim keeps the TTU it had.
TEST(EnginesCApi, ATtuPastTheClocksRangeIsAnOverflow) {
  Ctx c({{"fast_tier_bytes", "100MB"}, {"budget_bytes", "50MB"}, {"policy", "tempo"}});
  const tempo_object obj{1, 1000};
  ASSERT_EQ(tempo_sim_add_objects(c.ctx, &obj, 1), 0);
  tempo_claim_id a = 0;
  ASSERT_EQ(tempo_claim_report(c.ctx, &obj, 1, 60'000'000'000, &a), 0);
  tempo_runtime_config cfg = runtime_config(1, 0);
  cfg.costs.decode_pass_ns = 1e17;  // 63 decode steps ahead of the claim: 6.3e18 ns
  tempo_runtime* rt = nullptr;
  ASSERT_EQ(tempo_runtime_new(c.ctx, &cfg, &rt), 0);
  const tempo_running_seq running{1000, 1000, 1, 0, 0};
  const tempo_waiting_seq waiting{1256, 256, a, 0};
  tempo_step step{};
  step.running = &running;
  step.running_count = 1;
  step.waiting = &waiting;
  step.waiting_count = 1;
  EXPECT_EQ(tempo_runtime_step(rt, &step), -EOVERFLOW);
  tempo_claim_info info{};
  ASSERT_EQ(tempo_claim_query(c.ctx, a, &info, sizeof info), 0);
  EXPECT_EQ(info.ttu_ns, 60'000'000'000);
  tempo_runtime_free(rt);
}

// An engine that does not cap its batch may say so with max_active = 2^32 - 1: the claim
// behind a running sequence is admitted now (a free slot). Every step of such an engine
// failed with -ENOMEM once: the estimator reserved room for max_active sequences.
TEST(EnginesCApi, AnUncappedBatchAdmitsAtOnce) {
  ClaimBehindOneSequence f(UINT32_MAX);
  EXPECT_EQ(f.ttu(), 0.0);
}

TEST(EnginesCApi, RuntimeStepRevisesEveryWaitingClaim) {
  Ctx c({{"fast_tier_bytes", "100MB"}, {"budget_bytes", "50MB"}, {"policy", "tempo"}});
  const tempo_object objs[] = {{1, 1000}, {2, 1000}};
  ASSERT_EQ(tempo_sim_add_objects(c.ctx, objs, 2), 0);
  tempo_claim_id a = 0, b = 0;
  ASSERT_EQ(tempo_claim_report(c.ctx, objs, 1, 60'000'000'000, &a), 0);
  ASSERT_EQ(tempo_claim_report(c.ctx, objs + 1, 1, 60'000'000'000, &b), 0);

  tempo_runtime* rt = nullptr;
  tempo_runtime_config bad = runtime_config(0, 0);
  EXPECT_EQ(tempo_runtime_new(c.ctx, &bad, &rt), -EINVAL);
  bad = runtime_config(2, 0);
  bad.costs.decode_seq_ns = -1;
  EXPECT_EQ(tempo_runtime_new(c.ctx, &bad, &rt), -EINVAL);
  bad = runtime_config(2, 0);
  bad.costs.retrieval_bps = 0;
  EXPECT_EQ(tempo_runtime_new(c.ctx, &bad, &rt), -EINVAL);
  const tempo_runtime_config cfg = runtime_config(2, 0);
  ASSERT_EQ(tempo_runtime_new(c.ctx, &cfg, &rt), 0);

  // Two slots: a and the claimless request are admitted; b waits until one of them has run
  // its prefill and its 63 decode steps (the generation limit, 64, with no history).
  const tempo_waiting_seq waiting[] = {
      {3256, 256, a, 0}, {5000, 256, TEMPO_NO_CLAIM, 0}, {4256, 256, b, 0}};
  tempo_step step{};
  step.waiting = waiting;
  step.waiting_count = 3;
  ASSERT_EQ(tempo_runtime_step(rt, &step), 0);
  tempo_claim_info ia{}, ib{};
  ASSERT_EQ(tempo_claim_query(c.ctx, a, &ia, sizeof ia), 0);
  ASSERT_EQ(tempo_claim_query(c.ctx, b, &ib, sizeof ib), 0);
  EXPECT_EQ(ia.ttu_ns, 0);
  const int64_t expected =
      prefill_ns(3000, 256) + prefill_ns(4744, 256) + decode_ns(2, 3256 + 5000, 63);
  EXPECT_NEAR(double(ib.ttu_ns), double(expected), 2.0);  // rounding of three sums
  // ABI 0.7: what the step gave, read back without asking the context; a claim it gave
  // nothing reads unknown.
  const tempo_claim_id asked[] = {a, b, 999};
  int64_t given[3] = {};
  ASSERT_EQ(tempo_runtime_get_given_ttus(rt, asked, 3, given), 0);
  EXPECT_EQ(given[0], ia.ttu_ns);
  EXPECT_EQ(given[1], ib.ttu_ns);
  EXPECT_EQ(given[2], TEMPO_TTU_UNKNOWN);
  EXPECT_EQ(tempo_runtime_get_given_ttus(rt, nullptr, 1, given), -EINVAL);
  EXPECT_EQ(tempo_runtime_get_given_ttus(nullptr, asked, 1, given), -EINVAL);
  EXPECT_EQ(tempo_runtime_get_given_ttus(rt, nullptr, 0, nullptr), 0);

  // Bad steps change nothing.
  tempo_waiting_seq unknown[] = {{100, 0, 999, 0}};
  step.waiting = unknown;
  step.waiting_count = 1;
  EXPECT_EQ(tempo_runtime_step(rt, &step), -ENOENT);
  tempo_waiting_seq overcached[] = {{100, 200, a, 0}};
  step.waiting = overcached;
  EXPECT_EQ(tempo_runtime_step(rt, &step), -EINVAL);
  step.waiting = waiting;
  step.waiting_count = 3;
  step.duration_ns = 1000;  // a duration with no work
  EXPECT_EQ(tempo_runtime_step(rt, &step), -EINVAL);
  const int64_t before = ib.ttu_ns;
  ASSERT_EQ(tempo_claim_query(c.ctx, b, &ib, sizeof ib), 0);
  EXPECT_EQ(ib.ttu_ns, before);

  // A claim at two places of the queue was taken with the later place's TTU.
  const tempo_waiting_seq twice[] = {{3256, 256, a, 0}, {4256, 256, b, 0}, {3256, 256, a, 0}};
  step.waiting = twice;
  step.waiting_count = 3;
  step.duration_ns = 0;
  EXPECT_EQ(tempo_runtime_step(rt, &step), -EINVAL);
  ASSERT_EQ(tempo_claim_query(c.ctx, b, &ib, sizeof ib), 0);
  EXPECT_EQ(ib.ttu_ns, before);

  // Every finished request generated its first token: 0 was taken as an output length.
  EXPECT_EQ(tempo_runtime_finished(rt, 0), -EINVAL);
  EXPECT_EQ(tempo_runtime_finished(nullptr, 10), -EINVAL);
  EXPECT_EQ(tempo_runtime_finished(rt, 10), 0);
  tempo_step_costs costs{};
  uint64_t learned = 9;
  ASSERT_EQ(tempo_runtime_get_costs(rt, &costs, &learned), 0);
  EXPECT_EQ(costs.prefill_token_ns, 5e4);
  EXPECT_EQ(learned, 0u);  // not learning
  tempo_runtime_free(rt);
}

// The runtime side's 20 s horizon (Documentation/ttu-estimator.md), as tempo-replay runs it:
// claims the projection reaches within it get their own TTU; the ones behind the first claim
// past it share that claim's TTU, a lower bound of their own, rather than a projection each
// step of a queue they are far back in.
TEST(EnginesCApi, ClaimsPastTheHorizonHoldABoundOfTheirTtu) {
  Ctx c({{"fast_tier_bytes", "100MB"}, {"budget_bytes", "50MB"}, {"policy", "tempo"}});
  constexpr size_t kQueue = 200;
  std::vector<tempo_object> objs(kQueue);
  for (uint64_t i = 0; i < kQueue; ++i) objs[i] = {i + 1, 1000};
  ASSERT_EQ(tempo_sim_add_objects(c.ctx, objs.data(), objs.size()), 0);
  std::vector<tempo_waiting_seq> waiting(kQueue);
  for (size_t i = 0; i < kQueue; ++i) {
    tempo_claim_id id = 0;
    ASSERT_EQ(tempo_claim_report(c.ctx, &objs[i], 1, TEMPO_TTU_UNKNOWN, &id), 0);
    waiting[i] = {3256, 256, id, 0};
  }
  tempo_runtime* rt = nullptr;
  const tempo_runtime_config cfg = runtime_config(1, 0);
  ASSERT_EQ(tempo_runtime_new(c.ctx, &cfg, &rt), 0);
  tempo_step step{};
  step.waiting = waiting.data();
  step.waiting_count = waiting.size();
  ASSERT_EQ(tempo_runtime_step(rt, &step), 0);
  // The whole queue's projection, for comparison: about 0.5 s a request on one slot.
  std::vector<tempo_waiting_projection> whole(kQueue);
  size_t count = 0;
  ASSERT_EQ(tempo_runtime_get_projection(rt, whole.data(), sizeof whole[0], whole.size(), &count),
            0);
  ASSERT_GT(whole.back().ttu_ns, 60'000'000'000);
  size_t own = 0;  // claims with their own TTU
  int64_t bound = 0;
  for (size_t i = 0; i < kQueue; ++i) {
    tempo_claim_info info{};
    ASSERT_EQ(tempo_claim_query(c.ctx, waiting[i].claim, &info, sizeof info), 0);
    if (whole[i].ttu_ns <= 20'000'000'000) {
      EXPECT_EQ(info.ttu_ns, whole[i].ttu_ns) << i;
      ++own;
    } else if (bound == 0) {
      EXPECT_EQ(info.ttu_ns, whole[i].ttu_ns) << i;  // the first past it: its own, the bound
      bound = info.ttu_ns;
    } else {
      EXPECT_EQ(info.ttu_ns, bound) << i;
      EXPECT_LT(info.ttu_ns, whole[i].ttu_ns) << i;
    }
  }
  EXPECT_GT(own, 10u);
  EXPECT_LT(own, kQueue / 2);
  tempo_runtime_free(rt);
}

// The straddling step (tests/common/straddling_step.h): the point TTU is about 170 ms; eight
// 10 MiB objects at 1 GiB/s stage in about 80 ms, inside the spread of 16-330 ms.
// Returns whether the runtime call's revision committed the claim.
bool committed_by_the_step(const char* policy) {
  Ctx c({{"fast_tier_bytes", "1GiB"},
         {"budget_bytes", "512MiB"},
         {"staging_rate", "1GiB"},
         {"tick", "60s"},  // no pass but the revision's decides
         {"policy", policy}});
  std::vector<tempo_object> objs;
  for (uint64_t k = 1; k <= 8; ++k) objs.push_back({k, 10ull << 20});
  EXPECT_EQ(tempo_sim_add_objects(c.ctx, objs.data(), objs.size()), 0);
  tempo_claim_id id = 0;
  EXPECT_EQ(tempo_claim_report(c.ctx, objs.data(), objs.size(), 60'000'000'000, &id), 0);
  tempo_claim_info info{};
  EXPECT_EQ(tempo_test::run_straddling_step(c.ctx, id, &info), 0);
  EXPECT_GT(info.ttu_ns, 100'000'000);  // the point TTU: well after the TTR
  return info.state != TEMPO_CLAIM_PLANNED;
}

TEST(EnginesCApi, RuntimeStepGivesTheSpreadToTheRiskRule) {
  EXPECT_FALSE(committed_by_the_step("tempo"));  // the point rule waits ~90 ms more
  EXPECT_TRUE(committed_by_the_step("tempo-risk"));
  // W small enough that the median is the quantile: 3 steps, still before the TTR.
  EXPECT_TRUE(committed_by_the_step("tempo-risk:0.08"));
}

TEST(EnginesCApi, RuntimeLearnsFromReportedStepDurations) {
  Ctx c({{"fast_tier_bytes", "100MB"}, {"budget_bytes", "50MB"}});
  tempo_runtime* rt = nullptr;
  const tempo_runtime_config cfg = runtime_config(4, 1);
  ASSERT_EQ(tempo_runtime_new(c.ctx, &cfg, &rt), 0);
  // An engine 20% slower than the prior in both phases.
  for (uint64_t i = 0; i < 200; ++i) {
    tempo_step step{};
    if (i % 2 == 0) {
      step.prefill_tokens = 128 << (i % 6);
      step.prefill_context_tokens = 1024 * (i % 3);
      step.duration_ns = prefill_ns(step.prefill_tokens, step.prefill_context_tokens) * 6 / 5;
    } else {
      step.decode_seqs = 1 + i % 8;
      step.decode_context_tokens = (1500 + 10 * i) * step.decode_seqs;
      step.duration_ns = decode_ns(step.decode_seqs, step.decode_context_tokens, 1) * 6 / 5;
    }
    ASSERT_EQ(tempo_runtime_step(rt, &step), 0);
  }
  tempo_step_costs costs{};
  uint64_t learned = 0;
  ASSERT_EQ(tempo_runtime_get_costs(rt, &costs, &learned), 0);
  EXPECT_EQ(learned, 200u);
  // The learned costs price a pass within 1% of the engine's.
  const auto prefill = [&](double n, double ctx) {
    return costs.prefill_pass_ns + costs.prefill_token_ns * n +
           costs.prefill_pair_ns * n * (ctx + (n + 1) / 2);
  };
  const auto decode = [&](double b, double ctx) {
    return costs.decode_pass_ns + costs.decode_seq_ns * b + costs.decode_context_ns * ctx;
  };
  EXPECT_NEAR(prefill(2048, 1024), 1.2 * double(prefill_ns(2048, 1024)),
              1.2e-2 * double(prefill_ns(2048, 1024)));
  EXPECT_NEAR(decode(4, 8000), 1.2 * double(decode_ns(4, 8000, 1)),
              1.2e-2 * double(decode_ns(4, 8000, 1)));
  tempo_runtime_free(rt);
}

}  // namespace

// The C ABI on the uring device: real bytes from an object store on the build directory's
// disk into a DRAM fast tier, on the wall clock; and tempo_config_load(). Linked against the
// shared library only.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "../store/scratch.h"
#include "tempo/tempo.h"
#include "tempo/tempo_sim.h"

namespace {

constexpr uint64_t kObjectBytes = 64 * 1024;

using tempo::test::object_bytes;

class CApiUring : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.path().empty()); }
  void TearDown() override {
    if (ctx_) tempo_ctx_unref(ctx_);
    if (cfg_) tempo_config_free(cfg_);
  }
  void open(const char* policy, const char* budget = "512KiB") {
    ASSERT_EQ(tempo_config_new(&cfg_), 0);
    const std::pair<const char*, std::string> kv[] = {{"device", "uring"},
                                                      {"uring.store_path", dir_.path() + "/store"},
                                                      {"fast_tier_bytes", "4MiB"},
                                                      {"budget_bytes", budget},
                                                      {"policy", policy},
                                                      {"uring.prefault", "false"},
                                                      {"tick", "5ms"}};
    for (const auto& [k, v] : kv)
      ASSERT_EQ(tempo_config_set(cfg_, k, v.c_str()), 0) << tempo_config_error(cfg_);
    ASSERT_EQ(tempo_ctx_new(cfg_, &ctx_), 0) << tempo_config_error(cfg_);
    ASSERT_STREQ(tempo_ctx_device(ctx_), "uring");
  }
  std::vector<tempo_object> put(uint64_t first, uint64_t n) {
    std::vector<tempo_object> objs;
    for (uint64_t k = first; k < first + n; ++k) {
      const auto data = object_bytes(k, kObjectBytes);
      EXPECT_EQ(tempo_store_put(ctx_, k, data.data(), data.size()), 0);
      objs.push_back({k, kObjectBytes});
    }
    return objs;
  }

  tempo::test::ScratchDir dir_;  // in the build directory: a real file system
  tempo_config* cfg_ = nullptr;
  tempo_ctx* ctx_ = nullptr;
};

TEST_F(CApiUring, StagedBytesAreTheStoredObjects) {
  open("immediate");
  const auto objs = put(1, 3);
  const auto again = object_bytes(1, kObjectBytes);
  EXPECT_EQ(tempo_store_put(ctx_, 1, again.data(), again.size()), 0);  // same bytes: idempotent
  const auto other = object_bytes(2, kObjectBytes);
  EXPECT_EQ(tempo_store_put(ctx_, 1, other.data(), other.size()), -EEXIST);
  EXPECT_EQ(tempo_store_put(ctx_, 9, again.data(), 0), -EINVAL);
  EXPECT_EQ(tempo_sim_advance(ctx_, 1), -EOPNOTSUPP);

  tempo_claim_id id = 0;
  ASSERT_EQ(tempo_claim_report(ctx_, objs.data(), objs.size(), 0, &id), 0);
  int outcome = -1;
  ASSERT_EQ(tempo_claim_request_retrieval(ctx_, id, &outcome), 0);
  ASSERT_EQ(tempo_claim_wait_ready(ctx_, id, 10'000'000'000, &outcome), 0);
  EXPECT_EQ(outcome, TEMPO_RETRIEVAL_READY);
  size_t count = 0;
  EXPECT_EQ(tempo_claim_extents(ctx_, id, nullptr, 0, &count), -EINVAL);  // not transferring
  ASSERT_EQ(tempo_claim_transfer_begin(ctx_, id), 0);
  ASSERT_EQ(tempo_claim_extents(ctx_, id, nullptr, 0, &count), -ENOSPC);
  ASSERT_GE(count, 3u);
  std::vector<tempo_extent> ext(count);
  ASSERT_EQ(tempo_claim_extents(ctx_, id, ext.data(), ext.size(), &count), 0);
  std::vector<std::byte> copied;
  for (const tempo_extent& e : ext) {
    const auto* p = static_cast<const std::byte*>(e.addr);
    copied.insert(copied.end(), p, p + e.bytes);
  }
  std::vector<std::byte> expected;
  for (uint64_t k = 1; k <= 3; ++k) {
    const auto o = object_bytes(k, kObjectBytes);
    expected.insert(expected.end(), o.begin(), o.end());
  }
  EXPECT_TRUE(copied == expected);
  ASSERT_EQ(tempo_claim_transfer_end(ctx_, id), 0);
  EXPECT_EQ(tempo_claim_transfer_end(ctx_, id), -EINVAL);
  EXPECT_EQ(tempo_claim_wait_ready(ctx_, id, 0, &outcome), -ECANCELED);

  tempo_counters s{};
  ASSERT_EQ(tempo_ctx_stats(ctx_, &s, sizeof s), 0);
  EXPECT_EQ(s.staged_bytes, 3 * kObjectBytes);
  EXPECT_EQ(s.claims_released, 1u);
  EXPECT_EQ(s.ledger_bytes, 0u);
  EXPECT_EQ(s.pinned_bytes, 0u);
  EXPECT_EQ(s.fast_tier_capacity_bytes, 4u << 20);
}

TEST_F(CApiUring, OverBudgetGoesTheOrdinaryPathAndReadsIt) {
  open("demand", "128KiB");  // a 192 KiB claim cannot be protected
  const auto objs = put(10, 3);
  tempo_claim_id id = 0;
  ASSERT_EQ(tempo_claim_report(ctx_, objs.data(), objs.size(), 0, &id), 0);
  int outcome = -1;
  ASSERT_EQ(tempo_claim_request_retrieval(ctx_, id, &outcome), 0);
  EXPECT_EQ(outcome, TEMPO_RETRIEVAL_ORDINARY);
  ASSERT_EQ(tempo_claim_wait_ready(ctx_, id, 0, &outcome), 0);
  EXPECT_EQ(outcome, TEMPO_RETRIEVAL_ORDINARY);
  EXPECT_EQ(tempo_claim_transfer_begin(ctx_, id), -EINVAL);
  ASSERT_EQ(tempo_claim_ordinary_read(ctx_, id), 0);
  EXPECT_EQ(tempo_claim_ordinary_read(ctx_, id), -EINVAL);  // read once
  tempo_counters s{};
  ASSERT_EQ(tempo_ctx_stats(ctx_, &s, sizeof s), 0);
  EXPECT_EQ(s.demand_bytes, 3 * kObjectBytes);
  EXPECT_EQ(s.claims_ordinary, 1u);
  EXPECT_EQ(s.staged_bytes, 0u);
}

TEST_F(CApiUring, TempoPolicyCommitsOnTheTickAndWaitTimesOut) {
  open("tempo");
  const auto objs = put(20, 2);
  tempo_claim_id id = 0;
  // TTU 200 ms: planned at first, committed by a tick once laxity reaches zero.
  ASSERT_EQ(tempo_claim_report(ctx_, objs.data(), objs.size(), 200'000'000, &id), 0);
  tempo_claim_info info{};
  ASSERT_EQ(tempo_claim_query(ctx_, id, &info, sizeof info), 0);
  EXPECT_EQ(info.state, TEMPO_CLAIM_PLANNED);
  EXPECT_GT(info.laxity_ns, 0);
  int outcome = -1;
  EXPECT_EQ(tempo_claim_wait_ready(ctx_, id, 1'000'000, &outcome), -ETIMEDOUT);
  ASSERT_EQ(tempo_claim_wait_ready(ctx_, id, 10'000'000'000, &outcome), 0);
  EXPECT_EQ(outcome, TEMPO_RETRIEVAL_READY);
  ASSERT_EQ(tempo_claim_query(ctx_, id, &info, sizeof info), 0);
  EXPECT_EQ(info.state, TEMPO_CLAIM_STAGE_READY);
  EXPECT_GE(info.committed_ns - info.reported_ns, 100'000'000);  // not before laxity ran out
  EXPECT_EQ(tempo_claim_cancel(ctx_, id), 0);
  EXPECT_EQ(tempo_claim_wait_ready(ctx_, id, 0, &outcome), -ECANCELED);
}

TEST_F(CApiUring, ConcurrentEnginesThreadsBalanceOut) {
  open("tempo", "1MiB");
  const auto objs = put(100, 32);
  std::vector<std::thread> threads;
  std::atomic<int> copied_ok{0}, ordinary{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        const size_t first = static_cast<size_t>(t * 5 + i) % 28;
        tempo_claim_id id = 0;
        if (tempo_claim_report(ctx_, &objs[first], 4, (i % 3) * 5'000'000, &id) != 0) continue;
        if (i % 5 == 4) {
          tempo_claim_cancel(ctx_, id);
          continue;
        }
        int outcome = -1;
        if (tempo_claim_request_retrieval(ctx_, id, &outcome) != 0 ||
            tempo_claim_wait_ready(ctx_, id, 10'000'000'000, &outcome) != 0)
          continue;
        if (outcome == TEMPO_RETRIEVAL_ORDINARY) {
          if (tempo_claim_ordinary_read(ctx_, id) == 0) ++ordinary;
          continue;
        }
        if (tempo_claim_transfer_begin(ctx_, id) != 0) continue;
        tempo_extent ext[16];
        size_t n = 0;
        bool same = tempo_claim_extents(ctx_, id, ext, 16, &n) == 0;
        // Each extent starts where the manifest says: its first byte is the stored pattern
        // at that offset of that object (an object may be split across extents).
        size_t obj = first;
        uint64_t off = 0;
        for (size_t k = 0; same && k < n; ++k) {
          same = static_cast<const std::byte*>(ext[k].addr)[0] ==
                 object_bytes(objs[obj].key, off + 1)[off];
          off += ext[k].bytes;
          if (off == kObjectBytes) {
            ++obj;
            off = 0;
          }
        }
        if (same) ++copied_ok;
        tempo_claim_transfer_end(ctx_, id);
      }
    });
  }
  for (auto& th : threads) th.join();
  tempo_counters s{};
  ASSERT_EQ(tempo_ctx_stats(ctx_, &s, sizeof s), 0);
  EXPECT_EQ(s.claims_reported, 100u);
  EXPECT_EQ(s.claims_live, 0u);
  EXPECT_EQ(s.ledger_bytes, 0u);
  EXPECT_EQ(s.pinned_bytes, 0u);
  EXPECT_EQ(s.claims_released + s.claims_cancelled + s.claims_ordinary, 100u);
  EXPECT_GT(s.claims_released, 40u);
  EXPECT_EQ(static_cast<uint64_t>(copied_ok), s.claims_released);
  EXPECT_EQ(static_cast<uint64_t>(ordinary), s.claims_ordinary);
  EXPECT_EQ(s.claims_cancelled, 20u);
}

// ABI 0.7: the store is a sub-object of a uring context, its calls those of the context.
TEST_F(CApiUring, TheStoreIsASubObjectOfTheContext) {
  open("tempo");
  tempo_store* store = nullptr;
  ASSERT_EQ(tempo_ctx_get_store(ctx_, &store), 0);
  ASSERT_NE(store, nullptr);
  const auto data = object_bytes(7, kObjectBytes);
  ASSERT_EQ(tempo_store_write(store, 7, data.data(), data.size()), 0);
  ASSERT_EQ(tempo_store_write(store, 8, data.data(), data.size()), 0);
  const auto other = object_bytes(9, kObjectBytes);
  EXPECT_EQ(tempo_store_write(store, 7, other.data(), other.size()), -EEXIST);
  const uint64_t keys[] = {7, 8, 9};
  size_t prefix = 0;
  ASSERT_EQ(tempo_store_get_prefix(store, keys, 3, &prefix), 0);
  EXPECT_EQ(prefix, 2u);
  ASSERT_EQ(tempo_store_remove(store, 8), 0);
  EXPECT_EQ(tempo_store_remove(store, 8), -ENOENT);
  ASSERT_EQ(tempo_store_lookup(ctx_, keys, 3, &prefix), 0);  // the 0.3 call sees the same store
  EXPECT_EQ(prefix, 1u);
  tempo_sim* sim = nullptr;
  EXPECT_EQ(tempo_ctx_get_sim(ctx_, &sim), -EOPNOTSUPP);
  tempo_kmod* kmod = nullptr;
  EXPECT_EQ(tempo_ctx_get_kmod(ctx_, &kmod), -EOPNOTSUPP);
}

TEST_F(CApiUring, MissingStorePathIsAClearError) {
  ASSERT_EQ(tempo_config_new(&cfg_), 0);
  ASSERT_EQ(tempo_config_set(cfg_, "device", "uring"), 0);
  EXPECT_EQ(tempo_ctx_new(cfg_, &ctx_), -EINVAL);
  EXPECT_STREQ(tempo_config_error(cfg_),
               "'uring.store_path' must be set for device = uring (a store directory)");
  EXPECT_EQ(tempo_config_set(cfg_, "uring.queue_depth", "0"), -EINVAL);
  EXPECT_STREQ(tempo_config_error(cfg_),
               "invalid value '0' for 'uring.queue_depth': accepted an integer from 1 to 4096");
}

TEST_F(CApiUring, StoreThatCannotBeOpenedFailsTheContextCleanly) {
  ASSERT_EQ(tempo_config_new(&cfg_), 0);
  ASSERT_EQ(tempo_config_set(cfg_, "device", "uring"), 0);
  ASSERT_EQ(tempo_config_set(cfg_, "uring.store_path", "/proc/self/status/store"), 0);
  EXPECT_EQ(tempo_ctx_new(cfg_, &ctx_), -ENOTDIR);
  EXPECT_EQ(ctx_, nullptr);
  EXPECT_STREQ(tempo_config_error(cfg_),
               "uring.store_path '/proc/self/status/store': cannot open the object store: Not a "
               "directory");
}

}  // namespace

namespace {

TEST(CApiConfig, LoadReadsTempoConfigThenTheEnvironment) {
  const std::string path = std::filesystem::absolute("capi_config_test.conf").string();
  {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("policy = demand\nfast_tier_bytes = 1MiB\nbudget_bytes = 512KiB\n", f);
    std::fclose(f);
  }
  tempo_config* cfg = nullptr;
  ASSERT_EQ(tempo_config_new(&cfg), 0);
  setenv("TEMPO_CONFIG", path.c_str(), 1);
  setenv("TEMPO_BUDGET_BYTES", "256KiB", 1);
  ASSERT_EQ(tempo_config_load(cfg, nullptr), 0) << tempo_config_error(cfg);
  setenv("TEMPO_TICK", "soon", 1);
  EXPECT_EQ(tempo_config_load(cfg, nullptr), -EINVAL);
  EXPECT_STREQ(tempo_config_error(cfg),
               "TEMPO_TICK: invalid value 'soon' for 'tick': accepted a duration of at least 1ms "
               "such as 50ms, 2s");
  unsetenv("TEMPO_TICK");
  unsetenv("TEMPO_BUDGET_BYTES");
  unsetenv("TEMPO_CONFIG");
  EXPECT_EQ(tempo_config_load(cfg, "/nonexistent.conf"), -ENOENT);
  // The first load stuck: 256 KiB budget (environment over file), the demand policy.
  tempo_ctx* ctx = nullptr;
  ASSERT_EQ(tempo_ctx_new(cfg, &ctx), 0) << tempo_config_error(cfg);
  tempo_counters s{};
  ASSERT_EQ(tempo_ctx_stats(ctx, &s, sizeof s), 0);
  EXPECT_EQ(s.budget_bytes, 256u << 10);
  EXPECT_EQ(s.fast_tier_capacity_bytes, 1u << 20);
  tempo_object o{1, 100};
  ASSERT_EQ(tempo_sim_add_objects(ctx, &o, 1), 0);
  tempo_claim_id id = 0;
  ASSERT_EQ(tempo_claim_report(ctx, &o, 1, 0, &id), 0);
  tempo_claim_info info{};
  ASSERT_EQ(tempo_claim_query(ctx, id, &info, sizeof info), 0);
  EXPECT_EQ(info.state, TEMPO_CLAIM_PLANNED);  // demand: nothing commits before retrieval
  tempo_ctx_unref(ctx);
  tempo_config_free(cfg);
  std::remove(path.c_str());
}

}  // namespace

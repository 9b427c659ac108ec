// The cluster tier under the uring device, through the C ABI, against the real local cluster
// (`make test-cluster`: CEPH_CONF, TEMPO_CEPH_POOL, TEMPO_CEPH_SCRIPT): one context saves
// objects into its store (written through to the pool), another with its own store and fast
// tier stages them from the pool. Without the cluster every test skips.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tempo/tempo.h"

namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr int64_t kSecond = 1'000'000'000;

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

std::vector<unsigned char> object_bytes(uint64_t key, size_t n) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((key * 131 + i * 7) & 0xff);
  return v;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

class ClusterCApi : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!env("CEPH_CONF") || !env("TEMPO_CEPH_POOL") || !env("TEMPO_CEPH_SCRIPT"))
      GTEST_SKIP() << "no test cluster (CEPH_CONF, TEMPO_CEPH_POOL unset): run `make test-cluster`";
    char tmpl[] = "cluster_capi_XXXXXX";  // in the build directory: a real file system
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = std::filesystem::absolute(tmpl).string();
    // A namespace of its own in the shared pool: objects of earlier runs are not seen.
    prefix_ = "capi/" +
              std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "/" +
              std::filesystem::path(dir_).filename().string() + "/";
  }
  void TearDown() override {
    for (tempo_ctx* c : ctxs_) tempo_ctx_unref(c);
    for (tempo_config* c : cfgs_) tempo_config_free(c);
    if (paused_) run_script("resume-osds");
    std::filesystem::remove_all(dir_);
  }

  // A uring context on its own store `name` over the pool; `extra` keys override.
  tempo_ctx* open(const std::string& name,
                  const std::vector<std::pair<std::string, std::string>>& extra = {}) {
    tempo_config* cfg = nullptr;
    EXPECT_EQ(tempo_config_new(&cfg), 0);
    cfgs_.push_back(cfg);
    std::vector<std::pair<std::string, std::string>> kv = {{"device", "uring"},
                                                           {"uring.store_path", dir_ + "/" + name},
                                                           {"fast_tier_bytes", "16MiB"},
                                                           {"budget_bytes", "12MiB"},
                                                           {"policy", "immediate"},
                                                           {"uring.prefault", "false"},
                                                           {"tick", "5ms"},
                                                           {"cluster.backend", "rados"},
                                                           {"cluster.conf", env("CEPH_CONF")},
                                                           {"cluster.pool", env("TEMPO_CEPH_POOL")},
                                                           {"cluster.prefix", prefix_},
                                                           {"cluster.op_timeout_s", "3"}};
    kv.insert(kv.end(), extra.begin(), extra.end());
    for (const auto& [k, v] : kv)
      EXPECT_EQ(tempo_config_set(cfg, k.c_str(), v.c_str()), 0) << tempo_config_error(cfg);
    tempo_ctx* ctx = nullptr;
    EXPECT_EQ(tempo_ctx_new(cfg, &ctx), 0) << tempo_config_error(cfg);
    if (ctx) ctxs_.push_back(ctx);
    return ctx;
  }
  // Drops `ctx` now: a context going away waits for its write-throughs to the pool.
  void close(tempo_ctx* ctx) {
    std::erase(ctxs_, ctx);
    tempo_ctx_unref(ctx);
  }
  // Saves objects `keys` of `bytes` each through `ctx` (store and pool).
  std::vector<tempo_object> save(tempo_ctx* ctx, const std::vector<uint64_t>& keys,
                                 uint64_t bytes) {
    std::vector<tempo_object> objs;
    for (uint64_t k : keys) {
      const auto data = object_bytes(k, bytes);
      EXPECT_EQ(tempo_store_put(ctx, k, data.data(), data.size()), 0);
      objs.push_back({k, bytes});
    }
    return objs;
  }
  // Reports a claim for `objs`, asks for it at once and waits: the claim, and
  // tempo_claim_wait_ready's result.
  std::pair<tempo_claim_id, int> claim(tempo_ctx* ctx, const std::vector<tempo_object>& objs) {
    tempo_claim_id id = 0;
    EXPECT_EQ(tempo_claim_report(ctx, objs.data(), objs.size(), 0, &id), 0);
    int outcome = -1;
    tempo_claim_request_retrieval(ctx, id, &outcome);
    return {id, tempo_claim_wait_ready(ctx, id, 30 * kSecond, &outcome)};
  }
  // The bytes of a ready claim, copied from its fast-tier extents; the claim is released.
  std::vector<unsigned char> retrieve(tempo_ctx* ctx, tempo_claim_id id) {
    std::vector<unsigned char> copied;
    EXPECT_EQ(tempo_claim_transfer_begin(ctx, id), 0);
    size_t count = 0;
    EXPECT_EQ(tempo_claim_extents(ctx, id, nullptr, 0, &count), -ENOSPC);
    std::vector<tempo_extent> ext(count);
    EXPECT_EQ(tempo_claim_extents(ctx, id, ext.data(), ext.size(), &count), 0);
    for (const tempo_extent& e : ext) {
      const auto* p = static_cast<const unsigned char*>(e.addr);
      copied.insert(copied.end(), p, p + e.bytes);
    }
    EXPECT_EQ(tempo_claim_transfer_end(ctx, id), 0);
    return copied;
  }
  static std::vector<unsigned char> expected(const std::vector<tempo_object>& objs) {
    std::vector<unsigned char> all;
    for (const tempo_object& o : objs) {
      const auto b = object_bytes(o.key, o.bytes);
      all.insert(all.end(), b.begin(), b.end());
    }
    return all;
  }
  static tempo_counters stats(tempo_ctx* ctx) {
    tempo_counters s{};
    EXPECT_EQ(tempo_ctx_stats(ctx, &s, sizeof s), 0);
    return s;
  }
  void run_script(const std::string& args) {
    const std::string cmd = std::string(env("TEMPO_CEPH_SCRIPT")) + " " + args;
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    if (args == "pause-osds") paused_ = true;
    if (args == "resume-osds") paused_ = false;
  }

  std::string dir_;
  std::string prefix_;
  std::vector<tempo_config*> cfgs_;
  std::vector<tempo_ctx*> ctxs_;
  bool paused_ = false;
};

TEST_F(ClusterCApi, HostBStagesFromThePoolWhatHostASaved) {
  tempo_ctx* a = open("a");
  ASSERT_NE(a, nullptr);
  // Sizes that are not multiples of the fast tier's unit, and one of several extents' worth.
  auto objs = save(a, {1, 2}, 3 * kMiB + 5);
  const auto odd = save(a, {3}, 4096 + 1);
  objs.insert(objs.end(), odd.begin(), odd.end());
  close(a);

  tempo_ctx* b = open("b");
  ASSERT_NE(b, nullptr);
  const auto [id, ready] = claim(b, objs);
  ASSERT_EQ(ready, 0);
  EXPECT_TRUE(retrieve(b, id) == expected(objs));
  const tempo_counters s = stats(b);
  EXPECT_EQ(s.staged_bytes, 2 * (3 * kMiB + 5) + 4096 + 1);
  EXPECT_EQ(s.claims_released, 1u);
  EXPECT_EQ(s.ledger_bytes, 0u);
  EXPECT_EQ(s.pinned_bytes, 0u);
  EXPECT_EQ(s.demand_bytes, 0u);
}

TEST_F(ClusterCApi, KeepLocalLeavesACopyInTheStore) {
  tempo_ctx* a = open("a");
  ASSERT_NE(a, nullptr);
  const auto objs = save(a, {7, 8}, kMiB);
  close(a);
  tempo_ctx* b = open("b", {{"cluster.keep_local", "true"}});
  ASSERT_NE(b, nullptr);
  const auto [id, ready] = claim(b, objs);
  ASSERT_EQ(ready, 0);
  EXPECT_TRUE(retrieve(b, id) == expected(objs));
  close(b);
  // The same store without the pool: the objects are local now.
  tempo_ctx* local = open("b", {{"cluster.backend", "off"}});
  ASSERT_NE(local, nullptr);
  const auto [again, ready_again] = claim(local, objs);
  ASSERT_EQ(ready_again, 0);
  EXPECT_TRUE(retrieve(local, again) == expected(objs));
}

TEST_F(ClusterCApi, NotInThePoolIsAMissAsBefore) {
  tempo_ctx* b = open("b");
  ASSERT_NE(b, nullptr);
  const auto [id, ready] = claim(b, {{99, kMiB}});
  EXPECT_EQ(ready, -ENOENT);
  tempo_claim_info info{};
  ASSERT_EQ(tempo_claim_query(b, id, &info, sizeof info), 0);
  EXPECT_EQ(info.state, TEMPO_CLAIM_FAILED);
  EXPECT_EQ(stats(b).ledger_bytes, 0u);
}

TEST_F(ClusterCApi, PoolDownClaimsFailWithinTheTimeoutAndThePoolComingBackIsPickedUp) {
  tempo_ctx* a = open("a");
  ASSERT_NE(a, nullptr);
  const auto first = save(a, {11, 12, 13}, kMiB);
  const auto big = save(a, {14}, 15 * kMiB + kMiB / 2);
  const auto unseen = save(a, {15}, kMiB);
  close(a);
  // 16 MiB fast tier: the big claim evicts every object of the first.
  tempo_ctx* b = open("b", {{"budget_bytes", "16128KiB"}});
  ASSERT_NE(b, nullptr);
  // Staged once (the pool's sizes are known), then evicted by a claim filling the fast tier.
  for (const auto& objs : {first, big}) {
    const auto [id, ready] = claim(b, objs);
    ASSERT_EQ(ready, 0);
    EXPECT_TRUE(retrieve(b, id) == expected(objs));
  }

  run_script("pause-osds");  // every OSD unreachable, as in a partition
  // Known sizes: the reads into the fast tier time out and the claim fails over to the
  // ordinary path, which reads only the local store.
  auto t = std::chrono::steady_clock::now();
  const auto [staging, staging_ready] = claim(b, first);
  EXPECT_EQ(staging_ready, 0);
  const double staging_s = seconds_since(t);
  tempo_claim_info over{};
  ASSERT_EQ(tempo_claim_query(b, staging, &over, sizeof over), 0);
  EXPECT_EQ(over.state, TEMPO_CLAIM_ORDINARY);
  EXPECT_EQ(over.error, -ETIMEDOUT);
  EXPECT_EQ(tempo_claim_ordinary_read(b, staging), -ENOENT);
  // Never seen: the pool's size lookup times out at the commit.
  t = std::chrono::steady_clock::now();
  const auto [commit, commit_ready] = claim(b, unseen);
  EXPECT_EQ(commit_ready, -ETIMEDOUT);
  const double commit_s = seconds_since(t);
  std::printf("pool down: staging claim ORDINARY after %.2f s, commit after %.2f s (timeout 3 s)\n",
              staging_s, commit_s);
  EXPECT_GE(staging_s, 2.5);
  EXPECT_LT(staging_s, 6.0);
  EXPECT_GE(commit_s, 2.5);
  EXPECT_LT(commit_s, 6.0);
  tempo_claim_info failed{};
  ASSERT_EQ(tempo_claim_query(b, commit, &failed, sizeof failed), 0);
  EXPECT_EQ(failed.state, TEMPO_CLAIM_FAILED);
  EXPECT_EQ(failed.error, -ETIMEDOUT);
  tempo_counters s = stats(b);
  EXPECT_EQ(s.ledger_bytes, 0u);
  EXPECT_EQ(s.pinned_bytes, 0u);

  run_script("resume-osds");
  // The same context, not restarted: the pool serves again.
  for (const auto& objs : {first, unseen}) {
    const auto [id, ready] = claim(b, objs);
    ASSERT_EQ(ready, 0);
    EXPECT_TRUE(retrieve(b, id) == expected(objs));
  }
  s = stats(b);
  EXPECT_EQ(s.ledger_bytes, 0u);
  EXPECT_EQ(s.claims_released, 4u);
}

}  // namespace

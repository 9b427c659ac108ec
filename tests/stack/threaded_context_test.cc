#include "stack/context.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <thread>

#include "../uring/device_fixture.h"

namespace tempo {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;

class ThreadedContextTest : public test::DeviceFixture {
 protected:
  void SetUp() override {
    open_store();
    if (IsSkipped()) return;
    for (ObjectKey k = 1; k <= 8; ++k) put(k, 256 * kKiB + k * 4096);
    open_device(options(64 * kMiB));
  }
  void start(const std::string& policy, uint64_t budget = 32 * kMiB) {
    StackConfig c;
    c.controller.policy = *parse_policy(policy);
    c.provider.budget_bytes = budget;
    c.provider.calibration_rate_bps = 1e9;
    std::string err;
    ASSERT_EQ(Context::create(*dev_, c, &loop_, &err), 0) << err;
  }
  Manifest manifest(std::initializer_list<ObjectKey> keys) {
    Manifest m;
    for (ObjectKey k : keys) m.push_back(KvObject{k, sizes_[k]});
    return m;
  }
  // Polls `pred` without driving the device: the loop thread alone delivers its events.
  template <typename Pred>
  bool eventually(Pred pred) {
    const TimeNs deadline = clock_.now() + 10 * kNsPerSec;
    while (!pred()) {
      if (clock_.now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
  }
  void TearDown() override { loop_.reset(); }

  std::unique_ptr<Context> loop_;
};

TEST_F(ThreadedContextTest, ClaimDueNowIsStagedRetrievedAndReleased) {
  start("tempo");
  ClaimId id = 0;
  ASSERT_EQ(loop_->call([&](Stack& s) { return s.report(manifest({1, 2, 3}), 0, &id); }), 0);
  RetrievalOutcome out{};
  ASSERT_EQ(loop_->call([&](Stack& s) { return s.request_retrieval(id, &out); }), 0);
  EXPECT_NE(out, RetrievalOutcome::kOrdinary);
  ASSERT_EQ(loop_->wait_ready(id, 10 * kNsPerSec, &out), 0);
  ASSERT_EQ(out, RetrievalOutcome::kReady);
  std::vector<std::span<const std::byte>> ext;
  EXPECT_EQ(loop_->call([&](Stack& s) { return s.extents(id, &ext); }),
            -EINVAL);  // not transferring yet
  ASSERT_EQ(loop_->call([&](Stack& s) { return s.begin_transfer(id); }), 0);
  ASSERT_EQ(loop_->call([&](Stack& s) { return s.extents(id, &ext); }), 0);
  std::vector<std::byte> got;
  for (auto e : ext) got.insert(got.end(), e.begin(), e.end());
  std::vector<std::byte> want;
  for (ObjectKey k : {1, 2, 3}) {
    const auto b = test::object_bytes(k, sizes_[k]);
    want.insert(want.end(), b.begin(), b.end());
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(dev_->stats().pins, 3u);
  ASSERT_EQ(loop_->call([&](Stack& s) { return s.end_transfer(id); }), 0);
  EXPECT_EQ(dev_->stats().pins, 0u);
  EXPECT_EQ(loop_->call([&](Stack& s) { return s.stats(); }).provider.ledger_bytes, 0u);
  const ControllerStats cs = loop_->call([&](Stack& s) { return s.stats(); }).controller;
  EXPECT_EQ(cs.released, 1u);
  EXPECT_EQ(cs.live, 0u);
}

TEST_F(ThreadedContextTest, TheTickCommitsAsTimeUntilUseRunsOut) {
  start("tempo");
  ClaimId id = 0;
  const TimeNs t0 = clock_.now();
  ASSERT_EQ(loop_->call([&](Stack& s) {
    return s.report(manifest({4, 5}), 300 * kNsPerMs, &id);
  }),
            0);
  // Nothing is staged while laxity is positive.
  EXPECT_EQ(dev_->stats().staged_ops, 0u);
  RetrievalOutcome out{};
  // No further call: only the 50 ms tick can commit the claim.
  ASSERT_TRUE(eventually([&] { return dev_->stats().staged_ops == 2; }));
  const TimeNs committed_after = clock_.now() - t0;
  EXPECT_GE(committed_after, 200 * kNsPerMs);
  EXPECT_GE(loop_->call([&](Stack& s) { return s.stats(); }).controller.evaluations,
            4u);  // ticks re-evaluated it
  ASSERT_EQ(loop_->call([&](Stack& s) { return s.request_retrieval(id, &out); }), 0);
  ASSERT_EQ(loop_->wait_ready(id, 10 * kNsPerSec, &out), 0);
  EXPECT_EQ(out, RetrievalOutcome::kReady);
  ASSERT_EQ(loop_->call([&](Stack& s) { return s.begin_transfer(id); }), 0);
  ASSERT_EQ(loop_->call([&](Stack& s) { return s.end_transfer(id); }), 0);
  // With no planned claim left the tick stops.
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  const uint64_t passes = loop_->call([&](Stack& s) { return s.stats(); }).controller.evaluations;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(loop_->call([&](Stack& s) { return s.stats(); }).controller.evaluations, passes);
}

TEST_F(ThreadedContextTest, ClaimThatCannotBeProtectedTakesTheOrdinaryPath) {
  start("demand", 64 * kKiB);  // a budget smaller than any object
  ClaimId id = 0;
  ASSERT_EQ(loop_->call([&](Stack& s) { return s.report(manifest({6}), 0, &id); }), 0);
  RetrievalOutcome out{};
  ASSERT_EQ(loop_->call([&](Stack& s) { return s.request_retrieval(id, &out); }), 0);
  ASSERT_EQ(out, RetrievalOutcome::kOrdinary);
  EXPECT_EQ(loop_->ordinary_read(id), 0);
  EXPECT_EQ(dev_->stats().demand_reads, 1u);
  EXPECT_EQ(dev_->stats().demand_bytes, sizes_[6]);
  EXPECT_EQ(loop_->ordinary_read(id), -EINVAL);  // read once, as on every device
  EXPECT_EQ(loop_->call([&](Stack& s) { return s.stats(); }).controller.ordinary, 1u);
}

TEST_F(ThreadedContextTest, CancelledClaimReportsCancellation) {
  start("tempo");
  ClaimId id = 0;
  ASSERT_EQ(loop_->call([&](Stack& s) { return s.report(manifest({7}), 60 * kNsPerSec, &id); }), 0);
  ASSERT_EQ(loop_->call([&](Stack& s) { return s.cancel(id); }), 0);
  EXPECT_EQ(loop_->call([&](Stack& s) { return s.cancel(id); }), -EINVAL);
  RetrievalOutcome out{};
  EXPECT_EQ(loop_->wait_ready(id, kNsPerSec, &out), -ECANCELED);
  EXPECT_EQ(loop_->call([&](Stack& s) { return s.revise(99, 0); }), -ENOENT);
  EXPECT_EQ(loop_->wait_ready(99, kNsPerSec, &out), -ENOENT);
  EXPECT_EQ(dev_->stats().staged_ops, 0u);
}

TEST_F(ThreadedContextTest, ZeroTickIsRejected) {
  StackConfig c;
  c.provider.budget_bytes = 32 * kMiB;
  c.controller.tick_ns = 0;
  std::string err;
  EXPECT_EQ(Context::create(*dev_, c, &loop_, &err), -EINVAL);
  EXPECT_EQ(err, "the controller tick must be positive");
}

}  // namespace
}  // namespace tempo

// libtempo's controller and provider, unchanged, on the kmod device: a small replay of
// claims through report, commit, stage-ready, transfer and release; afterwards the ledger
// is back to zero and neither libtempo nor the kernel holds a pin.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <unordered_set>
#include <vector>

#include "controller/controller.h"
#include "core/clock.h"
#include "kmod/kmod_device.h"
#include "kmod_test_env.h"
#include "provider/provider.h"

namespace tempo {
namespace {

struct ReadyLog final : ControllerObserver {
  std::unordered_set<ClaimId> ready;
  std::unordered_set<ClaimId> ordinary;
  void on_claim_ready(ClaimId id) override { ready.insert(id); }
  void on_claim_ordinary(ClaimId id) override { ordinary.insert(id); }
};

class KmodRuntimeTest : public ::testing::TestWithParam<const char*> {};

TEST_P(KmodRuntimeTest, ClaimsReplayToAZeroLedgerAndNoPins) {
  TEMPO_REQUIRE_KMOD();
  std::unique_ptr<KmodDevice> dev;
  std::string error;
  ASSERT_EQ(KmodDevice::open({.path = testing::kmod_dev_path()}, &dev, &error), 0) << error;
  ASSERT_EQ(dev->reset(), 0);
  const uint64_t e = dev->geometry().extent_bytes;
  const uint64_t pins0 = dev->stats().pins;

  // Six objects of one to two extents; claims 1 and 2 share object 12.
  const std::vector<Manifest> manifests = {
      {{11, e}, {12, 2 * e - 4096}},
      {{12, 2 * e - 4096}, {13, e}},
      {{14, e / 2}, {15, e}, {16, 2 * e}},
  };
  for (const Manifest& m : manifests) {
    for (const KvObject& o : m) {
      if (dev->object_size(o.key) < 0) {
        ASSERT_EQ(dev->add_object(o.key, o.bytes), 0);
      }
    }
  }

  MonotonicClock clock;
  ProviderConfig pc;
  // Kernel pins cover whole extents: leave room for each object's rounding.
  pc.budget_bytes = dev->geometry().pin_limit_bytes / 4 * 3;
  pc.calibration_rate_bps = 100.0 * (1 << 20);
  pc.static_rate_bps = 100.0 * (1 << 20);
  Provider provider(*dev, clock, pc);
  ControllerConfig cc;
  cc.policy = *parse_policy(GetParam());
  Controller controller(provider, clock, cc);
  ReadyLog log;
  controller.set_observer(&log);

  std::vector<ClaimId> ids;
  for (const Manifest& m : manifests) {
    ClaimId id = 0;
    ASSERT_EQ(controller.report(m, 0, &id), 0);
    ids.push_back(id);
  }
  controller.evaluate();
  for (size_t n = 0; n < ids.size(); ++n) {
    const ClaimId id = ids[n];
    RetrievalOutcome out{};
    ASSERT_EQ(controller.request_retrieval(id, &out), 0);
    ASSERT_NE(out, RetrievalOutcome::kOrdinary) << "claim " << id;
    // The runtime's event loop: wait on the device's fd, deliver, re-evaluate.
    for (int i = 0; i < 200 && controller.claim(id)->state != ClaimState::kStageReady; ++i) {
      ASSERT_GE(dev->wait(50 * kNsPerMs), 0);
      controller.tick();
    }
    ASSERT_EQ(controller.claim(id)->state, ClaimState::kStageReady) << "claim " << id;
    EXPECT_TRUE(log.ready.contains(id) || out == RetrievalOutcome::kReady);
    ASSERT_EQ(controller.begin_transfer(id), 0);
    // Retrieval: every object is resident and pinned by the provider while transferring.
    for (const KvObject& o : manifests[n]) {
      EXPECT_EQ(dev->residency(o.key), Residency::kResident) << o.key;
      EXPECT_GE(dev->pin_count(o.key), 1u) << o.key;
      std::span<const std::byte> data;
      ASSERT_EQ(dev->object_data(o.key, &data), 0);
      EXPECT_EQ(data.size(), o.bytes);
    }
    EXPECT_GT(provider.ledger().bytes(), 0u);
    ASSERT_EQ(controller.end_transfer(id), 0);
    EXPECT_EQ(controller.claim(id)->state, ClaimState::kReleased);
  }
  for (int i = 0; i < 100 && !dev->idle(); ++i) ASSERT_GE(dev->wait(50 * kNsPerMs), 0);
  EXPECT_TRUE(dev->idle());
  EXPECT_EQ(controller.stats().released, ids.size());
  EXPECT_TRUE(log.ordinary.empty());
  EXPECT_EQ(provider.ledger().bytes(), 0u);
  EXPECT_EQ(provider.recompute_ledger_bytes(), 0u);
  EXPECT_EQ(provider.held_pins(), 0u);
  EXPECT_EQ(dev->stats().pins, pins0);
  EXPECT_EQ(dev->stats().staged_ops, 6u);  // object 12 staged once for both claims
  for (const Manifest& m : manifests)
    for (const KvObject& o : m) EXPECT_EQ(dev->pin_count(o.key), 0u) << o.key;
}

INSTANTIATE_TEST_SUITE_P(Policies, KmodRuntimeTest, ::testing::Values("immediate", "tempo"));

}  // namespace
}  // namespace tempo

// Per-object readiness through the Stack: which of a claim's objects are resident and
// protected (ready_objects) and the observer's on_claim_progress as each lands, what a
// layer-wise engine starts group g on.
#include <gtest/gtest.h>

#include <cerrno>
#include <utility>
#include <vector>

#include "stack/sim_stack.h"

namespace tempo {
namespace {

struct Log final : StackObserver {
  explicit Log(Stack& s) : stack(s) {}
  void on_claim_ready(ClaimId id) override { events.emplace_back(id, -1); }
  void on_claim_ordinary(ClaimId id) override { events.emplace_back(id, -2); }
  void on_claim_progress(ClaimId id) override {
    std::vector<uint8_t> ready;
    EXPECT_EQ(stack.ready_objects(id, &ready), 0);
    int n = 0;
    for (uint8_t r : ready) n += r;
    events.emplace_back(id, n);
  }
  Stack& stack;
  std::vector<std::pair<ClaimId, int>> events;  // (claim, objects ready; -1 ready, -2 ordinary)
};

// 1000 B/s, one slot, no latency: 100 B objects land 0.1 s apart in manifest order.
SimStackConfig one_slot() {
  SimStackConfig c;
  c.device.staging_rate_bps = 1000;
  c.device.staging_slots = 1;
  c.device.op_latency_ns = 0;
  c.provider.calibration_rate_bps = 1000;
  c.provider.budget_bytes = 10000;
  c.controller.policy = *parse_policy("immediate");
  return c;
}

TEST(ObjectReadiness, EachObjectIsReportedAsItLandsInManifestOrder) {
  SimStack s(one_slot());
  Log log(s.stack);
  s.stack.set_observer(&log);
  Manifest m;
  for (ObjectKey k = 1; k <= 4; ++k) {
    ASSERT_EQ(s.device.add_object(k, 100), 0);
    m.push_back({k, 100});
  }
  std::vector<uint8_t> ready;
  EXPECT_EQ(s.stack.ready_objects(7, &ready), -ENOENT);
  ClaimId id = 0;
  ASSERT_EQ(s.stack.report(m, kNsPerSec, &id), 0);  // immediate: staging at once
  ASSERT_EQ(s.stack.ready_objects(id, &ready), 0);
  EXPECT_EQ(ready, (std::vector<uint8_t>{0, 0, 0, 0}));
  ASSERT_EQ(s.driver.advance(250 * kNsPerMs), 0);
  ASSERT_EQ(s.stack.ready_objects(id, &ready), 0);
  EXPECT_EQ(ready, (std::vector<uint8_t>{1, 1, 0, 0}));
  ASSERT_EQ(s.driver.advance(kNsPerSec), 0);
  ASSERT_EQ(s.stack.ready_objects(id, &ready), 0);
  EXPECT_EQ(ready, (std::vector<uint8_t>{1, 1, 1, 1}));
  // Three objects landed before the claim was ready, then the last made it ready.
  EXPECT_EQ(log.events,
            (std::vector<std::pair<ClaimId, int>>{{id, 1}, {id, 2}, {id, 3}, {id, -1}}));
  ASSERT_EQ(s.stack.begin_transfer(id), 0);
  ASSERT_EQ(s.stack.ready_objects(id, &ready), 0);
  EXPECT_EQ(ready, (std::vector<uint8_t>{1, 1, 1, 1}));
  ASSERT_EQ(s.stack.end_transfer(id), 0);
  // Ended: nothing is protected for it any more, though the objects stay resident.
  ASSERT_EQ(s.stack.ready_objects(id, &ready), 0);
  EXPECT_EQ(ready, (std::vector<uint8_t>{0, 0, 0, 0}));
  s.stack.set_observer(nullptr);
}

TEST(ObjectReadiness, APlannedClaimHasNothingProtectedEvenWhenResident) {
  SimStackConfig c = one_slot();
  c.controller.policy = *parse_policy("tempo");
  SimStack s(c);
  ASSERT_EQ(s.device.add_object(1, 100), 0);
  ASSERT_EQ(s.device.add_object(2, 100), 0);
  ClaimId first = 0, later = 0;
  ASSERT_EQ(s.stack.report({{1, 100}}, 0, &first), 0);  // commits now: object 1 lands
  ASSERT_EQ(s.driver.advance(kNsPerSec), 0);
  ASSERT_EQ(s.stack.report({{1, 100}, {2, 100}}, 100 * kNsPerSec, &later), 0);
  std::vector<uint8_t> ready;
  ASSERT_EQ(s.stack.ready_objects(later, &ready), 0);
  EXPECT_EQ(ready, (std::vector<uint8_t>{0, 0}));  // PLANNED: not protected for it
  ASSERT_EQ(s.stack.ready_objects(first, &ready), 0);
  EXPECT_EQ(ready, (std::vector<uint8_t>{1}));
}

}  // namespace
}  // namespace tempo

// A claim's view is read at one instant: on a real device the clock moves while the view
// is built, and TTU - laxity must still be the TTR (vm-test once saw a resident claim's
// TTR grow by the time between two clock reads).
#include <gtest/gtest.h>

#include "stack/sim_stack.h"

namespace tempo {
namespace {

// Virtual time that moves 1 ms on every read, as wall time moves under a busy host.
class DriftingClock final : public Clock {
 public:
  explicit DriftingClock(const Clock& base) : base_(base) {}
  TimeNs now() const override { return base_.now() + kNsPerMs * ++reads_; }

 private:
  const Clock& base_;
  mutable TimeNs reads_ = 0;
};

StackConfig tempo_at_1000_bps() {
  StackConfig c;
  c.provider.calibration_rate_bps = 1000;
  c.provider.budget_bytes = 10000;
  c.controller.policy = *parse_policy("tempo");
  return c;
}

TEST(ClaimView, TtuLessLaxityIsTheTtrWhileTheClockMoves) {
  VirtualDriver driver;
  SimDeviceConfig dc;
  dc.staging_rate_bps = 1000;
  dc.op_latency_ns = 0;
  SimDevice device(driver, dc);
  DriftingClock clock(driver.clock());
  Stack stack(driver, clock, device, tempo_at_1000_bps());
  ASSERT_EQ(device.add_object(1, 500), 0);
  ClaimId id = 0;
  ASSERT_EQ(stack.report({{1, 500}}, 60 * kNsPerSec, &id), 0);
  ClaimView v;
  ASSERT_EQ(stack.query(id, &v), 0);
  ASSERT_EQ(v.state, ClaimState::kPlanned);
  ASSERT_TRUE(v.laxity && v.ttr);
  EXPECT_EQ(*v.ttr, 500 * kNsPerMs);  // 500 B at 1000 B/s, whatever the clock did
  EXPECT_EQ(v.ttu - *v.laxity, *v.ttr);
}

}  // namespace
}  // namespace tempo

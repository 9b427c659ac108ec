#include "stack/virtual_driver.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

namespace tempo {
namespace {

TEST(VirtualDriver, WaitRunsEventsUntilTheConditionHoldsAndStopsThere) {
  VirtualDriver d;
  std::vector<TimeNs> ran;
  for (TimeNs t : {10, 20, 30}) d.schedule_at(t * kNsPerMs, [&, t] { ran.push_back(t); });
  EXPECT_TRUE(d.wait_until([&] { return ran.size() == 2; }, kNsPerSec));
  EXPECT_EQ(d.now(), 20 * kNsPerMs);  // the first instant it held
  EXPECT_EQ(ran, (std::vector<TimeNs>{10, 20}));
}

TEST(VirtualDriver, WaitThatTimesOutTakesTheWholeTimeout) {
  VirtualDriver d;
  bool ran = false;
  d.schedule_at(50 * kNsPerMs, [&] { ran = true; });
  EXPECT_FALSE(d.wait_until([] { return false; }, 20 * kNsPerMs));
  EXPECT_EQ(d.now(), 20 * kNsPerMs);
  EXPECT_FALSE(ran);
}

TEST(VirtualDriver, UnboundedWaitWithNothingScheduledLeavesTimeFinite) {
  VirtualDriver d;
  int ran = 0;
  d.schedule_at(5 * kNsPerMs, [&] { ++ran; });
  EXPECT_FALSE(d.wait_until([] { return false; }, kNever));
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(d.now(), 5 * kNsPerMs);  // the last event's time, not the end of time
}

TEST(VirtualDriver, AdvanceRunsDueEventsAndSaturates) {
  VirtualDriver d;
  int ran = 0;
  d.schedule_at(kNsPerSec, [&] { ++ran; });
  EXPECT_EQ(d.advance(-1), -EINVAL);
  EXPECT_EQ(d.advance(kNsPerSec / 2), 0);
  EXPECT_EQ(ran, 0);
  EXPECT_EQ(d.now(), kNsPerSec / 2);
  EXPECT_EQ(d.advance(kNever), 0);  // no overflow: runs what is scheduled
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(d.now(), kNsPerSec);
  EXPECT_EQ(d.advance(kNsPerMs), 0);  // time still moves afterwards
  EXPECT_EQ(d.now(), kNsPerSec + kNsPerMs);
}

TEST(VirtualDriver, CallsFromInsideAnEventRunAtOnce) {
  VirtualDriver d;
  int inner = 0;
  d.schedule_at(1, [&] { d.call([&] { ++inner; }); });
  d.run_all();
  EXPECT_EQ(inner, 1);
}

}  // namespace
}  // namespace tempo

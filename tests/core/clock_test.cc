#include "core/clock.h"

#include <gtest/gtest.h>

namespace tempo {
namespace {

TEST(VirtualClock, MovesOnlyForward) {
  VirtualClock c(5);
  EXPECT_EQ(c.now(), 5);
  EXPECT_TRUE(c.advance_to(9));
  EXPECT_EQ(c.now(), 9);
  EXPECT_FALSE(c.advance_to(3));
  EXPECT_EQ(c.now(), 9);
}

TEST(MonotonicClock, NeverGoesBack) {
  MonotonicClock c;
  const TimeNs a = c.now();
  const TimeNs b = c.now();
  EXPECT_GT(a, 0);
  EXPECT_GE(b, a);
}

}  // namespace
}  // namespace tempo

#include "core/realtime_loop.h"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <vector>

namespace tempo {
namespace {

TEST(RealtimeLoop, RunsTimersInTimeOrderNotBeforeTheirTime) {
  MonotonicClock clock;
  RealtimeLoop loop(clock);
  const TimeNs start = clock.now();
  std::vector<int> seen;
  TimeNs second_at = 0;
  loop.schedule_at(start + 20 * kNsPerMs, [&] {
    seen.push_back(2);
    second_at = clock.now();
  });
  loop.schedule_at(start + 5 * kNsPerMs, [&] { seen.push_back(1); });
  const uint64_t never = loop.schedule_at(start + 10 * kNsPerMs, [&] { seen.push_back(99); });
  loop.cancel(never);
  ASSERT_EQ(loop.run([&] { return !loop.has_timers(); }), 0);
  EXPECT_EQ(seen, (std::vector<int>{1, 2}));
  EXPECT_GE(second_at - start, 20 * kNsPerMs);
}

TEST(RealtimeLoop, WatchedDescriptorWakesTheLoop) {
  MonotonicClock clock;
  RealtimeLoop loop(clock);
  const int efd = eventfd(0, EFD_NONBLOCK);
  ASSERT_GE(efd, 0);
  int reads = 0;
  loop.watch(efd, [&] {
    uint64_t v = 0;
    if (read(efd, &v, sizeof v) == sizeof v) reads += static_cast<int>(v);
  });
  loop.schedule_after(2 * kNsPerMs, [&] {
    const uint64_t one = 3;
    ASSERT_EQ(write(efd, &one, sizeof one), static_cast<ssize_t>(sizeof one));
  });
  const TimeNs start = clock.now();
  ASSERT_EQ(loop.run([&] { return reads > 0; }, 5 * kNsPerSec), 0);
  EXPECT_EQ(reads, 3);
  EXPECT_LT(clock.now() - start, kNsPerSec);  // woken by the fd, not by the 5 s cap
  close(efd);
}

}  // namespace
}  // namespace tempo

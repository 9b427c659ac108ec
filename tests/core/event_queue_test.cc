#include "core/event_queue.h"

#include <gtest/gtest.h>

#include <vector>

namespace tempo {
namespace {

TEST(EventQueue, RunsInTimeThenScheduleOrder) {
  VirtualClock clock;
  EventQueue q(clock);
  std::vector<int> seen;
  q.schedule_at(20, [&] { seen.push_back(2); });
  q.schedule_at(10, [&] { seen.push_back(1); });
  q.schedule_at(20, [&] { seen.push_back(3); });
  EXPECT_EQ(q.run_all(), 3u);
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(clock.now(), 20);
  EXPECT_TRUE(q.empty());
}

TEST(EventQueue, CancelledEventsNeverRun) {
  VirtualClock clock;
  EventQueue q(clock);
  int runs = 0;
  const uint64_t id = q.schedule_at(5, [&] { ++runs; });
  q.schedule_at(7, [&] { runs += 10; });
  q.cancel(id);
  EXPECT_EQ(q.next_time(), 7);
  q.run_all();
  EXPECT_EQ(runs, 10);
}

TEST(EventQueue, RunUntilStopsAtTheBoundaryAndSetsTheClock) {
  VirtualClock clock;
  EventQueue q(clock);
  int runs = 0;
  q.schedule_at(10, [&] { ++runs; });
  q.schedule_at(11, [&] { ++runs; });
  q.run_until(10);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(clock.now(), 10);
  q.run_until(50);
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(clock.now(), 50);
}

TEST(EventQueue, EventsScheduledInThePastRunNow) {
  VirtualClock clock(100);
  EventQueue q(clock);
  TimeNs ran_at = -1;
  q.schedule_at(3, [&] { ran_at = clock.now(); });
  q.run_all();
  EXPECT_EQ(ran_at, 100);
}

}  // namespace
}  // namespace tempo

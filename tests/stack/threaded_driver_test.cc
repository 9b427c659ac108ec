#include "stack/threaded_driver.h"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

namespace tempo {
namespace {

std::unique_ptr<ThreadedDriver> make_driver() {
  std::unique_ptr<ThreadedDriver> d;
  std::string error;
  EXPECT_EQ(ThreadedDriver::create(&d, &error), 0) << error;
  return d;
}

TEST(ThreadedDriver, RunsTimersInTimeOrderNotBeforeTheirTimeOnTheLoopThread) {
  auto d = make_driver();
  d->start();
  std::vector<int> seen;  // loop thread only
  TimeNs start = 0, second_at = 0;
  bool on_loop = true;
  d->call([&] {
    start = d->now();
    d->schedule_at(start + 20 * kNsPerMs, [&] {
      seen.push_back(2);
      second_at = d->now();
      on_loop = on_loop && d->on_loop_thread();
    });
    d->schedule_at(start + 5 * kNsPerMs, [&] { seen.push_back(1); });
    const uint64_t never = d->schedule_at(start + 10 * kNsPerMs, [&] { seen.push_back(99); });
    d->cancel(never);
  });
  ASSERT_TRUE(d->wait_until([&] { return seen.size() == 2; }, 5 * kNsPerSec));
  d->call([&] {
    EXPECT_EQ(seen, (std::vector<int>{1, 2}));
    EXPECT_GE(second_at - start, 20 * kNsPerMs);
  });
  EXPECT_TRUE(on_loop);
}

TEST(ThreadedDriver, WatchedDescriptorWakesAWaiter) {
  auto d = make_driver();
  const int efd = eventfd(0, EFD_NONBLOCK);
  ASSERT_GE(efd, 0);
  int reads = 0;
  ASSERT_EQ(d->watch(efd,
                     [&] {
                       uint64_t v = 0;
                       if (read(efd, &v, sizeof v) == sizeof v) reads += static_cast<int>(v);
                     }),
            0);
  d->start();
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const uint64_t three = 3;
    ASSERT_EQ(write(efd, &three, sizeof three), static_cast<ssize_t>(sizeof three));
  });
  const TimeNs start = d->now();
  EXPECT_TRUE(d->wait_until([&] { return reads > 0; }, 5 * kNsPerSec));
  EXPECT_LT(d->now() - start, kNsPerSec);  // woken by the fd, not by the timeout
  writer.join();
  d->call([&] { EXPECT_EQ(reads, 3); });
  d->stop();
  close(efd);
}

TEST(ThreadedDriver, CallsFromManyThreadsRunOneAtATime) {
  auto d = make_driver();
  d->start();
  int counter = 0;  // changed only on the loop thread: no lock, TSan checks the claim
  std::atomic<int> off_loop{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int i = 0; i < 1000; ++i)
        d->call([&] {
          ++counter;
          if (!d->on_loop_thread()) ++off_loop;
        });
    });
  for (auto& t : callers) t.join();
  d->call([&] { EXPECT_EQ(counter, 4000); });
  EXPECT_EQ(off_loop.load(), 0);
}

TEST(ThreadedDriver, WaitTimesOutWhenNothingChangesAndNeverOverflows) {
  auto d = make_driver();
  d->start();
  const TimeNs start = d->now();
  EXPECT_FALSE(d->wait_until([] { return false; }, 30 * kNsPerMs));
  EXPECT_GE(d->now() - start, 30 * kNsPerMs);
  // An unbounded wait for something already true returns at once.
  EXPECT_TRUE(d->wait_until([] { return true; }, kNever));
  EXPECT_EQ(saturating_deadline(kNever - 5, 10), kNever);
  EXPECT_EQ(saturating_deadline(100, 10), 110);
}

TEST(ThreadedDriver, StoppedDriverRunsCallsOnTheCaller) {
  auto d = make_driver();
  d->start();
  bool ran_on_loop = false;
  d->call([&] { ran_on_loop = d->on_loop_thread(); });
  EXPECT_TRUE(ran_on_loop);
  d->stop();
  bool ran = false;
  d->call([&] { ran = true; });
  EXPECT_TRUE(ran);
}

}  // namespace
}  // namespace tempo

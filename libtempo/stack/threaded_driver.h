// The threaded driver: one event-loop thread per stack, on the monotonic clock. The thread
// waits (epoll) on an eventfd for posted calls, one timerfd armed at the earliest timed
// callback (the controller's tick is one only while a claim is PLANNED, so an idle stack
// sleeps), and the descriptors it was asked to watch (the device's completion fd). Every
// call from another thread is posted and waited for: only the loop thread changes the
// stack's state, so there is no lock order to get wrong.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/timer_heap.h"
#include "stack/driver.h"

namespace tempo {

class ThreadedDriver final : public Driver {
 public:
  // The descriptors and the (not yet running) loop. 0, or -errno with `error` saying why.
  static int create(std::unique_ptr<ThreadedDriver>* out, std::string* error);
  // Stops the loop thread (stop() does the same earlier).
  ~ThreadedDriver() override;
  ThreadedDriver(const ThreadedDriver&) = delete;
  ThreadedDriver& operator=(const ThreadedDriver&) = delete;

  // Calls `on_readable` on the loop thread whenever `fd` polls readable (before or after
  // start(); not from inside a watched callback), until unwatch(fd).
  int watch(int fd, Callback on_readable);
  void unwatch(int fd);
  void start();
  // Joins the loop thread; timers pending then never run.
  void stop() override;

  const Clock& clock() const override { return clock_; }
  // Loop thread only (the stack and its callbacks run there).
  uint64_t schedule_at(TimeNs at, Callback cb) override;
  using Scheduler::schedule_after;
  void cancel(uint64_t id) override { timers_.cancel(id); }
  void call(const std::function<void()>& fn) override;
  bool wait_until(const std::function<bool()>& done, TimeNs timeout) override;

  bool on_loop_thread() const { return std::this_thread::get_id() == loop_id_; }

 private:
  struct Task {
    std::function<void()> fn;
    bool reads_only;  // a waiter's check: changes nothing, wakes no waiter
  };
  ThreadedDriver() = default;
  void loop();
  bool run_due_timers();
  void arm_timer();
  void post(std::function<void()> fn, bool reads_only);
  // Runs `fn` on the loop thread and returns once it ran.
  void run_on_loop(const std::function<void()>& fn, bool reads_only);

  MonotonicClock clock_;
  int epoll_fd_ = -1;
  int task_fd_ = -1;
  int timer_fd_ = -1;
  std::vector<std::pair<int, Callback>> watched_;
  std::thread thread_;
  std::thread::id loop_id_;   // set before the thread runs, read-only after
  TimerHeap timers_;          // loop thread only
  TimeNs armed_at_ = kNever;  // loop thread only: what the timerfd is set to

  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::deque<Task> tasks_;   // guarded by mu_
  bool stop_ = false;        // guarded by mu_
  uint64_t generation_ = 0;  // guarded by mu_: bumped after every round that changed state
};

}  // namespace tempo

#include "stack/threaded_driver.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>

namespace tempo {
namespace {

uint64_t drain(int fd) {
  uint64_t v = 0;
  [[maybe_unused]] ssize_t n = read(fd, &v, sizeof(v));
  return v;
}

int add_fd(int epoll_fd, int fd, std::string* error) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) == 0) return 0;
  const int err = errno;
  *error = std::string("epoll_ctl: ") + std::strerror(err);
  return -err;
}

}  // namespace

int ThreadedDriver::create(std::unique_ptr<ThreadedDriver>* out, std::string* error) {
  std::unique_ptr<ThreadedDriver> d(new ThreadedDriver());
  d->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  d->task_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  d->timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (d->epoll_fd_ < 0 || d->task_fd_ < 0 || d->timer_fd_ < 0) {
    const int err = errno;
    *error = std::string("event loop descriptors: ") + std::strerror(err);
    return -err;
  }
  for (int fd : {d->task_fd_, d->timer_fd_})
    if (const int r = add_fd(d->epoll_fd_, fd, error); r != 0) return r;
  *out = std::move(d);
  return 0;
}

ThreadedDriver::~ThreadedDriver() {
  stop();
  for (int fd : {epoll_fd_, task_fd_, timer_fd_})
    if (fd >= 0) close(fd);
}

int ThreadedDriver::watch(int fd, Callback on_readable) {
  int r = 0;
  run_on_loop(
      [&] {
        std::string error;
        r = add_fd(epoll_fd_, fd, &error);
        if (r == 0) watched_.emplace_back(fd, std::move(on_readable));
      },
      true);
  return r;
}

void ThreadedDriver::unwatch(int fd) {
  run_on_loop(
      [&] {
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
        std::erase_if(watched_, [fd](const auto& w) { return w.first == fd; });
      },
      true);
}

void ThreadedDriver::start() {
  std::lock_guard lock(mu_);
  thread_ = std::thread([this] {
    { std::lock_guard started(mu_); }  // loop_id_ is set
    loop();
  });
  loop_id_ = thread_.get_id();
}

void ThreadedDriver::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(task_fd_, &one, sizeof(one));
  thread_.join();
}

uint64_t ThreadedDriver::schedule_at(TimeNs at, Callback cb) {
  const uint64_t id = timers_.add(at, std::move(cb));
  // A timer added from a posted call is armed when that round ends (arm_timer()).
  return id;
}

bool ThreadedDriver::run_due_timers() {
  TimeNs at = 0;
  Callback due;
  bool ran = false;
  while (timers_.pop_due(clock_.now(), &at, &due)) {
    due();
    ran = true;
  }
  return ran;
}

void ThreadedDriver::arm_timer() {
  const TimeNs next = timers_.next_time();
  if (next == armed_at_) return;
  itimerspec its{};
  if (next != kNever) {
    // An absolute CLOCK_MONOTONIC time; zero would disarm, so a due timer fires at 1 ns.
    const TimeNs at = std::max<TimeNs>(next, 1);
    its.it_value.tv_sec = at / kNsPerSec;
    its.it_value.tv_nsec = at % kNsPerSec;
  }
  if (timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &its, nullptr) == 0) armed_at_ = next;
}

void ThreadedDriver::loop() {
  std::vector<epoll_event> evs(2 + watched_.size());
  while (true) {
    arm_timer();
    const int n = epoll_wait(epoll_fd_, evs.data(), static_cast<int>(evs.size()), -1);
    if (n < 0 && errno != EINTR) return;
    bool changed = false;
    for (int i = 0; i < n; ++i) {
      const int fd = evs[i].data.fd;
      if (fd == timer_fd_) {
        drain(timer_fd_);
        armed_at_ = kNever;  // a one-shot timer: it has fired
        continue;
      }
      if (fd != task_fd_) {
        for (auto& [wfd, cb] : watched_)
          if (wfd == fd) cb();
        changed = true;
        continue;
      }
      drain(task_fd_);
      std::deque<Task> batch;
      {
        std::lock_guard lock(mu_);
        if (stop_) return;
        batch.swap(tasks_);
      }
      for (Task& t : batch) {
        t.fn();
        changed |= !t.reads_only;
      }
    }
    changed |= run_due_timers();
    if (!changed) continue;
    {
      std::lock_guard lock(mu_);
      ++generation_;
    }
    changed_.notify_all();
  }
}

void ThreadedDriver::post(std::function<void()> fn, bool reads_only) {
  {
    std::lock_guard lock(mu_);
    tasks_.push_back(Task{std::move(fn), reads_only});
  }
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(task_fd_, &one, sizeof(one));
}

void ThreadedDriver::run_on_loop(const std::function<void()>& fn, bool reads_only) {
  if (on_loop_thread() || !thread_.joinable()) {
    fn();  // inside the loop, or before it runs (setup): nothing runs concurrently
    return;
  }
  // Shared with the loop: it may still be leaving the task when the caller wakes up.
  auto done = std::make_shared<std::promise<void>>();
  auto finished = done->get_future();
  post(
      [&fn, done] {
        fn();
        done->set_value();
      },
      reads_only);
  finished.wait();
}

void ThreadedDriver::call(const std::function<void()>& fn) { run_on_loop(fn, false); }

bool ThreadedDriver::wait_until(const std::function<bool()>& done, TimeNs timeout) {
  bool held = false;
  if (on_loop_thread()) return done();
  const TimeNs deadline = saturating_deadline(clock_.now(), timeout);
  while (true) {
    uint64_t seen = 0;
    run_on_loop(
        [&] {
          held = done();
          std::lock_guard lock(mu_);
          seen = generation_;  // a change after this check bumps it at its round's end
        },
        true);
    if (held) return true;
    const TimeNs now = clock_.now();
    if (now >= deadline) return false;
    std::unique_lock lock(mu_);
    const TimeNs left = std::min<TimeNs>(deadline - now, 3600 * kNsPerSec);  // no overflow
    changed_.wait_for(lock, std::chrono::nanoseconds(left), [&] { return generation_ != seen; });
  }
}

}  // namespace tempo

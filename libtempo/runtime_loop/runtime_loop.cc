#include "runtime_loop/runtime_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <memory>

namespace tempo {
namespace {

uint64_t drain(int fd) {
  uint64_t v = 0;
  [[maybe_unused]] ssize_t n = read(fd, &v, sizeof(v));
  return v;
}

}  // namespace

RuntimeLoop::RuntimeLoop(UringDevice& device, const RuntimeLoopConfig& config)
    : device_(device), config_(config) {}

int RuntimeLoop::create(UringDevice& device, const RuntimeLoopConfig& config,
                        std::unique_ptr<RuntimeLoop>* out, std::string* error) {
  if (config.controller.tick_ns <= 0) {
    *error = "the controller tick must be positive";
    return -EINVAL;
  }
  std::unique_ptr<RuntimeLoop> l(new RuntimeLoop(device, config));
  l->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  l->task_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  l->timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (l->epoll_fd_ < 0 || l->task_fd_ < 0 || l->timer_fd_ < 0) {
    *error = std::string("event loop descriptors: ") + std::strerror(errno);
    return -errno;
  }
  for (int fd : {l->task_fd_, l->timer_fd_, device.completion_fd()}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(l->epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      *error = std::string("epoll_ctl: ") + std::strerror(errno);
      return -errno;
    }
  }
  // Built here, before the thread starts; used only by the loop thread from then on.
  l->provider_ = std::make_unique<Provider>(device, l->clock_, config.provider);
  l->controller_ = std::make_unique<Controller>(*l->provider_, l->clock_, config.controller);
  l->controller_->set_observer(l.get());
  RuntimeLoop* raw = l.get();
  l->controller_->set_wakeup([raw] { raw->arm_tick(); });
  l->thread_ = std::thread([raw] { raw->loop(); });
  *out = std::move(l);
  return 0;
}

RuntimeLoop::~RuntimeLoop() {
  if (thread_.joinable()) {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(task_fd_, &one, sizeof(one));
    thread_.join();
  }
  controller_.reset();
  provider_.reset();
  for (int fd : {epoll_fd_, task_fd_, timer_fd_})
    if (fd >= 0) close(fd);
}

void RuntimeLoop::loop() {
  {
    std::lock_guard lock(mu_);
    loop_id_ = std::this_thread::get_id();
  }
  epoll_event evs[3];
  while (true) {
    const int n = epoll_wait(epoll_fd_, evs, 3, -1);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      const int fd = evs[i].data.fd;
      if (fd == timer_fd_) {
        if (drain(timer_fd_) > 0) on_tick();
      } else if (fd == device_.completion_fd()) {
        device_.process_completions();
      } else {
        drain(task_fd_);
        std::deque<std::function<void()>> batch;
        {
          std::lock_guard lock(mu_);
          if (stop_) return;
          batch.swap(tasks_);
        }
        for (auto& t : batch) t();
      }
    }
  }
}

void RuntimeLoop::post(std::function<void()> fn) {
  {
    std::lock_guard lock(mu_);
    tasks_.push_back(std::move(fn));
  }
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(task_fd_, &one, sizeof(one));
}

template <typename F>
auto RuntimeLoop::call(F&& fn) -> decltype(fn()) {
  bool on_loop;
  {
    std::lock_guard lock(mu_);
    on_loop = std::this_thread::get_id() == loop_id_;
  }
  if (on_loop) return fn();
  // Shared: the loop thread may still be leaving task() when the caller wakes up.
  auto task = std::make_shared<std::packaged_task<decltype(fn())()>>(std::forward<F>(fn));
  auto result = task->get_future();
  post([task] { (*task)(); });
  return result.get();
}

void RuntimeLoop::arm_tick() {
  if (tick_armed_) return;
  itimerspec its{};
  its.it_interval.tv_sec = config_.controller.tick_ns / kNsPerSec;
  its.it_interval.tv_nsec = config_.controller.tick_ns % kNsPerSec;
  its.it_value = its.it_interval;
  if (timerfd_settime(timer_fd_, 0, &its, nullptr) == 0) tick_armed_ = true;
}

void RuntimeLoop::on_tick() {
  {
    std::lock_guard lock(mu_);
    ++ticks_;
  }
  controller_->tick();
  // Manifests of claims that ended without a transfer (cancelled, failed) are dropped here;
  // ordinary claims keep theirs for ordinary_read().
  for (auto it = manifests_.begin(); it != manifests_.end();) {
    const Claim* c = controller_->claim(it->first);
    const bool gone =
        c == nullptr || (claim_state_terminal(c->state) && c->state != ClaimState::kOrdinary);
    it = gone ? manifests_.erase(it) : std::next(it);
  }
  // Ticks re-evaluate planned claims only: with none left the timer rests until a report.
  if (controller_->stats().planned == 0) {
    itimerspec off{};
    timerfd_settime(timer_fd_, 0, &off, nullptr);
    tick_armed_ = false;
  }
}

void RuntimeLoop::notify() {
  {
    std::lock_guard lock(mu_);
    ++generation_;
  }
  changed_.notify_all();
}

void RuntimeLoop::on_claim_ready(ClaimId) { notify(); }
void RuntimeLoop::on_claim_ordinary(ClaimId) { notify(); }

int RuntimeLoop::report(const Manifest& manifest, TimeNs ttu, ClaimId* id) {
  return call([&] {
    int ret = controller_->report(manifest, ttu, id);
    if (ret == 0) {
      std::vector<ObjectKey>& keys = manifests_[*id];
      for (const KvObject& o : manifest) keys.push_back(o.key);
    }
    return ret;
  });
}

int RuntimeLoop::revise(ClaimId id, TimeNs ttu) {
  return call([&] { return controller_->revise(id, ttu); });
}

int RuntimeLoop::update_order(std::span<const ClaimId> order) {
  return call([&] { return controller_->update_order(order); });
}

int RuntimeLoop::request_retrieval(ClaimId id, RetrievalOutcome* outcome) {
  return call([&] { return controller_->request_retrieval(id, outcome); });
}

int RuntimeLoop::begin_transfer(ClaimId id) {
  return call([&] { return controller_->begin_transfer(id); });
}

int RuntimeLoop::end_transfer(ClaimId id) {
  int ret = call([&] {
    int r = controller_->end_transfer(id);
    if (r == 0) manifests_.erase(id);
    return r;
  });
  notify();
  return ret;
}

int RuntimeLoop::cancel(ClaimId id) {
  int ret = call([&] { return controller_->cancel(id); });
  notify();
  return ret;
}

int RuntimeLoop::wait_ready(ClaimId id, TimeNs timeout, RetrievalOutcome* outcome) {
  const TimeNs deadline = clock_.now() + timeout;
  while (true) {
    uint64_t seen;
    {
      std::lock_guard lock(mu_);
      seen = generation_;
    }
    const int ret = call([&] { return controller_->readiness(id, outcome); });
    if (ret != -EAGAIN) return ret;
    const TimeNs left = deadline - clock_.now();
    if (left <= 0) return -ETIMEDOUT;
    std::unique_lock lock(mu_);
    // Outcomes bump the generation; the wait is bounded so a missed one costs a tick.
    changed_.wait_for(lock,
                      std::chrono::nanoseconds(std::min<TimeNs>(left, config_.controller.tick_ns)),
                      [&] { return generation_ != seen; });
  }
}

int RuntimeLoop::retrieval_extents(ClaimId id, std::vector<std::span<const std::byte>>* out) {
  return call([&] {
    const Claim* c = controller_->claim(id);
    auto m = manifests_.find(id);
    if (c == nullptr || m == manifests_.end()) return -ENOENT;
    if (c->state != ClaimState::kTransferring) return -EINVAL;
    out->clear();
    std::vector<std::span<const std::byte>> ext;
    for (ObjectKey k : m->second) {
      // The provider holds the pins of a transferring claim: extents stay valid until
      // end_transfer().
      const int r = device_.resident_extents(k, &ext);
      if (r < 0) return r;
      out->insert(out->end(), ext.begin(), ext.end());
    }
    return 0;
  });
}

int RuntimeLoop::ordinary_read(ClaimId id) {
  {
    std::lock_guard lock(mu_);
    // The read completes on the loop thread: it cannot wait for itself.
    if (std::this_thread::get_id() == loop_id_) return -EDEADLK;
  }
  std::vector<ObjectKey> keys;
  int ret = call([&] {
    auto m = manifests_.find(id);
    const Claim* c = controller_->claim(id);
    if (m == manifests_.end() || c == nullptr) return -ENOENT;
    if (c->state != ClaimState::kOrdinary) return -EINVAL;
    keys = std::move(m->second);
    manifests_.erase(m);
    return 0;
  });
  if (ret < 0) return ret;
  std::promise<int> done;
  auto result = done.get_future();
  // The callback runs on the loop thread, which the caller is not: waiting here is safe.
  ret = device_.demand_read(keys, [&done](int status) { done.set_value(status); });
  if (ret < 0) return ret;
  return result.get();
}

void RuntimeLoop::run_sync(const std::function<void()>& fn) {
  call([&] {
    fn();
    return 0;
  });
}

LoopAccounting RuntimeLoop::accounting() {
  return call([&] {
    const ProviderStats ps = provider_->stats();
    return LoopAccounting{ps.ledger_bytes, provider_->recompute_ledger_bytes(), ps.budget_bytes,
                          provider_->held_pins(), device_.stats().pins};
  });
}

ControllerStats RuntimeLoop::controller_stats() {
  return call([&] { return controller_->stats(); });
}

ProviderStats RuntimeLoop::provider_stats() {
  return call([&] { return provider_->stats(); });
}

uint64_t RuntimeLoop::ticks() const {
  std::lock_guard lock(mu_);
  return ticks_;
}

}  // namespace tempo

#include "instance/uring_instance.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace tempo {

int UringInstance::create(const Settings& s, std::unique_ptr<Instance>* out, std::string* error) {
  std::unique_ptr<UringInstance> in(new UringInstance());
  ObjectStoreOptions so;
  so.dir = s.uring.store_path;
  so.data_path = s.uring.data_path;
  so.capacity_bytes = s.uring.store_capacity;
  so.sync = s.uring.store_sync;
  so.direct_io = s.uring.direct_io;
  RecoveryReport report;
  if (const int r = ObjectStore::open(so, &in->store_, &report); r != 0) {
    *error = "uring.store_path '" + so.dir +
             "': cannot open the object store: " + std::strerror(-r) +
             (report.errors.empty() ? "" : ": " + report.errors.back());
    return r;
  }
  UringDeviceOptions dopt;
  dopt.fast_tier.kind = s.uring.fast_tier;
  // A DAX fast tier is the whole device unless fast_tier_bytes was given.
  dopt.fast_tier.bytes =
      s.uring.fast_tier == "dax" && !s.is_explicit("fast_tier_bytes") ? 0 : s.fast_tier_bytes;
  dopt.fast_tier.numa_node = s.uring.numa_node;
  dopt.fast_tier.huge_pages = s.uring.huge_pages;
  dopt.fast_tier.prefault = s.uring.prefault;
  // Registration would pin (fault in) the arena at once: not when it is to fill lazily.
  dopt.register_buffers = s.uring.prefault;
  dopt.fast_tier.dax_path = s.uring.dax_path;
  dopt.queue_depth = s.uring.queue_depth;
  dopt.request_bytes = s.uring.request_bytes;
  dopt.verify_checksums = s.uring.verify_checksums;
  dopt.eviction = s.eviction;
  dopt.staging_rate_bps = s.calibration_rate_bps;
  dopt.demand_rate_bps = s.demand_rate_bps;
  if (const int r = UringDevice::create(*in->store_, dopt, in->clock_, &in->device_, error); r != 0)
    return r;
  const uint64_t capacity = in->device_->info().capacity_bytes;
  if (s.budget_bytes >= capacity) {
    *error = "'budget_bytes' (" + std::to_string(s.budget_bytes) +
             ") must be below the fast tier's capacity (" + std::to_string(capacity) + ")";
    return -EINVAL;
  }
  ProviderConfig pc{s.budget_bytes, s.calibration_rate_bps, s.static_rate_bps, s.rate_window_ns,
                    s.is_explicit("staging_slots") ? s.staging_slots : 0};
  in->provider_ = std::make_unique<Provider>(*in->device_, in->clock_, pc);
  in->controller_ = std::make_unique<Controller>(*in->provider_, in->clock_,
                                                 ControllerConfig{s.policy, s.tick_ns});
  in->attach(*in->controller_, *in->provider_, *in->device_, in->clock_);

  in->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  in->timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  in->stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (in->epoll_fd_ < 0 || in->timer_fd_ < 0 || in->stop_fd_ < 0) {
    *error = std::string("event loop descriptors: ") + std::strerror(errno);
    return -errno;
  }
  itimerspec its{};
  its.it_interval.tv_sec = s.tick_ns / kNsPerSec;
  its.it_interval.tv_nsec = s.tick_ns % kNsPerSec;
  its.it_value = its.it_interval;
  if (timerfd_settime(in->timer_fd_, 0, &its, nullptr) != 0) {
    *error = std::string("timerfd_settime: ") + std::strerror(errno);
    return -errno;
  }
  for (int fd : {in->timer_fd_, in->stop_fd_, in->device_->completion_fd()}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(in->epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      *error = std::string("epoll_ctl: ") + std::strerror(errno);
      return -errno;
    }
  }
  UringInstance* raw = in.get();
  in->thread_ = std::thread([raw] { raw->loop(); });
  *out = std::move(in);
  return 0;
}

UringInstance::~UringInstance() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(stop_fd_, &one, sizeof(one));
    thread_.join();
  }
  // The controller and provider go before the device (their pins), the device before the store.
  controller_.reset();
  provider_.reset();
  device_.reset();
  for (int fd : {epoll_fd_, timer_fd_, stop_fd_})
    if (fd >= 0) close(fd);
}

void UringInstance::loop() {
  epoll_event evs[3];
  while (true) {
    const int n = epoll_wait(epoll_fd_, evs, 3, -1);
    if (n < 0 && errno != EINTR) return;
    for (int i = 0; i < n; ++i) {
      const int fd = evs[i].data.fd;
      if (fd == stop_fd_) return;
      if (fd == timer_fd_) {
        uint64_t expirations = 0;
        if (read(timer_fd_, &expirations, sizeof(expirations)) > 0) tick();
      } else {
        std::lock_guard lock(mu_);
        device_->process_completions();
        notify();
      }
    }
  }
}

bool UringInstance::advance_locked(std::unique_lock<std::mutex>& lock, TimeNs deadline) {
  const TimeNs left = deadline - clock_.now();
  if (left <= 0) return false;
  // The loop thread notifies after every delivery and tick, so a missed wakeup costs a tick.
  changed_.wait_for(lock, std::chrono::nanoseconds(left));
  return true;
}

int UringInstance::extents(ClaimId id, std::vector<std::span<const std::byte>>* out) {
  std::lock_guard lock(mu_);
  const Claim* c = controller_->claim(id);
  if (c == nullptr) return -ENOENT;
  if (c->state != ClaimState::kTransferring) return -EINVAL;
  out->clear();
  std::vector<std::span<const std::byte>> ext;
  // The provider holds the pins of a transferring claim: extents stay valid until
  // end_transfer().
  for (ObjectKey k : manifest_locked(id)) {
    if (const int r = device_->resident_extents(k, &ext); r < 0) return r;
    out->insert(out->end(), ext.begin(), ext.end());
  }
  return 0;
}

int UringInstance::store_put(ObjectKey key, std::span<const std::byte> data) {
  if (data.empty()) return -EINVAL;
  if (store_->lookup(key)) return -EEXIST;
  return store_->put(key, data);
}

}  // namespace tempo

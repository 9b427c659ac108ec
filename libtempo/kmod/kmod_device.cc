#include "kmod/kmod_device.h"

#include <fcntl.h>
#include <linux/tempo.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "core/clock.h"

namespace tempo {

namespace {

constexpr uint64_t kPage = 4096;

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

}  // namespace

int KmodDevice::open(const KmodDeviceOptions& options, std::unique_ptr<KmodDevice>* out,
                     std::string* error) {
  std::unique_ptr<KmodDevice> d(new KmodDevice());
  d->options_ = options;
  d->fd_ = ::open(options.path.c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK);
  if (d->fd_ < 0) {
    const int r = -errno;
    if (error) *error = options.path + ": " + std::strerror(errno);
    return r;
  }
  tempo_info in{};
  if (ioctl(d->fd_, TEMPO_IOC_GET_INFO, &in) != 0) {
    const int r = -errno;
    if (error) *error = options.path + ": not a tempo device (" + std::strerror(errno) + ")";
    return r;
  }
  d->geo_ = KmodGeometry{in.size, in.fast_bytes, in.extent_bytes, in.pin_limit_bytes,
                         in.fast_kind == TEMPO_FAST_DAX};
  d->record_bytes_ = std::max<size_t>(in.record_bytes, sizeof(tempo_completion));
  tempo_events events{};
  events.mask = TEMPO_EVENT_EVICT;
  if (ioctl(d->fd_, TEMPO_IOC_SET_EVENTS, &events) != 0) {
    const int r = errno == ENOTTY ? -EINVAL : -errno;
    if (error)
      *error = options.path + ": tempo.ko does not send eviction notices (" + std::strerror(errno) +
               "): load the module of this release";
    return r;
  }
  void* m = mmap(nullptr, in.size, PROT_READ, MAP_SHARED, d->fd_, 0);
  if (m == MAP_FAILED) {
    const int r = -errno;
    if (error) *error = options.path + ": mmap: " + std::strerror(errno);
    return r;
  }
  d->map_ = static_cast<const std::byte*>(m);
  d->event_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  d->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (d->event_fd_ < 0 || d->epoll_fd_ < 0) {
    const int r = -errno;
    if (error) *error = std::string("eventfd/epoll: ") + std::strerror(errno);
    return r;
  }
  for (int fd : {d->fd_, d->event_fd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(d->epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      const int r = -errno;
      if (error) *error = std::string("epoll_ctl: ") + std::strerror(errno);
      return r;
    }
  }
  d->worker_ = std::thread([dev = d.get()] { dev->demand_worker(); });
  *out = std::move(d);
  return 0;
}

KmodDevice::~KmodDevice() {
  if (worker_.joinable()) {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    demand_cv_.notify_all();
    worker_.join();
  }
  if (map_) munmap(const_cast<std::byte*>(map_), geo_.size);
  for (int fd : {epoll_fd_, event_fd_, fd_})
    if (fd >= 0) close(fd);
}

int KmodDevice::open_reader() const {
  const std::string self = "/proc/self/fd/" + std::to_string(fd_);
  const int fd = ::open(self.c_str(), O_RDONLY | O_CLOEXEC);
  return fd < 0 ? -errno : fd;
}

const KmodDevice::Placement* KmodDevice::find_locked(ObjectKey key) const {
  auto it = objects_.find(key);
  return it == objects_.end() ? nullptr : &it->second;
}

int KmodDevice::register_object(ObjectKey key, uint64_t offset, uint64_t bytes) {
  if (bytes == 0 || offset % geo_.extent_bytes != 0) return -EINVAL;
  const uint64_t span = round_up(bytes, geo_.extent_bytes);
  if (offset >= geo_.size || span > geo_.size - offset) return -ERANGE;
  std::lock_guard lock(mu_);
  if (objects_.contains(key)) return -EEXIST;
  // The neighbours by offset decide overlap: the one at or before us, and the next one.
  auto next = by_offset_.lower_bound(offset);
  if (next != by_offset_.end() && next->first < offset + span) return -EBUSY;
  if (next != by_offset_.begin()) {
    const Placement& prev = objects_.at(std::prev(next)->second);
    if (prev.offset + round_up(prev.bytes, geo_.extent_bytes) > offset) return -EBUSY;
  }
  objects_.emplace(key, Placement{offset, bytes, round_up(bytes, kPage)});
  by_offset_.emplace(offset, key);
  return 0;
}

int KmodDevice::add_object(ObjectKey key, uint64_t bytes, uint64_t* offset) {
  uint64_t at = 0;
  {
    std::lock_guard lock(mu_);
    if (!by_offset_.empty()) {
      const Placement& last = objects_.at(by_offset_.rbegin()->second);
      at = last.offset + round_up(last.bytes, geo_.extent_bytes);
    }
  }
  const int r = register_object(key, at, bytes);
  if (r == 0 && offset) *offset = at;
  return r;
}

int KmodDevice::unregister_object(ObjectKey key) {
  std::lock_guard lock(mu_);
  const Placement* p = find_locked(key);
  if (!p) return -ENOENT;
  Query q;
  if (staging_.contains(key)) return -EBUSY;
  if (query_locked(*p, &q) == 0 && q.own_pins > 0) return -EBUSY;
  by_offset_.erase(p->offset);
  objects_.erase(key);
  return 0;
}

int KmodDevice::query_locked(const Placement& p, Query* out) const {
  tempo_query q{};
  q.offset = p.offset;
  q.length = p.length;
  if (ioctl(fd_, TEMPO_IOC_QUERY, &q) != 0) return -errno;
  out->resident = q.resident_bytes;
  out->own_pins = q.own_min_pins;
  return 0;
}

int KmodDevice::range_call_locked(unsigned long cmd, const Placement& p) const {
  tempo_range r{p.offset, p.length};
  tempo_pin arg{};
  arg.ranges = reinterpret_cast<uintptr_t>(&r);
  arg.nr_ranges = 1;
  return ioctl(fd_, cmd, &arg) == 0 ? 0 : -errno;
}

DeviceInfo KmodDevice::info() const {
  return DeviceInfo{"kmod", geo_.fast_bytes, options_.staging_slots, options_.staging_rate_bps,
                    options_.demand_rate_bps};
}

DeviceStats KmodDevice::stats() const {
  tempo_stats k{};
  std::lock_guard lock(mu_);
  DeviceStats s = counters_;
  if (ioctl(fd_, TEMPO_IOC_STATS, &k) == 0) {
    s.resident_bytes = k.resident_bytes + k.filling_bytes;
    s.pinned_bytes = k.pinned_bytes;
    s.pins = k.pins;
    s.evictions = k.evictions;
    s.evicted_bytes = k.evicted_bytes;
  }
  return s;
}

void KmodDevice::set_observer(DeviceObserver* observer) {
  std::lock_guard lock(mu_);
  observer_ = observer;
}

int64_t KmodDevice::object_size(ObjectKey key) const {
  std::lock_guard lock(mu_);
  const Placement* p = find_locked(key);
  return p ? static_cast<int64_t>(p->bytes) : -ENOENT;
}

Residency KmodDevice::residency(ObjectKey key) const {
  std::lock_guard lock(mu_);
  const Placement* p = find_locked(key);
  if (!p) return Residency::kAbsent;
  if (staging_.contains(key)) return Residency::kStaging;
  Query q;
  return query_locked(*p, &q) == 0 && q.resident == p->length ? Residency::kResident
                                                              : Residency::kAbsent;
}

uint32_t KmodDevice::pin_count(ObjectKey key) const {
  std::lock_guard lock(mu_);
  const Placement* p = find_locked(key);
  Query q;
  return p && query_locked(*p, &q) == 0 ? q.own_pins : 0;
}

int KmodDevice::stage(ObjectKey key) {
  std::lock_guard lock(mu_);
  const Placement* p = find_locked(key);
  if (!p) return -ENOENT;
  if (staging_.contains(key)) return -EBUSY;
  Query q;
  const int qr = query_locked(*p, &q);
  if (qr != 0) return qr;
  if (q.resident == p->length) return -EBUSY;
  tempo_range r{p->offset, p->length};
  tempo_stage s{};
  s.ranges = reinterpret_cast<uintptr_t>(&r);
  s.nr_ranges = 1;
  s.flags = TEMPO_STAGE_F_PIN;
  s.ticket = next_ticket_;
  if (ioctl(fd_, TEMPO_IOC_STAGE, &s) != 0) return -errno;
  in_flight_.emplace(next_ticket_, InFlight{key, options_.clock ? options_.clock->now() : 0});
  staging_.emplace(key, next_ticket_);
  ++next_ticket_;
  return 0;
}

int KmodDevice::pin(ObjectKey key) {
  std::lock_guard lock(mu_);
  const Placement* p = find_locked(key);
  if (!p) return -ENOENT;
  return range_call_locked(TEMPO_IOC_PIN, *p);
}

int KmodDevice::unpin(ObjectKey key) {
  std::lock_guard lock(mu_);
  const Placement* p = find_locked(key);
  if (!p) return -ENOENT;
  return range_call_locked(TEMPO_IOC_UNPIN, *p);
}

int KmodDevice::resident_extents(ObjectKey key,
                                 std::vector<std::span<const std::byte>>* out) const {
  std::lock_guard lock(mu_);
  const Placement* p = find_locked(key);
  if (!p) return -ENOENT;
  Query q;
  if (const int r = query_locked(*p, &q); r != 0) return r;
  if (q.resident != p->length) return -EAGAIN;
  if (q.own_pins == 0) return -EPERM;
  out->assign(1, std::span<const std::byte>(map_ + p->offset, p->bytes));
  return 0;
}

int KmodDevice::demand_read(std::span<const ObjectKey> keys, std::function<void(int)> done) {
  std::lock_guard lock(mu_);
  for (ObjectKey k : keys)
    if (!find_locked(k)) return -ENOENT;
  demand_queue_.push_back(DemandJob{{keys.begin(), keys.end()}, std::move(done)});
  demand_cv_.notify_one();
  return 0;
}

// Touches every page of each object through the mapping: the kernel's fault path reads what
// is not resident. Runs on the worker thread.
void KmodDevice::demand_worker() {
  std::unique_lock lock(mu_);
  for (;;) {
    demand_cv_.wait(lock, [this] { return stopping_ || !demand_queue_.empty(); });
    if (demand_queue_.empty()) return;
    DemandJob job = std::move(demand_queue_.front());
    demand_queue_.pop_front();
    ++demand_running_;
    DemandDone result{{}, std::move(job.done), 0};
    ++counters_.demand_reads;
    for (ObjectKey k : job.keys) {
      const Placement p = *find_locked(k);
      Query before;
      const bool was_resident = query_locked(p, &before) == 0 && before.resident == p.length;
      if (!was_resident) counters_.demand_bytes += p.bytes;
      lock.unlock();
      uint64_t sum = 0;
      for (uint64_t off = 0; off < p.bytes; off += kPage)
        sum +=
            static_cast<uint64_t>(*static_cast<const volatile std::byte*>(map_ + p.offset + off));
      asm volatile("" : : "r"(sum));
      lock.lock();
      Query after;
      if (!was_resident && query_locked(p, &after) == 0 && after.resident == p.length)
        result.filled.push_back(k);
    }
    --demand_running_;
    demand_done_.push_back(std::move(result));
    // Cannot fail: the eventfd counter would need 2^64 - 1 unread events.
    const uint64_t one = 1;
    const ssize_t w = write(event_fd_, &one, sizeof(one));
    static_cast<void>(w);
  }
}

void KmodDevice::record_locked(const tempo_completion& c, std::vector<Event>* events) {
  switch (c.kind) {
    case TEMPO_REC_STAGE: {
      auto it = in_flight_.find(c.ticket);
      if (it == in_flight_.end()) return;
      const InFlight f = it->second;
      in_flight_.erase(it);
      staging_.erase(f.key);
      const Placement* p = find_locked(f.key);
      const uint64_t bytes = p ? p->bytes : c.bytes;
      if (c.status == 0) {
        ++counters_.staged_ops;
        counters_.staged_bytes += bytes;
      } else {
        ++counters_.stage_errors;
      }
      const auto took = static_cast<TimeNs>(c.complete_ns - c.submit_ns);
      const TimeNs submitted = options_.clock ? f.submitted : static_cast<TimeNs>(c.submit_ns);
      events->push_back(Event{false, {f.key, bytes, c.status, submitted, submitted + took}});
      return;
    }
    case TEMPO_REC_EVICT: {
      // Objects never share an extent: the one holding the evicted extent, if any.
      auto it = by_offset_.upper_bound(c.offset);
      if (it == by_offset_.begin()) return;
      const ObjectKey key = std::prev(it)->second;
      const Placement& p = objects_.at(key);
      if (c.offset < p.offset + round_up(p.bytes, geo_.extent_bytes) && !staging_.contains(key))
        events->push_back(Event{true, {key, 0, 0, 0, 0}});
      return;
    }
    case TEMPO_REC_RESET:
    case TEMPO_REC_LOST:
      resync_locked(events);
      return;
    default:  // a kind of a newer module: skipped
      return;
  }
}

void KmodDevice::resync_locked(std::vector<Event>* events) const {
  for (const auto& [key, p] : objects_) {
    Query q;
    if (!staging_.contains(key) && (query_locked(p, &q) != 0 || q.resident != p.length))
      events->push_back(Event{true, {key, 0, 0, 0, 0}});
  }
}

int KmodDevice::process_completions() {
  std::lock_guard deliver(deliver_mu_);
  std::vector<Event> events;
  std::deque<DemandDone> demands;
  DeviceObserver* observer = nullptr;
  int error = 0;
  {
    std::lock_guard lock(mu_);
    std::vector<std::byte> buf(32 * record_bytes_);
    while (error == 0) {
      const ssize_t n = read(fd_, buf.data(), buf.size());
      if (n < 0) {
        if (errno != EAGAIN) error = -errno;
        break;
      }
      // Records carry their length: step by it, read the fields this build knows.
      for (size_t at = 0; at < static_cast<size_t>(n);) {
        uint32_t len = 0;
        if (static_cast<size_t>(n) - at >= sizeof(len)) std::memcpy(&len, buf.data() + at, 4);
        if (len < offsetof(tempo_completion, ticket) || len > static_cast<size_t>(n) - at) {
          error = -EPROTO;
          break;
        }
        tempo_completion c{};
        std::memcpy(&c, buf.data() + at, std::min<size_t>(len, sizeof(c)));
        record_locked(c, &events);
        at += len;
      }
    }
    uint64_t count;
    if (read(event_fd_, &count, sizeof(count)) < 0 && errno != EAGAIN && error == 0) error = -errno;
    demands.swap(demand_done_);
    // A fill the kernel has evicted again since is not reported resident: after the
    // records above, the kernel's answer now is the latest.
    for (DemandDone& d : demands) {
      std::erase_if(d.filled, [this](ObjectKey k) {
        Query q;
        const Placement* p = find_locked(k);
        return !p || query_locked(*p, &q) != 0 || q.resident != p->length;
      });
    }
    observer = observer_;
  }
  // Delivered without mu_: callbacks may call back into the device.
  int delivered = 0;
  for (const Event& e : events) {
    if (observer && e.evicted) observer->on_evicted(e.stage.key);
    if (observer && !e.evicted) observer->on_stage_complete(e.stage);
    ++delivered;
  }
  for (DemandDone& d : demands) {
    for (ObjectKey k : d.filled)
      if (observer) observer->on_resident(k);
    if (d.done) d.done(d.status);
    ++delivered;
  }
  return error != 0 ? error : delivered;
}

int KmodDevice::wait(TimeNs timeout) {
  pollfd p{epoll_fd_, POLLIN, 0};
  const int ms = static_cast<int>(timeout / kNsPerMs);
  const int r = ::poll(&p, 1, ms);
  if (r < 0) return -errno;
  return process_completions();
}

bool KmodDevice::idle() const {
  std::lock_guard lock(mu_);
  return in_flight_.empty() && demand_queue_.empty() && demand_running_ == 0 &&
         demand_done_.empty();
}

int KmodDevice::object_data(ObjectKey key, std::span<const std::byte>* out) const {
  std::lock_guard lock(mu_);
  const Placement* p = find_locked(key);
  if (!p) return -ENOENT;
  *out = std::span<const std::byte>(map_ + p->offset, p->bytes);
  return 0;
}

int KmodDevice::reset() { return ioctl(fd_, TEMPO_IOC_RESET, 0) == 0 ? 0 : -errno; }

}  // namespace tempo

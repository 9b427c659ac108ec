#include "uring/uring_device.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/probes.h"
#include "store/checksum.h"

namespace tempo {
namespace {

// io_uring registers at most 1 GiB per fixed buffer: the arena is registered in pieces.
constexpr uint64_t kMaxRegisteredBuffer = 1ull << 30;

}  // namespace

UringDevice::UringDevice(ObjectStore& store, const UringDeviceOptions& options, const Clock& clock)
    : store_(store), options_(options), clock_(clock), cluster_(options.cluster) {}

int UringDevice::create(ObjectStore& store, const UringDeviceOptions& options, const Clock& clock,
                        std::unique_ptr<UringDevice>* out, std::string* error) {
  if (options.queue_depth == 0 || options.request_bytes == 0 ||
      options.request_bytes % kFastTierUnit != 0) {
    *error = "queue_depth must be positive; request_bytes a multiple of 4 KiB";
    return -EINVAL;
  }
  std::unique_ptr<UringDevice> d(new UringDevice(store, options, clock));
  d->policy_ = make_eviction_policy(options.eviction);
  if (!d->policy_) {
    *error = "unknown eviction policy \"" + options.eviction + "\"";
    return -EINVAL;
  }
  int ret = FastTier::create(options.fast_tier, &d->fast_, error);
  if (ret < 0) return ret;
  d->event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (d->event_fd_ < 0) {
    *error = std::string("eventfd: ") + std::strerror(errno);
    return -errno;
  }
  if (d->cluster_) {
    d->poll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (d->poll_fd_ < 0) {
      *error = std::string("epoll_create1: ") + std::strerror(errno);
      return -errno;
    }
    for (int fd : {d->event_fd_, d->cluster_->completion_fd()}) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      if (epoll_ctl(d->poll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
        *error = std::string("epoll_ctl: ") + std::strerror(errno);
        return -errno;
      }
    }
  }
  ret = IoRing::create(options.queue_depth, &d->ring_);
  if (ret == 0) ret = d->ring_->register_eventfd(d->event_fd_);
  if (ret < 0) {
    *error = std::string("io_uring setup: ") + std::strerror(-ret);
    return ret;
  }
  // Registration pins (and so faults in) the whole arena; a memlock limit below it would
  // refuse it only after pinning a piece: not tried then (root has no such limit).
  rlimit memlock{};
  const bool may_pin = geteuid() == 0 || (getrlimit(RLIMIT_MEMLOCK, &memlock) == 0 &&
                                          memlock.rlim_cur >= d->fast_->region().size());
  if (options.register_buffers && may_pin) {
    const FastTierRegion& r = d->fast_->region();
    std::vector<iovec> iovs;
    for (uint64_t off = 0; off < r.size(); off += kMaxRegisteredBuffer)
      iovs.push_back(iovec{r.base() + off, std::min(kMaxRegisteredBuffer, r.size() - off)});
    // Where pinning is refused (some DAX mappings) plain reads still work.
    if (d->ring_->register_buffers(iovs) == 0) {
      d->buffer_chunk_ = kMaxRegisteredBuffer;
      d->ustats_.registered_buffers = true;
    }
  }
  *out = std::move(d);
  return 0;
}

UringDevice::~UringDevice() {
  if (cluster_) drain_pool_reads();
  {
    std::lock_guard lock(mu_);
    ring_.reset();  // waits for reads still in flight
    for (auto& [id, op] : ops_)
      if (op.kind != Op::Kind::kPool) store_.release(op.info);
  }
  for (int fd : {event_fd_, poll_fd_})
    if (fd >= 0) close(fd);
}

void UringDevice::drain_pool_reads() {
  // Each read is bounded by the tier's operation timeout.
  std::vector<ClusterRead> done;
  std::unique_lock lock(mu_);
  while (pool_reads_ > 0) {
    lock.unlock();
    pollfd p{cluster_->completion_fd(), POLLIN, 0};
    poll(&p, 1, 100);
    done.clear();
    cluster_->reap(&done);
    lock.lock();
    pool_reads_ -= done.size();
  }
}

DeviceInfo UringDevice::info() const {
  return DeviceInfo{"uring", fast_->capacity(), options_.queue_depth, options_.staging_rate_bps,
                    options_.demand_rate_bps};
}

DeviceStats UringDevice::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

UringDeviceStats UringDevice::uring_stats() const {
  std::lock_guard lock(mu_);
  return ustats_;
}

FastTierStats UringDevice::fast_tier_stats() const {
  std::lock_guard lock(mu_);
  return fast_->stats();
}

void UringDevice::set_observer(DeviceObserver* observer) {
  std::lock_guard lock(dispatch_mu_);
  observer_ = observer;
}

void UringDevice::set_fault_hook(IoFaultHook hook) {
  std::lock_guard lock(mu_);
  ring_->set_fault_hook(std::move(hook));
}

int64_t UringDevice::object_size(ObjectKey key) const {
  auto info = store_.lookup(key);
  if (info) return static_cast<int64_t>(info->size);
  return cluster_ ? pool_size(key) : -ENOENT;
}

int64_t UringDevice::pool_size(ObjectKey key) const {
  {
    std::lock_guard lock(mu_);
    if (auto it = pool_sizes_.find(key); it != pool_sizes_.end())
      return static_cast<int64_t>(it->second);
  }
  // Outside mu_: bounded by the tier's operation timeout, not by the device.
  const int64_t size = cluster_->stat(key);
  if (size > 0) {
    std::lock_guard lock(mu_);
    pool_sizes_[key] = static_cast<uint64_t>(size);
  }
  return size;
}

void UringDevice::object_sizes(std::span<const ObjectKey> keys, std::span<int64_t> sizes) const {
  std::vector<ObjectKey> ask;
  std::vector<size_t> at;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (auto info = store_.lookup(keys[i])) {
      sizes[i] = static_cast<int64_t>(info->size);
      continue;
    }
    sizes[i] = -ENOENT;
    if (!cluster_) continue;
    std::lock_guard lock(mu_);
    if (auto it = pool_sizes_.find(keys[i]); it != pool_sizes_.end()) {
      sizes[i] = static_cast<int64_t>(it->second);
      continue;
    }
    ask.push_back(keys[i]);
    at.push_back(i);
  }
  if (ask.empty()) return;
  // Outside mu_: bounded by the tier's operation timeout, once for the batch.
  std::vector<int64_t> answers(ask.size());
  cluster_->stat_many(ask, answers);
  std::lock_guard lock(mu_);
  for (size_t j = 0; j < ask.size(); ++j) {
    sizes[at[j]] = answers[j];
    if (answers[j] > 0) pool_sizes_[ask[j]] = static_cast<uint64_t>(answers[j]);
  }
}

Residency UringDevice::residency(ObjectKey key) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? Residency::kAbsent : it->second.state;
}

uint32_t UringDevice::pin_count(ObjectKey key) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? 0 : it->second.pins;
}

void UringDevice::signal() {
  const uint64_t one = 1;
  // The counter saturating would mean the loop is not reading: nothing more to do then.
  [[maybe_unused]] ssize_t n = write(event_fd_, &one, sizeof(one));
}

void UringDevice::post_locked(Event ev) {
  events_.push_back(std::move(ev));
  signal();
}

void UringDevice::evict_locked(ObjectKey key, Entry& e) {
  policy_->evict(key);  // not remove(): history-keeping policies remember evicted ids
  const bool was_resident = e.state == Residency::kResident;
  fast_->release(e.bytes, e.extents);
  if (was_resident) {
    stats_.resident_bytes -= e.bytes;
    ++stats_.evictions;
    stats_.evicted_bytes += e.bytes;
    TEMPO_PROBE_EVICT(key, e.bytes);
  }
  entries_.erase(key);
  if (was_resident) post_locked(Event{Event::Kind::kEvicted, {}, key, {}, 0});
}

bool UringDevice::make_room_locked(uint64_t bytes) {
  const uint64_t need = fast_->footprint(bytes);
  if (need > fast_->capacity()) return false;
  while (fast_->free_bytes() < need) {
    auto victim = policy_->pick_victim();
    if (!victim) return false;
    evict_locked(*victim, entries_.at(*victim));
  }
  return true;
}

void UringDevice::add_staging_locked(ObjectKey key, uint64_t bytes, std::vector<Extent> extents) {
  Entry& e = entries_[key];
  e.bytes = bytes;
  e.state = Residency::kStaging;
  e.pins = 1;
  e.extents = std::move(extents);
  ++stats_.pins;
  stats_.pinned_bytes += bytes;
  stats_.resident_bytes += bytes;
}

std::vector<std::span<std::byte>> UringDevice::object_spans_locked(const Entry& e) const {
  std::vector<std::span<std::byte>> spans;
  uint64_t left = e.bytes;
  for (const Extent& x : e.extents) {
    const uint64_t n = std::min(left, x.len);
    spans.emplace_back(fast_->at(x.offset), n);
    left -= n;
  }
  return spans;
}

Source UringDevice::stage_source(ObjectKey key) const {
  return cluster_ && !store_.lookup(key) ? Source::kRemote : Source::kLocal;
}

int UringDevice::stage(ObjectKey key) {
  if (cluster_ && !store_.lookup(key)) return stage_from_pool(key);
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) return -EBUSY;
  ObjectInfo info;
  int ret = store_.acquire(key, &info);
  if (ret < 0) return ret;
  std::vector<Extent> extents;
  if (!make_room_locked(info.size) || fast_->allocate(info.size, &extents) < 0) {
    store_.release(info);
    return -ENOSPC;
  }
  add_staging_locked(key, info.size, extents);

  const uint64_t id = next_op_id_++;
  Op& op = ops_[id];
  op.kind = Op::Kind::kStage;
  op.key = key;
  op.info = info;
  op.extents = std::move(extents);
  op.length = fast_->footprint(info.size);
  op.submitted = clock_.now();
  if (options_.verify_checksums) op.sum = std::make_unique<Checksum64Stream>();
  stage_queue_.push_back(id);
  pump_locked();
  return 0;
}

int UringDevice::stage_from_pool(ObjectKey key) {
  const int64_t size = pool_size(key);
  if (size < 0) return static_cast<int>(size);
  std::lock_guard lock(mu_);
  if (entries_.contains(key)) return -EBUSY;
  std::vector<Extent> extents;
  if (!make_room_locked(static_cast<uint64_t>(size)) ||
      fast_->allocate(static_cast<uint64_t>(size), &extents) < 0)
    return -ENOSPC;
  add_staging_locked(key, static_cast<uint64_t>(size), std::move(extents));
  const uint64_t id = next_op_id_++;
  Op& op = ops_[id];
  op.kind = Op::Kind::kPool;
  op.key = key;
  op.submitted = clock_.now();
  ++pool_reads_;
  // Straight into the fast tier: the tier verifies the pool's checksum before it completes.
  // Never fails: the object is not empty.
  cluster_->read_async(key, object_spans_locked(entries_.at(key)), id);
  return 0;
}

void UringDevice::finish_pool_read_locked(const ClusterRead& r) {
  --pool_reads_;
  auto it = ops_.find(r.tag);
  const ObjectKey key = it->second.key;
  Entry& e = entries_.at(key);
  const int status = r.status < 0 ? static_cast<int>(r.status) : 0;
  if (status == 0) {
    ++ustats_.pool_stages;
    if (options_.keep_local) {
      std::vector<std::byte> copy;
      copy.reserve(e.bytes);
      for (const auto& piece : object_spans_locked(e))
        copy.insert(copy.end(), piece.begin(), piece.end());
      keep_.emplace_back(key, std::move(copy));
    }
  } else {
    ++ustats_.pool_stage_errors;
    pool_sizes_.erase(key);  // gone or replaced: ask the pool again next time
  }
  settle_stage_locked(e, StageCompletion{key, e.bytes, status, it->second.submitted, clock_.now()});
  ops_.erase(it);
}

int UringDevice::pin(ObjectKey key) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return store_.lookup(key) ? -EAGAIN : -ENOENT;
  Entry& e = it->second;
  if (e.state != Residency::kResident) return -EAGAIN;
  if (e.pins == 0) {
    policy_->remove(key);
    stats_.pinned_bytes += e.bytes;
  }
  ++e.pins;
  ++stats_.pins;
  return 0;
}

int UringDevice::unpin(ObjectKey key) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return store_.lookup(key) ? -EINVAL : -ENOENT;
  Entry& e = it->second;
  if (e.pins == 0) return -EINVAL;
  --e.pins;
  --stats_.pins;
  if (e.pins == 0) {
    stats_.pinned_bytes -= e.bytes;
    if (e.state == Residency::kResident) policy_->add(key, e.bytes, clock_.now());
  }
  return 0;
}

int UringDevice::demand_read(std::span<const ObjectKey> keys, std::function<void(int)> done) {
  std::lock_guard lock(mu_);
  std::vector<ObjectInfo> infos;
  for (ObjectKey k : keys) {
    auto it = entries_.find(k);
    if (it != entries_.end() && it->second.state == Residency::kResident) continue;
    ObjectInfo info;
    int ret = store_.acquire(k, &info);
    if (ret < 0) {
      for (const ObjectInfo& i : infos) store_.release(i);
      return ret;
    }
    infos.push_back(info);
  }
  ++stats_.demand_reads;
  auto group = std::make_shared<DemandGroup>();
  group->done = std::move(done);
  group->outstanding = static_cast<uint32_t>(infos.size());
  for (ObjectKey k : keys) {
    auto it = entries_.find(k);
    if (it != entries_.end() && it->second.state == Residency::kResident)
      policy_->record_access(k, clock_.now());
  }
  if (infos.empty()) {
    post_locked(Event{Event::Kind::kDemandDone, {}, 0, std::move(group->done), 0});
    return 0;
  }
  for (ObjectInfo& info : infos) {
    const uint64_t id = next_op_id_++;
    Op& op = ops_[id];
    op.kind = Op::Kind::kDemand;
    op.key = info.key;
    op.info = info;
    op.length = fast_->footprint(info.size);
    op.bounce = make_aligned_buffer(op.length);
    op.group = group;
    op.submitted = clock_.now();
    if (options_.verify_checksums) op.sum = std::make_unique<Checksum64Stream>();
    stats_.demand_bytes += info.size;
    if (!op.bounce) {
      op.error = -ENOMEM;
      finish_op_locked(id);
      continue;
    }
    demand_queue_.push_back(id);
  }
  pump_locked();
  return 0;
}

std::byte* UringDevice::fast_ptr_locked(const std::vector<Extent>& extents, uint64_t pos,
                                        uint64_t* contiguous) const {
  for (const Extent& x : extents) {
    if (pos < x.len) {
      *contiguous = x.len - pos;
      return fast_->at(x.offset + pos);
    }
    pos -= x.len;
  }
  *contiguous = 0;
  return nullptr;
}

int UringDevice::buffer_index(const std::byte* p) const {
  if (buffer_chunk_ == 0) return -1;
  return static_cast<int>(static_cast<uint64_t>(p - fast_->region().base()) / buffer_chunk_);
}

// Hands the op's next read to the ring: false when the ring is full.
bool UringDevice::issue_one_locked(Op& op, uint64_t op_id) {
  IoRequest req;
  req.op = IoRequest::Op::kRead;
  req.fd = store_.data_fd();
  req.offset = op.info.offset + op.issued;
  req.tag = op_id;
  uint64_t len = std::min<uint64_t>(options_.request_bytes, op.length - op.issued);
  if (op.kind == Op::Kind::kStage) {
    uint64_t contiguous = 0;
    std::byte* p = fast_ptr_locked(op.extents, op.issued, &contiguous);
    len = std::min(len, contiguous);
    if (buffer_chunk_ > 0) {
      // A fixed read must stay inside one registered buffer.
      const uint64_t in_chunk = static_cast<uint64_t>(p - fast_->region().base()) % buffer_chunk_;
      len = std::min(len, buffer_chunk_ - in_chunk);
    }
    req.buf = p;
    req.buf_index = buffer_index(p);
  } else {
    req.buf = op.bounce.get() + op.issued;
  }
  req.len = static_cast<uint32_t>(len);
  if (ring_->prepare(req) < 0) return false;
  op.issued += len;
  ++op.inflight;
  return true;
}

void UringDevice::pump_locked() {
  bool queued = false;
  while (!retries_.empty() && ring_->prepare(retries_.front()) == 0) {
    retries_.pop_front();
    queued = true;
  }
  for (auto* q : {&demand_queue_, &stage_queue_}) {
    while (retries_.empty() && !q->empty()) {
      const uint64_t id = q->front();
      Op& op = ops_.at(id);
      if (op.error != 0 || op.issued == op.length) {
        q->pop_front();
        continue;
      }
      if (!issue_one_locked(op, id)) break;
      queued = true;
    }
  }
  if (queued) ring_->submit();
}

void UringDevice::on_completion_locked(const IoRequest& req, int res) {
  ++ustats_.requests;
  auto it = ops_.find(req.tag);
  Op& op = it->second;
  --op.inflight;
  if (res > 0 && op.sum && op.error == 0) {
    op.arrived.emplace(req.offset - op.info.offset,
                       std::span(static_cast<const std::byte*>(req.buf), static_cast<size_t>(res)));
    if (!op.hash_queued) {
      op.hash_queued = true;
      hash_queue_.push_back(req.tag);
    }
  }
  if (res < 0) {
    ++ustats_.read_errors;
    if (op.error == 0) op.error = res;
  } else if (static_cast<uint32_t>(res) < req.len) {
    ++ustats_.short_reads;
    if (res == 0) {
      // No progress: the data file ends before the catalog says the object does.
      if (op.error == 0) op.error = -EIO;
    } else if (op.error == 0) {
      retries_.push_back(io_remainder(req, static_cast<uint32_t>(res)));
      ++op.inflight;  // the retry belongs to the op until it completes
    }
  }
  if (op.inflight == 0 && (op.error != 0 || op.issued == op.length)) finished_.push_back(req.tag);
}

void UringDevice::hash_arrived_locked(Op& op) {
  op.hash_queued = false;
  for (auto it = op.arrived.begin(); it != op.arrived.end() && it->first == op.hashed;
       it = op.arrived.erase(it)) {
    // The object's own bytes only: the last read also brings the padding to 4 KiB.
    const uint64_t n =
        std::min<uint64_t>(it->second.size(), op.info.size - std::min(op.info.size, op.hashed));
    if (n > 0) op.sum->update(it->second.data(), n);
    op.hashed += it->second.size();
  }
}

void UringDevice::finish_op_locked(uint64_t op_id) {
  auto it = ops_.find(op_id);
  Op& op = it->second;
  if (op.kind == Op::Kind::kStage)
    finish_stage_locked(op);
  else
    finish_demand_locked(op);
  store_.release(op.info);
  ops_.erase(it);
}

void UringDevice::finish_stage_locked(Op& op) {
  Entry& e = entries_.at(op.key);
  int status = op.error;
  if (status == 0 && op.sum) {
    if (op.hashed < op.info.size || op.sum->digest() != op.info.checksum) {
      status = -EBADMSG;
      ++ustats_.checksum_errors;
      store_.quarantine(op.info, -EBADMSG, "staged bytes fail the object checksum");
    }
  }
  settle_stage_locked(e, StageCompletion{op.key, op.info.size, status, op.submitted, clock_.now()});
}

void UringDevice::settle_stage_locked(Entry& e, const StageCompletion& c) {
  if (c.status < 0) {
    ++stats_.stage_errors;
    if (e.pins > 0) {
      stats_.pins -= e.pins;
      stats_.pinned_bytes -= e.bytes;
    }
    stats_.resident_bytes -= e.bytes;
    fast_->release(e.bytes, e.extents);
    entries_.erase(c.key);
  } else {
    e.state = Residency::kResident;
    ++stats_.staged_ops;
    stats_.staged_bytes += e.bytes;
    if (e.pins == 0) policy_->add(c.key, e.bytes, clock_.now());
  }
  post_locked(Event{Event::Kind::kStage, c, c.key, {}, c.status});
}

bool UringDevice::cache_locked(ObjectKey key, const std::byte* bytes, uint64_t size) {
  std::vector<Extent> extents;
  if (!make_room_locked(size) || fast_->allocate(size, &extents) < 0) return false;
  uint64_t copied = 0;
  for (const Extent& x : extents) {
    const uint64_t n = std::min(size - copied, x.len);
    std::memcpy(fast_->at(x.offset), bytes + copied, n);
    copied += n;
  }
  Entry& e = entries_[key];
  e.bytes = size;
  e.state = Residency::kResident;
  e.extents = std::move(extents);
  stats_.resident_bytes += e.bytes;
  policy_->add(key, e.bytes, clock_.now());
  post_locked(Event{Event::Kind::kResident, {}, key, {}, 0});
  return true;
}

void UringDevice::finish_demand_locked(Op& op) {
  int status = op.error;
  if (status == 0 && op.sum && (op.hashed < op.info.size || op.sum->digest() != op.info.checksum)) {
    ++ustats_.checksum_errors;
    status = -EBADMSG;
    store_.quarantine(op.info, -EBADMSG, "demand-read bytes fail the object checksum");
  }
  // Cached unpinned afterwards, as the memory path would leave it.
  if (status == 0 && !entries_.contains(op.key))
    cache_locked(op.key, op.bounce.get(), op.info.size);
  DemandGroup& g = *op.group;
  if (status < 0 && g.status == 0) g.status = status;
  if (--g.outstanding == 0)
    post_locked(Event{Event::Kind::kDemandDone, {}, 0, std::move(g.done), g.status});
}

int UringDevice::process_completions() {
  std::lock_guard dispatch(dispatch_mu_);
  std::vector<Event> events;
  std::vector<std::pair<ObjectKey, std::vector<std::byte>>> keep;
  std::vector<ClusterRead> pool_done;
  if (cluster_) cluster_->reap(&pool_done);
  {
    std::lock_guard lock(mu_);
    uint64_t counter;
    [[maybe_unused]] ssize_t n = read(event_fd_, &counter, sizeof(counter));
    for (const ClusterRead& r : pool_done) finish_pool_read_locked(r);
    keep.swap(keep_);
    while (ring_->in_flight() > 0) {
      const int reaped =
          ring_->reap(0, [this](const IoRequest& req, int res) { on_completion_locked(req, res); });
      if (reaped <= 0) break;
      // Keep the queue full first: the bytes that just arrived are hashed while the next
      // reads are in flight.
      pump_locked();
      for (uint64_t id : hash_queue_) hash_arrived_locked(ops_.at(id));
      hash_queue_.clear();
      for (uint64_t id : finished_) finish_op_locked(id);
      finished_.clear();
    }
    pump_locked();
    events.swap(events_);
  }
  // Copies of objects staged from the pool: the store's write is not the device's to hold.
  for (const auto& [key, bytes] : keep) {
    const int r = store_.lookup(key) ? 0 : store_.put(key, bytes);
    std::lock_guard lock(mu_);
    ++(r == 0 ? ustats_.kept_local : ustats_.keep_local_errors);
  }
  for (Event& ev : events) {
    switch (ev.kind) {
      case Event::Kind::kStage:
        if (observer_) observer_->on_stage_complete(ev.completion);
        break;
      case Event::Kind::kResident:
        if (observer_) observer_->on_resident(ev.key);
        break;
      case Event::Kind::kEvicted:
        if (observer_) observer_->on_evicted(ev.key);
        break;
      case Event::Kind::kDemandDone:
        if (ev.done) ev.done(ev.status);
        break;
    }
  }
  return static_cast<int>(events.size());
}

int UringDevice::wait(TimeNs timeout) {
  pollfd p{completion_fd(), POLLIN, 0};
  const int ms = static_cast<int>(std::min<TimeNs>(timeout / kNsPerMs, 1 << 30));
  if (poll(&p, 1, ms) < 0 && errno != EINTR) return -errno;
  return process_completions();
}

bool UringDevice::idle() const {
  std::lock_guard lock(mu_);
  return ops_.empty() && events_.empty();
}

int UringDevice::resident_extents(ObjectKey key,
                                  std::vector<std::span<const std::byte>>* out) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return store_.lookup(key) ? -EAGAIN : -ENOENT;
  const Entry& e = it->second;
  if (e.state != Residency::kResident) return -EAGAIN;
  if (e.pins == 0) return -EPERM;
  const auto spans = object_spans_locked(e);
  out->assign(spans.begin(), spans.end());
  return 0;
}

int UringDevice::admit(ObjectKey key, std::span<const std::byte> bytes) {
  std::lock_guard lock(mu_);
  if (entries_.contains(key)) return -EEXIST;
  ObjectInfo info;
  int ret = store_.acquire(key, &info);
  if (ret < 0) return ret;
  if (bytes.size() != info.size) {
    ret = -EINVAL;
  } else if (options_.verify_checksums && checksum64(bytes.data(), info.size) != info.checksum) {
    ++ustats_.checksum_errors;
    ret = -EBADMSG;
  } else if (!cache_locked(key, bytes.data(), info.size)) {
    ret = -ENOSPC;
  } else {
    stats_.demand_bytes += info.size;
  }
  store_.release(info);
  return ret;
}

void UringDevice::drop_unpinned() {
  std::lock_guard lock(mu_);
  while (auto victim = policy_->pick_victim()) evict_locked(*victim, entries_.at(*victim));
}

}  // namespace tempo

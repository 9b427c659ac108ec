#include "cluster_pool.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <memory>

namespace tempo {

namespace {

// Nanoseconds to move `bytes` at `rate` bytes/s, rounded up.
TimeNs transfer_ns(double bytes, double rate) {
  return static_cast<TimeNs>(std::ceil(bytes / rate * double(kNsPerSec)));
}

}  // namespace

void ClusterPool::write_through(const KvObject& o) {
  if (objects_.contains(o.key) || !writing_.insert(o.key).second) return;
  written_bytes_ += o.bytes;
  scheduler_.schedule_after(model_.latency + transfer_ns(double(o.bytes), model_.rate_bps),
                            [this, o] {
                              writing_.erase(o.key);
                              objects_.emplace(o.key, o.bytes);
                            });
}

int64_t ClusterPool::size(ObjectKey key) const {
  auto it = objects_.find(key);
  return it == objects_.end() ? -ENOENT : static_cast<int64_t>(it->second);
}

PoolLink::~PoolLink() {
  if (armed_) scheduler_.cancel(timer_);
}

void PoolLink::read(uint64_t bytes, std::function<void()> done) {
  advance();
  flows_.push_back(Flow{double(bytes), scheduler_.now() + model_.latency, std::move(done)});
  reschedule();
}

// Moves every flow in its data phase on by its share of the rate since the last call. No
// flow changes phase in between: a timer fires at every data start.
void PoolLink::advance() {
  const TimeNs now = scheduler_.now();
  const auto moving = std::count_if(flows_.begin(), flows_.end(),
                                    [&](const Flow& f) { return f.data_start <= last_; });
  if (moving > 0 && now > last_) {
    const double moved = model_.rate_bps / double(moving) * ns_to_sec(now - last_);
    for (Flow& f : flows_)
      if (f.data_start <= last_) f.remaining -= moved;
  }
  last_ = now;
}

void PoolLink::reschedule() {
  if (armed_) scheduler_.cancel(timer_);
  armed_ = false;
  const TimeNs now = scheduler_.now();
  const auto moving = std::count_if(flows_.begin(), flows_.end(),
                                    [&](const Flow& f) { return f.data_start <= now; });
  TimeNs next = kNever;
  for (const Flow& f : flows_) {
    const TimeNs at =
        f.data_start > now
            ? f.data_start
            : now + transfer_ns(std::max(f.remaining, 0.0) * double(moving), model_.rate_bps);
    next = std::min(next, at);
  }
  if (next == kNever) return;
  armed_ = true;
  timer_ = scheduler_.schedule_at(next, [this] { on_timer(); });
}

void PoolLink::on_timer() {
  armed_ = false;
  advance();
  const TimeNs now = scheduler_.now();
  std::vector<std::function<void()>> done;
  std::erase_if(flows_, [&](Flow& f) {
    if (f.data_start > now || f.remaining >= 1.0) return false;
    done.push_back(std::move(f.done));
    return true;
  });
  reschedule();
  for (auto& d : done) d();
}

PoolDevice::PoolDevice(Scheduler& scheduler, SimDevice& local, const ClusterPool& pool,
                       const ClusterModel& model)
    : scheduler_(scheduler), local_(local), pool_(pool), link_(scheduler, model) {
  local_.set_observer(this);
}

int64_t PoolDevice::object_size(ObjectKey key) const {
  const int64_t size = local_.object_size(key);
  return size >= 0 ? size : pool_.size(key);
}

Residency PoolDevice::residency(ObjectKey key) const {
  return fetching_.contains(key) ? Residency::kStaging : local_.residency(key);
}

void PoolDevice::fetch(ObjectKey key, std::function<void()> then) {
  const auto bytes = static_cast<uint64_t>(pool_.size(key));
  ++pool_stats_.reads;
  pool_stats_.read_bytes += bytes;
  link_.read(bytes, [this, key, bytes, then = std::move(then)] {
    local_.add_object(key, bytes);  // -EEXIST when another fetch brought it first
    then();
  });
}

int PoolDevice::stage(ObjectKey key) {
  if (local(key)) return local_.stage(key);
  if (fetching_.contains(key)) return -EBUSY;
  if (pool_.size(key) < 0) return -ENOENT;
  fetching_.emplace(key, scheduler_.now());
  fetch(key, [this, key] {
    const TimeNs since = fetching_.at(key);
    fetching_.erase(key);
    staged_from_pool_[key] = since;
    if (const int r = local_.stage(key); r != 0 && observer_) {
      staged_from_pool_.erase(key);
      observer_->on_stage_complete(StageCompletion{key, 0, r, since, scheduler_.now()});
    }
  });
  return 0;
}

int PoolDevice::demand_read(std::span<const ObjectKey> keys, std::function<void(int)> done) {
  std::vector<ObjectKey> remote;
  for (ObjectKey k : keys) {
    if (local(k)) continue;
    if (pool_.size(k) < 0) return -ENOENT;
    remote.push_back(k);
  }
  if (remote.empty()) return local_.demand_read(keys, std::move(done));
  // The pool objects first (side by side on the link), then the local demand read.
  auto left = std::make_shared<size_t>(remote.size());
  auto all = std::make_shared<std::vector<ObjectKey>>(keys.begin(), keys.end());
  auto cb = std::make_shared<std::function<void(int)>>(std::move(done));
  for (ObjectKey k : remote)
    fetch(k, [this, left, all, cb] {
      if (--*left > 0) return;
      if (const int r = local_.demand_read(*all, *cb); r != 0) (*cb)(r);
    });
  return 0;
}

void PoolDevice::on_stage_complete(const StageCompletion& c) {
  StageCompletion seen = c;
  if (auto it = staged_from_pool_.find(c.key); it != staged_from_pool_.end()) {
    seen.submitted = it->second;  // the pool read was part of this staging
    staged_from_pool_.erase(it);
  }
  if (observer_) observer_->on_stage_complete(seen);
}

void PoolDevice::on_resident(ObjectKey key) {
  if (observer_) observer_->on_resident(key);
}

void PoolDevice::on_evicted(ObjectKey key) {
  if (observer_) observer_->on_evicted(key);
}

}  // namespace tempo

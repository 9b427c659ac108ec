#include "device/sim_device.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "core/probes.h"
#include "core/rate_sharing.h"

namespace tempo {

namespace {
// A flow counts as finished once less than half a byte is left (floating-point slack).
constexpr double kDoneBytes = 0.5;
}  // namespace

int SimDevice::validate(const SimDeviceConfig& config, const std::optional<SimRemote>& remote,
                        std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error) *error = "sim device: " + why;
    return -EINVAL;
  };
  if (remote)
    for (const RemoteInfo& r : {remote->truth, remote->reported})
      if (r.slots == 0 || !(r.rate_bps > 0) || r.latency_ns < 0)
        return fail("remote slots 0, rate <= 0 or latency < 0");
  if (config.capacity_bytes == 0) return fail("capacity_bytes is 0");
  if (!(config.staging_rate_bps > 0)) return fail("staging_rate <= 0");
  if (!(config.demand_rate_bps > 0)) return fail("demand_rate <= 0");
  if (config.staging_slots == 0) return fail("staging_slots is 0");
  if (config.op_latency_ns < 0) return fail("op_latency < 0");
  if (!make_eviction_policy(config.eviction))
    return fail("eviction policy '" + config.eviction + "' is not one a fast tier runs");
  return 0;
}

SimDevice::SimDevice(Scheduler& events, SimDeviceConfig config, std::optional<SimRemote> remote)
    : events_(events),
      config_(std::move(config)),
      policy_(make_eviction_policy(config_.eviction)),
      remote_(remote),
      last_advance_(events.now()) {
  // The constructor's precondition (every caller validates first): a configuration it
  // cannot run is a defect of the caller, not an input error.
  if (std::string why; validate(config_, remote_, &why) != 0) {
    std::fprintf(stderr, "tempo: %s\n", why.c_str());
    std::abort();
  }
}

SimDevice::~SimDevice() {
  if (timer_armed_) events_.cancel(timer_id_);
  for (uint64_t id : window_timers_) events_.cancel(id);
}

int SimDevice::add_object(ObjectKey key, uint64_t bytes, Source source) {
  if (bytes == 0 || (source == Source::kRemote && !remote_)) return -EINVAL;
  const int64_t held = object_size(key);
  if (source == Source::kLocal && held == static_cast<int64_t>(bytes) && !holds_locally(key)) {
    find_or_fetch(key)->source = Source::kLocal;
    return 0;
  }
  if (held >= 0) return -EEXIST;
  objects_.emplace(key, Entry{bytes, Residency::kAbsent, 0, source});
  return 0;
}

bool SimDevice::holds_locally(ObjectKey key) const {
  const Entry* e = find(key);
  return e && e->source == Source::kLocal;
}

Source SimDevice::stage_source(ObjectKey key) const {
  if (const Entry* e = find(key)) return e->source;
  return object_size(key) >= 0 ? Source::kRemote : Source::kLocal;
}

int SimDevice::set_interference(const Interference& window) {
  if (window.active() && (window.start < 0 || !(window.rate_factor > 0) || window.rate_factor > 1))
    return -EINVAL;
  for (uint64_t id : window_timers_) events_.cancel(id);
  window_timers_.clear();
  interference_ = window;
  if (!window.active()) return 0;
  // At each edge of the window the flows in service get their new shares.
  for (TimeNs edge : {window.start, window.end}) {
    window_timers_.push_back(events_.schedule_at(std::max(edge, events_.now()), [this] {
      advance();
      reschedule();
    }));
  }
  advance();
  reschedule();
  return 0;
}

void SimDevice::inject_stage_error(ObjectKey key, int error) { injected_errors_[key] = error; }

void SimDevice::drop_unpinned() {
  while (auto victim = policy_->pick_victim()) evict(*victim, objects_.at(*victim));
}

DeviceInfo SimDevice::info() const {
  return DeviceInfo{"sim", config_.capacity_bytes, config_.staging_slots, config_.staging_rate_bps,
                    config_.demand_rate_bps};
}

SimDevice::Entry* SimDevice::find(ObjectKey key) {
  auto it = objects_.find(key);
  return it == objects_.end() ? nullptr : &it->second;
}

const SimDevice::Entry* SimDevice::find(ObjectKey key) const {
  auto it = objects_.find(key);
  return it == objects_.end() ? nullptr : &it->second;
}

SimDevice::Entry* SimDevice::find_or_fetch(ObjectKey key) {
  if (Entry* e = find(key)) return e;
  const int64_t size = object_size(key);
  if (size <= 0) return nullptr;
  const Entry e{static_cast<uint64_t>(size), Residency::kAbsent, 0, Source::kRemote};
  return &objects_.emplace(key, e).first->second;
}

void SimDevice::read_remote(Entry& e) {
  if (remote_->keep_local) e.source = Source::kLocal;
}

int64_t SimDevice::object_size(ObjectKey key) const {
  if (const Entry* e = find(key)) return static_cast<int64_t>(e->bytes);
  if (remote_ && remote_->catalogue) return remote_->catalogue->size(key);
  return -ENOENT;
}

Residency SimDevice::residency(ObjectKey key) const {
  const Entry* e = find(key);
  return e ? e->state : Residency::kAbsent;
}

uint32_t SimDevice::pin_count(ObjectKey key) const {
  const Entry* e = find(key);
  return e ? e->pins : 0;
}

uint64_t SimDevice::recount_used_bytes() const {
  uint64_t sum = 0;
  for (const auto& [key, e] : objects_)
    if (e.state != Residency::kAbsent) sum += e.bytes;
  return sum;
}

bool SimDevice::make_room(uint64_t bytes) {
  if (bytes > config_.capacity_bytes) return false;
  while (config_.capacity_bytes - used_bytes_ < bytes) {
    auto victim = policy_->pick_victim();
    if (!victim) return false;
    evict(*victim, objects_.at(*victim));
  }
  return true;
}

void SimDevice::evict(ObjectKey key, Entry& e) {
  policy_->evict(key);  // not remove(): history-keeping policies remember evicted ids
  e.state = Residency::kAbsent;
  used_bytes_ -= e.bytes;
  stats_.resident_bytes = used_bytes_;
  ++stats_.evictions;
  stats_.evicted_bytes += e.bytes;
  TEMPO_PROBE_EVICT(key, e.bytes);
  if (observer_) observer_->on_evicted(key);
}

int SimDevice::stage(ObjectKey key) {
  Entry* e = find_or_fetch(key);
  if (!e) return -ENOENT;
  if (e->state != Residency::kAbsent) return -EBUSY;
  if (!make_room(e->bytes)) return -ENOSPC;
  advance();
  e->state = Residency::kStaging;
  e->pins = 1;
  ++stats_.pins;
  stats_.pinned_bytes += e->bytes;
  used_bytes_ += e->bytes;
  stats_.resident_bytes = used_bytes_;
  stage_queue_[static_cast<size_t>(e->source)].push_back(key);
  stage_submitted_[key] = events_.now();
  start_queued_stages();
  reschedule();
  return 0;
}

int SimDevice::pin(ObjectKey key) {
  Entry* e = find_or_fetch(key);
  if (!e) return -ENOENT;
  if (e->state != Residency::kResident) return -EAGAIN;
  if (e->pins == 0) {
    policy_->remove(key);
    stats_.pinned_bytes += e->bytes;
  }
  ++e->pins;
  ++stats_.pins;
  return 0;
}

int SimDevice::unpin(ObjectKey key) {
  Entry* e = find(key);
  if (!e) return -ENOENT;
  if (e->pins == 0) return -EINVAL;
  --e->pins;
  --stats_.pins;
  if (e->pins == 0) {
    stats_.pinned_bytes -= e->bytes;
    if (e->state == Residency::kResident) policy_->add(key, e->bytes, events_.now());
  }
  return 0;
}

int SimDevice::demand_read(std::span<const ObjectKey> keys, std::function<void(int)> done) {
  for (ObjectKey k : keys)
    if (!find_or_fetch(k)) return -ENOENT;
  advance();
  const TimeNs now = events_.now();
  // One flow per source read, each capped at demand_rate: the SSD's after its latency, the
  // remote source's after its own, sharing its rate with its stages.
  Flow parts[kSources] = {{Flow::Kind::kDemand,
                           0,
                           {},
                           {},
                           0,
                           config_.demand_rate_bps,
                           0,
                           now,
                           now + config_.op_latency_ns,
                           Source::kLocal},
                          {Flow::Kind::kDemand,
                           0,
                           {},
                           {},
                           0,
                           config_.demand_rate_bps,
                           0,
                           now,
                           now + (remote_ ? remote_->truth.latency_ns : 0),
                           Source::kRemote}};
  for (ObjectKey k : keys) {
    Entry& e = objects_.at(k);
    if (e.state == Residency::kResident) {
      policy_->record_access(k, now);
      continue;
    }
    // Absent or still staging: the memory path reads it from its source; absent ones are
    // cached after.
    Flow& f = parts[static_cast<size_t>(e.source)];
    f.remaining += static_cast<double>(e.bytes);
    stats_.demand_bytes += e.bytes;
    if (e.source == Source::kRemote) remote_read_bytes_ += e.bytes;
    if (e.state == Residency::kAbsent) f.fill.push_back(k);
  }
  ++stats_.demand_reads;
  std::vector<Flow*> reads;
  for (Flow& f : parts)
    if (f.remaining > 0) reads.push_back(&f);
  if (reads.empty()) {  // all hits: no latency
    parts[0].data_start = now;
    reads.push_back(&parts[0]);
  }
  if (reads.size() == 1) {
    reads[0]->done = std::move(done);
  } else {  // `done` once both have ended
    auto left = std::make_shared<size_t>(reads.size());
    auto all = std::make_shared<std::function<void(int)>>(std::move(done));
    for (Flow* f : reads)
      f->done = [left, all](int status) {
        if (--*left == 0) (*all)(status);
      };
  }
  for (Flow* f : reads) flows_.push_back(std::move(*f));
  reschedule();
  return 0;
}

void SimDevice::start_queued_stages() {
  for (Source source : {Source::kLocal, Source::kRemote}) {
    const auto s = static_cast<size_t>(source);
    const bool remote = source == Source::kRemote;
    if (remote && !remote_) continue;
    const uint32_t slots = remote ? remote_->truth.slots : config_.staging_slots;
    const TimeNs latency = remote ? remote_->truth.latency_ns : config_.op_latency_ns;
    while (active_stages_[s] < slots && !stage_queue_[s].empty()) {
      const ObjectKey key = stage_queue_[s].front();
      stage_queue_[s].pop_front();
      const TimeNs submitted = stage_submitted_.at(key);
      flows_.push_back(Flow{Flow::Kind::kStage,
                            key,
                            {},
                            {},
                            static_cast<double>(objects_.at(key).bytes),
                            0,
                            0,
                            submitted,
                            events_.now() + latency,
                            source});
      ++active_stages_[s];
    }
  }
}

void SimDevice::advance() {
  const TimeNs now = events_.now();
  const double dt = ns_to_sec(now - last_advance_);
  if (dt > 0) {
    for (Flow& f : flows_)
      if (f.data_start <= last_advance_) f.remaining -= f.rate * dt;
  }
  last_advance_ = now;
}

void SimDevice::reschedule() {
  const TimeNs now = events_.now();
  TimeNs next = kNever;
  // Each source's flows in their data phase share that source's aggregate rate.
  for (Source source : {Source::kLocal, Source::kRemote}) {
    std::vector<double> caps;
    std::vector<size_t> data_idx;
    for (size_t i = 0; i < flows_.size(); ++i) {
      if (flows_[i].source != source) continue;
      flows_[i].rate = 0;
      if (flows_[i].data_start <= now) {
        caps.push_back(flows_[i].cap);
        data_idx.push_back(i);
      }
    }
    if (data_idx.empty()) continue;
    std::vector<double> rates(caps.size());
    share_rate(source == Source::kRemote ? remote_->truth.rate_bps
                                         : config_.staging_rate_bps * interference_.factor_at(now),
               caps, rates);
    for (size_t j = 0; j < data_idx.size(); ++j) {
      Flow& f = flows_[data_idx[j]];
      f.rate = rates[j];
      const double left = std::max(0.0, f.remaining);
      next = std::min(next, now + static_cast<TimeNs>(std::ceil(left / f.rate * 1e9)));
    }
  }
  for (const Flow& f : flows_)
    if (f.data_start > now) next = std::min(next, f.data_start);
  if (timer_armed_) events_.cancel(timer_id_);
  timer_armed_ = next != kNever;
  if (timer_armed_) timer_id_ = events_.schedule_at(next, [this] { on_timer(); });
}

void SimDevice::on_timer() {
  timer_armed_ = false;
  advance();
  const TimeNs now = events_.now();
  std::vector<Flow> finished;
  for (size_t i = 0; i < flows_.size();) {
    if (flows_[i].data_start <= now && flows_[i].remaining <= kDoneBytes) {
      finished.push_back(std::move(flows_[i]));
      flows_[i] = std::move(flows_.back());
      flows_.pop_back();
    } else {
      ++i;
    }
  }
  for (const Flow& f : finished)
    if (f.kind == Flow::Kind::kStage) --active_stages_[static_cast<size_t>(f.source)];
  start_queued_stages();
  reschedule();
  // State is consistent before anyone is told: callbacks may stage, pin or read again.
  for (Flow& f : finished) finish_flow(f);
}

void SimDevice::finish_flow(Flow& f) {
  const TimeNs now = events_.now();
  if (f.kind == Flow::Kind::kDemand) {
    for (ObjectKey k : f.fill) {
      Entry& e = objects_.at(k);
      if (e.state != Residency::kAbsent || !make_room(e.bytes)) continue;
      e.state = Residency::kResident;
      used_bytes_ += e.bytes;
      stats_.resident_bytes = used_bytes_;
      policy_->add(k, e.bytes, now);
      if (observer_) observer_->on_resident(k);
    }
    if (f.source == Source::kRemote)
      for (ObjectKey k : f.fill) read_remote(objects_.at(k));
    if (f.done) f.done(0);
    return;
  }
  Entry& e = objects_.at(f.key);
  StageCompletion c{f.key, e.bytes, 0, f.submitted, now};
  stage_submitted_.erase(f.key);
  auto inj = injected_errors_.find(f.key);
  if (inj != injected_errors_.end()) {
    c.status = inj->second;
    injected_errors_.erase(inj);
    ++stats_.stage_errors;
    if (e.pins > 0) {
      stats_.pins -= e.pins;
      stats_.pinned_bytes -= e.bytes;
    }
    e.pins = 0;
    e.state = Residency::kAbsent;
    used_bytes_ -= e.bytes;
    stats_.resident_bytes = used_bytes_;
  } else {
    e.state = Residency::kResident;
    ++stats_.staged_ops;
    stats_.staged_bytes += e.bytes;
    if (f.source == Source::kRemote) {
      remote_read_bytes_ += e.bytes;
      read_remote(e);
    }
    if (e.pins == 0) policy_->add(f.key, e.bytes, now);
  }
  if (observer_) observer_->on_stage_complete(c);
}

}  // namespace tempo

#include "provider/provider.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <stdexcept>

#include "core/probes.h"
#include "provider/staging_projection.h"

namespace tempo {

namespace {
TimeNs bytes_to_ns(double bytes, double rate_bps) {
  return static_cast<TimeNs>(std::llround(bytes / rate_bps * 1e9));
}
}  // namespace

Provider::Provider(Device& device, const Clock& clock, ProviderConfig config)
    : device_(device),
      clock_(clock),
      config_(config),
      ledger_(config.budget_bytes, clock.now()),
      rate_(config.calibration_rate_bps, config.rate_window_ns),
      projected_at_(clock.now()) {
  if (config_.budget_bytes == 0) throw std::invalid_argument("provider: budget is 0");
  if (config_.budget_bytes >= device_.info().capacity_bytes)
    throw std::invalid_argument("provider: budget must be below the fast tier's capacity");
  if (!(config_.static_rate_bps > 0)) throw std::invalid_argument("provider: static rate <= 0");
  device_.set_observer(this);
}

Provider::~Provider() { device_.set_observer(nullptr); }

uint32_t Provider::slots() const {
  return config_.staging_slots ? config_.staging_slots : device_.info().staging_slots;
}

Provider::Cls Provider::classify(ObjectKey key, const ObjRec& o) const {
  if (o.staging) return Cls::kCovered;
  return device_.residency(key) == Residency::kResident ? Cls::kResident : Cls::kAbsent;
}

void Provider::set_cls(ObjRec& o, Cls cls) {
  if (o.cls == cls) return;
  for (ClaimId id : o.planned) {
    ClaimRec& c = claims_.at(id);
    if (o.cls == Cls::kAbsent) c.absent_bytes -= o.bytes;
    if (o.cls == Cls::kCovered) c.covered_bytes -= o.bytes;
    if (cls == Cls::kAbsent) c.absent_bytes += o.bytes;
    if (cls == Cls::kCovered) c.covered_bytes += o.bytes;
  }
  o.cls = cls;
}

int Provider::track(ClaimId id, const Manifest& manifest) {
  if (claims_.contains(id)) return -EEXIST;
  if (manifest.empty() || manifest.size() > kMaxManifestObjects) return -EINVAL;
  uint64_t total = 0;
  for (const KvObject& k : manifest) {
    if (k.bytes == 0) return -EINVAL;
    if (k.bytes > kMaxManifestBytes - total) return -EOVERFLOW;
    total += k.bytes;
  }
  ClaimRec c;
  std::unordered_set<ObjectKey> seen;
  for (const KvObject& k : manifest) {
    if (!seen.insert(k.key).second) continue;
    c.objects.push_back(k.key);
    c.bytes += k.bytes;
  }
  auto [it, inserted] = claims_.emplace(id, std::move(c));
  ClaimRec& rec = it->second;
  for (size_t i = 0; i < manifest.size(); ++i) {
    const KvObject& k = manifest[i];
    auto [oit, fresh] = objects_.try_emplace(k.key);
    ObjRec& o = oit->second;
    if (fresh) {
      o.bytes = k.bytes;
      o.cls = classify(k.key, o);
    }
    if (!o.planned.insert(id).second) continue;
    if (o.cls == Cls::kAbsent) rec.absent_bytes += o.bytes;
    if (o.cls == Cls::kCovered) rec.covered_bytes += o.bytes;
  }
  return 0;
}

int Provider::untrack(ClaimId id) {
  auto it = claims_.find(id);
  if (it == claims_.end()) return -ENOENT;
  if (it->second.committed) return -EBUSY;
  for (ObjectKey key : it->second.objects) {
    objects_.at(key).planned.erase(id);
    forget_if_unused(key);
  }
  claims_.erase(it);
  return 0;
}

void Provider::forget_if_unused(ObjectKey key) {
  auto it = objects_.find(key);
  const ObjRec& o = it->second;
  if (o.refs == 0 && !o.staging && !o.pinned && o.planned.empty()) objects_.erase(it);
}

void Provider::sync_projection() {
  const TimeNs now = clock_.now();
  if (now == projected_at_) return;
  std::vector<double> rem(ops_.size());
  for (size_t i = 0; i < ops_.size(); ++i) rem[i] = ops_[i].remaining;
  advance_projection(rem, slots(), rate_.rate_bps(), now - projected_at_);
  outstanding_remaining_ = 0;
  for (size_t i = 0; i < ops_.size(); ++i) {
    ops_[i].remaining = rem[i];
    outstanding_remaining_ += rem[i];
  }
  projected_at_ = now;
}

const std::vector<TimeNs>& Provider::baseline() {
  sync_projection();
  if (baseline_version_ != ops_version_ || baseline_at_ != projected_at_ ||
      baseline_rate_ != rate_.rate_bps()) {
    std::vector<double> rem(ops_.size());
    for (size_t i = 0; i < ops_.size(); ++i) rem[i] = ops_[i].remaining;
    baseline_ = project_completions(rem, slots(), rate_.rate_bps());
    baseline_version_ = ops_version_;
    baseline_at_ = projected_at_;
    baseline_rate_ = rate_.rate_bps();
  }
  return baseline_;
}

TimeNs Provider::exact_ttr(const ClaimRec& c) {
  sync_projection();
  // The outstanding queue plus this claim's new reads appended in manifest order.
  std::vector<double> rem(ops_.size());
  for (size_t i = 0; i < ops_.size(); ++i) rem[i] = ops_[i].remaining;
  std::vector<size_t> mine;
  for (ObjectKey key : c.objects) {
    const ObjRec& o = objects_.at(key);
    if (o.cls == Cls::kCovered) {
      mine.push_back(op_index_.at(key));
    } else if (o.cls == Cls::kAbsent) {
      mine.push_back(rem.size());
      rem.push_back(static_cast<double>(o.bytes));
    }
  }
  if (mine.empty()) return 0;
  const std::vector<TimeNs> done = project_completions(rem, slots(), rate_.rate_bps());
  TimeNs last = 0;
  for (size_t i : mine) last = std::max(last, done[i]);
  return last;
}

std::optional<TimeNs> Provider::ttr(ClaimId id, TtrMode mode) {
  auto it = claims_.find(id);
  if (it == claims_.end()) return std::nullopt;
  const ClaimRec& c = it->second;
  if (c.committed) {
    // Committed: time until its outstanding staging completes.
    TimeNs last = 0;
    const auto& base = baseline();
    for (ObjectKey key : c.objects) {
      auto op = op_index_.find(key);
      if (op != op_index_.end()) last = std::max(last, base[op->second]);
    }
    return last;
  }
  if (mode == TtrMode::kStatic)
    return bytes_to_ns(static_cast<double>(c.absent_bytes + c.covered_bytes),
                       config_.static_rate_bps);
  return exact_ttr(c);
}

bool Provider::ttr_at_least(ClaimId id, TimeNs threshold, TtrMode mode) {
  auto it = claims_.find(id);
  if (it == claims_.end()) return false;
  const ClaimRec& c = it->second;
  if (threshold <= 0) return true;
  if (mode == TtrMode::kStatic || c.committed) return *ttr(id, mode) >= threshold;
  if (c.absent_bytes == 0 && c.covered_bytes == 0) return false;  // TTR is 0
  sync_projection();
  const double rate = rate_.rate_bps();
  // Work conservation bounds the projection: everything queued plus the claim's new reads
  // drains by (W + X) / R; the new reads alone need at least X / R.
  const auto x = static_cast<double>(c.absent_bytes);
  if (bytes_to_ns(outstanding_remaining_ + x, rate) < threshold) return false;
  if (bytes_to_ns(x, rate) >= threshold) return true;
  return exact_ttr(c) >= threshold;
}

CommitResult Provider::commit(ClaimId id) {
  auto it = claims_.find(id);
  if (it == claims_.end()) return {-ENOENT, 0, 0, false};
  ClaimRec& c = it->second;
  if (c.committed) return {-EALREADY, 0, 0, false};
  // Validity: every object still held by the SSD tier with the size the claim expects.
  uint64_t need = 0;
  for (ObjectKey key : c.objects) {
    const ObjRec& o = objects_.at(key);
    const int64_t size = device_.object_size(key);
    if (size < 0) return {static_cast<int>(size), 0, 0, false};
    if (static_cast<uint64_t>(size) != o.bytes) return {-EINVAL, 0, 0, false};
    if (o.refs == 0 && !o.staging) need += o.bytes;
  }
  if (!ledger_.fits(need)) {
    ++counters_.capacity_deferrals;
    return {-ENOSPC, 0, need, false};
  }
  sync_projection();
  const TimeNs now = clock_.now();
  ledger_.add(need, now);
  c.committed = true;
  int failure = 0;
  for (ObjectKey key : c.objects) {
    ObjRec& o = objects_.at(key);
    o.planned.erase(id);
    ++o.refs;
    if (o.pinned) continue;
    if (o.staging) {
      o.waiters.push_back(id);
      ++c.pending;
      continue;
    }
    if (device_.residency(key) == Residency::kResident) {
      const int r = device_.pin(key);
      if (r == 0) {
        o.pinned = true;
        set_cls(o, Cls::kResident);
        continue;
      }
      failure = failure ? failure : r;
      continue;
    }
    const int r = device_.stage(key);
    if (r != 0) {
      failure = failure ? failure : r;
      continue;
    }
    if (ops_.empty()) rate_.on_busy(now);
    op_index_[key] = ops_.size();
    ops_.push_back(Op{key, o.bytes, static_cast<double>(o.bytes)});
    outstanding_remaining_ += static_cast<double>(o.bytes);
    ++ops_version_;
    ++counters_.stage_submitted;
    reserved_bytes_ += o.bytes;
    o.staging = true;
    set_cls(o, Cls::kCovered);
    o.waiters.push_back(id);
    ++c.pending;
    TEMPO_PROBE_STAGE_SUBMIT(key, o.bytes);
  }
  if (failure) {
    release(id);
    return {failure, 0, 0, false};
  }
  ++counters_.commits;
  return {0, need, 0, c.pending == 0};
}

bool Provider::committed(ClaimId id) const {
  auto it = claims_.find(id);
  return it != claims_.end() && it->second.committed;
}

bool Provider::ready(ClaimId id) const {
  auto it = claims_.find(id);
  return it != claims_.end() && it->second.committed && it->second.pending == 0;
}

uint64_t Provider::claim_bytes(ClaimId id) const {
  auto it = claims_.find(id);
  return it == claims_.end() ? 0 : it->second.bytes;
}

uint64_t Provider::drop_if_unreferenced(ObjectKey key, ObjRec& o) {
  if (o.refs > 0 || o.staging) return 0;
  if (o.pinned) {
    device_.unpin(key);
    o.pinned = false;
  }
  ledger_.sub(o.bytes, clock_.now());
  return o.bytes;
}

int64_t Provider::release(ClaimId id) {
  auto it = claims_.find(id);
  if (it == claims_.end()) return -ENOENT;
  if (!it->second.committed) return -EINVAL;
  uint64_t freed = 0;
  for (ObjectKey key : it->second.objects) {
    ObjRec& o = objects_.at(key);
    std::erase(o.waiters, id);
    --o.refs;
    freed += drop_if_unreferenced(key, o);
  }
  const std::vector<ObjectKey> keys = std::move(it->second.objects);
  claims_.erase(it);
  for (ObjectKey key : keys) forget_if_unused(key);
  return static_cast<int64_t>(freed);
}

void Provider::on_stage_complete(const StageCompletion& done) {
  auto oit = objects_.find(done.key);
  auto idx = op_index_.find(done.key);
  if (oit == objects_.end() || idx == op_index_.end()) return;  // not ours
  sync_projection();
  const TimeNs now = clock_.now();
  // Remove the operation, keeping issue order.
  const size_t at = idx->second;
  outstanding_remaining_ -= ops_[at].remaining;
  ops_.erase(ops_.begin() + static_cast<std::ptrdiff_t>(at));
  op_index_.erase(idx);
  for (size_t i = at; i < ops_.size(); ++i) op_index_[ops_[i].key] = i;
  ++ops_version_;
  rate_.on_complete(done.status == 0 ? done.bytes : 0, now, !ops_.empty());
  TEMPO_PROBE_STAGE_COMPLETE(done.key, done.bytes, done.completed - done.submitted, done.status);

  ObjRec& o = oit->second;
  o.staging = false;
  reserved_bytes_ -= o.bytes;
  std::vector<ClaimId> ready_now, failed;
  const std::vector<ClaimId> waiters = std::move(o.waiters);
  o.waiters.clear();
  if (done.status == 0) {
    ++counters_.stage_completed;
    counters_.staged_bytes += done.bytes;
    o.pinned = true;  // the stage took the device pin for us
    set_cls(o, Cls::kResident);
    for (ClaimId id : waiters)
      if (--claims_.at(id).pending == 0) ready_now.push_back(id);
  } else {
    ++counters_.stage_failed;
    set_cls(o, Cls::kAbsent);
    failed = waiters;
  }
  const uint64_t freed = drop_if_unreferenced(done.key, o);
  forget_if_unused(done.key);
  if (!listener_) return;
  for (ClaimId id : ready_now) listener_->on_claim_ready(id);
  for (ClaimId id : failed) listener_->on_claim_failed(id, done.status);
  listener_->on_staging_progress(freed > 0);
}

void Provider::on_resident(ObjectKey key) {
  auto it = objects_.find(key);
  if (it != objects_.end() && !it->second.staging) set_cls(it->second, Cls::kResident);
}

void Provider::on_evicted(ObjectKey key) {
  auto it = objects_.find(key);
  if (it != objects_.end() && !it->second.staging) set_cls(it->second, Cls::kAbsent);
}

ProviderStats Provider::stats() const {
  ProviderStats s = counters_;
  s.budget_bytes = ledger_.budget();
  s.ledger_bytes = ledger_.bytes();
  s.reserved_bytes = reserved_bytes_;
  s.outstanding_ops = ops_.size();
  s.effective_rate_bps = rate_.rate_bps();
  s.ledger_byte_seconds = ledger_.byte_seconds(clock_.now());
  return s;
}

uint64_t Provider::recompute_ledger_bytes() const {
  uint64_t sum = 0;
  for (const auto& [key, o] : objects_)
    if (o.refs > 0 || o.staging) sum += o.bytes;
  return sum;
}

uint64_t Provider::held_pins() const {
  uint64_t n = 0;
  for (const auto& [key, o] : objects_) n += (o.pinned || o.staging) ? 1 : 0;
  return n;
}

}  // namespace tempo

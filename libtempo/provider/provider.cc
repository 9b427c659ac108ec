#include "provider/provider.h"

#include <algorithm>
#include <cerrno>
#include <stdexcept>

#include "core/probes.h"

namespace tempo {

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
    c.profile_stale = true;
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

const QueueProjection& Provider::projection() {
  if (projection_stale_) {
    std::vector<uint64_t> remaining(ops_.size());
    for (size_t i = 0; i < ops_.size(); ++i) remaining[i] = ops_[i].remaining;
    projection_.build(remaining, slots());
    projection_stale_ = false;
    ++epoch_;
  }
  return projection_;
}

Provider::Now Provider::projection_now() {
  const QueueProjection& p = projection();
  const TimeNs now = clock_.now();
  if (now_at_ != now || now_epoch_ != epoch_) {
    const uint64_t moved = std::min(bytes_in(now - projected_at_, rate_.rate_bps()), p.total());
    now_.tag = p.tag_for_work(moved);
    now_.done = p.work_at(now_.tag);
    now_at_ = now;
    now_epoch_ = epoch_;
  }
  return now_;
}

void Provider::sync_projection() {
  const TimeNs now = clock_.now();
  if (now == projected_at_) return;
  const uint64_t tag = projection_now().tag;
  for (size_t i = 0; i < ops_.size(); ++i) {
    const uint64_t start = projection_.start(i);
    if (tag > start) ops_[i].remaining -= std::min(tag - start, ops_[i].remaining);
  }
  projected_at_ = now;
  projection_stale_ = true;
}

uint64_t Provider::place(const QueueProjection& p, const std::vector<ReadRun>& reads,
                         uint64_t from) {
  if (reads.size() != 1) return p.place_after(reads, from);
  if (placed_epoch_ != epoch_ || placed_from_ != from) {
    placed_.clear();
    placed_epoch_ = epoch_;
    placed_from_ = from;
  }
  const ReadRun run = reads.front();
  const uint64_t key = run.bytes * 0x9E3779B97F4A7C15ull ^ run.count;
  auto [it, fresh] = placed_.try_emplace(key, run, 0);
  if (fresh) it->second.second = p.place_after(reads, from);
  if (it->second.first == run) return it->second.second;
  return p.place_after(reads, from);  // another run under the same key
}

TimeNs Provider::planned_ttr(ClaimRec& c) {
  if (c.absent_bytes == 0 && c.covered_bytes == 0) return 0;
  if (c.profile_stale) {
    c.reads.clear();
    c.covered.clear();
    for (ObjectKey key : c.objects) {
      const ObjRec& o = objects_.at(key);
      if (o.cls == Cls::kAbsent && !c.reads.empty() && c.reads.back().bytes == o.bytes)
        ++c.reads.back().count;
      else if (o.cls == Cls::kAbsent)
        c.reads.push_back(ReadRun{o.bytes, 1});
      if (o.cls == Cls::kCovered) c.covered.push_back(key);
    }
    c.profile_stale = false;
    c.work_epoch = UINT64_MAX;
  }
  const QueueProjection& p = projection();
  const Now now = projection_now();
  // Until time passes the first free slot, the claim's reads are placed as they would
  // have been at the anchor: the work kept for this epoch still holds.
  const bool late = now.tag > p.first_free() && !c.reads.empty();
  if (c.work_epoch != epoch_ || late) {
    uint64_t end = place(p, c.reads, late ? now.tag : 0);
    for (ObjectKey key : c.covered) end = std::max(end, p.finish(op_index_.at(key)));
    c.work = p.work_at(end) + c.absent_bytes;
    c.work_epoch = late ? UINT64_MAX : epoch_;
  }
  return bytes_to_ns(c.work > now.done ? c.work - now.done : 0, rate_.rate_bps());
}

std::optional<TimeNs> Provider::ttr(ClaimId id, TtrMode mode) {
  auto it = claims_.find(id);
  if (it == claims_.end()) return std::nullopt;
  const ClaimRec& c = it->second;
  if (c.committed) {
    // Committed: time until its outstanding staging completes.
    const QueueProjection& p = projection();
    const Now now = projection_now();
    uint64_t end = now.tag;
    for (ObjectKey key : c.objects) {
      auto op = op_index_.find(key);
      if (op != op_index_.end()) end = std::max(end, p.finish(op->second));
    }
    return bytes_to_ns(p.work_at(end) - now.done, rate_.rate_bps());
  }
  if (mode == TtrMode::kStatic)
    return bytes_to_ns(c.absent_bytes + c.covered_bytes, config_.static_rate_bps);
  return planned_ttr(it->second);
}

namespace {
// List scheduling by linear scans: each operation's start tag.
std::vector<uint64_t> naive_starts(const std::vector<uint64_t>& remaining, uint32_t slots) {
  std::vector<uint64_t> slot(std::max<uint32_t>(slots, 1), 0), start;
  for (uint64_t r : remaining) {
    size_t least = 0;
    for (size_t j = 1; j < slot.size(); ++j)
      if (slot[j] < slot[least]) least = j;
    start.push_back(slot[least]);
    slot[least] += r;
  }
  return start;
}
uint64_t naive_work(const std::vector<uint64_t>& remaining, const std::vector<uint64_t>& start,
                    uint64_t tag) {
  uint64_t work = 0;
  for (size_t i = 0; i < remaining.size(); ++i)
    if (tag > start[i]) work += std::min(tag - start[i], remaining[i]);
  return work;
}
}  // namespace

std::optional<TimeNs> Provider::reference_ttr(ClaimId id) const {
  auto it = claims_.find(id);
  if (it == claims_.end() || it->second.committed) return std::nullopt;
  const double rate = rate_.rate_bps();
  // The queue from its anchor to now.
  std::vector<uint64_t> remaining;
  uint64_t total = 0, last = 0;
  for (const Op& op : ops_) {
    remaining.push_back(op.remaining);
    total += op.remaining;
  }
  std::vector<uint64_t> start = naive_starts(remaining, slots());
  for (size_t i = 0; i < remaining.size(); ++i) last = std::max(last, start[i] + remaining[i]);
  const uint64_t moved = std::min(bytes_in(clock_.now() - projected_at_, rate), total);
  uint64_t lo = 0, hi = last;  // the largest tag whose work is at most `moved`
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo + 1) / 2;
    if (naive_work(remaining, start, mid) <= moved)
      lo = mid;
    else
      hi = mid - 1;
  }
  for (size_t i = 0; i < remaining.size(); ++i)
    if (lo > start[i]) remaining[i] -= std::min(lo - start[i], remaining[i]);
  // The claim's reads after it; its objects' operations.
  std::vector<size_t> mine;
  for (ObjectKey key : it->second.objects) {
    const ObjRec& o = objects_.at(key);
    if (o.cls == Cls::kCovered) mine.push_back(op_index_.at(key));
    if (o.cls != Cls::kAbsent) continue;
    mine.push_back(remaining.size());
    remaining.push_back(o.bytes);
  }
  if (mine.empty()) return 0;
  start = naive_starts(remaining, slots());
  uint64_t end = 0;
  for (size_t i : mine) end = std::max(end, start[i] + remaining[i]);
  return bytes_to_ns(naive_work(remaining, start, end), rate);
}

bool Provider::ttr_at_least(ClaimId id, TimeNs threshold, TtrMode mode) {
  auto it = claims_.find(id);
  if (it == claims_.end()) return false;
  const ClaimRec& c = it->second;
  if (threshold <= 0) return true;
  if (mode == TtrMode::kStatic || c.committed) return *ttr(id, mode) >= threshold;
  if (c.absent_bytes == 0 && c.covered_bytes == 0) return false;  // TTR is 0
  const double rate = rate_.rate_bps();
  // Work conservation bounds the projection: everything queued plus the claim's new reads
  // drains by (W + X) / R; the new reads alone need at least X / R.
  const uint64_t queued = projection().total() - projection_now().done;
  if (bytes_to_ns(queued + c.absent_bytes, rate) < threshold) return false;
  if (bytes_to_ns(c.absent_bytes, rate) >= threshold) return true;
  return planned_ttr(it->second) >= threshold;
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
    ops_.push_back(Op{key, o.bytes, o.bytes});
    projection_stale_ = true;
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
  ops_.erase(ops_.begin() + static_cast<std::ptrdiff_t>(at));
  op_index_.erase(idx);
  for (size_t i = at; i < ops_.size(); ++i) op_index_[ops_[i].key] = i;
  projection_stale_ = true;
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

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
      remote_(device.remote_info().rate_bps, device.remote_info().latency_ns) {
  for (Lane& l : lanes_) l.anchor = clock.now();
  if (config_.budget_bytes == 0) throw std::invalid_argument("provider: budget is 0");
  if (config_.budget_bytes >= device_.info().capacity_bytes)
    throw std::invalid_argument("provider: budget must be below the fast tier's capacity");
  if (!(config_.static_rate_bps > 0)) throw std::invalid_argument("provider: static rate <= 0");
  device_.set_observer(this);
}

Provider::~Provider() { device_.set_observer(nullptr); }

uint32_t Provider::slots(Source s) const {
  if (s == Source::kRemote) return device_.remote_info().slots;
  return config_.staging_slots ? config_.staging_slots : device_.info().staging_slots;
}

double Provider::rate_bps(Source s) const {
  return s == Source::kRemote ? remote_.rate_bps() : rate_.rate_bps();
}

Provider::Cls Provider::classify(ObjectKey key, const ObjRec& o) const {
  if (o.staging) return Cls::kCovered;
  return device_.residency(key) == Residency::kResident ? Cls::kResident : Cls::kAbsent;
}

void Provider::set_cls(ObjectKey key, ObjRec& o, Cls cls) {
  if (o.cls == cls) return;
  move_object(o, cls, cls == Cls::kAbsent ? device_.stage_source(key) : o.source);
}

void Provider::move_object(ObjRec& o, Cls cls, Source source) {
  if (o.cls == cls && o.source == source) return;
  const auto from = static_cast<size_t>(o.source), to = static_cast<size_t>(source);
  for (ClaimStaging* c : o.planned) {
    c->planned_->profile_stale = true;
    if (o.cls == Cls::kAbsent) c->planned_->absent[from] -= o.bytes;
    if (o.cls == Cls::kCovered) c->planned_->covered[from] -= o.bytes;
    if (cls == Cls::kAbsent) c->planned_->absent[to] += o.bytes;
    if (cls == Cls::kCovered) c->planned_->covered[to] += o.bytes;
  }
  o.cls = cls;
  o.source = source;
}

int Provider::track(ClaimStaging& c, ClaimId id, const Manifest& manifest) {
  if (c.tracked_) return -EEXIST;
  if (manifest.empty() || manifest.size() > kMaxManifestObjects) return -EINVAL;
  uint64_t total = 0;
  for (const KvObject& k : manifest) {
    if (k.bytes == 0) return -EINVAL;
    if (k.bytes > kMaxManifestBytes - total) return -EOVERFLOW;
    total += k.bytes;
  }
  c.id_ = id;
  c.tracked_ = true;
  c.planned_ = std::make_unique<ClaimStaging::Planned>();
  std::unordered_set<ObjectKey> seen;
  for (const KvObject& k : manifest) {
    if (!seen.insert(k.key).second) continue;
    c.objects_.push_back(k.key);
    c.bytes_ += k.bytes;
  }
  for (size_t i = 0; i < manifest.size(); ++i) {
    const KvObject& k = manifest[i];
    auto [oit, fresh] = objects_.try_emplace(k.key);
    ObjRec& o = oit->second;
    if (fresh) {
      o.bytes = k.bytes;
      o.cls = classify(k.key, o);
      o.source = device_.stage_source(k.key);
    }
    if (!o.planned.insert(&c).second) continue;
    if (o.cls == Cls::kAbsent) c.planned_->absent[static_cast<size_t>(o.source)] += o.bytes;
    if (o.cls == Cls::kCovered) c.planned_->covered[static_cast<size_t>(o.source)] += o.bytes;
  }
  return 0;
}

int Provider::untrack(ClaimStaging& c) {
  if (!c.tracked_) return -ENOENT;
  if (c.committed_) return -EBUSY;
  const std::vector<ObjectKey> keys = std::move(c.objects_);
  c = ClaimStaging();
  for (ObjectKey key : keys) {
    objects_.at(key).planned.erase(&c);
    forget_if_unused(key);
  }
  return 0;
}

void Provider::forget_if_unused(ObjectKey key) {
  auto it = objects_.find(key);
  const ObjRec& o = it->second;
  if (o.refs == 0 && !o.staging && !o.pinned && o.planned.empty()) objects_.erase(it);
}

const QueueProjection& Provider::projection(Source s) {
  Lane& l = lane(s);
  if (l.stale) {
    std::vector<uint64_t> remaining(l.ops.size());
    for (size_t i = 0; i < l.ops.size(); ++i) remaining[i] = l.ops[i].remaining;
    l.projection.build(remaining, slots(s));
    l.stale = false;
    l.epoch = ++epoch_;
  }
  return l.projection;
}

Provider::Now Provider::projection_now(Source s) {
  const QueueProjection& p = projection(s);
  Lane& l = lane(s);
  const TimeNs now = clock_.now();
  if (l.now_at != now || l.now_epoch != l.epoch) {
    const uint64_t moved = std::min(bytes_in(now - l.anchor, rate_bps(s)), p.total());
    l.now.tag = p.tag_for_work(moved);
    l.now.done = p.work_at(l.now.tag);
    l.now_at = now;
    l.now_epoch = l.epoch;
  }
  return l.now;
}

void Provider::sync_projection(Source s) {
  Lane& l = lane(s);
  const TimeNs now = clock_.now();
  if (now == l.anchor) return;
  const uint64_t tag = projection_now(s).tag;
  for (size_t i = 0; i < l.ops.size(); ++i) {
    const uint64_t start = l.projection.start(i);
    if (tag > start) l.ops[i].remaining -= std::min(tag - start, l.ops[i].remaining);
  }
  l.anchor = now;
  l.stale = true;
}

uint64_t Provider::place(Lane& l, const std::vector<ReadRun>& reads, uint64_t from) {
  const QueueProjection& p = l.projection;
  if (reads.size() != 1) return p.place_after(reads, from);
  if (l.placed_epoch != l.epoch || l.placed_from != from) {
    l.placed.clear();
    l.placed_epoch = l.epoch;
    l.placed_from = from;
  }
  const ReadRun run = reads.front();
  const uint64_t key = run.bytes * 0x9E3779B97F4A7C15ull ^ run.count;
  auto [it, fresh] = l.placed.try_emplace(key, run, 0);
  if (fresh) it->second.second = p.place_after(reads, from);
  if (it->second.first == run) return it->second.second;
  return p.place_after(reads, from);  // another run under the same key
}

void Provider::refresh_profile(const ClaimStaging& c) {
  if (!c.planned_->profile_stale) return;
  c.planned_->range_epoch = UINT64_MAX;
  for (Profile& f : c.planned_->sources) f = Profile{};
  for (ObjectKey key : c.objects_) {
    const ObjRec& o = objects_.at(key);
    Profile& f = c.planned_->sources[static_cast<size_t>(o.source)];
    if (o.cls == Cls::kCovered) f.covered.push_back(key);
    if (o.cls != Cls::kAbsent) continue;
    if (!f.reads.empty() && f.reads.back().bytes == o.bytes)
      ++f.reads.back().count;
    else
      f.reads.push_back(ReadRun{o.bytes, 1});
    f.read_bytes += o.bytes;
  }
  c.planned_->profile_stale = false;
}

TimeNs Provider::source_ttr(Source s, Profile& f) {
  if (f.reads.empty() && f.covered.empty()) return 0;
  const QueueProjection& p = projection(s);
  const Now now = projection_now(s);
  Lane& l = lane(s);
  // Until time passes the first free slot, the claim's reads are placed as they would
  // have been at the anchor: the work kept for this epoch still holds.
  const bool late = now.tag > p.first_free() && !f.reads.empty();
  if (f.epoch != l.epoch || late) {
    // The tag at which its last object lands; by then its own reads have moved all their
    // bytes too.
    uint64_t end = 0;
    if (!f.reads.empty()) {
      const uint64_t from = late ? now.tag : 0;
      end = place(l, f.reads, from);
      p.slots_from(from, &f.basis);
      f.end = end;
    }
    for (ObjectKey key : f.covered) end = std::max(end, p.finish(l.index.at(key)));
    f.work = p.work_at(end) + f.read_bytes;
    f.epoch = late ? UINT64_MAX : l.epoch;
  }
  // New reads wait the source's latency, then move their bytes.
  return (f.reads.empty() ? 0 : latency_ns(s)) +
         bytes_to_ns(f.work > now.done ? f.work - now.done : 0, rate_bps(s));
}

TtrRange Provider::source_ttr_range(Source s, Profile& f) {
  // Covered objects only: nothing to place, the exact TTR costs no more than a bound.
  if (f.reads.empty()) {
    const TimeNs t = source_ttr(s, f);
    return {t, t};
  }
  const QueueProjection& p = projection(s);
  const Now now = projection_now(s);
  const Lane& l = lane(s);
  const bool late = now.tag > p.first_free();
  if (f.epoch == l.epoch && !late) {
    const TimeNs t = source_ttr(s, f);
    return {t, t};
  }
  // Work conservation: the reads alone move their bytes after the queue's work done by now;
  // everything queued drains with them.
  uint64_t low = now.done + f.read_bytes;
  uint64_t high = p.total() + f.read_bytes;
  if (const uint64_t d = p.distance(f.basis, late ? now.tag : 0); d != UINT64_MAX) {
    // The last placement moved by at most d; covered objects land where the layout says.
    uint64_t covered = 0;
    for (ObjectKey key : f.covered) covered = std::max(covered, p.finish(l.index.at(key)));
    const uint64_t first = std::max(f.end - std::min(d, f.end), covered);
    const uint64_t last = std::max(f.end + std::min(d, UINT64_MAX - f.end), covered);
    low = std::max(low, p.work_at(first) + f.read_bytes);
    high = std::min(high, p.work_at(last) + f.read_bytes);
  }
  const auto ttr_of = [&](uint64_t work) {
    return latency_ns(s) + bytes_to_ns(work > now.done ? work - now.done : 0, rate_bps(s));
  };
  return {ttr_of(low), ttr_of(high)};
}

TtrRange Provider::planned_ttr_range(const ClaimStaging& c) {
  ClaimStaging::Planned& planned = *c.planned_;
  if (planned.nothing_to_stage()) return {};
  refresh_profile(c);
  // Both lanes built: epoch_ names their layouts, and with the time, the range.
  for (Source s : {Source::kLocal, Source::kRemote}) projection(s);
  const TimeNs now = clock_.now();
  if (planned.range_epoch == epoch_ && planned.range_at == now) return planned.range;
  TtrRange r;
  for (Source s : {Source::kLocal, Source::kRemote}) {
    const TtrRange t = source_ttr_range(s, planned.sources[static_cast<size_t>(s)]);
    r.lower = std::max(r.lower, t.lower);
    r.upper = std::max(r.upper, t.upper);
  }
  planned.range = r;
  planned.range_epoch = epoch_;
  planned.range_at = now;
  return r;
}

TimeNs Provider::planned_ttr(const ClaimStaging& c) {
  const TtrRange r = planned_ttr_range(c);
  if (r.lower == r.upper) return r.lower;
  TimeNs t = 0;
  for (Source s : {Source::kLocal, Source::kRemote})
    t = std::max(t, source_ttr(s, c.planned_->sources[static_cast<size_t>(s)]));
  c.planned_->range = {t, t};  // for the same layouts and time
  return t;
}

std::optional<TimeNs> Provider::ttr(const ClaimStaging& c, TtrMode mode) {
  if (!c.tracked_) return std::nullopt;
  if (c.committed_) {
    // Committed: time until its outstanding staging completes, on each source.
    TimeNs t = 0;
    for (Source s : {Source::kLocal, Source::kRemote}) {
      const QueueProjection& p = projection(s);
      const Now now = projection_now(s);
      const Lane& l = lane(s);
      uint64_t end = now.tag;
      for (ObjectKey key : c.objects_) {
        auto op = l.index.find(key);
        if (op != l.index.end()) end = std::max(end, p.finish(op->second));
      }
      t = std::max(t, bytes_to_ns(p.work_at(end) - now.done, rate_bps(s)));
    }
    return t;
  }
  if (mode == TtrMode::kStatic)
    return bytes_to_ns(c.planned_->absent[0] + c.planned_->absent[1] + c.planned_->covered[0] +
                           c.planned_->covered[1],
                       config_.static_rate_bps);
  return planned_ttr(c);
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

std::optional<TimeNs> Provider::reference_ttr(const ClaimStaging& c) const {
  if (!c.tracked_ || c.committed_) return std::nullopt;
  TimeNs ttr = 0;
  for (Source s : {Source::kLocal, Source::kRemote}) {
    const Lane& l = lanes_[static_cast<size_t>(s)];
    const double rate = rate_bps(s);
    // The queue from its anchor to now.
    std::vector<uint64_t> remaining;
    uint64_t total = 0, last = 0;
    for (const Op& op : l.ops) {
      remaining.push_back(op.remaining);
      total += op.remaining;
    }
    std::vector<uint64_t> start = naive_starts(remaining, slots(s));
    for (size_t i = 0; i < remaining.size(); ++i) last = std::max(last, start[i] + remaining[i]);
    const uint64_t moved = std::min(bytes_in(clock_.now() - l.anchor, rate), total);
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
    // The claim's reads from this source after it; its objects' operations there.
    std::vector<size_t> reads, covered;
    for (ObjectKey key : c.objects_) {
      const ObjRec& o = objects_.at(key);
      if (o.source != s) continue;
      if (o.cls == Cls::kCovered) covered.push_back(l.index.at(key));
      if (o.cls != Cls::kAbsent) continue;
      reads.push_back(remaining.size());
      remaining.push_back(o.bytes);
    }
    if (reads.empty() && covered.empty()) continue;
    start = naive_starts(remaining, slots(s));
    uint64_t end = 0;
    for (size_t i : reads) end = std::max(end, start[i] + remaining[i]);
    for (size_t i : covered) end = std::max(end, start[i] + remaining[i]);
    ttr = std::max(ttr, (reads.empty() ? 0 : latency_ns(s)) +
                            bytes_to_ns(naive_work(remaining, start, end), rate));
  }
  return ttr;
}

int Provider::set_layers(ClaimStaging& c, uint32_t groups, TimeNs per_group_ns) {
  if (!c.tracked_) return -ENOENT;
  if (c.committed_) return -EBUSY;
  if (groups == 0 || groups > c.objects_.size() || per_group_ns < 0) return -EINVAL;
  if (per_group_ns > (TimeNs{1} << 62) / groups) return -EOVERFLOW;
  c.planned_->groups = groups;
  c.planned_->per_group_ns = per_group_ns;
  return 0;
}

TimeNs Provider::layered_ttr(const ClaimStaging& c) {
  std::vector<TimeNs> ready(c.planned_->groups, 0);
  const size_t n = c.objects_.size();
  for (Source s : {Source::kLocal, Source::kRemote}) {
    const QueueProjection& p = projection(s);
    const Now now = projection_now(s);
    const Lane& l = lane(s);
    std::vector<uint64_t> remaining(l.ops.size());
    for (size_t i = 0; i < l.ops.size(); ++i) {
      const uint64_t moved = now.tag > p.start(i) ? now.tag - p.start(i) : 0;
      remaining[i] = l.ops[i].remaining - std::min(moved, l.ops[i].remaining);
    }
    struct Mine {
      size_t object, op;
      bool read;
    };
    std::vector<Mine> mine;
    for (size_t j = 0; j < n; ++j) {
      const ObjRec& o = objects_.at(c.objects_[j]);
      if (o.source != s || o.cls == Cls::kResident) continue;
      const bool read = o.cls == Cls::kAbsent;
      mine.push_back(Mine{j, read ? remaining.size() : l.index.at(c.objects_[j]), read});
      if (read) remaining.push_back(o.bytes);
    }
    if (mine.empty()) continue;
    QueueProjection q;
    q.build(remaining, slots(s));
    for (const Mine& m : mine) {
      const TimeNs t =
          bytes_to_ns(q.work_at(q.finish(m.op)), rate_bps(s)) + (m.read ? latency_ns(s) : 0);
      TimeNs& g = ready[m.object * c.planned_->groups / n];
      g = std::max(g, t);
    }
  }
  TimeNs lead = 0;
  for (size_t g = 0; g < ready.size(); ++g)
    lead = std::max(lead, ready[g] - static_cast<TimeNs>(g) * c.planned_->per_group_ns);
  return lead;
}

std::optional<TimeNs> Provider::lead_ttr(const ClaimStaging& c, TtrMode mode) {
  if (!c.tracked_) return std::nullopt;
  if (c.committed_ || mode == TtrMode::kStatic || c.planned_->groups <= 1) return ttr(c, mode);
  return layered_ttr(c);
}

bool Provider::ttr_at_least(const ClaimStaging& c, TimeNs threshold, TtrMode mode) {
  if (!c.tracked_) return false;
  if (threshold <= 0) return true;
  if (mode == TtrMode::kStatic || c.committed_) return *ttr(c, mode) >= threshold;
  if (c.planned_->groups > 1) return layered_ttr(c) >= threshold;
  const TtrRange r = planned_ttr_range(c);
  if (r.upper < threshold) return false;
  if (r.lower >= threshold) return true;
  return planned_ttr(c) >= threshold;
}

TimeNs Provider::lead_ttr_at_most(const ClaimStaging& c, TtrMode mode) {
  if (!c.tracked_) return 0;
  if (c.committed_ || mode == TtrMode::kStatic || c.planned_->groups > 1) return *lead_ttr(c, mode);
  return planned_ttr_range(c).upper;
}

CommitResult Provider::commit(ClaimStaging& c) {
  if (!c.tracked_) return {-ENOENT, 0, 0, false};
  if (c.committed_) return {-EALREADY, 0, 0, false};
  // Validity: every object still held by the SSD tier with the size the claim expects.
  uint64_t need = 0;
  std::vector<int64_t> sizes(c.objects_.size());
  device_.object_sizes(c.objects_, sizes);
  for (size_t i = 0; i < c.objects_.size(); ++i) {
    const ObjectKey key = c.objects_[i];
    const ObjRec& o = objects_.at(key);
    const int64_t size = sizes[i];
    if (size < 0) return {static_cast<int>(size), 0, 0, false};
    if (static_cast<uint64_t>(size) != o.bytes) return {-EINVAL, 0, 0, false};
    if (o.refs == 0 && !o.staging) need += o.bytes;
  }
  if (!ledger_.fits(need)) {
    ++counters_.capacity_deferrals;
    return {-ENOSPC, 0, need, false};
  }
  for (Source s : {Source::kLocal, Source::kRemote}) sync_projection(s);
  const TimeNs now = clock_.now();
  ledger_.add(need, now);
  c.committed_ = true;
  int failure = 0;
  for (ObjectKey key : c.objects_) {
    ObjRec& o = objects_.at(key);
    o.planned.erase(&c);
    ++o.refs;
    if (o.pinned) continue;
    if (o.staging) {
      o.waiters.push_back(&c);
      ++c.pending_;
      continue;
    }
    if (device_.residency(key) == Residency::kResident) {
      const int r = device_.pin(key);
      if (r == 0) {
        o.pinned = true;
        set_cls(key, o, Cls::kResident);
        continue;
      }
      failure = failure ? failure : r;
      continue;
    }
    move_object(o, o.cls, device_.stage_source(key));
    const int r = device_.stage(key);
    if (r != 0) {
      failure = failure ? failure : r;
      continue;
    }
    Lane& l = lane(o.source);
    if (o.source == Source::kLocal && l.ops.empty()) rate_.on_busy(now);
    l.index[key] = l.ops.size();
    l.ops.push_back(Op{key, o.bytes, o.bytes, now});
    l.stale = true;
    ++counters_.stage_submitted;
    reserved_bytes_ += o.bytes;
    o.staging = true;
    set_cls(key, o, Cls::kCovered);
    o.waiters.push_back(&c);
    ++c.pending_;
    TEMPO_PROBE_STAGE_SUBMIT(key, o.bytes);
  }
  if (failure) {
    release(c);
    return {failure, 0, 0, false};
  }
  c.planned_.reset();  // no object counts it as planned any more
  ++counters_.commits;
  return {0, need, 0, c.pending_ == 0};
}

bool Provider::protects(ObjectKey key) const {
  auto it = objects_.find(key);
  return it != objects_.end() && it->second.pinned;
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

int64_t Provider::release(ClaimStaging& c) {
  if (!c.tracked_) return -ENOENT;
  if (!c.committed_) return -EINVAL;
  uint64_t freed = 0;
  for (ObjectKey key : c.objects_) {
    ObjRec& o = objects_.at(key);
    std::erase(o.waiters, &c);
    --o.refs;
    freed += drop_if_unreferenced(key, o);
  }
  const std::vector<ObjectKey> keys = std::move(c.objects_);
  c = ClaimStaging();
  for (ObjectKey key : keys) forget_if_unused(key);
  return static_cast<int64_t>(freed);
}

void Provider::on_stage_complete(const StageCompletion& done) {
  auto oit = objects_.find(done.key);
  if (oit == objects_.end() || !oit->second.staging) return;  // not ours
  const Source source = oit->second.source;
  Lane& l = lane(source);
  auto idx = l.index.find(done.key);
  if (idx == l.index.end()) return;
  sync_projection(source);
  const TimeNs now = clock_.now();
  // Remove the operation, keeping issue order.
  const size_t at = idx->second;
  const auto sharing = static_cast<uint32_t>(std::min<size_t>(l.ops.size(), slots(source)));
  l.ops.erase(l.ops.begin() + static_cast<std::ptrdiff_t>(at));
  l.index.erase(idx);
  for (size_t i = at; i < l.ops.size(); ++i) l.index[l.ops[i].key] = i;
  l.stale = true;
  // The source's estimator learns from its own completions.
  if (source == Source::kLocal)
    rate_.on_complete(done.status == 0 ? done.bytes : 0, now, !l.ops.empty());
  else if (done.status == 0)
    remote_.on_complete(done.bytes, sharing, done.completed - done.submitted);
  TEMPO_PROBE_STAGE_COMPLETE(done.key, done.bytes, done.completed - done.submitted, done.status);

  ObjRec& o = oit->second;
  o.staging = false;
  reserved_bytes_ -= o.bytes;
  std::vector<ClaimId> ready_now, progressed, failed;
  const std::vector<ClaimStaging*> waiters = std::move(o.waiters);
  o.waiters.clear();
  if (done.status == 0) {
    ++counters_.stage_completed;
    counters_.staged_bytes += done.bytes;
    o.pinned = true;  // the stage took the device pin for us
    set_cls(done.key, o, Cls::kResident);
    for (ClaimStaging* c : waiters) (--c->pending_ == 0 ? ready_now : progressed).push_back(c->id_);
  } else {
    ++counters_.stage_failed;
    set_cls(done.key, o, Cls::kAbsent);
    for (ClaimStaging* c : waiters) failed.push_back(c->id_);
  }
  const uint64_t freed = drop_if_unreferenced(done.key, o);
  forget_if_unused(done.key);
  if (!listener_) return;
  for (ClaimId id : progressed) listener_->on_claim_progress(id);
  for (ClaimId id : ready_now) listener_->on_claim_ready(id);
  for (ClaimId id : failed) listener_->on_claim_failed(id, done.status);
  listener_->on_staging_progress(freed > 0);
}

void Provider::on_resident(ObjectKey key) {
  auto it = objects_.find(key);
  if (it != objects_.end() && !it->second.staging) set_cls(key, it->second, Cls::kResident);
}

void Provider::on_evicted(ObjectKey key) {
  auto it = objects_.find(key);
  if (it != objects_.end() && !it->second.staging) set_cls(key, it->second, Cls::kAbsent);
}

ProviderStats Provider::stats() const {
  ProviderStats s = counters_;
  s.budget_bytes = ledger_.budget();
  s.ledger_bytes = ledger_.bytes();
  s.reserved_bytes = reserved_bytes_;
  s.outstanding_ops = lanes_[0].ops.size() + lanes_[1].ops.size();
  s.remote_outstanding_ops = lanes_[1].ops.size();
  s.remote_rate_bps = remote_.rate_bps();
  s.remote_latency_ns = remote_.latency_ns();
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

#include "runtime/runtime_side.h"

#include <algorithm>
#include <cerrno>

#include "controller/controller.h"

namespace tempo {

RuntimeSide::RuntimeSide(ClaimSurface& surface, const StepCosts& costs,
                         const RuntimeSideConfig& config)
    : surface_(surface), costs_(costs), config_(config), history_(config.history_window) {}

void RuntimeSide::add_hit(uint64_t key, std::vector<Manifest> manifests, HitClaims shape,
                          uint32_t groups, TimeNs per_group) {
  Tracked& t = tracked_[key];
  t.manifests = std::move(manifests);
  t.shape = shape;
  t.groups = groups;
  t.per_group = shape == HitClaims::kOne ? 0 : per_group;
}

void RuntimeSide::adopt(uint64_t key, ClaimId claim) {
  Tracked& t = tracked_[key];
  if (!t.claims.empty()) return;
  t.claims.push_back(claim);
  ungiven_.push_back(key);
}

void RuntimeSide::forget(uint64_t key) { tracked_.erase(key); }

std::span<const ClaimId> RuntimeSide::claims(uint64_t key) const {
  const auto it = tracked_.find(key);
  if (it == tracked_.end()) return {};
  return it->second.claims;
}

std::optional<TimeNs> RuntimeSide::given_ttu(uint64_t key, TimeNs at) const {
  const auto it = tracked_.find(key);
  if (it == tracked_.end() || !it->second.ever_given) return std::nullopt;
  return it->second.given_ttu - (at - it->second.given_at);
}

int RuntimeSide::step(TimeNs now, std::span<const RunningRequest> running,
                      const WaitingView& waiting, TimeNs busy_for, bool order_changed,
                      RuntimeListener& listener) {
  now_ = now;
  reported_ = false;
  const size_t queue = waiting.size();
  // Only the head is projected: the window, doubled while every claim in it lies within
  // the horizon. Without a horizon, the whole queue at once.
  size_t n = config_.horizon == kNever ? queue : std::min(window_, queue);
  for (;;) {
    while (waiting_.size() < n) {
      WaitingEntry e = waiting.at(waiting_.size());
      if (e.hit) {
        const std::span<const ClaimId> c = claims(e.key);
        e.request.claim = c.empty() ? kNoClaim : c.front();  // kNoClaim until reported
      }
      waiting_.push_back(e.request);
      keys_.push_back(e.key);
    }
    const SchedulerSnapshot snap{
        running, waiting_, config_.max_active, config_.generation_limit, config_.horizon, busy_for};
    if (const int r = surface_.reads_spread()
                          ? estimate_ttu_spread(snap, costs_, history_, step_spread_, &ttus_)
                          : estimate_ttu(snap, costs_, history_, &ttus_);
        r != 0) {
      waiting_.clear();
      keys_.clear();
      return r;
    }
    const bool open = ttus_.empty() || !ttus_.back().beyond;
    if (!open || n == queue) break;
    n = std::min(2 * n, queue);
  }
  const auto first_beyond =
      std::find_if(ttus_.begin(), ttus_.end(), [](const ClaimTtu& t) { return t.beyond; });
  const size_t reach = first_beyond == ttus_.end() ? n : first_beyond->queue_position + 1;
  window_ = std::max(kMinWindow, 2 * reach);
  int r = 0;
  for (const ClaimTtu& t : ttus_) {
    r = give(keys_[t.queue_position], t.ttu, t.spread, t.beyond, listener);
    if (r != 0) break;
  }
  if (r == 0 && n < queue) {
    // Behind a claim past the horizon: past it too, and at least as late.
    const ClaimTtu& last = ttus_.back();
    const TimeNs bound = std::min(last.ttu, last.spread.at.front());
    const TtuQuantiles spread = TtuQuantiles::point(bound);
    for (size_t q = queue; r == 0 && q-- > n;) {
      const WaitingEntry e = waiting.at(q);
      if (!e.hit) continue;
      if (!claims(e.key).empty()) break;  // reported on arrival: the ones before it were too
      r = give(e.key, bound, spread, true, listener);
    }
    // Adopted claims behind the projection that were never given a TTU: the bound, once;
    // the due queue revises them from then on.
    for (const uint64_t key : ungiven_) {
      const auto it = tracked_.find(key);
      if (r == 0 && it != tracked_.end() && !it->second.ever_given)
        r = give(key, bound, spread, true, listener);
    }
    while (r == 0 && !due_.empty() && due_.top().at <= now_) {
      const Due d = due_.top();
      due_.pop();
      const auto it = tracked_.find(d.key);
      if (it != tracked_.end() && it->second.given_at == d.given_at)
        r = give(d.key, bound, spread, true, listener);
    }
  }
  if (r == 0) ungiven_.clear();  // given above, or in the projection
  waiting_.clear();
  keys_.clear();
  if (const int f = flush_revisions(); r == 0) r = f;
  if (r != 0) return r;
  if (order_changed || reported_) listener.on_order(order_of(waiting));
  return 0;
}

int RuntimeSide::give(uint64_t key, TimeNs ttu, const TtuQuantiles& spread, bool beyond,
                      RuntimeListener& listener) {
  const auto it = tracked_.find(key);
  if (it == tracked_.end()) return 0;  // a hit the engine has not handed over
  Tracked& t = it->second;
  const TimeNs half = config_.horizon / 2;
  if (!t.claims.empty()) {
    if (beyond && t.given - (now_ - t.given_at) >= half) return 0;
    // One claim per group: group g's is needed g group-prefills later.
    for (size_t c = 0; c < t.claims.size(); ++c) {
      const TimeNs later = static_cast<TimeNs>(c) * t.per_group;
      const TtuQuantiles& s = spreads_.emplace_back(spread.shifted(-later));
      revisions_.push_back({t.claims[c], ttu + later, &s});
    }
  } else if (const int r = report(key, t, ttu, spread, listener); r != 0) {
    return r;
  }
  t.given = std::min(ttu, spread.at.front());
  t.given_ttu = ttu;
  t.given_at = now_;
  t.ever_given = true;
  if (beyond && config_.horizon != kNever)
    due_.push({t.given_at + t.given - half, key, t.given_at});
  return 0;
}

int RuntimeSide::report(uint64_t key, Tracked& t, TimeNs ttu, const TtuQuantiles& spread,
                        RuntimeListener& listener) {
  if (const int r = flush_revisions(); r != 0) return r;
  std::vector<Manifest> manifests;
  if (t.shape == HitClaims::kPerGroup) {
    manifests = std::move(t.manifests);
  } else {
    manifests.emplace_back();
    for (const Manifest& g : t.manifests)
      manifests[0].insert(manifests[0].end(), g.begin(), g.end());
  }
  t.manifests.clear();
  for (size_t c = 0; c < manifests.size(); ++c) {
    const TimeNs later = static_cast<TimeNs>(c) * t.per_group;
    const TtuQuantiles s = spread.shifted(-later);
    ClaimId id = 0;
    if (const int r = surface_.report(manifests[c], ttu + later, &s, &id); r != 0) return r;
    t.claims.push_back(id);
  }
  if (t.shape == HitClaims::kLayered) {
    if (const int r = surface_.set_layers(t.claims[0], t.groups, t.per_group); r != 0) return r;
  }
  reported_ = true;
  listener.on_reported(key, t.claims);
  return 0;
}

int RuntimeSide::flush_revisions() {
  if (revisions_.empty()) return 0;
  int r = surface_.revise_all(revisions_, &statuses_);
  // A claim that ended since the engine looked keeps its state (-EINVAL).
  for (size_t i = 0; r == 0 && i < statuses_.size(); ++i)
    if (statuses_[i] != 0 && statuses_[i] != -EINVAL) r = statuses_[i];
  revisions_.clear();
  spreads_.clear();
  return r;
}

std::vector<ClaimId> RuntimeSide::order_of(const WaitingView& waiting) const {
  std::vector<ClaimId> order;
  order.reserve(waiting.size());
  for (size_t q = 0; q < waiting.size(); ++q) {
    const WaitingEntry e = waiting.at(q);
    const std::span<const ClaimId> c = e.hit ? claims(e.key) : std::span<const ClaimId>{};
    if (c.empty())
      order.push_back(kNoClaim);
    else
      order.insert(order.end(), c.begin(), c.end());
  }
  return order;
}

}  // namespace tempo

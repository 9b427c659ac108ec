#include "controller/controller.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "core/probes.h"

namespace tempo {

Controller::Controller(Provider& provider, const Clock& clock, ControllerConfig config)
    : provider_(provider), clock_(clock), config_(config) {
  provider_.set_listener(this);
}

Controller::~Controller() { provider_.set_listener(nullptr); }

Claim* Controller::find(ClaimId id) {
  auto it = claims_.find(id);
  return it == claims_.end() ? nullptr : &it->second;
}

const Claim* Controller::claim(ClaimId id) const {
  auto it = claims_.find(id);
  return it == claims_.end() ? nullptr : &it->second;
}

namespace {

bool protects(ClaimState s) {
  return s == ClaimState::kStaging || s == ClaimState::kStageReady ||
         s == ClaimState::kTransferring;
}

}  // namespace

void Controller::set_state(Claim& c, ClaimState to) {
  // An illegal transition is a controller bug, never a caller's: stop before state rots.
  if (!claim_transition_legal(c.state, to)) std::abort();
  if (c.state == ClaimState::kPlanned) --stats_.planned;
  if (const auto g = shares_.find(c.group); g != shares_.end()) {
    if (protects(to) && !protects(c.state)) g->second.protected_bytes += c.bytes;
    if (!protects(to) && protects(c.state)) g->second.protected_bytes -= c.bytes;
    if (claim_state_terminal(to)) --g->second.live;
  }
  c.state = to;
  if (claim_state_terminal(to)) {
    if (const auto g = shares_.find(c.group); g != shares_.end() && g->second.weight == 0 &&
                                              g->second.live == 0 && g->second.protected_bytes == 0)
      shares_.erase(g);
    --stats_.live;
    c.timing.ended = clock_.now();
    ended_.push_back(c.id);
  }
}

void Controller::erase_claim(ClaimId id) {
  auto it = claims_.find(id);
  if (it == claims_.end()) return;
  if (it->second.rank >= 0) std::erase(order_, &it->second);
  claims_.erase(it);
}

void Controller::collect() {
  if (evaluating_) return;  // the pass walks order_: erase after it
  const TimeNs now = clock_.now();
  while (!ended_.empty()) {
    const Claim* c = claim(ended_.front());
    const bool expired = c == nullptr || ended_.size() > config_.retain_claims ||
                         now - c->timing.ended >= config_.retain_ns;
    if (!expired) return;
    erase_claim(ended_.front());
    ended_.pop_front();
  }
}

int Controller::take_ordinary_read(ClaimId id, std::vector<ObjectKey>* keys) {
  Claim* c = find(id);
  if (!c) return -ENOENT;
  if (c->state != ClaimState::kOrdinary || c->ordinary_read) return -EINVAL;
  c->ordinary_read = true;
  *keys = std::move(c->keys);
  c->keys.clear();
  return 0;
}

TimeNs Controller::ttu_now(const Claim& c) const { return ttu_at(c, clock_.now()); }

TimeNs Controller::ttu_at(const Claim& c, TimeNs at) { return c.ttu - (at - c.ttu_at); }

TtrMode Controller::ttr_mode() const {
  return config_.policy.policy == CommitPolicy::kTempoStatic ? TtrMode::kStatic
                                                             : TtrMode::kStateAware;
}

namespace {
bool ttu_in_range(TimeNs ttu) { return ttu >= -kMaxTimeNs && ttu <= kMaxTimeNs; }
bool spread_in_range(const TtuQuantiles* spread) {
  return spread == nullptr || std::all_of(spread->at.begin(), spread->at.end(), ttu_in_range);
}
}  // namespace

int Controller::label(ClaimId id, std::string request) {
  Claim* c = find(id);
  if (!c) return -ENOENT;
  c->request = std::move(request);
  return 0;
}

void Controller::set_share(uint32_t group, uint32_t weight) {
  if (group == 0) return;
  if (weight > 0) {
    auto [g, added] = shares_.try_emplace(group);
    g->second.weight = weight;
    if (added)  // claims reported with the group before it had a share count from now
      for (const auto& [id, c] : claims_) {
        if (c.group != group) continue;
        g->second.live += claim_state_terminal(c.state) ? 0 : 1;
        g->second.protected_bytes += protects(c.state) ? c.bytes : 0;
      }
  } else if (const auto g = shares_.find(group); g != shares_.end()) {
    g->second.weight = 0;
    if (g->second.live == 0 && g->second.protected_bytes == 0) shares_.erase(g);
  }
  evaluate();  // the others' parts changed
}

uint64_t Controller::share_bytes(uint32_t group) const {
  const uint64_t budget = provider_.ledger().budget();
  const auto g = shares_.find(group);
  if (g == shares_.end() || g->second.weight == 0) return budget;
  uint64_t active = g->second.weight;  // the asking group counts even while idle
  for (const auto& [id, use] : shares_)
    if (id != group && use.live > 0) active += use.weight;
  return static_cast<uint64_t>(static_cast<long double>(budget) * g->second.weight / active);
}

bool Controller::within_share(const Claim& c) const {
  const auto g = shares_.find(c.group);
  if (g == shares_.end() || g->second.weight == 0) return true;
  return g->second.protected_bytes + c.bytes <= share_bytes(c.group);
}

int Controller::report(const Manifest& manifest, TimeNs ttu, ClaimId* id,
                       const TtuQuantiles* spread, uint32_t group) {
  if (!ttu_in_range(ttu) || !spread_in_range(spread)) return -EOVERFLOW;
  const ClaimId cid = next_id_;
  // Ids grow: the new record goes last in the book, where it stays until erased.
  const auto at = claims_.try_emplace(claims_.end(), cid);
  Claim& c = at->second;
  if (const int r = provider_.track(c.staging, cid, manifest); r != 0) {
    claims_.erase(at);
    return r;
  }
  ++next_id_;
  collect();
  c.id = cid;
  c.bytes = c.staging.bytes();
  c.objects = static_cast<uint32_t>(manifest.size());
  c.ttu = ttu;
  c.ttu_at = clock_.now();
  c.spread = spread ? *spread : TtuQuantiles::point(ttu);
  c.report_seq = next_seq_++;
  c.timing.reported = clock_.now();
  c.group = group;
  if (const auto g = shares_.find(group); g != shares_.end()) ++g->second.live;
  c.keys.reserve(manifest.size());
  for (const KvObject& o : manifest) c.keys.push_back(o.key);
  rest_.emplace(c.report_seq, cid);
  ++stats_.reported;
  ++stats_.planned;
  ++stats_.live;
  if (id) *id = cid;
  TEMPO_PROBE_CLAIM_REPORT(cid, c.bytes, c.objects, ttu);
  if (wakeup_) wakeup_();
  evaluate_one(c);
  return 0;
}

int Controller::revise(ClaimId id, TimeNs ttu, const TtuQuantiles* spread) {
  Claim* c = find(id);
  if (!c) return -ENOENT;
  if (claim_state_terminal(c->state)) return -EINVAL;
  if (!ttu_in_range(ttu) || !spread_in_range(spread)) return -EOVERFLOW;
  if (c->state != ClaimState::kPlanned) return 0;
  c->ttu = ttu;
  c->ttu_at = clock_.now();
  c->spread = spread ? *spread : TtuQuantiles::point(ttu);
  TEMPO_PROBE_CLAIM_REVISE(id, ttu);
  evaluate_one(*c);
  return 0;
}

int Controller::set_layers(ClaimId id, uint32_t groups, TimeNs per_group_ns) {
  Claim* c = find(id);
  if (!c) return -ENOENT;
  if (claim_state_terminal(c->state)) return -EINVAL;
  if (c->state != ClaimState::kPlanned) return 0;
  if (const int r = provider_.set_layers(c->staging, groups, per_group_ns); r != 0) return r;
  evaluate_one(*c);
  return 0;
}

int Controller::update_order(std::span<const ClaimId> order) {
  return place_order(order, [&](size_t i) { return QueuePlace{i, order.size() - 1 - i}; });
}

int Controller::update_orders(std::span<const std::span<const ClaimId>> orders) {
  merged_.clear();
  merged_places_.clear();
  for (size_t rank = 0;; ++rank) {
    bool any = false;
    for (std::span<const ClaimId> o : orders) {
      if (rank >= o.size()) continue;
      any = true;
      merged_.push_back(o[rank]);
      merged_places_.push_back({rank, o.size() - 1 - rank});
    }
    if (!any) break;
  }
  return place_order(merged_, [&](size_t i) { return merged_places_[i]; });
}

template <class PlaceAt>
int Controller::place_order(std::span<const ClaimId> order, PlaceAt place_at) {
  // Ids below next_id_ that are not held belong to erased (ended) claims: nothing to order.
  for (ClaimId id : order)
    if (id >= next_id_) return -ENOENT;
  // An engine hands its queue on every step, most often unchanged. The same order places
  // every claim where it already stands (one that ended since is passed over by state
  // wherever order_ is walked), and nothing else changed to evaluate for: every other
  // change evaluates when it happens.
  bool same = order.size() == placed_ids_.size() &&
              std::equal(order.begin(), order.end(), placed_ids_.begin());
  for (size_t i = 0; same && i < order.size(); ++i) same = place_at(i) == placed_at_[i];
  if (same) return 0;
  placed_ids_.assign(order.begin(), order.end());
  placed_at_.resize(order.size());
  for (size_t i = 0; i < order.size(); ++i) placed_at_[i] = place_at(i);
  for (Claim* c : order_) {
    if (c->rank < 0) continue;
    c->rank = -1;
    if (c->state == ClaimState::kPlanned) rest_.emplace(c->report_seq, c->id);
  }
  order_.clear();
  for (size_t i = 0; i < order.size(); ++i) {
    Claim* found = find(order[i]);
    if (found == nullptr || claim_state_terminal(found->state)) continue;  // ended
    Claim& c = *found;
    if (c.rank >= 0) continue;  // listed twice: the first place counts
    const QueuePlace place = place_at(i);
    c.rank = static_cast<int64_t>(place.rank);
    c.behind = place.behind;
    order_.push_back(&c);
    rest_.erase(c.report_seq);
  }
  evaluate();
  return 0;
}

bool Controller::eligible(Claim& c) {
  if (c.retrieval_pending) return true;
  switch (config_.policy.policy) {
    case CommitPolicy::kDemand:
      return false;
    case CommitPolicy::kImmediate:
      return true;
    case CommitPolicy::kQueueK:
      return c.rank >= 0 && c.rank < static_cast<int64_t>(config_.policy.queue_k);
    case CommitPolicy::kTempoStatic:
    case CommitPolicy::kTempo:
    case CommitPolicy::kTempoRisk:
      // Laxity TTU - TTR <= 0, i.e. TTR >= TTU adjusted for the time since it was given.
      return provider_.ttr_at_least(c.staging, *threshold(c), ttr_mode());
  }
  return false;
}

std::optional<TimeNs> Controller::threshold(const Claim& c) const {
  switch (config_.policy.policy) {
    case CommitPolicy::kTempoStatic:
    case CommitPolicy::kTempo:
      return ttu_now(c);
    case CommitPolicy::kTempoRisk:
      return risk_ttu(c.spread, c.bytes, config_.policy.lateness_gib_s, risk_, behind(c)) -
             (clock_.now() - c.ttu_at);
    default:
      return std::nullopt;
  }
}

void Controller::note_due(const Claim& c) {
  if (c.state != ClaimState::kPlanned || c.deferred || c.retrieval_pending) return;
  const std::optional<TimeNs> t = threshold(c);
  // Only claims the rule may meet before the next tick are worth an exact TTR.
  if (!t || !provider_.ttr_at_least(c.staging, *t - config_.tick_ns, ttr_mode())) return;
  // Only a claim due before the earliest found so far moves it; a bound on its TTR often
  // says it is not, without the TTR itself.
  const TimeNs now = clock_.now();
  if (now + std::max(*t - provider_.lead_ttr_at_most(c.staging, ttr_mode()), kMinDueStep) >=
      next_due_)
    return;
  const TimeNs ttr = provider_.lead_ttr(c.staging, ttr_mode()).value_or(0);
  if (ttr >= *t) return;  // eligible: the pass that found it so commits or defers it
  next_due_ = std::min(next_due_, now + std::max(*t - ttr, kMinDueStep));
}

uint64_t Controller::behind(const Claim& c) const { return c.rank < 0 ? 0 : c.behind; }

void Controller::leave_planned(Claim& c) {
  rest_.erase(c.report_seq);
  // order_ and pending_ are filtered lazily by state.
}

void Controller::attempt(Claim& c) {
  const TimeNs now = clock_.now();
  const TimeNs ttr = provider_.lead_ttr(c.staging, ttr_mode()).value_or(0);
  // Over its share: refused as for the budget (deferred; the ordinary path when due).
  const CommitResult r =
      within_share(c) ? provider_.commit(c.staging) : CommitResult{-ENOSPC, 0, c.bytes, false};
  if (r.status == 0) {
    leave_planned(c);
    set_state(c, r.ready ? ClaimState::kStageReady : ClaimState::kStaging);
    c.timing.committed = now;
    if (r.ready) c.timing.ready = now;
    ++stats_.committed;
    const TimeNs margin = ttu_now(c) - ttr;
    ++stats_.margin_buckets[static_cast<size_t>(
        std::lower_bound(kCommitMarginBoundsNs.begin(), kCommitMarginBoundsNs.end(), margin) -
        kCommitMarginBoundsNs.begin())];
    stats_.margin_sum_ns += margin;
    TEMPO_PROBE_CLAIM_COMMIT(c.id, r.new_bytes, ttr, margin);
    if (r.ready) {
      TEMPO_PROBE_CLAIM_READY(c.id, c.bytes);
      ready_notices_.push_back(c.id);  // told after the pass: the observer may call back in
    }
    return;
  }
  if (r.status == -ENOSPC) {
    ++stats_.capacity_deferrals;
    if (!c.deferred) ++stats_.deferred_claims;
    c.deferred = true;
    ++c.deferrals;
    TEMPO_PROBE_CLAIM_DEFER(c.id, r.needed_bytes, provider_.ledger().bytes(),
                            provider_.ledger().budget());
    if (!c.retrieval_pending) return;
    // Retrieval is due and protection cannot be had: the ordinary path, for good.
    provider_.untrack(c.staging);
    leave_planned(c);
    set_state(c, ClaimState::kOrdinary);
    ++stats_.ordinary;
    TEMPO_PROBE_CLAIM_ORDINARY(c.id, c.bytes);
    return;
  }
  // The claim's objects are gone or changed on the SSD tier: it cannot be served as a hit.
  provider_.untrack(c.staging);
  leave_planned(c);
  c.error = r.status;
  set_state(c, ClaimState::kFailed);
  ++stats_.failed;
}

void Controller::evaluate_one(Claim& c) {
  // Only this claim's eligibility changed; every other claim was settled by the last pass
  // (capacity release, staging progress and order changes run full passes). A commit
  // changes the staging queue, and so others' TTR: then the full pass.
  if (evaluating_) {
    again_ = true;
    return;
  }
  if (!eligible(c)) {
    const TimeNs due = next_due_;
    note_due(c);
    if (next_due_ < due && wakeup_) wakeup_();
    return;
  }
  const uint64_t before = stats_.committed;
  attempt(c);
  if (stats_.committed != before) evaluate();
}

void Controller::evaluate() {
  if (evaluating_) {
    again_ = true;
    return;
  }
  collect();
  evaluating_ = true;
  do {
    again_ = false;
    ++stats_.evaluations;
    // Pending retrievals first, in the order they were requested.
    for (size_t i = 0; i < pending_.size(); ++i) {
      Claim* c = find(pending_[i]);
      if (c && c->state == ClaimState::kPlanned) attempt(*c);
    }
    std::erase_if(pending_, [&](ClaimId id) {
      const Claim* c = find(id);
      return !c || c->state != ClaimState::kPlanned;
    });
    // Then the runtime's order; a refused claim does not stop the ones after it.
    for (Claim* c : order_)
      if (c->state == ClaimState::kPlanned && eligible(*c)) attempt(*c);
    // Then claims the runtime has not ordered, oldest first.
    for (auto it = rest_.begin(); it != rest_.end();) {
      Claim& c = claims_.at(it->second);
      ++it;  // attempt() may erase the current entry
      if (eligible(c)) attempt(c);
    }
  } while (again_);
  evaluating_ = false;
  next_due_ = kNever;
  for (const Claim* c : order_) note_due(*c);
  for (const auto& [seq, id] : rest_) note_due(claims_.at(id));
  if (next_due_ != kNever && wakeup_) wakeup_();
  std::vector<ClaimId> notices;
  notices.swap(ready_notices_);
  for (ClaimId id : notices)
    if (observer_) observer_->on_claim_ready(id);
}

int Controller::request_retrieval(ClaimId id, RetrievalOutcome* outcome) {
  Claim* c = find(id);
  if (!c) return -ENOENT;
  if (c->state == ClaimState::kFailed) return c->error;
  if (c->state == ClaimState::kTransferring || c->state == ClaimState::kReleased ||
      c->state == ClaimState::kCancelled)
    return -EINVAL;
  if (!c->retrieval_pending) {
    c->retrieval_pending = true;
    c->timing.retrieval_requested = clock_.now();
    if (c->state == ClaimState::kPlanned) {
      pending_.push_back(id);
      evaluate();
    }
    // Timeliness, once per claim: ready when asked for, or committed but still staging.
    if (c->state == ClaimState::kStageReady) ++stats_.on_time;
    if (c->state == ClaimState::kStaging) ++stats_.late;
  }
  switch (c->state) {
    case ClaimState::kStageReady:
      *outcome = RetrievalOutcome::kReady;
      return 0;
    case ClaimState::kStaging:
      *outcome = RetrievalOutcome::kWait;
      return 0;
    case ClaimState::kOrdinary:
      *outcome = RetrievalOutcome::kOrdinary;
      return 0;
    case ClaimState::kFailed:
      return c->error;
    default:
      return -EINVAL;
  }
}

int Controller::begin_transfer(ClaimId id) {
  Claim* c = find(id);
  if (!c) return -ENOENT;
  if (c->state == ClaimState::kStaging) return -EAGAIN;
  if (c->state != ClaimState::kStageReady) return -EINVAL;
  set_state(*c, ClaimState::kTransferring);
  const TimeNs now = clock_.now();
  c->timing.transfer_begin = now;
  const TimeNs requested = c->timing.retrieval_requested >= 0 ? c->timing.retrieval_requested : now;
  if (config_.policy.policy == CommitPolicy::kTempoRisk && !c->deferred)
    risk_.observe(requested - c->timing.ready);
  TEMPO_PROBE_TRANSFER_BEGIN(id, c->bytes, requested - c->timing.ready);
  return 0;
}

void Controller::release_claim(Claim& c, ClaimState to) {
  const int64_t freed = provider_.release(c.staging);
  set_state(c, to);
  if (to == ClaimState::kReleased) ++stats_.released;
  if (to == ClaimState::kCancelled) ++stats_.cancelled;
  TEMPO_PROBE_CLAIM_RELEASE(c.id, freed, provider_.ledger().bytes());
  if (freed > 0) evaluate();
}

int Controller::end_transfer(ClaimId id) {
  Claim* c = find(id);
  if (!c) return -ENOENT;
  if (c->state != ClaimState::kTransferring) return -EINVAL;
  TEMPO_PROBE_TRANSFER_END(id, c->bytes, clock_.now() - c->timing.transfer_begin);
  release_claim(*c, c->cancel_pending ? ClaimState::kCancelled : ClaimState::kReleased);
  return 0;
}

int Controller::cancel(ClaimId id) {
  Claim* c = find(id);
  if (!c) return -ENOENT;
  if (claim_state_terminal(c->state)) return -EINVAL;
  if (c->cancel_pending) return -EALREADY;
  TEMPO_PROBE_CLAIM_CANCEL(id, static_cast<uint64_t>(c->state));
  switch (c->state) {
    case ClaimState::kPlanned:
      provider_.untrack(c->staging);
      leave_planned(*c);
      set_state(*c, ClaimState::kCancelled);
      ++stats_.cancelled;
      return 0;
    case ClaimState::kStageReady:
      release_claim(*c, ClaimState::kCancelled);
      return 0;
    default:  // staging or transferring: protection holds until that work is done
      c->cancel_pending = true;
      return 0;
  }
}

void Controller::on_claim_ready(ClaimId id) {
  Claim* c = find(id);
  if (!c || c->state != ClaimState::kStaging) return;
  set_state(*c, ClaimState::kStageReady);
  c->timing.ready = clock_.now();
  TEMPO_PROBE_CLAIM_READY(id, c->bytes);
  if (c->cancel_pending) {
    release_claim(*c, ClaimState::kCancelled);
    return;
  }
  if (observer_) observer_->on_claim_ready(id);
}

void Controller::on_claim_failed(ClaimId id, int error) {
  Claim* c = find(id);
  if (!c || c->state != ClaimState::kStaging) return;
  c->error = error;
  ++stats_.failovers;
  if (c->cancel_pending) {
    release_claim(*c, ClaimState::kCancelled);
    return;
  }
  release_claim(*c, ClaimState::kOrdinary);
  ++stats_.ordinary;
  TEMPO_PROBE_CLAIM_ORDINARY(id, c->bytes);
  if (observer_) observer_->on_claim_ordinary(id);
}

void Controller::on_claim_progress(ClaimId id) {
  const Claim* c = find(id);
  if (c && c->state == ClaimState::kStaging && !c->cancel_pending && observer_)
    observer_->on_claim_progress(id);
}

void Controller::on_staging_progress(bool /*capacity_freed*/) { evaluate(); }

std::optional<TimeNs> Controller::laxity(ClaimId id, TimeNs at) {
  Claim* c = find(id);
  if (!c || c->state != ClaimState::kPlanned) return std::nullopt;
  return ttu_at(*c, at) - provider_.lead_ttr(c->staging, ttr_mode()).value_or(0);
}

int Controller::readiness(ClaimId id, RetrievalOutcome* outcome) const {
  const Claim* c = claim(id);
  if (c == nullptr) return -ENOENT;
  switch (c->state) {
    case ClaimState::kStageReady:
    case ClaimState::kTransferring:
      *outcome = RetrievalOutcome::kReady;
      return 0;
    case ClaimState::kOrdinary:
      *outcome = RetrievalOutcome::kOrdinary;
      return 0;
    case ClaimState::kFailed:
      return c->error < 0 ? c->error : -EIO;
    case ClaimState::kCancelled:
    case ClaimState::kReleased:
      return -ECANCELED;
    case ClaimState::kPlanned:
    case ClaimState::kStaging:
      break;
  }
  return -EAGAIN;
}

ControllerStats Controller::stats() const { return stats_; }

}  // namespace tempo

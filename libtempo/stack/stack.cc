#include "stack/stack.h"

#include <algorithm>
#include <cerrno>
#include <stdexcept>

namespace tempo {

Stack::Stack(Scheduler& scheduler, const Clock& clock, Device& device, const StackConfig& config)
    : clock_(clock),
      device_(device),
      provider_(device, clock, config.provider),
      controller_(provider_, clock, config.controller),
      tick_(scheduler, controller_) {
  if (config.controller.tick_ns <= 0)
    throw std::invalid_argument("the controller tick must be positive");
  controller_.set_observer(this);
}

Stack::~Stack() { controller_.set_observer(nullptr); }

void Stack::on_claim_ready(ClaimId id) {
  if (observer_) observer_->on_claim_ready(id);
}

void Stack::on_claim_ordinary(ClaimId id) {
  if (observer_) observer_->on_claim_ordinary(id);
}

void Stack::on_claim_progress(ClaimId id) {
  if (observer_) observer_->on_claim_progress(id);
}

int Stack::report(const Manifest& manifest, TimeNs ttu, ClaimId* id, const TtuQuantiles* spread,
                  uint32_t group) {
  return controller_.report(manifest, ttu, id, spread, group);
}

int Stack::revise(ClaimId id, TimeNs ttu, const TtuQuantiles* spread) {
  return controller_.revise(id, ttu, spread);
}

int Stack::set_layers(ClaimId id, uint32_t groups, TimeNs per_group_ns) {
  return controller_.set_layers(id, groups, per_group_ns);
}

int Stack::update_order(std::span<const ClaimId> order) { return controller_.update_order(order); }

int Stack::update_orders(std::span<const std::span<const ClaimId>> orders) {
  return controller_.update_orders(orders);
}

int Stack::request_retrieval(ClaimId id, RetrievalOutcome* outcome) {
  return controller_.request_retrieval(id, outcome);
}

int Stack::begin_transfer(ClaimId id) { return controller_.begin_transfer(id); }

int Stack::end_transfer(ClaimId id) { return controller_.end_transfer(id); }

int Stack::cancel(ClaimId id) { return controller_.cancel(id); }

int Stack::readiness(ClaimId id, RetrievalOutcome* outcome) const {
  return controller_.readiness(id, outcome);
}

ClaimView Stack::view(const Claim& c) {
  ClaimView v;
  v.id = c.id;
  v.state = c.state;
  v.error = c.error;
  v.bytes = c.bytes;
  v.objects = c.objects;
  v.deferrals = c.deferrals;
  v.cancel_pending = c.cancel_pending;
  v.group = c.group;
  v.request = c.request;
  v.never_fits = c.bytes > provider_.ledger().budget();
  // An ended claim's TTU stops where it ended.
  const TimeNs at = c.timing.ended >= 0 ? c.timing.ended : clock_.now();
  v.ttu = Controller::ttu_at(c, at);  // one clock read: TTU, laxity and TTR agree
  v.timing = c.timing;
  if (c.state == ClaimState::kPlanned) {
    v.laxity = controller_.laxity(c.id, at);
    if (v.laxity) v.ttr = v.ttu - *v.laxity;
  } else if (c.state == ClaimState::kStaging) {
    v.ttr = provider_.ttr(c.staging, TtrMode::kStateAware);
  } else if (c.state == ClaimState::kStageReady || c.state == ClaimState::kTransferring) {
    v.ttr = 0;
  }
  std::vector<ObjectKey> keys = c.keys;
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (ObjectKey k : keys)
    if (device_.residency(k) == Residency::kResident)
      v.resident_bytes += static_cast<uint64_t>(std::max<int64_t>(device_.object_size(k), 0));
  return v;
}

int Stack::query(ClaimId id, ClaimView* out) {
  const Claim* c = controller_.claim(id);
  if (c == nullptr) return -ENOENT;
  *out = view(*c);
  return 0;
}

int Stack::ready_objects(ClaimId id, std::vector<uint8_t>* out) const {
  const Claim* c = controller_.claim(id);
  if (c == nullptr) return -ENOENT;
  const bool all = c->state == ClaimState::kStageReady || c->state == ClaimState::kTransferring;
  out->assign(c->keys.size(), all ? 1 : 0);
  if (c->state == ClaimState::kStaging)
    for (size_t i = 0; i < c->keys.size(); ++i) (*out)[i] = provider_.protects(c->keys[i]);
  return 0;
}

std::vector<ClaimView> Stack::list(ClaimId after, size_t max) {
  std::vector<const Claim*> page;
  controller_.for_each_claim([&](const Claim& c) { page.push_back(&c); }, after, max);
  std::vector<ClaimView> out;
  out.reserve(page.size());
  for (const Claim* c : page) out.push_back(view(*c));
  return out;
}

size_t Stack::cancel_live() {
  std::vector<ClaimId> live;
  controller_.for_each_claim([&](const Claim& c) {
    if (!claim_state_terminal(c.state)) live.push_back(c.id);
  });
  for (ClaimId id : live) controller_.cancel(id);
  return live.size();
}

StackStats Stack::stats() const {
  StackStats s;
  s.now = clock_.now();
  const DeviceInfo info = device_.info();
  s.device = info.kind;
  s.controller = controller_.stats();
  s.provider = provider_.stats();
  s.device_stats = device_.stats();
  s.fast_tier_capacity_bytes = info.capacity_bytes;
  s.held_claims = controller_.held_claims();
  return s;
}

int Stack::extents(ClaimId id, std::vector<std::span<const std::byte>>* out) const {
  const Claim* c = controller_.claim(id);
  if (c == nullptr) return -ENOENT;
  if (c->state != ClaimState::kTransferring) return -EINVAL;
  out->clear();
  std::vector<std::span<const std::byte>> ext;
  // The provider holds the pins of a transferring claim: extents stay valid until
  // end_transfer().
  for (ObjectKey k : c->keys) {
    if (const int r = device_.resident_extents(k, &ext); r < 0) return r;
    out->insert(out->end(), ext.begin(), ext.end());
  }
  return 0;
}

int Stack::ordinary_read(ClaimId id, std::function<void(int)> done) {
  std::vector<ObjectKey> keys;
  if (const int r = controller_.take_ordinary_read(id, &keys); r != 0) return r;
  return device_.demand_read(keys, std::move(done));
}

}  // namespace tempo

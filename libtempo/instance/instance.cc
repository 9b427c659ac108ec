#include "instance/instance.h"

#include <algorithm>
#include <cerrno>
#include <memory>

namespace tempo {

int Instance::sim_add_objects(std::span<const KvObject> /*objects*/) { return -EOPNOTSUPP; }
int Instance::sim_advance(TimeNs /*ns*/) { return -EOPNOTSUPP; }
int Instance::store_put(ObjectKey /*key*/, std::span<const std::byte> /*data*/) {
  return -EOPNOTSUPP;
}

void ControllerInstance::attach(Controller& controller, Provider& provider, Device& device,
                                const Clock& clock) {
  controller_ = &controller;
  provider_ = &provider;
  device_ = &device;
  clock_ = &clock;
  controller.set_observer(this);
}

void ControllerInstance::on_claim_ready(ClaimId) { notify(); }
void ControllerInstance::on_claim_ordinary(ClaimId) { notify(); }

TimeNs ControllerInstance::now() {
  std::lock_guard lock(mu_);
  return clock_->now();
}

int ControllerInstance::tick() {
  std::lock_guard lock(mu_);
  controller_->tick();
  // Manifests of claims whose bytes will not be read any more go with the tick.
  for (auto it = manifests_.begin(); it != manifests_.end();) {
    const Claim* c = controller_->claim(it->first);
    const bool gone =
        c == nullptr || (claim_state_terminal(c->state) && c->state != ClaimState::kOrdinary);
    it = gone ? manifests_.erase(it) : std::next(it);
  }
  notify();
  return 0;
}

InstanceStats ControllerInstance::stats() {
  std::lock_guard lock(mu_);
  InstanceStats s;
  s.now = clock_->now();
  s.device = std::string(device_kind());
  s.controller = controller_->stats();
  s.provider = provider_->stats();
  s.device_stats = device_->stats();
  s.fast_tier_capacity_bytes = device_->info().capacity_bytes;
  return s;
}

int ControllerInstance::report(const Manifest& manifest, TimeNs ttu, ClaimId* id) {
  std::lock_guard lock(mu_);
  const int r = controller_->report(manifest, ttu, id);
  if (r == 0) {
    std::vector<ObjectKey>& keys = manifests_[*id];
    for (const KvObject& o : manifest) keys.push_back(o.key);
  }
  return r;
}

int ControllerInstance::revise(ClaimId id, TimeNs ttu) {
  std::lock_guard lock(mu_);
  return controller_->revise(id, ttu);
}

int ControllerInstance::update_order(std::span<const ClaimId> order) {
  std::lock_guard lock(mu_);
  return controller_->update_order(order);
}

int ControllerInstance::request_retrieval(ClaimId id, RetrievalOutcome* outcome) {
  std::lock_guard lock(mu_);
  return controller_->request_retrieval(id, outcome);
}

int ControllerInstance::begin_transfer(ClaimId id) {
  std::lock_guard lock(mu_);
  return controller_->begin_transfer(id);
}

int ControllerInstance::end_transfer(ClaimId id) {
  std::lock_guard lock(mu_);
  const int r = controller_->end_transfer(id);
  if (r == 0) manifests_.erase(id);
  notify();
  return r;
}

int ControllerInstance::cancel(ClaimId id) {
  std::lock_guard lock(mu_);
  const int r = controller_->cancel(id);
  notify();
  return r;
}

ClaimSnapshot ControllerInstance::snapshot_locked(const Claim& c) {
  ClaimSnapshot s;
  s.id = c.id;
  s.state = c.state;
  s.error = c.error;
  s.bytes = c.bytes;
  s.objects = c.objects;
  s.deferrals = c.deferrals;
  s.ttu = c.ttu - (clock_->now() - c.ttu_at);
  s.timing = c.timing;
  if (c.state == ClaimState::kPlanned) {
    s.laxity = controller_->laxity(c.id);
    if (s.laxity) s.ttr = s.ttu - *s.laxity;
  }
  return s;
}

int ControllerInstance::query(ClaimId id, ClaimSnapshot* out) {
  std::lock_guard lock(mu_);
  const Claim* c = controller_->claim(id);
  if (c == nullptr) return -ENOENT;
  *out = snapshot_locked(*c);
  return 0;
}

std::vector<ClaimSnapshot> ControllerInstance::claims() {
  std::lock_guard lock(mu_);
  std::vector<const Claim*> all;
  controller_->for_each_claim([&](const Claim& c) { all.push_back(&c); });
  std::vector<ClaimSnapshot> out;
  out.reserve(all.size());
  for (const Claim* c : all) out.push_back(snapshot_locked(*c));
  std::sort(out.begin(), out.end(),
            [](const ClaimSnapshot& a, const ClaimSnapshot& b) { return a.id < b.id; });
  return out;
}

size_t ControllerInstance::cancel_live() {
  std::lock_guard lock(mu_);
  std::vector<ClaimId> live;
  controller_->for_each_claim([&](const Claim& c) {
    if (!claim_state_terminal(c.state)) live.push_back(c.id);
  });
  for (ClaimId id : live) controller_->cancel(id);
  notify();
  return live.size();
}

int ControllerInstance::wait_ready(ClaimId id, TimeNs timeout, RetrievalOutcome* outcome) {
  if (timeout < 0) return -EINVAL;
  std::unique_lock lock(mu_);
  if (timeout > kMaxTimeNs - clock_->now()) return -EOVERFLOW;
  const TimeNs deadline = clock_->now() + timeout;
  while (true) {
    const int r = controller_->readiness(id, outcome);
    if (r != -EAGAIN) return r;
    if (clock_->now() >= deadline || !advance_locked(lock, deadline)) {
      const int last = controller_->readiness(id, outcome);
      return last != -EAGAIN ? last : -ETIMEDOUT;
    }
  }
}

int ControllerInstance::ordinary_read(ClaimId id) {
  std::unique_lock lock(mu_);
  const Claim* c = controller_->claim(id);
  auto m = manifests_.find(id);
  if (c == nullptr) return -ENOENT;
  if (c->state != ClaimState::kOrdinary || m == manifests_.end()) return -EINVAL;
  struct Result {
    bool done = false;
    int status = 0;
  };
  // Shared with the callback: a read outliving a timed-out caller still has somewhere to land.
  auto result = std::make_shared<Result>();
  const int r = device_->demand_read(m->second, [result](int status) {
    result->done = true;
    result->status = status;
  });
  if (r < 0) return r;
  manifests_.erase(m);
  const TimeNs deadline = clock_->now() + 60 * kNsPerSec;
  while (!result->done) {
    if (clock_->now() >= deadline || !advance_locked(lock, deadline))
      return result->done ? result->status : -ETIMEDOUT;
  }
  return result->status;
}

std::vector<ObjectKey> ControllerInstance::manifest_locked(ClaimId id) const {
  auto m = manifests_.find(id);
  return m == manifests_.end() ? std::vector<ObjectKey>{} : m->second;
}

}  // namespace tempo

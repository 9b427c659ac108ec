// The Stack: everything stateful for one device. It owns the provider, the controller (and
// with it the claim book: one record per claim, manifest keys and ordinary-read state
// included), the periodic tick, and runs on a Driver's Scheduler over a Device it is
// given. Its methods are the claim surface every user goes through: the C ABI context
// (stack/context.h), tempo-replay's engine, tempoctl through the control socket, the tests.
//
// Not thread-safe: call it where its driver runs it (Driver::call, or callbacks of the
// driver). The controller(), provider() and device() accessors are for tests and invariant
// checks; an engine needs only the claim surface.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "controller/controller.h"
#include "controller/periodic_tick.h"
#include "core/clock.h"
#include "core/scheduler.h"
#include "device/device.h"
#include "provider/provider.h"

namespace tempo {

struct StackConfig {
  ProviderConfig provider;
  ControllerConfig controller;
  friend bool operator==(const StackConfig&, const StackConfig&) = default;
};

// One claim as a query, a listing or the control socket reports it.
struct ClaimView {
  ClaimId id = 0;
  ClaimState state = ClaimState::kPlanned;
  int error = 0;
  uint64_t bytes = 0;
  uint32_t objects = 0;
  uint32_t deferrals = 0;
  bool cancel_pending = false;
  bool never_fits = false;  // its bytes exceed the protected budget: it can never commit
  uint32_t group = 0;       // its share group (tempod's engine)
  std::string request;      // the engine's request id, "" when not labelled
  // Latest TTU, adjusted for the time since it was given (up to the claim's end).
  TimeNs ttu = 0;
  // PLANNED: if committed now; STAGING: until stage-ready; 0 when STAGE_READY/TRANSFERRING.
  std::optional<TimeNs> ttr;
  std::optional<TimeNs> laxity;  // PLANNED only: ttu - ttr
  // Bytes of its distinct objects in the fast tier now (0 once its manifest is given to its
  // ordinary read).
  uint64_t resident_bytes = 0;
  ClaimTiming timing;
};

// Counters of the whole stack at one instant.
struct StackStats {
  TimeNs now = 0;
  std::string device;
  ControllerStats controller;
  ProviderStats provider;
  DeviceStats device_stats;
  uint64_t fast_tier_capacity_bytes = 0;
  uint64_t held_claims = 0;  // claim records held (live + ended within retention)
};

// What an in-process engine hears from the stack, on the driver's thread.
class StackObserver {
 public:
  virtual ~StackObserver() = default;
  virtual void on_claim_ready(ClaimId id) = 0;
  // The claim takes the ordinary path (its committed staging failed).
  virtual void on_claim_ordinary(ClaimId id) = 0;
  // One more of a committed claim's objects is resident and protected, the claim not yet
  // stage-ready (ready_objects() says which): a layer-wise engine starts a group on it.
  virtual void on_claim_progress(ClaimId /*id*/) {}
};

class Stack final : private ControllerObserver {
 public:
  // `scheduler`, `clock` and `device` outlive the stack. Throws std::invalid_argument for
  // an invalid configuration (a tick that is not positive).
  Stack(Scheduler& scheduler, const Clock& clock, Device& device, const StackConfig& config);
  ~Stack() override;
  Stack(const Stack&) = delete;
  Stack& operator=(const Stack&) = delete;

  void set_observer(StackObserver* observer) { observer_ = observer; }
  TimeNs now() const { return clock_.now(); }

  // The controller's operations (controller/controller.h), same errors.
  int report(const Manifest& manifest, TimeNs ttu, ClaimId* id,
             const TtuQuantiles* spread = nullptr, uint32_t group = 0);
  int revise(ClaimId id, TimeNs ttu, const TtuQuantiles* spread = nullptr);
  int set_layers(ClaimId id, uint32_t groups, TimeNs per_group_ns);
  int update_order(std::span<const ClaimId> order);
  int update_orders(std::span<const std::span<const ClaimId>> orders);
  int request_retrieval(ClaimId id, RetrievalOutcome* outcome);
  int begin_transfer(ClaimId id);
  int end_transfer(ClaimId id);
  int cancel(ClaimId id);
  int label(ClaimId id, std::string request) { return controller_.label(id, std::move(request)); }
  // Where the claim's retrieval stands (Controller::readiness): what waiters poll.
  int readiness(ClaimId id, RetrievalOutcome* outcome) const;
  // -ENOENT unknown (or erased after its retention window).
  int query(ClaimId id, ClaimView* out);
  // Per object of the claim's manifest, in order: 1 if it is resident and protected for the
  // claim (committed and not ended), else 0. -ENOENT unknown.
  int ready_objects(ClaimId id, std::vector<uint8_t>* out) const;
  // Up to `max` claims with ids above `after`, in id order (a page of a listing).
  std::vector<ClaimView> list(ClaimId after, size_t max);
  // Cancels every live claim (the context is closing); returns how many.
  size_t cancel_live();
  // Runs the controller's periodic re-evaluation now.
  void tick() { controller_.tick(); }
  StackStats stats() const;

  // The fast-tier extents (pointer, length) of a TRANSFERRING claim's objects in manifest
  // order, valid until end_transfer(). -ENOENT unknown, -EINVAL not transferring,
  // -EOPNOTSUPP where the fast tier holds no bytes (sim).
  int extents(ClaimId id, std::vector<std::span<const std::byte>>* out) const;
  // Starts the ordinary read of an ORDINARY claim's objects through the device's demand
  // path; `done(status)` runs on the driver once they are read. -ENOENT unknown, -EINVAL not
  // ORDINARY or read already, or the device's refusal.
  int ordinary_read(ClaimId id, std::function<void(int)> done);
  // Size of an object the SSD tier holds (a prefix lookup), -ENOENT if it holds none.
  int64_t object_size(ObjectKey key) const { return device_.object_size(key); }

  Controller& controller() { return controller_; }
  const Controller& controller() const { return controller_; }
  Provider& provider() { return provider_; }
  Device& device() { return device_; }

 private:
  ClaimView view(const Claim& c);
  void on_claim_ready(ClaimId id) override;
  void on_claim_ordinary(ClaimId id) override;
  void on_claim_progress(ClaimId id) override;

  const Clock& clock_;
  Device& device_;
  Provider provider_;
  Controller controller_;
  PeriodicTick tick_;
  StackObserver* observer_ = nullptr;
};

}  // namespace tempo

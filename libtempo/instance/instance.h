// One running TempoKV stack behind the C ABI: a device, the provider and the controller on
// the device's clock, with the operations an engine calls. Every operation is thread-safe.
//
// ControllerInstance serialises the stack behind one mutex; its implementations are
// SimInstance (virtual time the caller moves: waiting runs the clock forward) and
// UringInstance (wall clock, an event-loop thread that takes the same mutex to deliver the
// device's completions and the controller's periodic tick).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/settings.h"
#include "controller/controller.h"
#include "core/clock.h"
#include "device/device.h"
#include "provider/provider.h"

namespace tempo {

// One claim as a query or the control socket reports it.
struct ClaimSnapshot {
  ClaimId id = 0;
  ClaimState state = ClaimState::kPlanned;
  int error = 0;
  uint64_t bytes = 0;
  uint32_t objects = 0;
  uint32_t deferrals = 0;
  TimeNs ttu = 0;                // latest TTU, adjusted for the time since it was given
  std::optional<TimeNs> ttr;     // PLANNED only: under the policy's TTR
  std::optional<TimeNs> laxity;  // PLANNED only: ttu - ttr
  ClaimTiming timing;
};

// Counters of the whole stack at one instant.
struct InstanceStats {
  TimeNs now = 0;
  std::string device;
  ControllerStats controller;
  ProviderStats provider;
  DeviceStats device_stats;
  uint64_t fast_tier_capacity_bytes = 0;
};

class Instance {
 public:
  virtual ~Instance() = default;

  virtual std::string_view device_kind() const = 0;
  virtual TimeNs now() = 0;
  // Runs the controller's periodic re-evaluation now.
  virtual int tick() = 0;
  virtual InstanceStats stats() = 0;

  // The controller's operations (controller/controller.h), same errors.
  virtual int report(const Manifest& manifest, TimeNs ttu, ClaimId* id) = 0;
  virtual int revise(ClaimId id, TimeNs ttu) = 0;
  virtual int update_order(std::span<const ClaimId> order) = 0;
  virtual int request_retrieval(ClaimId id, RetrievalOutcome* outcome) = 0;
  virtual int begin_transfer(ClaimId id) = 0;
  virtual int end_transfer(ClaimId id) = 0;
  virtual int cancel(ClaimId id) = 0;
  virtual int query(ClaimId id, ClaimSnapshot* out) = 0;
  virtual std::vector<ClaimSnapshot> claims() = 0;
  // Cancels every live claim (the context is closing); returns how many.
  virtual size_t cancel_live() = 0;

  // Waits up to `timeout` for a claim to be stage-ready (kReady) or to take the ordinary
  // path (kOrdinary). -ETIMEDOUT, -ENOENT, -ECANCELED (released or cancelled), or the
  // claim's error (FAILED); -EOVERFLOW when now + timeout is past kMaxTimeNs. On sim the
  // wait runs virtual time forward.
  virtual int wait_ready(ClaimId id, TimeNs timeout, RetrievalOutcome* outcome) = 0;
  // The fast-tier extents (pointer, length) of a TRANSFERRING claim's objects in manifest
  // order, valid until end_transfer(). -EINVAL not transferring, -EOPNOTSUPP without bytes.
  virtual int extents(ClaimId id, std::vector<std::span<const std::byte>>* out) = 0;
  // Reads an ORDINARY claim's objects through the device's demand path and returns when
  // they are read (0 or the read's error). -EINVAL when the claim is not ORDINARY.
  virtual int ordinary_read(ClaimId id) = 0;

  // The sim device only: objects on the SSD tier, and virtual time (-EOVERFLOW past
  // kMaxTimeNs). -EOPNOTSUPP elsewhere.
  virtual int sim_add_objects(std::span<const KvObject> objects);
  virtual int sim_advance(TimeNs ns);
  // The uring device only: writes an object into the store. -EOPNOTSUPP elsewhere.
  virtual int store_put(ObjectKey key, std::span<const std::byte> data);
};

// The shared implementation: the controller, provider and device of a subclass, every call
// under one mutex. Subclasses say how waiting advances (virtual or wall time).
class ControllerInstance : public Instance, private ControllerObserver {
 public:
  TimeNs now() override;
  int tick() override;
  InstanceStats stats() override;
  int report(const Manifest& manifest, TimeNs ttu, ClaimId* id) override;
  int revise(ClaimId id, TimeNs ttu) override;
  int update_order(std::span<const ClaimId> order) override;
  int request_retrieval(ClaimId id, RetrievalOutcome* outcome) override;
  int begin_transfer(ClaimId id) override;
  int end_transfer(ClaimId id) override;
  int cancel(ClaimId id) override;
  int query(ClaimId id, ClaimSnapshot* out) override;
  std::vector<ClaimSnapshot> claims() override;
  size_t cancel_live() override;
  int wait_ready(ClaimId id, TimeNs timeout, RetrievalOutcome* outcome) override;
  int ordinary_read(ClaimId id) override;

 protected:
  // Call attach() once the stack exists, from the subclass's constructor.
  void attach(Controller& controller, Provider& provider, Device& device, const Clock& clock);
  // Moves time on while the caller waits, mutex held: virtual time runs one event (false
  // when there is none before `deadline`); wall time waits on changed_ until notified or
  // the deadline.
  virtual bool advance_locked(std::unique_lock<std::mutex>& lock, TimeNs deadline) = 0;
  // The claim's manifest keys (kept from report until the claim's bytes are no longer read).
  std::vector<ObjectKey> manifest_locked(ClaimId id) const;
  ClaimSnapshot snapshot_locked(const Claim& c);
  void notify() { changed_.notify_all(); }

  std::mutex mu_;
  std::condition_variable changed_;  // a claim's outcome or the device's state changed

 private:
  void on_claim_ready(ClaimId id) override;
  void on_claim_ordinary(ClaimId id) override;

  Controller* controller_ = nullptr;
  Provider* provider_ = nullptr;
  Device* device_ = nullptr;
  const Clock* clock_ = nullptr;
  std::unordered_map<ClaimId, std::vector<ObjectKey>> manifests_;  // guarded by mu_
};

// Builds the instance `settings` describe. On failure returns nullptr, a negative errno in
// *err and a message in *error.
std::unique_ptr<Instance> make_instance(const Settings& settings, int* err, std::string* error);

}  // namespace tempo

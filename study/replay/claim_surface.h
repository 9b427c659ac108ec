// The claim surface an emulated engine drives (serving_engine.cc): the Stack's claim
// operations, as the engine's process reaches them. Two implementations:
//   StackClaims  (here): a Stack in the same process (the sim and uring replays);
//   DaemonClaims (daemon_engines.cc): a tempod through libtempo's DaemonClient, the engine
//                one process of several sharing the daemon's device and budget.
// Same arguments and return codes as Stack's (stack/stack.h). Called on the engine's driver;
// the observer hears readiness there too.
#pragma once

#include <cerrno>
#include <functional>
#include <span>
#include <vector>

#include "stack/stack.h"

namespace tempo {

class ClaimSurface {
 public:
  virtual ~ClaimSurface() = default;
  virtual void set_observer(StackObserver* observer) = 0;
  // A prefix lookup: how many of `keys`, from the first, the SSD tier holds.
  virtual size_t held_prefix(std::span<const ObjectKey> keys) = 0;
  virtual int report(const Manifest& manifest, TimeNs ttu, ClaimId* id,
                     const TtuQuantiles* spread) = 0;
  virtual int revise(ClaimId id, TimeNs ttu, const TtuQuantiles* spread) = 0;
  // The waiting queues of the engines on this surface, one each (Controller::update_orders).
  virtual int update_orders(std::span<const std::span<const ClaimId>> orders) = 0;
  // A WAIT outcome is followed by the observer's on_claim_ready or on_claim_ordinary.
  virtual int request_retrieval(ClaimId id, RetrievalOutcome* outcome) = 0;
  virtual int begin_transfer(ClaimId id) = 0;
  virtual int end_transfer(ClaimId id) = 0;
  virtual int query(ClaimId id, ClaimView* out) = 0;
  virtual int ordinary_read(ClaimId id, std::function<void(int)> done) = 0;
  // Layer-wise claims (the layer-wise engine): Stack::set_layers, and which of a claim's
  // objects are ready (Stack::ready_objects; the observer's on_claim_progress as they land).
  // -EOPNOTSUPP where the surface does not carry them (a daemon: no per-object readiness).
  virtual int set_layers(ClaimId /*id*/, uint32_t /*groups*/, TimeNs /*per_group_ns*/) {
    return -EOPNOTSUPP;
  }
  virtual int ready_objects(ClaimId /*id*/, std::vector<uint8_t>* /*out*/) { return -EOPNOTSUPP; }
};

class StackClaims final : public ClaimSurface {
 public:
  explicit StackClaims(Stack& stack) : s_(stack) {}
  void set_observer(StackObserver* observer) override { s_.set_observer(observer); }
  size_t held_prefix(std::span<const ObjectKey> keys) override {
    size_t n = 0;
    while (n < keys.size() && s_.object_size(keys[n]) >= 0) ++n;
    return n;
  }
  int report(const Manifest& m, TimeNs ttu, ClaimId* id, const TtuQuantiles* spread) override {
    return s_.report(m, ttu, id, spread);
  }
  int revise(ClaimId id, TimeNs ttu, const TtuQuantiles* spread) override {
    return s_.revise(id, ttu, spread);
  }
  int update_orders(std::span<const std::span<const ClaimId>> orders) override {
    return s_.update_orders(orders);
  }
  int request_retrieval(ClaimId id, RetrievalOutcome* outcome) override {
    return s_.request_retrieval(id, outcome);
  }
  int begin_transfer(ClaimId id) override { return s_.begin_transfer(id); }
  int end_transfer(ClaimId id) override { return s_.end_transfer(id); }
  int query(ClaimId id, ClaimView* out) override { return s_.query(id, out); }
  int ordinary_read(ClaimId id, std::function<void(int)> done) override {
    return s_.ordinary_read(id, std::move(done));
  }
  int set_layers(ClaimId id, uint32_t groups, TimeNs per_group_ns) override {
    return s_.set_layers(id, groups, per_group_ns);
  }
  int ready_objects(ClaimId id, std::vector<uint8_t>* out) override {
    return s_.ready_objects(id, out);
  }

 private:
  Stack& s_;
};

}  // namespace tempo

// The claim surface's in-process back end: a Stack on its driver. Every operation runs on
// the driver (Driver::call: posted from another thread, at once on the driver itself), so
// the C ABI's threads and an engine running on the driver use it alike.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "surface/claim_surface.h"

namespace tempo {

class ControlServer;

class StackSurface final : public ClaimSurface {
 public:
  // A stack the caller runs and keeps (tempo-replay's serving stacks, tests). The device-
  // specific calls (store, sim, kmod) are -EOPNOTSUPP: its owner populates the device.
  StackSurface(Driver& driver, Stack& stack);
  // The stack `settings` describe, in a context of its own (Context::create), with its
  // control socket when `control_socket` is set. 0, or a negative errno with `error`.
  static int open(const Settings& settings, std::unique_ptr<ClaimSurface>* out, std::string* error);
  // Stops the control socket before the context it serves.
  ~StackSurface() override;

  const char* device() const override;
  bool reads_spread() const override;
  int now(TimeNs* out) override;
  int tick() override;
  int stats(tempo_counters* out) override;
  int report(std::span<const KvObject> objects, TimeNs ttu, const TtuQuantiles* spread,
             ClaimId* id) override;
  int revise(ClaimId id, TimeNs ttu, const TtuQuantiles* spread) override;
  int revise_all(std::span<const Revision> revisions, std::vector<int>* statuses) override;
  int set_layers(ClaimId id, uint32_t groups, TimeNs per_group_ns) override;
  int update_orders(std::span<const std::span<const ClaimId>> orders) override;
  int request_retrieval(ClaimId id, RetrievalOutcome* outcome) override;
  int query(ClaimId id, ClaimView* out) override;
  int label(ClaimId id, const std::string& request) override;
  int transfer_begin(ClaimId id) override;
  int transfer_end(ClaimId id) override;
  int cancel(ClaimId id) override;
  int wait_ready(ClaimId id, TimeNs timeout, RetrievalOutcome* outcome) override;
  int extents(ClaimId id, std::vector<tempo_extent>* out) override;
  int ordinary_read(ClaimId id) override;
  int ready_objects(ClaimId id, std::vector<uint8_t>* out) override;
  void observe(StackObserver* observer, Driver& driver) override;
  int ordinary_read_async(ClaimId id, std::function<void(int)> done) override;
  int store_lookup(std::span<const ObjectKey> keys, size_t* prefix) override;
  int store_put(ObjectKey key, std::span<const std::byte> data) override;
  int store_delete(ObjectKey key) override;
  int fast_tier(void** base, uint64_t* bytes) override;
  int kmod_add_objects(std::span<const ObjectPlacement> objects) override;
  int sim_add_objects(std::span<const KvObject> objects) override;
  int sim_advance(TimeNs ns) override;
  size_t cancel_live() override;

  // Runs fn(stack) on the driver: how a test or the fuzzer reads the accounting of the
  // stack behind a C handle (tempo_capi_surface) without a second way in.
  void inspect(const std::function<void(Stack&)>& fn);

 private:
  explicit StackSurface(std::unique_ptr<Context> context);
  // Runs fn(stack) on the driver and returns its result.
  template <typename F>
  auto on_stack(F&& fn) -> decltype(fn(std::declval<Stack&>()));

  std::unique_ptr<Context> context_;  // the one it owns (open()), else null
  std::unique_ptr<ControlServer> control_;
  Driver& driver_;
  Stack& stack_;
  std::string device_;
};

}  // namespace tempo

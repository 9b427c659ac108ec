// The claim surface's tempod back end: every operation a request of the tempod protocol
// (client/tempod_proto.h) over one DaemonClient connection. For an engine on a driver of
// its own (observe()), readiness after a WAIT and the ordinary read are waited for on a
// few threads of the surface's and handed to the observer on that driver.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client/daemon_client.h"
#include "surface/claim_surface.h"

namespace tempo {

class DaemonSurface final : public ClaimSurface {
 public:
  // Connects to the tempod at `socket` as `engine` ("": named by the pid). 0, or a
  // negative errno with `error` naming the socket and what failed.
  static int open(const std::string& socket, const std::string& engine,
                  std::unique_ptr<ClaimSurface>* out, std::string* error);
  // Ends the waits first: none hands an event to an observer after the surface is gone.
  ~DaemonSurface() override;

  const char* device() const override { return client_->device(); }
  bool reads_spread() const override { return client_->reads_spread(); }
  int now(TimeNs* out) override { return client_->now(out); }
  int tick() override { return client_->tick(); }
  int stats(tempo_counters* out) override { return client_->stats(out); }
  int report(std::span<const KvObject> objects, TimeNs ttu, const TtuQuantiles* spread,
             ClaimId* id) override;
  int revise(ClaimId id, TimeNs ttu, const TtuQuantiles* spread) override;
  int revise_all(std::span<const Revision> revisions, std::vector<int>* statuses) override;
  int set_layers(ClaimId id, uint32_t groups, TimeNs per_group_ns) override {
    return client_->set_layers(id, groups, per_group_ns);
  }
  int update_orders(std::span<const std::span<const ClaimId>> orders) override;
  int request_retrieval(ClaimId id, RetrievalOutcome* outcome) override;
  int query(ClaimId id, ClaimView* out) override;
  int label(ClaimId id, const std::string& request) override { return client_->label(id, request); }
  int transfer_begin(ClaimId id) override { return client_->transfer_begin(id); }
  int transfer_end(ClaimId id) override { return client_->transfer_end(id); }
  int cancel(ClaimId id) override { return client_->cancel(id); }
  int wait_ready(ClaimId id, TimeNs timeout, RetrievalOutcome* outcome) override;
  int extents(ClaimId id, std::vector<tempo_extent>* out) override;
  int ordinary_read(ClaimId id) override { return client_->ordinary_read(id); }
  // The daemon reports readiness per claim, not per object.
  int ready_objects(ClaimId, std::vector<uint8_t>*) override { return -EOPNOTSUPP; }
  void observe(StackObserver* observer, Driver& driver) override;
  int ordinary_read_async(ClaimId id, std::function<void(int)> done) override;
  int store_lookup(std::span<const ObjectKey> keys, size_t* prefix) override {
    return client_->store_lookup(keys.data(), keys.size(), prefix);
  }
  int store_put(ObjectKey key, std::span<const std::byte> data) override {
    return client_->store_put(key, data.data(), data.size());
  }
  int store_delete(ObjectKey key) override { return client_->store_delete(key); }
  int fast_tier(void** base, uint64_t* bytes) override { return client_->fast_tier(base, bytes); }
  int kmod_add_objects(std::span<const ObjectPlacement> objects) override;
  int sim_add_objects(std::span<const KvObject>) override { return -EOPNOTSUPP; }
  int sim_advance(TimeNs) override { return -EOPNOTSUPP; }
  size_t cancel_live() override { return 0; }

 private:
  explicit DaemonSurface(std::unique_ptr<DaemonClient> client) : client_(std::move(client)) {}
  // Runs `job` on a waiter thread (started on first use, at most kWaiters).
  void post(std::function<void()> job);
  void wait_loop();

  std::unique_ptr<DaemonClient> client_;
  StackObserver* observer_ = nullptr;  // set by observe(), read on the observer's driver
  Driver* driver_ = nullptr;

  std::mutex mu_;
  std::condition_variable work_;
  std::deque<std::function<void()>> jobs_;  // guarded by mu_
  bool stopping_ = false;                   // guarded by mu_
  size_t idle_ = 0;                         // guarded by mu_: waiters with nothing to do
  std::vector<std::thread> waiters_;        // guarded by mu_
};

}  // namespace tempo

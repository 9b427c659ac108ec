// The claim surface: the one interface through which everything outside the stack reaches
// claims, the store and the device: the C ABI (and through it the Python package), tempoctl
// and tempo-replay's emulated engines. Two back ends, chosen once where a surface is opened:
//   StackSurface  (stack_surface.h):  a Stack in this process, on its driver;
//   DaemonSurface (daemon_surface.h): a tempod, over its SOCK_SEQPACKET protocol.
// No user asks which one it holds.
//
// Every method returns 0 or a negative errno, the stack's errors (stack/stack.h), plus the
// daemon's -ECONNRESET (daemon gone) and -E2BIG (more than one message holds); nothing
// throws out of it but std::bad_alloc. An operation a back end does not carry returns
// -EOPNOTSUPP. Thread-safe: any thread may call (the in-process back end posts each call to
// its driver; a call made on that driver runs at once).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "config/settings.h"
#include "core/object.h"
#include "runtime/ttu_quantiles.h"
#include "stack/context.h"
#include "stack/stack.h"
#include "tempo/tempo.h"

namespace tempo {

class Driver;

class ClaimSurface {
 public:
  virtual ~ClaimSurface() = default;

  // The device behind the surface ("sim", "uring", "kmod"; a daemon's as it reported it):
  // stable storage while the surface lives.
  virtual const char* device() const = 0;
  // Whether the controller's policy reads TTU spreads (tempo-risk), so the runtime side
  // projects them.
  virtual bool reads_spread() const = 0;
  virtual int now(TimeNs* out) = 0;
  // The controller's periodic re-evaluation, now.
  virtual int tick() = 0;
  virtual int stats(tempo_counters* out) = 0;

  // Claims (Stack's operations).
  virtual int report(std::span<const KvObject> objects, TimeNs ttu, const TtuQuantiles* spread,
                     ClaimId* id) = 0;
  virtual int revise(ClaimId id, TimeNs ttu, const TtuQuantiles* spread) = 0;
  // One revision of a batch: what revise() takes.
  struct Revision {
    ClaimId id;
    TimeNs ttu;
    const TtuQuantiles* spread;  // nullptr: a point
  };
  // The revisions in order, as few round trips as they fit in; statuses[i] is
  // revisions[i]'s. 0, or the round trip's error (none of that message ran).
  virtual int revise_all(std::span<const Revision> revisions, std::vector<int>* statuses) = 0;
  virtual int set_layers(ClaimId id, uint32_t groups, TimeNs per_group_ns) = 0;
  // The waiting queues of the engines on this surface, one each (Stack::update_orders);
  // a daemon client is one engine: exactly one queue there.
  virtual int update_orders(std::span<const std::span<const ClaimId>> orders) = 0;
  virtual int request_retrieval(ClaimId id, RetrievalOutcome* outcome) = 0;
  virtual int query(ClaimId id, ClaimView* out) = 0;
  // Labels a claim with the engine's request id (at most 39 bytes).
  virtual int label(ClaimId id, const std::string& request) = 0;
  virtual int transfer_begin(ClaimId id) = 0;
  virtual int transfer_end(ClaimId id) = 0;
  virtual int cancel(ClaimId id) = 0;
  // Waits up to `timeout` for the claim to be stage-ready or to take the ordinary path
  // (Context::wait_ready).
  virtual int wait_ready(ClaimId id, TimeNs timeout, RetrievalOutcome* outcome) = 0;
  // A TRANSFERRING claim's fast-tier extents in manifest order, readable in this process
  // until transfer_end().
  virtual int extents(ClaimId id, std::vector<tempo_extent>* out) = 0;
  // The ordinary read of an ORDINARY claim, returning once its objects are read.
  virtual int ordinary_read(ClaimId id) = 0;
  // Per object of the claim's manifest, 1 when resident and protected for it
  // (Stack::ready_objects). In process only.
  virtual int ready_objects(ClaimId id, std::vector<uint8_t>* out) = 0;

  // For an engine that runs on a driver of its own (tempo-replay's): `observer` hears on
  // `driver` that a claim whose retrieval answered WAIT is ready or takes the ordinary
  // path (and, in process, each object that lands). The observer and driver outlive the
  // surface's use of them; nullptr stops.
  virtual void observe(StackObserver* observer, Driver& driver) = 0;
  // Starts the ordinary read of an ORDINARY claim; `done(status)` runs on the driver
  // given to observe().
  virtual int ordinary_read_async(ClaimId id, std::function<void(int)> done) = 0;

  // The store (SSD tier): how many of `keys`, from the first, it holds; an idempotent put
  // (store/idempotent_put.h); a delete.
  virtual int store_lookup(std::span<const ObjectKey> keys, size_t* prefix) = 0;
  virtual int store_put(ObjectKey key, std::span<const std::byte> data) = 0;
  virtual int store_delete(ObjectKey key) = 0;
  // The fast tier's memory as this process maps it (uring only).
  virtual int fast_tier(void** base, uint64_t* bytes) = 0;

  // Device-specific: the kmod device's placed objects (Context::kmod_add_objects); the sim
  // device's objects and virtual time (Context::sim_add_objects, sim_advance).
  virtual int kmod_add_objects(std::span<const ObjectPlacement> objects) = 0;
  virtual int sim_add_objects(std::span<const KvObject> objects) = 0;
  virtual int sim_advance(TimeNs ns) = 0;

  // Cancels every live claim of this surface (it is closing); how many there were. A daemon
  // cancels a client's claims when its connection closes: 0 here.
  virtual size_t cancel_live() = 0;
};

// The surface `settings` select: a tempod when `device` is "daemon" (or TEMPO_DAEMON names
// a socket in the environment), else the stack they describe in this process, with its
// control socket when one is set. 0, or a negative errno with `error` saying why.
int open_claim_surface(const Settings& settings, std::unique_ptr<ClaimSurface>* out,
                       std::string* error);

}  // namespace tempo

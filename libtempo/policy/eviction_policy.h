// One small policy surface for choosing what to evict, shared by the fast tier's eviction
// of unprotected objects and by the tiered placement layer (tempo-sim). A policy tracks
// only the entries that are evictable right now: the owner adds an entry when it becomes
// evictable, removes it when it is pinned or evicted, and records every access.
//
// add() means "tracked because it was just referenced" (a fill). Owners that move an entry
// in from elsewhere (a tier demoting into the next one) use add_with_history() so that
// history-keeping policies rank it by what it did before. Owners that evict the entry
// pick_victim() returned call evict() rather than remove(): policies with ghost history
// (arc, adaptive, reuse-frequency-persistent) learn from which evicted ids come back.
// An owner that evicts to make room for a known id asks pick_victim_for(id): ARC's choice
// depends on the incoming id (the paper's REPLACE(x, p)); the others ignore it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/time.h"

namespace tempo {

using BlockId = uint64_t;

struct PolicyStats {
  uint64_t adds = 0;
  uint64_t removes = 0;  // remove() and evict() calls that dropped a tracked entry
  uint64_t accesses = 0;
  uint64_t victims = 0;
  uint64_t evictions = 0;  // the subset of removes that came through evict()
};

// What an entry did before it was added here (kept by an owner that moves entries between
// policies, e.g. tiers). Times are on the same clock as the `now` arguments.
struct AccessHistory {
  uint64_t accesses = 0;    // references since it last entered the owner, this one included
  TimeNs last_access = 0;   // time of the latest reference
  double gap_ewma_ns = -1;  // EWMA of inter-reference gaps; < 0 when unknown
  uint64_t lifetime = 0;    // references ever, across drops (what a perfect LFU counts)
};

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  virtual std::string_view name() const = 0;
  // Starts tracking `id` (not tracked yet) as evictable.
  virtual void add(BlockId id, uint64_t bytes, TimeNs now) = 0;
  // Stops tracking `id`; a no-op if it is not tracked.
  virtual void remove(BlockId id) = 0;
  // A hit on a tracked entry (untracked ids are ignored).
  virtual void record_access(BlockId id, TimeNs now) = 0;
  // The entry to evict next, without removing it; nullopt when nothing is tracked.
  virtual std::optional<BlockId> pick_victim() = 0;
  virtual size_t size() const = 0;
  virtual const PolicyStats& stats() const = 0;

  // Starts tracking `id`, which arrives with history gathered elsewhere; not a reference.
  virtual void add_with_history(BlockId id, uint64_t bytes, TimeNs now, const AccessHistory& h) {
    (void)h;
    add(id, bytes, now);
  }
  // Stops tracking `id` because the owner evicted it; a no-op if it is not tracked.
  virtual void evict(BlockId id) { remove(id); }
  // pick_victim() when the owner evicts to make room for `incoming` (not tracked), which
  // it adds right after the eviction.
  virtual std::optional<BlockId> pick_victim_for(BlockId incoming) {
    (void)incoming;
    return pick_victim();
  }
};

// The policies a fast tier runs for its unprotected objects (the `eviction` setting), in a
// stable order. The study's offline and predictive policies (Belady MIN, ewma, adaptive,
// predicted-reuse) are in study/policies and never in libtempo.so.
std::vector<std::string> eviction_policy_names();
// nullptr for a name not in eviction_policy_names(). `capacity_entries`: entries the owner
// holds when full (0: learnt as the high-water mark of size()); sizes ARC's ghost lists.
std::unique_ptr<EvictionPolicy> make_eviction_policy(std::string_view name,
                                                     size_t capacity_entries = 0);

}  // namespace tempo

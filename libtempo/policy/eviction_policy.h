// One small policy surface for choosing what to evict, shared by the fast tier's eviction
// of unprotected objects and by the tiered placement layer (tempo-sim). A policy tracks
// only the entries that are evictable right now: the owner adds an entry when it becomes
// evictable, removes it when it is pinned or evicted, and records every access.
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
  uint64_t removes = 0;
  uint64_t accesses = 0;
  uint64_t victims = 0;
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
};

// Names accepted by make_eviction_policy (the placement issue adds more).
std::vector<std::string> eviction_policy_names();
// Returns nullptr for an unknown name.
std::unique_ptr<EvictionPolicy> make_eviction_policy(std::string_view name);

}  // namespace tempo

// Reuse frequency (LFU): evicts the entry with the fewest references, the least recently
// touched among equals. Two variants, because they answer different questions:
//  - "reuse-frequency": a count lives only while the entry is tracked (in-cache LFU); an
//    entry that leaves and returns starts again at one reference.
//  - "reuse-frequency-persistent": counts survive remove()/evict() in a ghost table
//    (perfect LFU), so a hot entry squeezed out once comes back ranked by its past.
//    The ghost table grows with the distinct ids seen; meant for simulation.
// add_with_history() ranks an entry moved in from another tier by its carried count: the
// references since it entered the owner, or for the persistent variant its lifetime count
// (an owner such as TieredCache keeps that across drops, so a block dropped from the last
// tier and recomputed returns with its old count + 1, as in a single cache).
#pragma once

#include <set>
#include <unordered_map>

#include "policy/eviction_policy.h"

namespace tempo {

class ReuseFrequencyPolicy final : public EvictionPolicy {
 public:
  explicit ReuseFrequencyPolicy(bool persistent) : persistent_(persistent) {}
  std::string_view name() const override {
    return persistent_ ? "reuse-frequency-persistent" : "reuse-frequency";
  }
  void add(BlockId id, uint64_t bytes, TimeNs now) override;
  void add_with_history(BlockId id, uint64_t bytes, TimeNs now, const AccessHistory& h) override;
  void remove(BlockId id) override;
  void evict(BlockId id) override;
  void record_access(BlockId id, TimeNs now) override;
  std::optional<BlockId> pick_victim() override;
  size_t size() const override { return entries_.size(); }
  const PolicyStats& stats() const override { return stats_; }

 private:
  struct Key {
    uint64_t count;
    uint64_t tick;  // logical time of the latest touch: ties go to the least recent
    BlockId id;
    friend auto operator<=>(const Key&, const Key&) = default;
  };
  void insert(BlockId id, uint64_t count);
  bool erase(BlockId id);

  bool persistent_;
  uint64_t tick_ = 0;
  std::set<Key> order_;
  std::unordered_map<BlockId, Key> entries_;
  std::unordered_map<BlockId, uint64_t> ghost_counts_;  // persistent variant only
  PolicyStats stats_;
};

}  // namespace tempo

// "predicted-reuse" exactly as the placement paper shipped it: the predicted reuse of an
// entry is scored by the logical time of its latest touch, so the lowest predicted reuse
// is the least recently touched entry. That makes it the same policy as lru, decision for
// decision (tests/policy proves it); it is kept only to show that, not to be chosen.
#pragma once

#include <map>
#include <unordered_map>

#include "policy/eviction_policy.h"

namespace tempo {

class PredictedReusePolicy final : public EvictionPolicy {
 public:
  std::string_view name() const override { return "predicted-reuse"; }
  void add(BlockId id, uint64_t bytes, TimeNs now) override;
  void remove(BlockId id) override;
  void evict(BlockId id) override;
  void record_access(BlockId id, TimeNs now) override;
  std::optional<BlockId> pick_victim() override;
  size_t size() const override { return score_.size(); }
  const PolicyStats& stats() const override { return stats_; }

 private:
  bool erase(BlockId id);

  uint64_t tick_ = 0;                            // logical touch clock
  std::map<uint64_t, BlockId> by_score_;         // predicted reuse -> entry
  std::unordered_map<BlockId, uint64_t> score_;  // entry -> predicted reuse
  PolicyStats stats_;
};

}  // namespace tempo

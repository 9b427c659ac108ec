// "adaptive": LeCaR (Vietri et al., HotStorage'18) regret minimisation between two
// experts, recency (LRU) and frequency (LFU). When the experts disagree on the victim, the
// one with the larger weight decides and the victim is remembered in that expert's ghost
// history; when an id in a history is added again, the other expert's weight is raised by
// exp(lambda * d^age) (d = 0.005^(1/capacity), so old mistakes count less) and the weights
// are renormalised. Agreed victims teach nothing and are not remembered.
//
// Why LeCaR rather than W-TinyLFU hill climbing: the placement study finds recency best on
// chat and frequency best on agent and document QA, which are exactly LeCaR's two experts;
// regret needs only ghost ids, which the add/evict interface provides; and W-TinyLFU's
// admission filter must be able to refuse the incoming block, which a demand-fetch tier
// (the block has to be in HBM to be used) cannot do. The choice is the weightier expert
// rather than a random draw, so every run is deterministic and hand-checkable.
#pragma once

#include <list>
#include <set>
#include <unordered_map>

#include "policy/eviction_policy.h"

namespace tempo {

class AdaptivePolicy final : public EvictionPolicy {
 public:
  AdaptivePolicy(size_t capacity_entries, double learning_rate)
      : capacity_(capacity_entries), lambda_(learning_rate) {}
  std::string_view name() const override { return "adaptive"; }
  void add(BlockId id, uint64_t bytes, TimeNs now) override;
  void add_with_history(BlockId id, uint64_t bytes, TimeNs now, const AccessHistory& h) override;
  void remove(BlockId id) override;
  void evict(BlockId id) override;
  void record_access(BlockId id, TimeNs now) override;
  std::optional<BlockId> pick_victim() override;
  size_t size() const override { return entries_.size(); }
  const PolicyStats& stats() const override { return stats_; }
  // The recency expert's weight in [0, 1] (the frequency expert has 1 minus it).
  double recency_weight() const { return w_lru_; }

 private:
  enum class Expert : uint8_t { kRecency, kFrequency, kBoth };
  struct FreqKey {
    uint64_t count;
    uint64_t tick;
    BlockId id;
    friend auto operator<=>(const FreqKey&, const FreqKey&) = default;
  };
  struct Entry {
    std::list<BlockId>::iterator lru_it;
    FreqKey fkey;
  };
  struct Ghost {
    Expert expert;
    uint64_t evicted_at;
    uint64_t count;
    std::list<BlockId>::iterator it;
  };
  void insert(BlockId id, uint64_t count_floor, bool counts_as_reference);
  bool erase(BlockId id);
  size_t capacity() const;

  size_t capacity_;
  size_t high_water_ = 0;
  double lambda_;
  double w_lru_ = 0.5;
  double w_lfu_ = 0.5;
  uint64_t tick_ = 0;
  std::list<BlockId> lru_;  // front = most recent
  std::set<FreqKey> lfu_;
  std::unordered_map<BlockId, Entry> entries_;
  std::list<BlockId> hist_lru_, hist_lfu_;  // front = newest ghost
  std::unordered_map<BlockId, Ghost> ghosts_;
  std::optional<BlockId> picked_;
  Expert picked_by_ = Expert::kBoth;
  PolicyStats stats_;
};

}  // namespace tempo

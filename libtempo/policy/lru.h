// Least recently used: evicts the entry whose last access (or add) is oldest.
#pragma once

#include <list>
#include <unordered_map>

#include "policy/eviction_policy.h"

namespace tempo {

class LruPolicy final : public EvictionPolicy {
 public:
  std::string_view name() const override { return "lru"; }
  void add(BlockId id, uint64_t bytes, TimeNs now) override;
  void remove(BlockId id) override;
  void evict(BlockId id) override;
  void record_access(BlockId id, TimeNs now) override;
  std::optional<BlockId> pick_victim() override;
  size_t size() const override { return index_.size(); }
  const PolicyStats& stats() const override { return stats_; }

 private:
  bool erase(BlockId id);

  std::list<BlockId> order_;  // front = most recent
  std::unordered_map<BlockId, std::list<BlockId>::iterator> index_;
  PolicyStats stats_;
};

}  // namespace tempo

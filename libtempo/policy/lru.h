// Least recently used: evicts the entry whose last access (or add) is oldest.
// An intrusive doubly linked list over a slot array (free slots reused), indexed by
// IdIndex, so add/remove/access allocate nothing once warm.
#pragma once

#include <vector>

#include "policy/eviction_policy.h"
#include "policy/id_index.h"

namespace tempo {

class LruPolicy final : public EvictionPolicy {
 public:
  std::string_view name() const override { return "lru"; }
  void add(BlockId id, uint64_t bytes, TimeNs now) override;
  void remove(BlockId id) override;
  void evict(BlockId id) override;
  void record_access(BlockId id, TimeNs now) override;
  std::optional<BlockId> pick_victim() override;
  size_t size() const override { return size_; }
  const PolicyStats& stats() const override { return stats_; }

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  struct Node {
    BlockId id;
    uint32_t prev, next;  // prev = more recent
  };
  bool erase(BlockId id);
  void link_front(uint32_t s);
  void unlink(uint32_t s);

  std::vector<Node> nodes_;
  std::vector<uint32_t> free_;
  uint32_t head_ = kNil, tail_ = kNil;  // head = most recent
  size_t size_ = 0;
  IdIndex index_;
  PolicyStats stats_;
};

}  // namespace tempo

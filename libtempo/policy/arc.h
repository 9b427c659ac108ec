// ARC (Megiddo & Modha, FAST'03): T1 holds entries seen once recently, T2 entries seen at
// least twice; ghost lists B1/B2 remember ids evicted from each, and a hit on a ghost moves
// the target size p of T1 toward the list that would have kept it.
// Adapted to this interface: pick_victim() does not know the incoming id, so the original
// "x in B2 and |T1| == p" tie rule is dropped and p adapts when the returning id is added,
// just after the eviction it caused. Ghosts are made only by evict(); remove() forgets.
#pragma once

#include <list>
#include <unordered_map>

#include "policy/eviction_policy.h"

namespace tempo {

class ArcPolicy final : public EvictionPolicy {
 public:
  explicit ArcPolicy(size_t capacity_entries) : capacity_(capacity_entries) {}
  std::string_view name() const override { return "arc"; }
  void add(BlockId id, uint64_t bytes, TimeNs now) override;
  void remove(BlockId id) override;
  void evict(BlockId id) override;
  void record_access(BlockId id, TimeNs now) override;
  std::optional<BlockId> pick_victim() override;
  size_t size() const override { return t1_.size() + t2_.size(); }
  const PolicyStats& stats() const override { return stats_; }
  // The current target size of T1 (exposed for tests).
  double target_t1() const { return p_; }

 private:
  enum class Where : uint8_t { kT1, kT2, kB1, kB2 };
  struct Slot {
    Where where;
    std::list<BlockId>::iterator it;
  };
  std::list<BlockId>& list_of(Where w);
  void push(BlockId id, Where w);
  void unlink(std::unordered_map<BlockId, Slot>::iterator it);
  void trim_ghosts();
  double capacity() const;

  size_t capacity_;  // 0: learned as the high-water mark of size()
  size_t high_water_ = 0;
  double p_ = 0;                          // target size of T1
  std::list<BlockId> t1_, t2_, b1_, b2_;  // front = most recent
  std::unordered_map<BlockId, Slot> index_;
  PolicyStats stats_;
};

}  // namespace tempo

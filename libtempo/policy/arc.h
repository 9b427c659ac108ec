// ARC (Megiddo & Modha, FAST'03), as published: T1 holds entries seen once recently, T2
// entries seen at least twice; ghost lists B1/B2 remember ids evicted from each, and a
// request that hits a ghost first moves the target size p of T1 toward the list that would
// have kept it (step max(1, |B2|/|B1|) or max(1, |B1|/|B2|), counted with the returning id
// still in its ghost list), then REPLACE picks the victim with the new p, evicting from T1
// when |T1| > p, or when the id returns from B2 and |T1| = p.
// On this interface the owner names the incoming id with pick_victim_for(id) before it
// evicts, so the adaptation and the B2 rule happen in the paper's order; add() of that id
// commits the p the pick used. A ghost that returns without a pick (the owner had room)
// adapts p in add(). Ghosts are made only by evict(); remove() forgets. Miss counts equal a
// straight transcription of the paper's pseudo-code on every stream
// (tests/policy/policy_differential_test.cc).
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
  std::optional<BlockId> pick_victim_for(BlockId incoming) override;
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
  // p after a request for an id in ghost list `ghost` (the id still counted in it).
  double adapted_target(Where ghost) const;
  // REPLACE(x, p) of the paper; `from_b2` = the incoming id is in B2.
  std::optional<BlockId> replace_victim(double p, bool from_b2);

  size_t capacity_;  // 0: learned as the high-water mark of size()
  size_t high_water_ = 0;
  double p_ = 0;                          // target size of T1
  std::list<BlockId> t1_, t2_, b1_, b2_;  // front = most recent
  std::unordered_map<BlockId, Slot> index_;
  // The adapted p that pick_victim_for(pending_id_) chose with; add(pending_id_) commits it.
  bool pending_ = false;
  BlockId pending_id_ = 0;
  double pending_p_ = 0;
  PolicyStats stats_;
};

}  // namespace tempo

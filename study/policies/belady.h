// Belady's MIN, the offline optimum for demand paging: evicts the entry whose next
// reference lies furthest in the future (never-again first). It reads the future through
// a FutureOracle, so it is a bound to measure other policies against, not a policy to run.
#pragma once

#include <set>
#include <unordered_map>
#include <vector>

#include "policies/study_policies.h"

namespace tempo {

class BeladyPolicy final : public EvictionPolicy {
 public:
  explicit BeladyPolicy(const FutureOracle& future) : future_(future) {}
  std::string_view name() const override { return "min"; }
  void add(BlockId id, uint64_t bytes, TimeNs now) override;
  void remove(BlockId id) override;
  void evict(BlockId id) override;
  void record_access(BlockId id, TimeNs now) override;
  std::optional<BlockId> pick_victim() override;
  size_t size() const override { return next_.size(); }
  const PolicyStats& stats() const override { return stats_; }

 private:
  struct Key {
    uint64_t next;
    BlockId id;
    // Furthest next use first; equal (never again) ones by id, for determinism.
    bool operator<(const Key& o) const { return next != o.next ? next > o.next : id < o.id; }
  };
  bool erase(BlockId id);

  const FutureOracle& future_;
  std::set<Key> order_;
  std::unordered_map<BlockId, uint64_t> next_;
  PolicyStats stats_;
};

// The future of a known reference string: advance(i) before handling reference i (in
// order, each position once); next_use(id) then answers for any id as of position i.
class TraceOracle final : public FutureOracle {
 public:
  explicit TraceOracle(std::vector<BlockId> trace);
  void advance(uint64_t position);
  uint64_t next_use(BlockId id) const override;

 private:
  std::vector<BlockId> trace_;
  std::vector<uint64_t> next_pos_;                // next position of trace_[i] after i
  std::unordered_map<BlockId, uint64_t> first_;   // first position of each id
  std::unordered_map<BlockId, uint64_t> latest_;  // latest position <= cursor
};

}  // namespace tempo

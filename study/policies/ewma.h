// EWMA next-touch predictor: each entry's inter-reference gap is smoothed with an
// exponentially weighted moving average, its next touch predicted at last + gap, and the
// entry predicted to be needed furthest in the future is evicted. Entries with no gap yet
// (one reference) rank as "never" and go first, least recent first. An entry that has
// missed its predicted touch by more than one whole gap is taken to be dead and evicted
// before anything else, so a once-regular block cannot squat forever.
// Unlike predicted-reuse this differs from lru (tests/policy shows a trace where it does).
#pragma once

#include <set>
#include <unordered_map>

#include "policy/eviction_policy.h"

namespace tempo {

class EwmaPolicy final : public EvictionPolicy {
 public:
  explicit EwmaPolicy(double alpha) : alpha_(alpha) {}
  std::string_view name() const override { return "ewma"; }
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
    TimeNs predicted;  // kNever when no gap is known
    uint64_t tick;
    BlockId id;
  };
  // Furthest predicted touch first; among equals the least recently touched first.
  struct Furthest {
    bool operator()(const Key& a, const Key& b) const {
      if (a.predicted != b.predicted) return a.predicted > b.predicted;
      if (a.tick != b.tick) return a.tick < b.tick;
      return a.id < b.id;
    }
  };
  struct Entry {
    Key key;
    TimeNs last;
    double gap;  // < 0: unknown
  };
  void insert(BlockId id, TimeNs last, double gap);
  bool erase(BlockId id);
  static TimeNs predict(TimeNs last, double gap);

  double alpha_;
  uint64_t tick_ = 0;
  TimeNs now_ = 0;  // the latest time seen; pick_victim judges overdue entries by it
  std::set<Key, Furthest> order_;
  std::unordered_map<BlockId, Entry> entries_;
  PolicyStats stats_;
};

}  // namespace tempo

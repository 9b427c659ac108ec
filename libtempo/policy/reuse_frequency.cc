#include "policy/reuse_frequency.h"

#include <algorithm>

namespace tempo {

void ReuseFrequencyPolicy::insert(BlockId id, uint64_t count) {
  if (persistent_) {
    auto g = ghost_counts_.find(id);
    if (g != ghost_counts_.end()) {
      count = std::max(count, g->second);
      ghost_counts_.erase(g);
    }
  }
  const Key k{count, ++tick_, id};
  order_.insert(k);
  entries_.emplace(id, k);
  ++stats_.adds;
}

void ReuseFrequencyPolicy::add(BlockId id, uint64_t /*bytes*/, TimeNs /*now*/) {
  if (entries_.contains(id)) return;
  uint64_t count = 1;
  if (persistent_) {
    auto g = ghost_counts_.find(id);
    if (g != ghost_counts_.end()) count += g->second;
  }
  insert(id, count);
}

void ReuseFrequencyPolicy::add_with_history(BlockId id, uint64_t /*bytes*/, TimeNs /*now*/,
                                            const AccessHistory& h) {
  if (entries_.contains(id)) return;
  // The persistent variant counts every reference the owner has seen, across drops; an
  // owner that keeps no lifetime count (0) is taken at its current count.
  insert(id, std::max<uint64_t>({persistent_ ? h.lifetime : 0, h.accesses, 1}));
}

bool ReuseFrequencyPolicy::erase(BlockId id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return false;
  if (persistent_) ghost_counts_[id] = it->second.count;
  order_.erase(it->second);
  entries_.erase(it);
  ++stats_.removes;
  return true;
}

void ReuseFrequencyPolicy::remove(BlockId id) { erase(id); }

void ReuseFrequencyPolicy::evict(BlockId id) {
  if (erase(id)) ++stats_.evictions;
}

void ReuseFrequencyPolicy::record_access(BlockId id, TimeNs /*now*/) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  order_.erase(it->second);
  it->second.count += 1;
  it->second.tick = ++tick_;
  order_.insert(it->second);
  ++stats_.accesses;
}

std::optional<BlockId> ReuseFrequencyPolicy::pick_victim() {
  if (order_.empty()) return std::nullopt;
  ++stats_.victims;
  return order_.begin()->id;
}

}  // namespace tempo

#include "policies/ewma.h"

#include <algorithm>
#include <cmath>

namespace tempo {

TimeNs EwmaPolicy::predict(TimeNs last, double gap) {
  return gap < 0 ? kNever : last + static_cast<TimeNs>(std::llround(gap));
}

void EwmaPolicy::insert(BlockId id, TimeNs last, double gap) {
  const Key k{predict(last, gap), ++tick_, id};
  order_.insert(k);
  entries_.emplace(id, Entry{k, last, gap});
  ++stats_.adds;
}

void EwmaPolicy::add(BlockId id, uint64_t /*bytes*/, TimeNs now) {
  now_ = std::max(now_, now);
  if (entries_.contains(id)) return;
  insert(id, now, -1);
}

void EwmaPolicy::add_with_history(BlockId id, uint64_t /*bytes*/, TimeNs now,
                                  const AccessHistory& h) {
  now_ = std::max(now_, now);
  if (entries_.contains(id)) return;
  insert(id, h.accesses > 0 ? h.last_access : now, h.gap_ewma_ns);
}

bool EwmaPolicy::erase(BlockId id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return false;
  order_.erase(it->second.key);
  entries_.erase(it);
  ++stats_.removes;
  return true;
}

void EwmaPolicy::remove(BlockId id) { erase(id); }

void EwmaPolicy::evict(BlockId id) {
  if (erase(id)) ++stats_.evictions;
}

void EwmaPolicy::record_access(BlockId id, TimeNs now) {
  now_ = std::max(now_, now);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  const double g = static_cast<double>(now - e.last);
  e.gap = e.gap < 0 ? g : alpha_ * g + (1 - alpha_) * e.gap;
  e.last = now;
  order_.erase(e.key);
  e.key = Key{predict(e.last, e.gap), ++tick_, id};
  order_.insert(e.key);
  ++stats_.accesses;
}

std::optional<BlockId> EwmaPolicy::pick_victim() {
  if (order_.empty()) return std::nullopt;
  ++stats_.victims;
  // The soonest predicted touch: if it is overdue by more than its own gap, it is dead.
  const Key& soonest = *order_.rbegin();
  if (soonest.predicted != kNever) {
    const Entry& e = entries_.at(soonest.id);
    if (static_cast<double>(now_ - e.last) > 2 * e.gap) return soonest.id;
  }
  return order_.begin()->id;
}

}  // namespace tempo

#include "policy/adaptive.h"

#include <algorithm>
#include <cmath>

namespace tempo {

size_t AdaptivePolicy::capacity() const {
  return capacity_ != 0 ? capacity_ : std::max<size_t>(high_water_, 1);
}

void AdaptivePolicy::insert(BlockId id, uint64_t count_floor, bool counts_as_reference) {
  ++tick_;
  uint64_t count = count_floor;
  auto g = ghosts_.find(id);
  if (g != ghosts_.end()) {
    // The expert that evicted it was wrong: reward the other one.
    const double d = std::pow(0.005, 1.0 / static_cast<double>(capacity()));
    const double r = std::pow(d, static_cast<double>(tick_ - g->second.evicted_at));
    if (g->second.expert == Expert::kRecency) {
      w_lfu_ *= std::exp(lambda_ * r);
      hist_lru_.erase(g->second.it);
    } else {
      w_lru_ *= std::exp(lambda_ * r);
      hist_lfu_.erase(g->second.it);
    }
    const double sum = w_lru_ + w_lfu_;
    w_lru_ /= sum;
    w_lfu_ /= sum;
    count = std::max(count, g->second.count + (counts_as_reference ? 1 : 0));
    ghosts_.erase(g);
  }
  lru_.push_front(id);
  const FreqKey k{count, tick_, id};
  lfu_.insert(k);
  entries_.emplace(id, Entry{lru_.begin(), k});
  high_water_ = std::max(high_water_, entries_.size());
  ++stats_.adds;
}

void AdaptivePolicy::add(BlockId id, uint64_t /*bytes*/, TimeNs /*now*/) {
  if (entries_.contains(id)) return;
  insert(id, 1, true);
}

void AdaptivePolicy::add_with_history(BlockId id, uint64_t /*bytes*/, TimeNs /*now*/,
                                      const AccessHistory& h) {
  if (entries_.contains(id)) return;
  insert(id, std::max<uint64_t>(h.accesses, 1), false);
}

bool AdaptivePolicy::erase(BlockId id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return false;
  lru_.erase(it->second.lru_it);
  lfu_.erase(it->second.fkey);
  entries_.erase(it);
  ++stats_.removes;
  return true;
}

void AdaptivePolicy::remove(BlockId id) { erase(id); }

void AdaptivePolicy::evict(BlockId id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  const uint64_t count = it->second.fkey.count;
  erase(id);
  ++stats_.evictions;
  if (picked_ != id || picked_by_ == Expert::kBoth) return;
  auto& hist = picked_by_ == Expert::kRecency ? hist_lru_ : hist_lfu_;
  hist.push_front(id);
  ghosts_[id] = Ghost{picked_by_, tick_, count, hist.begin()};
  while (hist.size() > capacity()) {
    ghosts_.erase(hist.back());
    hist.pop_back();
  }
}

void AdaptivePolicy::record_access(BlockId id, TimeNs /*now*/) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  ++tick_;
  lru_.splice(lru_.begin(), lru_, it->second.lru_it);
  lfu_.erase(it->second.fkey);
  it->second.fkey.count += 1;
  it->second.fkey.tick = tick_;
  lfu_.insert(it->second.fkey);
  ++stats_.accesses;
}

std::optional<BlockId> AdaptivePolicy::pick_victim() {
  if (entries_.empty()) return std::nullopt;
  ++stats_.victims;
  const BlockId by_recency = lru_.back();
  const BlockId by_frequency = lfu_.begin()->id;
  if (by_recency == by_frequency) {
    picked_by_ = Expert::kBoth;
    picked_ = by_recency;
  } else if (w_lfu_ > w_lru_) {
    picked_by_ = Expert::kFrequency;
    picked_ = by_frequency;
  } else {
    picked_by_ = Expert::kRecency;
    picked_ = by_recency;
  }
  return picked_;
}

}  // namespace tempo

#include "policies/belady.h"

namespace tempo {

void BeladyPolicy::add(BlockId id, uint64_t /*bytes*/, TimeNs /*now*/) {
  if (next_.contains(id)) return;
  const uint64_t n = future_.next_use(id);
  next_.emplace(id, n);
  order_.insert(Key{n, id});
  ++stats_.adds;
}

bool BeladyPolicy::erase(BlockId id) {
  auto it = next_.find(id);
  if (it == next_.end()) return false;
  order_.erase(Key{it->second, id});
  next_.erase(it);
  ++stats_.removes;
  return true;
}

void BeladyPolicy::remove(BlockId id) { erase(id); }

void BeladyPolicy::evict(BlockId id) {
  if (erase(id)) ++stats_.evictions;
}

void BeladyPolicy::record_access(BlockId id, TimeNs /*now*/) {
  auto it = next_.find(id);
  if (it == next_.end()) return;
  order_.erase(Key{it->second, id});
  it->second = future_.next_use(id);
  order_.insert(Key{it->second, id});
  ++stats_.accesses;
}

std::optional<BlockId> BeladyPolicy::pick_victim() {
  if (order_.empty()) return std::nullopt;
  ++stats_.victims;
  return order_.begin()->id;
}

TraceOracle::TraceOracle(std::vector<BlockId> trace)
    : trace_(std::move(trace)), next_pos_(trace_.size(), kNoFutureUse) {
  std::unordered_map<BlockId, uint64_t> seen_after;
  for (uint64_t i = trace_.size(); i-- > 0;) {
    auto it = seen_after.find(trace_[i]);
    if (it != seen_after.end()) {
      next_pos_[i] = it->second;
      it->second = i;
    } else {
      seen_after.emplace(trace_[i], i);
    }
  }
  first_ = std::move(seen_after);
}

void TraceOracle::advance(uint64_t position) {
  if (position < trace_.size()) latest_[trace_[position]] = position;
}

uint64_t TraceOracle::next_use(BlockId id) const {
  auto l = latest_.find(id);
  if (l != latest_.end()) return next_pos_[l->second];
  auto f = first_.find(id);
  return f == first_.end() ? kNoFutureUse : f->second;
}

}  // namespace tempo

#include "policy/lru.h"

namespace tempo {

void LruPolicy::link_front(uint32_t s) {
  nodes_[s].prev = kNil;
  nodes_[s].next = head_;
  if (head_ != kNil) nodes_[head_].prev = s;
  head_ = s;
  if (tail_ == kNil) tail_ = s;
}

void LruPolicy::unlink(uint32_t s) {
  const Node& n = nodes_[s];
  if (n.prev != kNil) {
    nodes_[n.prev].next = n.next;
  } else {
    head_ = n.next;
  }
  if (n.next != kNil) {
    nodes_[n.next].prev = n.prev;
  } else {
    tail_ = n.prev;
  }
}

void LruPolicy::add(BlockId id, uint64_t /*bytes*/, TimeNs /*now*/) {
  if (index_.find(id) != IdIndex::kAbsent) return;
  uint32_t s;
  if (!free_.empty()) {
    s = free_.back();
    free_.pop_back();
    nodes_[s].id = id;
  } else {
    s = static_cast<uint32_t>(nodes_.size());
    nodes_.push_back({id, kNil, kNil});
  }
  link_front(s);
  index_.set(id, s);
  ++size_;
  ++stats_.adds;
}

bool LruPolicy::erase(BlockId id) {
  const uint32_t s = index_.find(id);
  if (s == IdIndex::kAbsent) return false;
  unlink(s);
  free_.push_back(s);
  index_.erase(id);
  --size_;
  ++stats_.removes;
  return true;
}

void LruPolicy::remove(BlockId id) { erase(id); }

void LruPolicy::evict(BlockId id) {
  if (erase(id)) ++stats_.evictions;
}

void LruPolicy::record_access(BlockId id, TimeNs /*now*/) {
  const uint32_t s = index_.find(id);
  if (s == IdIndex::kAbsent) return;
  if (s != head_) {
    unlink(s);
    link_front(s);
  }
  ++stats_.accesses;
}

std::optional<BlockId> LruPolicy::pick_victim() {
  if (tail_ == kNil) return std::nullopt;
  ++stats_.victims;
  return nodes_[tail_].id;
}

}  // namespace tempo

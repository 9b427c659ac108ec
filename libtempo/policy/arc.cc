#include "policy/arc.h"

#include <algorithm>

namespace tempo {

std::list<BlockId>& ArcPolicy::list_of(Where w) {
  switch (w) {
    case Where::kT1:
      return t1_;
    case Where::kT2:
      return t2_;
    case Where::kB1:
      return b1_;
    case Where::kB2:
      break;
  }
  return b2_;
}

double ArcPolicy::capacity() const {
  return static_cast<double>(capacity_ != 0 ? capacity_ : std::max<size_t>(high_water_, 1));
}

void ArcPolicy::push(BlockId id, Where w) {
  auto& l = list_of(w);
  l.push_front(id);
  index_[id] = Slot{w, l.begin()};
}

void ArcPolicy::unlink(std::unordered_map<BlockId, Slot>::iterator it) {
  list_of(it->second.where).erase(it->second.it);
  index_.erase(it);
}

// The paper bounds |T1| + |B1| by c and the four lists by 2c, dropping the LRU ghost of B1
// (case IV.A) or of B2 (case IV.B) before a new id is placed; trimming right after the
// placement drops the same ghosts.
void ArcPolicy::trim_ghosts() {
  const auto c = static_cast<size_t>(capacity());
  while (!b1_.empty() && t1_.size() + b1_.size() > c) {
    index_.erase(b1_.back());
    b1_.pop_back();
  }
  while (!b2_.empty() && size() + b1_.size() + b2_.size() > 2 * c) {
    index_.erase(b2_.back());
    b2_.pop_back();
  }
}

double ArcPolicy::adapted_target(Where ghost) const {
  const auto b1 = static_cast<double>(b1_.size());
  const auto b2 = static_cast<double>(b2_.size());
  if (ghost == Where::kB1) return std::min(capacity(), p_ + std::max(1.0, b2 / b1));
  return std::max(0.0, p_ - std::max(1.0, b1 / b2));
}

std::optional<BlockId> ArcPolicy::replace_victim(double p, bool from_b2) {
  if (size() == 0) return std::nullopt;
  ++stats_.victims;
  const auto t1 = static_cast<double>(t1_.size());
  if (!t1_.empty() && (t1 > p || (from_b2 && t1 == p) || t2_.empty())) return t1_.back();
  return t2_.back();
}

std::optional<BlockId> ArcPolicy::pick_victim() { return replace_victim(p_, false); }

std::optional<BlockId> ArcPolicy::pick_victim_for(BlockId incoming) {
  pending_ = false;
  auto it = index_.find(incoming);
  if (it == index_.end() || it->second.where == Where::kT1 || it->second.where == Where::kT2) {
    return replace_victim(p_, false);
  }
  pending_ = true;
  pending_id_ = incoming;
  pending_p_ = adapted_target(it->second.where);
  return replace_victim(pending_p_, it->second.where == Where::kB2);
}

void ArcPolicy::add(BlockId id, uint64_t /*bytes*/, TimeNs /*now*/) {
  auto it = index_.find(id);
  if (it != index_.end() && (it->second.where == Where::kT1 || it->second.where == Where::kT2)) {
    return;
  }
  if (it == index_.end()) {
    push(id, Where::kT1);
  } else {
    p_ = pending_ && pending_id_ == id ? pending_p_ : adapted_target(it->second.where);
    unlink(it);
    push(id, Where::kT2);
  }
  pending_ = false;
  ++stats_.adds;
  high_water_ = std::max(high_water_, size());
  trim_ghosts();
}

void ArcPolicy::remove(BlockId id) {
  auto it = index_.find(id);
  if (it == index_.end() || it->second.where == Where::kB1 || it->second.where == Where::kB2) {
    return;
  }
  unlink(it);
  ++stats_.removes;
}

void ArcPolicy::evict(BlockId id) {
  auto it = index_.find(id);
  if (it == index_.end() || it->second.where == Where::kB1 || it->second.where == Where::kB2) {
    return;
  }
  const Where ghost = it->second.where == Where::kT1 ? Where::kB1 : Where::kB2;
  unlink(it);
  push(id, ghost);
  ++stats_.removes;
  ++stats_.evictions;
  trim_ghosts();
}

void ArcPolicy::record_access(BlockId id, TimeNs /*now*/) {
  auto it = index_.find(id);
  if (it == index_.end() || it->second.where == Where::kB1 || it->second.where == Where::kB2) {
    return;
  }
  unlink(it);
  push(id, Where::kT2);
  ++stats_.accesses;
}

}  // namespace tempo

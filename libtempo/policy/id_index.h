// A map from BlockId to a small slot number: a flat array for ids below a bound (the dense
// ids the placement simulator uses), a hash map for the rest (64-bit content hashes).
// Lookups on dense ids cost one array read, which keeps the hot policies allocation-free.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "policy/eviction_policy.h"

namespace tempo {

class IdIndex {
 public:
  static constexpr uint32_t kAbsent = UINT32_MAX;
  static constexpr BlockId kDenseLimit = 1u << 20;  // at most 4 MiB of slots

  uint32_t find(BlockId id) const {
    if (id < kDenseLimit) return id < dense_.size() ? dense_[id] : kAbsent;
    auto it = sparse_.find(id);
    return it == sparse_.end() ? kAbsent : it->second;
  }
  void set(BlockId id, uint32_t slot) {
    if (id < kDenseLimit) {
      if (id >= dense_.size()) dense_.resize(std::max<size_t>(id + 1, dense_.size() * 2), kAbsent);
      dense_[id] = slot;
    } else {
      sparse_[id] = slot;
    }
  }
  void erase(BlockId id) {
    if (id < kDenseLimit) {
      if (id < dense_.size()) dense_[id] = kAbsent;
    } else {
      sparse_.erase(id);
    }
  }

 private:
  std::vector<uint32_t> dense_;
  std::unordered_map<BlockId, uint32_t> sparse_;
};

}  // namespace tempo

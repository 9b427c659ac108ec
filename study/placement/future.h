// Next-use lookups over a static access stream, with dense block ids: the FutureOracle
// the min policy reads, and what prefetchers use to see when a block is needed next.
#pragma once

#include <vector>

#include "placement/workload.h"
#include "policies/study_policies.h"

namespace tempo::placement {

class StreamFuture final : public FutureOracle {
 public:
  StreamFuture(const std::vector<Access>& stream, uint64_t num_blocks);
  // Call with each position in order before the access at it is handled.
  void advance(uint64_t position) { latest_[stream_[position].block] = position; }
  // The first position after the current one at which `id` is accessed, or kNoFutureUse.
  uint64_t next_use(BlockId id) const override {
    const uint64_t l = latest_[id];
    return l == kNoFutureUse ? first_[id] : next_[l];
  }

 private:
  const std::vector<Access>& stream_;
  std::vector<uint64_t> next_;    // per position: the next position of the same block
  std::vector<uint64_t> first_;   // per block
  std::vector<uint64_t> latest_;  // per block: latest position handled
};

}  // namespace tempo::placement

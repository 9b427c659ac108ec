#include "placement/future.h"

namespace tempo::placement {

StreamFuture::StreamFuture(const std::vector<Access>& stream, uint64_t num_blocks)
    : stream_(stream),
      next_(stream.size(), kNoFutureUse),
      first_(num_blocks, kNoFutureUse),
      latest_(num_blocks, kNoFutureUse) {
  for (uint64_t i = stream.size(); i-- > 0;) {
    const BlockId b = stream[i].block;
    next_[i] = first_[b];
    first_[b] = i;
  }
}

}  // namespace tempo::placement

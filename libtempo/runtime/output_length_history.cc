#include "runtime/output_length_history.h"

#include <algorithm>

namespace tempo {

OutputLengthHistory::OutputLengthHistory(size_t window) : window_(std::max<size_t>(window, 1)) {
  lengths_.reserve(window_);
}

void OutputLengthHistory::record(uint32_t output_tokens) {
  if (lengths_.size() < window_) {
    lengths_.push_back(output_tokens);
    return;
  }
  lengths_[next_] = output_tokens;
  next_ = (next_ + 1) % window_;
}

std::vector<uint32_t> OutputLengthHistory::in_order() const {
  std::vector<uint32_t> out(lengths_.begin() + static_cast<std::ptrdiff_t>(next_), lengths_.end());
  out.insert(out.end(), lengths_.begin(), lengths_.begin() + static_cast<std::ptrdiff_t>(next_));
  return out;
}

uint32_t OutputLengthHistory::predict_remaining(uint32_t generated,
                                                uint32_t generation_limit) const {
  if (generated >= generation_limit) return 0;
  const uint64_t cap = generation_limit - generated;
  uint64_t sum = 0;
  uint64_t count = 0;
  for (uint32_t n : lengths_) {
    if (n > generated) {
      sum += n - generated;
      ++count;
    }
  }
  if (count == 0) return static_cast<uint32_t>(cap);
  const uint64_t mean = (2 * sum + count) / (2 * count);
  return static_cast<uint32_t>(std::min(mean, cap));
}

std::vector<uint32_t> OutputLengthHistory::remaining_population(uint32_t generated,
                                                                uint32_t generation_limit) const {
  if (generated >= generation_limit) return {};
  const uint32_t cap = generation_limit - generated;
  std::vector<uint32_t> rest;
  for (uint32_t n : lengths_)
    if (n > generated) rest.push_back(std::min(n - generated, cap));
  if (rest.empty()) rest.push_back(cap);
  return rest;
}

}  // namespace tempo

// Output lengths of recently completed requests, for conditioning the remaining output of
// running requests on what they have generated so far (after Past-Future scheduling).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tempo {

class OutputLengthHistory {
 public:
  // Keeps the last `window` completed outputs (at least one).
  explicit OutputLengthHistory(size_t window = 256);

  // A request completed with `output_tokens` generated tokens (natural end or cap).
  void record(uint32_t output_tokens);

  // Predicted tokens still to generate by a request that has generated `generated`:
  // the mean of (N - generated) over recorded outputs N > generated, rounded to nearest
  // (halves up), capped so the predicted total stays within `generation_limit`. With no
  // recorded N > generated, the request runs to the limit. 0 once the limit is reached.
  uint32_t predict_remaining(uint32_t generated, uint32_t generation_limit) const;
  // The population that mean is taken over, what the TTU spread draws from: (N - generated)
  // for every recorded N > generated, each capped the same way, in recording order; {the
  // cap} with none recorded; empty once the limit is reached.
  std::vector<uint32_t> remaining_population(uint32_t generated, uint32_t generation_limit) const;

  // The outputs kept, oldest first.
  std::vector<uint32_t> in_order() const;

  size_t size() const { return lengths_.size(); }
  size_t window() const { return window_; }

 private:
  size_t window_;
  size_t next_ = 0;  // ring position of the oldest entry once full
  std::vector<uint32_t> lengths_;
};

}  // namespace tempo

// A compute cost with round numbers, so expected times can be worked by hand.
#pragma once

#include "placement/compute_cost.h"

namespace tempo::placement::test {

class FakeCost final : public ComputeCost {
 public:
  // prefill: 1 us per new token + 100 ns per context token; decode: 10 us per step.
  TimeNs prefill(uint64_t new_tokens, uint64_t context_tokens) const override {
    return static_cast<TimeNs>(new_tokens * 1000 + context_tokens * 100);
  }
  TimeNs decode_step(uint64_t /*context_tokens*/) const override { return 10'000; }
  uint64_t kv_bytes_per_token() const override { return 1000; }  // 16-token block = 16 kB
};

}  // namespace tempo::placement::test

#include "runtime/step_costs.h"

namespace tempo {

TimeNs StepCosts::decode_steps_time(uint64_t batch, uint64_t total_context_tokens,
                                    uint64_t steps) const {
  TimeNs total = 0;
  for (uint64_t j = 0; j < steps; ++j) {
    total += decode_step_time(batch, total_context_tokens + j * batch);
  }
  return total;
}

}  // namespace tempo

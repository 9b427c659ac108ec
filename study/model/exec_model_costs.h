// StepCosts from the shared execution-time model (study code: the product learns step
// costs from what the engine reports; replays and benchmarks use the model instead).
#pragma once

#include <cstdint>

#include "core/time.h"
#include "model/exec_model.h"
#include "runtime/step_costs.h"

namespace tempo {

// Retrieval runs over the GPU's host link, or at `retrieval_bps` (bytes/s) when that is
// given and slower (a CXL device's link). Holds a reference: `model` must outlive it.
class ExecModelCosts final : public StepCosts {
 public:
  explicit ExecModelCosts(const ExecModel& model, double retrieval_bps = 0)
      : model_(model), retrieval_bps_(retrieval_bps) {}
  TimeNs prefill_time(uint64_t new_tokens, uint64_t context_tokens) const override;
  TimeNs decode_step_time(uint64_t batch, uint64_t total_context_tokens) const override;
  TimeNs decode_steps_time(uint64_t batch, uint64_t total_context_tokens,
                           uint64_t steps) const override;
  TimeNs retrieval_time(uint64_t bytes) const override;

 private:
  const ExecModel& model_;
  double retrieval_bps_;
};

}  // namespace tempo

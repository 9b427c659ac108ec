// The calibrated execution costs a TTU projection maps work to: prefill and decode-step
// time from tokens, context and batch size, and retrieval time from bytes. The execution
// model's implementation (ExecModelCosts) is study code: study/exec_model_costs.h.
#pragma once

#include <cstdint>

#include "core/time.h"

namespace tempo {

class StepCosts {
 public:
  virtual ~StepCosts() = default;
  // One prefill of `new_tokens` after `context_tokens` already in KV.
  virtual TimeNs prefill_time(uint64_t new_tokens, uint64_t context_tokens) const = 0;
  // One decode step of `batch` sequences with `total_context_tokens` in KV between them.
  virtual TimeNs decode_step_time(uint64_t batch, uint64_t total_context_tokens) const = 0;
  // `steps` consecutive decode steps of the same batch, every context growing by one token
  // per step. The default sums decode_step_time; a model may answer in closed form.
  virtual TimeNs decode_steps_time(uint64_t batch, uint64_t total_context_tokens,
                                   uint64_t steps) const;
  // Fast-tier-to-GPU transfer of `bytes`.
  virtual TimeNs retrieval_time(uint64_t bytes) const = 0;
};

}  // namespace tempo

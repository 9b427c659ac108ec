// The calibrated execution costs a TTU projection maps work to: prefill and decode-step
// time from tokens, context and batch size, and retrieval time from bytes.
#pragma once

#include <cstdint>

#include "core/time.h"
#include "model/exec_model.h"

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

// StepCosts from the shared execution-time model. Retrieval runs over the GPU's host link,
// or at `retrieval_bps` (bytes/s) when that is given and slower (a CXL device's link).
// Holds a reference: `model` must outlive it.
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

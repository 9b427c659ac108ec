// The GPU compute cost the placement simulator charges for prefill and decode, behind a
// small interface so the timing model stays independent of where the numbers come from.
// ExecModelCost wires it to the shared roofline execution-time model (model/exec_model.h).
#pragma once

#include <cstdint>

#include "core/time.h"
#include "model/exec_model.h"

namespace tempo::placement {

class ComputeCost {
 public:
  virtual ~ComputeCost() = default;
  // Prefill of `new_tokens` attending to `context_tokens` already cached (batch one).
  virtual TimeNs prefill(uint64_t new_tokens, uint64_t context_tokens) const = 0;
  // One decode step of one sequence with `context_tokens` cached.
  virtual TimeNs decode_step(uint64_t context_tokens) const = 0;
  // KV bytes of one token.
  virtual uint64_t kv_bytes_per_token() const = 0;
};

class ExecModelCost final : public ComputeCost {
 public:
  explicit ExecModelCost(ExecModel model) : model_(std::move(model)) {}
  TimeNs prefill(uint64_t new_tokens, uint64_t context_tokens) const override {
    return model_.prefill_time(new_tokens, context_tokens);
  }
  TimeNs decode_step(uint64_t context_tokens) const override {
    return model_.decode_step_time(1, context_tokens);
  }
  uint64_t kv_bytes_per_token() const override { return model_.kv_bytes_per_token(); }
  const ExecModel& model() const { return model_; }

 private:
  ExecModel model_;
};

}  // namespace tempo::placement

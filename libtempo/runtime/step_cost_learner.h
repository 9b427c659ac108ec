// Step costs learned online from the step durations an engine measures.
//
// The roofline model files (model/exec_model.h) give the shape of a step's cost: a
// prefill's time in its tokens and context, a decode step's in its batch and context. A
// real engine is faster or slower than the model, and not by the same factor for both
// (prefill is compute-bound, decode memory-bound), so the learner fits two scales,
//   measured step ~= a * model_prefill(step) + b * model_decode(step),
// by recursive least squares with exponential forgetting over the steps the engine
// reports (a mixed step of chunked prefill and decodes fits both at once). Until a step
// has been seen it answers the model (a = b = 1). Not thread-safe: one per runtime.
#pragma once

#include <cstdint>

#include "core/time.h"
#include "model/exec_model.h"
#include "runtime/step_costs.h"

namespace tempo {

// What one engine step computed.
struct StepWork {
  uint64_t prefill_tokens = 0;          // prompt tokens prefilled in the step
  uint64_t prefill_context_tokens = 0;  // tokens those prefills attended to, already cached
  uint64_t decode_seqs = 0;             // sequences that decoded one token
  uint64_t decode_context_tokens = 0;   // their KV tokens, summed
};

class StepCostLearner final : public StepCosts {
 public:
  // `model` must outlive the learner. `forgetting` in (0, 1]: the weight of a step falls
  // by this factor with every later one (1: all steps count alike). Throws
  // std::invalid_argument outside that range.
  explicit StepCostLearner(const ExecModel& model, double retrieval_bps = 0,
                           double forgetting = 0.98);

  // A step of `work` took `measured` ns. -EINVAL for a duration <= 0 or a step with no work.
  int observe(const StepWork& work, TimeNs measured);

  double prefill_scale() const { return theta_[0]; }
  double decode_scale() const { return theta_[1]; }
  uint64_t observations() const { return observations_; }

  TimeNs prefill_time(uint64_t new_tokens, uint64_t context_tokens) const override;
  TimeNs decode_step_time(uint64_t batch, uint64_t total_context_tokens) const override;
  TimeNs decode_steps_time(uint64_t batch, uint64_t total_context_tokens,
                           uint64_t steps) const override;
  TimeNs retrieval_time(uint64_t bytes) const override;

 private:
  ExecModelCosts model_;
  double forgetting_;
  double theta_[2] = {1.0, 1.0};               // prefill and decode scales
  double p_[2][2] = {{1e4, 0.0}, {0.0, 1e4}};  // inverse information (wide prior)
  uint64_t observations_ = 0;
};

}  // namespace tempo

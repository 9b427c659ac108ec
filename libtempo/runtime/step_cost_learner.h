// Step costs learned online from the step durations an engine measures (product code: no
// execution model, no model files; the study's model can supply the starting point).
//
// A pass is priced linearly in what an engine's scheduler knows about it:
//   prefill pass  = prefill_pass + prefill_token * n + prefill_pair * n * (context + (n+1)/2)
//   decode step   = decode_pass + decode_seq * batch + decode_context * (KV tokens of the batch)
// (matrix multiplies per token, attention per query-key pair, KV reads per token, and a
// fixed cost per pass: launch overhead, weights read once). A step that mixes chunked
// prefill with decodes pays both. The learner fits the six coefficients by recursive least
// squares with exponential forgetting over the steps the engine reports, starting from a
// prior (the roofline model's fit, or an engine's own calibration): a real engine that is
// faster or slower than the prior, and not by the same factor in both phases, converges
// to its own costs. Not thread-safe: one per runtime.
#pragma once

#include <array>
#include <cstdint>

#include "core/time.h"
#include "runtime/step_costs.h"

namespace tempo {

struct StepCostCoefficients {
  double prefill_pass_ns = 0;
  double prefill_token_ns = 0;
  double prefill_pair_ns = 0;
  double decode_pass_ns = 0;
  double decode_seq_ns = 0;
  double decode_context_ns = 0;
  double retrieval_bps = 0;  // fast tier to GPU, bytes/s (> 0)
};

// What one engine step computed.
struct StepWork {
  uint64_t prefill_tokens = 0;          // prompt tokens prefilled in the step
  uint64_t prefill_context_tokens = 0;  // tokens those prefills attended to, already cached
  uint64_t decode_seqs = 0;             // sequences that decoded one token
  uint64_t decode_context_tokens = 0;   // their KV tokens, summed
};

class StepCostLearner final : public StepCosts {
 public:
  // `prior` gives the starting costs; each coefficient may then move by about its own size
  // (a zero coefficient stays zero). `forgetting` in (0, 1]: a step's weight falls by this
  // factor with every later one. Throws std::invalid_argument for a negative coefficient,
  // retrieval_bps <= 0 or forgetting outside (0, 1].
  explicit StepCostLearner(const StepCostCoefficients& prior, double forgetting = 1.0);

  // A step of `work` took `measured` ns. -EINVAL for a duration <= 0 or a step with no work.
  int observe(const StepWork& work, TimeNs measured);

  // What a step of `work` costs at the present coefficients (the time observe() compares).
  TimeNs predict(const StepWork& work) const;

  StepCostCoefficients coefficients() const;
  uint64_t observations() const { return observations_; }

  TimeNs prefill_time(uint64_t new_tokens, uint64_t context_tokens) const override;
  TimeNs decode_step_time(uint64_t batch, uint64_t total_context_tokens) const override;
  TimeNs decode_steps_time(uint64_t batch, uint64_t total_context_tokens,
                           uint64_t steps) const override;
  TimeNs retrieval_time(uint64_t bytes) const override;

 private:
  static constexpr int kN = 6;
  using Vec = std::array<double, kN>;

  double theta(int i) const { return phi_[i] * prior_[i]; }

  // The least squares run on each coefficient relative to its prior (phi = theta / prior),
  // in milliseconds, so the state is well conditioned whatever the coefficients' units.
  Vec prior_{};
  Vec phi_{};
  std::array<Vec, kN> p_{};  // inverse information of phi
  double retrieval_bps_;
  double forgetting_;
  uint64_t observations_ = 0;
};

}  // namespace tempo

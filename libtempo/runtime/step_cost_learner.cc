#include "runtime/step_cost_learner.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <stdexcept>

namespace tempo {
namespace {

// Scales are kept in a band where a learned model is still plausible: a step that is
// measured wrongly once (a stall, a clock jump) cannot drive a scale to zero or beyond.
constexpr double kMinScale = 0.05;
constexpr double kMaxScale = 20.0;

// Features and measurements in milliseconds keep the least-squares state well scaled.
constexpr double kNsPerUnit = 1e6;

TimeNs scaled(double scale, TimeNs t) {
  return static_cast<TimeNs>(std::llround(scale * static_cast<double>(t)));
}

double units(TimeNs t) { return static_cast<double>(t) / kNsPerUnit; }

}  // namespace

StepCostLearner::StepCostLearner(const ExecModel& model, double retrieval_bps, double forgetting)
    : model_(model, retrieval_bps), forgetting_(forgetting) {
  if (!(forgetting > 0.0 && forgetting <= 1.0))
    throw std::invalid_argument("step-cost forgetting factor must be in (0, 1]");
}

int StepCostLearner::observe(const StepWork& work, TimeNs measured) {
  if (measured <= 0) return -EINVAL;
  if (work.prefill_tokens == 0 && work.decode_seqs == 0) return -EINVAL;
  const double x[2] = {
      work.prefill_tokens
          ? units(model_.prefill_time(work.prefill_tokens, work.prefill_context_tokens))
          : 0.0,
      work.decode_seqs
          ? units(model_.decode_step_time(work.decode_seqs, work.decode_context_tokens))
          : 0.0};
  const double y = units(measured);
  // Recursive least squares: gain k = P x / (lambda + x'P x), theta += k (y - x'theta),
  // P = (P - k x'P) / lambda.
  const double px[2] = {p_[0][0] * x[0] + p_[0][1] * x[1], p_[1][0] * x[0] + p_[1][1] * x[1]};
  const double denom = forgetting_ + x[0] * px[0] + x[1] * px[1];
  const double k[2] = {px[0] / denom, px[1] / denom};
  const double err = y - (x[0] * theta_[0] + x[1] * theta_[1]);
  for (int i = 0; i < 2; ++i) {
    theta_[i] = std::clamp(theta_[i] + k[i] * err, kMinScale, kMaxScale);
    for (int j = 0; j < 2; ++j) p_[i][j] = (p_[i][j] - k[i] * px[j]) / forgetting_;
  }
  ++observations_;
  return 0;
}

TimeNs StepCostLearner::prefill_time(uint64_t new_tokens, uint64_t context_tokens) const {
  return scaled(theta_[0], model_.prefill_time(new_tokens, context_tokens));
}

TimeNs StepCostLearner::decode_step_time(uint64_t batch, uint64_t total_context_tokens) const {
  return scaled(theta_[1], model_.decode_step_time(batch, total_context_tokens));
}

TimeNs StepCostLearner::decode_steps_time(uint64_t batch, uint64_t total_context_tokens,
                                          uint64_t steps) const {
  return scaled(theta_[1], model_.decode_steps_time(batch, total_context_tokens, steps));
}

TimeNs StepCostLearner::retrieval_time(uint64_t bytes) const {
  return model_.retrieval_time(bytes);
}

}  // namespace tempo

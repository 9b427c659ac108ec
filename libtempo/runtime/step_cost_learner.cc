#include "runtime/step_cost_learner.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <stdexcept>

namespace tempo {
namespace {

using Vec = std::array<double, 6>;

constexpr double kUnit = 1e6;  // ns per ms

double d(uint64_t v) { return static_cast<double>(v); }

// Query-key pairs of a prefill of n tokens after `context` cached ones (causal).
double pairs(uint64_t n, uint64_t context) { return d(n) * (d(context) + (d(n) + 1) / 2); }

Vec features(const StepWork& w) {
  const bool prefill = w.prefill_tokens > 0;
  const bool decode = w.decode_seqs > 0;
  return {
      prefill ? 1.0 : 0.0, d(w.prefill_tokens), pairs(w.prefill_tokens, w.prefill_context_tokens),
      decode ? 1.0 : 0.0,  d(w.decode_seqs),    decode ? d(w.decode_context_tokens) : 0.0};
}

TimeNs ns(double t) { return round_ns(std::max(t, 0.0)); }

}  // namespace

StepCostLearner::StepCostLearner(const StepCostCoefficients& prior, double forgetting)
    : prior_{prior.prefill_pass_ns, prior.prefill_token_ns, prior.prefill_pair_ns,
             prior.decode_pass_ns,  prior.decode_seq_ns,    prior.decode_context_ns},
      retrieval_bps_(prior.retrieval_bps),
      forgetting_(forgetting) {
  if (!(forgetting > 0.0 && forgetting <= 1.0))
    throw std::invalid_argument("step-cost forgetting factor must be in (0, 1]");
  if (!(prior.retrieval_bps > 0)) throw std::invalid_argument("retrieval_bps must be positive");
  for (int i = 0; i < kN; ++i) {
    if (!(prior_[i] >= 0)) throw std::invalid_argument("step-cost coefficients must be >= 0");
    phi_[i] = 1.0;
    p_[i][i] = 1.0;  // a coefficient may move by about its own size
  }
}

int StepCostLearner::observe(const StepWork& work, TimeNs measured) {
  if (measured <= 0) return -EINVAL;
  if (work.prefill_tokens == 0 && work.decode_seqs == 0) return -EINVAL;
  // Each feature priced at its prior coefficient, in ms: the regressor of phi.
  Vec x = features(work);
  for (int i = 0; i < kN; ++i) x[i] *= prior_[i] / kUnit;
  // Recursive least squares: gain k = P x / (lambda + x'P x), theta += k (y - x'theta),
  // P = (P - k x'P) / lambda.
  Vec px{};
  for (int i = 0; i < kN; ++i)
    for (int j = 0; j < kN; ++j) px[i] += p_[i][j] * x[j];
  double denom = forgetting_;
  for (int i = 0; i < kN; ++i) denom += x[i] * px[i];
  double err = static_cast<double>(measured) / kUnit;
  for (int i = 0; i < kN; ++i) err -= x[i] * phi_[i];
  for (int i = 0; i < kN; ++i) {
    const double k = px[i] / denom;
    phi_[i] += k * err;
    for (int j = 0; j < kN; ++j) p_[i][j] = (p_[i][j] - k * px[j]) / forgetting_;
  }
  ++observations_;
  return 0;
}

TimeNs StepCostLearner::predict(const StepWork& work) const {
  const Vec x = features(work);
  double t = 0;
  for (int i = 0; i < kN; ++i) t += x[i] * theta(i);
  return ns(t);
}

StepCostCoefficients StepCostLearner::coefficients() const {
  return {theta(0), theta(1), theta(2), theta(3), theta(4), theta(5), retrieval_bps_};
}

TimeNs StepCostLearner::prefill_time(uint64_t new_tokens, uint64_t context_tokens) const {
  if (new_tokens == 0) return 0;
  return ns(theta(0) + theta(1) * d(new_tokens) + theta(2) * pairs(new_tokens, context_tokens));
}

TimeNs StepCostLearner::decode_step_time(uint64_t batch, uint64_t total_context_tokens) const {
  if (batch == 0) return 0;
  return ns(theta(3) + theta(4) * d(batch) + theta(5) * d(total_context_tokens));
}

TimeNs StepCostLearner::decode_steps_time(uint64_t batch, uint64_t total_context_tokens,
                                          uint64_t steps) const {
  if (batch == 0 || steps == 0) return 0;
  // Context grows by `batch` tokens per step: sum over j < steps of (C + j * batch).
  const double s = d(steps);
  const double context = s * d(total_context_tokens) + d(batch) * s * (s - 1) / 2;
  return ns(s * (theta(3) + theta(4) * d(batch)) + theta(5) * context);
}

TimeNs StepCostLearner::retrieval_time(uint64_t bytes) const {
  return ns(d(bytes) / retrieval_bps_ * 1e9);
}

}  // namespace tempo

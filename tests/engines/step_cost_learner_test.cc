#include "runtime/step_cost_learner.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cmath>

namespace tempo {
namespace {

// Round numbers: a 1 ms prefill pass, 50 us per token, 1 ns per attention pair; a 5 ms
// decode step, 20 us per sequence, 10 ns per KV token; 10 GB/s retrieval.
const StepCostCoefficients kPrior{1e6, 5e4, 1.0, 5e6, 2e4, 10.0, 1e10};

TEST(StepCostLearner, PricesPassesLinearly) {
  StepCostLearner l(kPrior);
  // 1e6 + 5e4 * 100 + 100 * (1000 + 50.5)
  EXPECT_EQ(l.prefill_time(100, 1000), 1'000'000 + 5'000'000 + 105'050);
  EXPECT_EQ(l.prefill_time(0, 1000), 0);
  EXPECT_EQ(l.decode_step_time(4, 8000), 5'000'000 + 80'000 + 80'000);
  // Three steps of 4 sequences from 8000 KV tokens: 8000 + 8004 + 8008 tokens read.
  EXPECT_EQ(l.decode_steps_time(4, 8000, 3), 3 * 5'080'000 + 10 * 24'012);
  EXPECT_EQ(
      l.decode_steps_time(4, 8000, 3),
      l.decode_step_time(4, 8000) + l.decode_step_time(4, 8004) + l.decode_step_time(4, 8008));
  EXPECT_EQ(l.retrieval_time(1'000'000'000), 100'000'000);
  // A mixed step pays both passes; an empty one nothing.
  EXPECT_EQ(l.predict({100, 1000, 4, 8000}),
            l.prefill_time(100, 1000) + l.decode_step_time(4, 8000));
  EXPECT_EQ(l.predict({}), 0);
  EXPECT_EQ(l.observe({}, 1000), -EINVAL);
  EXPECT_EQ(l.observe({100, 0, 0, 0}, 0), -EINVAL);
  EXPECT_EQ(l.observations(), 0u);
  EXPECT_THROW(StepCostLearner(kPrior, 0.0), std::invalid_argument);
  StepCostCoefficients bad = kPrior;
  bad.decode_seq_ns = -1;
  EXPECT_THROW(StepCostLearner{bad}, std::invalid_argument);
  bad = kPrior;
  bad.retrieval_bps = 0;
  EXPECT_THROW(StepCostLearner{bad}, std::invalid_argument);
}

// An engine 30% slower than the prior in prefill and 30% faster in decode: prefill,
// decode and mixed steps of varied shapes bring every pass's cost within 1% of the
// engine's (the prior still weighs a little after 400 steps).
TEST(StepCostLearner, ConvergesToTheEnginesOwnCosts) {
  StepCostCoefficients truth = kPrior;
  truth.prefill_pass_ns *= 1.3;
  truth.prefill_token_ns *= 1.3;
  truth.prefill_pair_ns *= 1.3;
  truth.decode_pass_ns *= 0.7;
  truth.decode_seq_ns *= 0.7;
  truth.decode_context_ns *= 0.7;
  const StepCostLearner engine(truth, 1.0);
  StepCostLearner l(kPrior);
  for (uint64_t i = 0; i < 400; ++i) {
    StepWork w;
    if (i % 3 != 1) w.prefill_tokens = 64 << (i % 7), w.prefill_context_tokens = 512 * (i % 5);
    if (i % 3 != 0)
      w.decode_seqs = 1 + i % 16, w.decode_context_tokens = (1000 + 37 * i) * w.decode_seqs;
    ASSERT_EQ(l.observe(w, engine.prefill_time(w.prefill_tokens, w.prefill_context_tokens) +
                               engine.decode_step_time(w.decode_seqs, w.decode_context_tokens)),
              0);
  }
  EXPECT_EQ(l.observations(), 400u);
  for (auto [n, ctx] : {std::pair<uint64_t, uint64_t>{256, 0}, {4096, 2048}, {16384, 16384}}) {
    const double want = static_cast<double>(engine.prefill_time(n, ctx));
    EXPECT_NEAR(static_cast<double>(l.prefill_time(n, ctx)), want, want * 1e-2) << n;
  }
  for (auto [b, ctx] : {std::pair<uint64_t, uint64_t>{1, 2000}, {8, 40000}, {32, 300000}}) {
    const double want = static_cast<double>(engine.decode_step_time(b, ctx));
    EXPECT_NEAR(static_cast<double>(l.decode_step_time(b, ctx)), want, want * 1e-2) << b;
  }
}

}  // namespace
}  // namespace tempo

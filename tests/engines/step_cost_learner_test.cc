#include "runtime/step_cost_learner.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "model/exec_model.h"

namespace tempo {
namespace {

ExecModel llama() {
  ExecModel m;
  std::string error;
  EXPECT_EQ(load_exec_model("llama-3.1-8b-instruct", "h100-pcie-80gb", &m, &error), 0) << error;
  return m;
}

TEST(StepCostLearner, AnswersTheModelUntilItLearns) {
  const ExecModel m = llama();
  StepCostLearner l(m);
  EXPECT_EQ(l.prefill_time(2048, 1024), m.prefill_time(2048, 1024));
  EXPECT_EQ(l.decode_step_time(4, 8000), m.decode_step_time(4, 8000));
  EXPECT_EQ(l.decode_steps_time(4, 8000, 10), m.decode_steps_time(4, 8000, 10));
  EXPECT_EQ(l.retrieval_time(1 << 20), m.retrieval_time(1 << 20));
  EXPECT_EQ(l.observe({}, 1000), -EINVAL);
  EXPECT_EQ(l.observe({100, 0, 0, 0}, 0), -EINVAL);
  EXPECT_EQ(l.observations(), 0u);
  EXPECT_THROW(StepCostLearner(m, 0, 0.0), std::invalid_argument);
}

// An engine 30% slower than the model in prefill and 30% faster in decode: prefill-only,
// decode-only and mixed steps pin both scales.
TEST(StepCostLearner, LearnsSeparatePrefillAndDecodeScales) {
  const ExecModel m = llama();
  StepCostLearner l(m);
  for (uint64_t i = 0; i < 60; ++i) {
    const StepWork w{(i % 3 == 1) ? 0 : 512 + 64 * (i % 7), 256 * (i % 5),
                     (i % 3 == 0) ? 0 : 1 + i % 4, 4000 + 100 * i};
    const double truth =
        1.3 * static_cast<double>(w.prefill_tokens
                                      ? m.prefill_time(w.prefill_tokens, w.prefill_context_tokens)
                                      : 0) +
        0.7 * static_cast<double>(
                  w.decode_seqs ? m.decode_step_time(w.decode_seqs, w.decode_context_tokens) : 0);
    ASSERT_EQ(l.observe(w, static_cast<TimeNs>(truth)), 0);
  }
  EXPECT_EQ(l.observations(), 60u);
  EXPECT_NEAR(l.prefill_scale(), 1.3, 1e-4);
  EXPECT_NEAR(l.decode_scale(), 0.7, 1e-4);
  const double p = 1.3 * static_cast<double>(m.prefill_time(4096, 0));
  EXPECT_NEAR(static_cast<double>(l.prefill_time(4096, 0)), p, p * 1e-4);
}

}  // namespace
}  // namespace tempo

#include "runtime/output_length_history.h"

#include <gtest/gtest.h>

namespace tempo {
namespace {

TEST(OutputLengthHistory, EmptyRunsToTheLimit) {
  const OutputLengthHistory h;
  EXPECT_EQ(h.predict_remaining(0, 128), 128u);
  EXPECT_EQ(h.predict_remaining(100, 128), 28u);
  EXPECT_EQ(h.predict_remaining(128, 128), 0u);
  EXPECT_EQ(h.predict_remaining(200, 128), 0u);
}

TEST(OutputLengthHistory, ConditionsOnTokensGenerated) {
  OutputLengthHistory h;
  for (uint32_t n : {4u, 6u, 10u}) h.record(n);
  EXPECT_EQ(h.predict_remaining(0, 16), 7u);   // mean(4, 6, 10) = 6.67
  EXPECT_EQ(h.predict_remaining(3, 16), 4u);   // mean(1, 3, 7) = 3.67
  EXPECT_EQ(h.predict_remaining(4, 16), 4u);   // N = 4 is not > 4: mean(2, 6)
  EXPECT_EQ(h.predict_remaining(5, 16), 3u);   // mean(1, 5)
  EXPECT_EQ(h.predict_remaining(9, 16), 1u);   // only N = 10
  EXPECT_EQ(h.predict_remaining(10, 16), 6u);  // outlived every record: to the limit
}

TEST(OutputLengthHistory, RoundsHalfUp) {
  OutputLengthHistory h;
  h.record(2);
  h.record(3);
  EXPECT_EQ(h.predict_remaining(1, 16), 2u);  // mean(1, 2) = 1.5
}

TEST(OutputLengthHistory, CappedByGenerationLimit) {
  OutputLengthHistory h;
  h.record(100);
  EXPECT_EQ(h.predict_remaining(2, 8), 6u);  // 98 predicted, total capped at 8
  EXPECT_EQ(h.predict_remaining(2, 200), 98u);
}

TEST(OutputLengthHistory, KeepsOnlyTheWindow) {
  OutputLengthHistory h(2);
  h.record(10);
  h.record(20);
  h.record(30);  // replaces 10
  EXPECT_EQ(h.size(), 2u);
  EXPECT_EQ(h.predict_remaining(0, 100), 25u);
  h.record(40);  // replaces 20
  EXPECT_EQ(h.predict_remaining(0, 100), 35u);
  EXPECT_EQ(OutputLengthHistory(0).window(), 1u);
}

}  // namespace
}  // namespace tempo

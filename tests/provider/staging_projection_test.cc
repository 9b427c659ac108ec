#include "provider/staging_projection.h"

#include <gtest/gtest.h>

namespace tempo {
namespace {

TEST(StagingProjection, ConcurrentOperationsShareTheRate) {
  const double rem[] = {500, 1000};
  // Both at 500 B/s until the first ends at 1 s; the second then has 500 B at 1000 B/s.
  EXPECT_EQ(project_completions(rem, 2, 1000), (std::vector<TimeNs>{kNsPerSec, 1500 * kNsPerMs}));
}

TEST(StagingProjection, OneSlotServesInIssueOrder) {
  const double rem[] = {500, 1000};
  EXPECT_EQ(project_completions(rem, 1, 1000),
            (std::vector<TimeNs>{500 * kNsPerMs, 1500 * kNsPerMs}));
}

TEST(StagingProjection, QueuedOperationsStartWhenASlotFrees) {
  const double rem[] = {500, 500, 500};
  EXPECT_EQ(project_completions(rem, 2, 1000),
            (std::vector<TimeNs>{kNsPerSec, kNsPerSec, 1500 * kNsPerMs}));
}

TEST(StagingProjection, DoneOperationsCompleteNow) {
  const double rem[] = {0, 300};
  EXPECT_EQ(project_completions(rem, 1, 1000), (std::vector<TimeNs>{0, 300 * kNsPerMs}));
}

TEST(StagingProjection, AdvanceMovesTheBytesTheModelWouldMove) {
  double rem[] = {500, 1000, 200};
  advance_projection(rem, 2, 1000, 1200 * kNsPerMs);
  // 0-1 s: ops 0 and 1 at 500 B/s (op 0 done); 1-1.2 s: ops 1 and 2 at 500 B/s.
  EXPECT_DOUBLE_EQ(rem[0], 0);
  EXPECT_DOUBLE_EQ(rem[1], 400);
  EXPECT_DOUBLE_EQ(rem[2], 100);
}

}  // namespace
}  // namespace tempo

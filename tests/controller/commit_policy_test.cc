#include "controller/commit_policy.h"

#include <gtest/gtest.h>

namespace tempo {
namespace {

TEST(CommitPolicy, ParsesEveryNameAndRoundTrips) {
  for (const char* name : {"demand", "immediate", "queue-1", "queue-4", "tempo-static", "tempo"}) {
    auto spec = parse_policy(name);
    ASSERT_TRUE(spec) << name;
    EXPECT_EQ(policy_name(*spec), name);
  }
  EXPECT_EQ(parse_policy("queue-16")->queue_k, 16u);
}

TEST(CommitPolicy, RejectsMalformedNames) {
  for (const char* name : {"", "Tempo", "queue-", "queue-0", "queue-x", "queue-4x", "queue--1"})
    EXPECT_FALSE(parse_policy(name)) << name;
}

}  // namespace
}  // namespace tempo

// A check shared by the replay suites: two runs served every request the same way.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "serving_engine.h"

namespace tempo {

// Every per-request time of two runs, exactly (virtual time is integer nanoseconds).
// `attempts`: also the counts of refused commit attempts (deferrals), which depend on how
// often the runtime revises, not only on what the controller decides.
inline void expect_same_requests(const RunResult& a, const RunResult& b, bool attempts) {
  ASSERT_EQ(a.requests.size(), b.requests.size());
  for (size_t i = 0; i < a.requests.size(); ++i) {
    const RequestRecord& x = a.requests[i];
    const RequestRecord& y = b.requests[i];
    SCOPED_TRACE(a.policy + " request " + std::to_string(x.id));
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.timing.arrival, y.timing.arrival);
    EXPECT_EQ(x.timing.first_token, y.timing.first_token);
    EXPECT_EQ(x.timing.finish, y.timing.finish);
    EXPECT_EQ(x.timing.output_tokens, y.timing.output_tokens);
    EXPECT_EQ(x.kv_bytes, y.kv_bytes);
    EXPECT_EQ(x.path, y.path);
    EXPECT_EQ(x.admitted, y.admitted);
    EXPECT_EQ(x.kv_available, y.kv_available);
    EXPECT_EQ(x.claim.committed, y.claim.committed);
    EXPECT_EQ(x.claim.ready, y.claim.ready);
    if (attempts) {
      EXPECT_EQ(x.deferrals, y.deferrals);
    }
  }
}

}  // namespace tempo

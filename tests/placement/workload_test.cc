#include "placement/workload.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "placement/generators.h"
#include "workload/trace.h"

namespace tempo::placement {
namespace {

TEST(Workload, AccessCountCoversPrefillWritesAndDecodePasses) {
  Request r{0, 0, {1, 2, 3}, {4}, 16, 40, {5, 6, 7}};
  // 3 reads + 1 write, then passes over 4, 5, 6 blocks each followed by a write.
  EXPECT_EQ(access_count(r), 4u + 5u + 6u + 7u);
  Workload w;
  w.sessions = 1;
  w.num_blocks = 8;
  w.requests.push_back(r);
  const auto s = access_stream(w);
  ASSERT_EQ(s.size(), access_count(r));
  EXPECT_EQ(s[3].kind, AccessKind::kWrite);
  EXPECT_EQ(s[4].kind, AccessKind::kDecodeRead);
  EXPECT_EQ(s[8].block, 5u);  // the first output block, after the pass over {1,2,3,4}
  EXPECT_EQ(s[8].kind, AccessKind::kWrite);
  EXPECT_EQ(working_set_blocks(w), 7u);
}

TEST(Workload, AccessCsvHasOneLinePerAccess) {
  Workload w;
  w.sessions = 1;
  w.num_blocks = 3;
  w.requests.push_back({0, 0, {0}, {1}, 16, 16, {2}});
  std::ostringstream out;
  ASSERT_EQ(write_access_csv(w, 2097152, out), 0);
  EXPECT_EQ(out.str(),
            "time,block_id,size_bytes\n0,0,2097152\n1,1,2097152\n2,0,2097152\n3,1,2097152\n"
            "4,2,2097152\n");
}

TEST(Generators, ChatIsSixSessionsOfAtMost4000Accesses) {
  Workload w;
  ASSERT_EQ(make_named_workload("chat", 1, &w), 0);
  EXPECT_EQ(w.sessions, 6u);
  const auto per = accesses_per_session(w);
  ASSERT_EQ(per.size(), 6u);
  for (uint64_t n : per) {
    EXPECT_LE(n, 4000u);
    EXPECT_GE(n, 3000u);  // stops only when the next turn would not fit
  }
  // Each turn resumes from the whole session history.
  for (size_t i = 1; i < w.requests.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (w.requests[j].session != w.requests[i].session) continue;
      EXPECT_GE(
          w.requests[i].context.size(),
          w.requests[j].context.size() + w.requests[j].input.size() + w.requests[j].output.size());
    }
  }
}

TEST(Generators, SingleChatIsOneSessionOf24000) {
  Workload w;
  ASSERT_EQ(make_named_workload("chat-single", 1, &w), 0);
  EXPECT_EQ(w.sessions, 1u);
  const auto per = accesses_per_session(w);
  EXPECT_LE(per[0], 24000u);
  EXPECT_GE(per[0], 22000u);
}

TEST(Generators, SameSeedSameStreamOtherSeedOther) {
  for (const auto& name : named_workloads()) {
    Workload a, b, c;
    ASSERT_EQ(make_named_workload(name, 7, &a), 0);
    ASSERT_EQ(make_named_workload(name, 7, &b), 0);
    ASSERT_EQ(make_named_workload(name, 8, &c), 0);
    std::ostringstream sa, sb, sc;
    write_access_csv(a, 1, sa);
    write_access_csv(b, 1, sb);
    write_access_csv(c, 1, sc);
    EXPECT_EQ(sa.str(), sb.str()) << name;
    EXPECT_NE(sa.str(), sc.str()) << name;
  }
}

TEST(Generators, AgentsShareTheSystemPromptAndDocQaTheDocuments) {
  Workload agent, docqa;
  ASSERT_EQ(make_named_workload("agent", 1, &agent), 0);
  ASSERT_EQ(make_named_workload("docqa", 1, &docqa), 0);
  std::set<uint32_t> sessions_reading_block0;
  for (const auto& r : agent.requests) {
    if (!r.context.empty() && r.context[0] == 0) sessions_reading_block0.insert(r.session);
  }
  EXPECT_EQ(sessions_reading_block0.size(), agent.sessions);
  // Document QA: far fewer distinct context blocks than context reads (heavy reuse).
  std::set<BlockId> distinct;
  uint64_t reads = 0;
  for (const auto& r : docqa.requests) {
    distinct.insert(r.context.begin(), r.context.end());
    reads += r.context.size();
  }
  EXPECT_LT(distinct.size() * 10, reads);
}

TEST(Generators, UnknownNameIsEinval) {
  Workload w;
  EXPECT_EQ(make_named_workload("poetry", 1, &w), -EINVAL);
}

TEST(Trace, JsonlRequestsBecomeBlocksSharedByContent) {
  // Through the shared trace parser: 16-token chunks; the second request repeats the
  // first chunk (same hash), so both read the same block.
  std::istringstream jsonl(
      R"({"timestamp": 0, "input_length": 40, "output_length": 20, "hash_ids": [11, 12, 13]})"
      "\n"
      R"({"timestamp": 5, "input_length": 33, "output_length": 1, "hash_ids": [11, 14, 15]})"
      "\n");
  std::vector<tempo::Request> parsed;
  TraceStats stats;
  std::string err;
  ASSERT_EQ(
      parse_trace(jsonl, "t.jsonl", TraceOptions{.block_tokens = 16, .kv_bytes_per_token = 1000},
                  &parsed, &stats, &err),
      0)
      << err;
  Workload w;
  ASSERT_EQ(make_from_trace(parsed, &w), 0);
  ASSERT_EQ(w.requests.size(), 2u);
  EXPECT_EQ(w.block_tokens, 16u);
  EXPECT_EQ(w.requests[0].context.size(), 2u);  // two full chunks; the tail is new input
  EXPECT_EQ(w.requests[0].input_tokens, 8u);    // 40 - 2 x 16
  EXPECT_EQ(w.requests[0].output.size(), 2u);   // 20 tokens
  EXPECT_EQ(w.requests[1].arrival, 5 * kNsPerMs);
  EXPECT_EQ(w.requests[1].context[0], w.requests[0].context[0]);  // hash 11 again
  EXPECT_NE(w.requests[1].context[1], w.requests[0].context[1]);
  EXPECT_EQ(w.requests[1].input_tokens, 1u);
  EXPECT_EQ(w.num_blocks, 2u + 2u + 1u + 1u);
}

TEST(Trace, MixedChunkSizesAreRejected) {
  std::vector<tempo::Request> t(2);
  t[0].chunk_tokens = 16;
  t[1].chunk_tokens = 32;
  Workload w;
  EXPECT_EQ(make_from_trace(t, &w), -EINVAL);
}

}  // namespace
}  // namespace tempo::placement

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <vector>

#include "workload/documents.h"
#include "workload/request_set.h"

namespace tempo {
namespace {

constexpr uint64_t kLlamaKv = 128 * 1024;
constexpr uint64_t kQwenKv = 192 * 1024;

TEST(NarrativeQa, TwelveDocumentsFourPerGroupSpanningThePaperRange) {
  const auto docs = narrativeqa_documents(1);
  ASSERT_EQ(docs.size(), 12u);
  int per_group[3] = {0, 0, 0};
  const uint64_t lo[3] = {16'078, 24'001, 40'001}, hi[3] = {24'000, 40'000, 67'744};
  std::set<uint32_t> indices;
  uint64_t min_in = UINT64_MAX, max_in = 0;
  for (const Document& d : docs) {
    ASSERT_LT(d.group, 3u);
    ++per_group[d.group];
    EXPECT_GE(d.input_tokens(), lo[d.group]);
    EXPECT_LE(d.input_tokens(), hi[d.group]);
    EXPECT_GE(d.question_tokens, 16u);
    EXPECT_LE(d.question_tokens, 48u);
    indices.insert(d.index);
    min_in = std::min(min_in, d.input_tokens());
    max_in = std::max(max_in, d.input_tokens());
  }
  EXPECT_EQ(per_group[0], 4);
  EXPECT_EQ(per_group[1], 4);
  EXPECT_EQ(per_group[2], 4);
  EXPECT_EQ(indices.size(), 12u);
  EXPECT_EQ(*indices.rbegin(), 11u);
  EXPECT_EQ(min_in, 16'078u);
  EXPECT_EQ(max_in, 67'744u);
  // Index order is short..long; the request order is a seeded shuffle of it.
  for (const Document& d : docs) EXPECT_EQ(d.group, d.index / 4);
}

TEST(NarrativeQa, FixedForASeed) {
  const auto a = narrativeqa_documents(1), b = narrativeqa_documents(1);
  const auto c = narrativeqa_documents(2);
  auto lengths = [](const std::vector<Document>& v) {
    std::vector<uint64_t> out;
    for (const Document& d : v) out.push_back(d.input_tokens());
    return out;
  };
  EXPECT_EQ(lengths(a), lengths(b));
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].index, b[i].index);
    EXPECT_EQ(a[i].content_id, b[i].content_id);
  }
  EXPECT_NE(lengths(a), lengths(c));
}

TEST(NarrativeQa, OtherCountsDrawFromTheSameGroups) {
  const auto docs = narrativeqa_documents(5, 16);  // the paper's Figure 6 sample size
  ASSERT_EQ(docs.size(), 16u);
  for (const Document& d : docs) {
    EXPECT_GE(d.input_tokens(), 16'078u);
    EXPECT_LE(d.input_tokens(), 67'744u);
  }
}

TEST(Loogle, SixteenLongDocuments) {
  const auto docs = loogle_documents(1);
  ASSERT_EQ(docs.size(), 16u);
  std::set<uint64_t> ids;
  for (const Document& d : docs) {
    EXPECT_GE(d.input_tokens(), 12'000u);
    EXPECT_LE(d.input_tokens(), 48'000u);
    EXPECT_GE(d.question_tokens, 24u);
    EXPECT_LE(d.question_tokens, 96u);
    ids.insert(d.content_id);
  }
  EXPECT_EQ(ids.size(), 16u);
  EXPECT_EQ(loogle_documents(1)[7].input_tokens(), docs[7].input_tokens());
}

// One document worked by hand: 1,000 document tokens (3 full 256-token chunks and 232
// left over) and a 20-token question.
TEST(RequestSet, CacheRatioInWholeChunks) {
  Document d;
  d.content_id = 5;
  d.document_tokens = 1000;
  d.question_tokens = 20;
  RequestSetOptions o;
  o.kv_bytes_per_token = kLlamaKv;
  std::vector<Request> out;
  const std::pair<double, uint64_t> cases[] = {{0.5, 256}, {0.75, 512}, {1.0, 768}, {0, 0}};
  for (auto [ratio, cached] : cases) {
    o.prefix_cache_ratio = ratio;
    ASSERT_EQ(make_requests({d}, o, &out), 0);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].input_tokens, 1020u);
    EXPECT_EQ(out[0].cached_tokens, cached) << ratio;
    EXPECT_EQ(out[0].chunk_keys.size(), 3u);
    EXPECT_EQ(out[0].manifest().size(), cached / 256);
  }
  // At 100% the final partial chunk (232) and the question (20) stay uncached.
  EXPECT_EQ(out[0].chunk_bytes, 256 * kLlamaKv);  // 32 MiB
  o.prefix_cache_ratio = 1.0;
  ASSERT_EQ(make_requests({d}, o, &out), 0);
  EXPECT_EQ(out[0].uncached_tokens(), 252u);
  EXPECT_EQ(out[0].cached_bytes(), 3 * 256 * kLlamaKv);
}

TEST(RequestSet, NarrativeQaRequestsForBothModels) {
  const auto docs = narrativeqa_documents(1);
  RequestSetOptions o;
  std::vector<Request> llama, qwen;
  o.kv_bytes_per_token = kLlamaKv;
  ASSERT_EQ(make_requests(docs, o, &llama), 0);
  o.kv_bytes_per_token = kQwenKv;
  o.key_namespace = 2;
  ASSERT_EQ(make_requests(docs, o, &qwen), 0);
  ASSERT_EQ(llama.size(), 12u);
  for (size_t i = 0; i < llama.size(); ++i) {
    const Request& r = llama[i];
    EXPECT_EQ(r.id, i);
    EXPECT_EQ(r.arrival, static_cast<TimeNs>(i) * 500 * kNsPerMs);
    EXPECT_EQ(r.cached_tokens, docs[i].document_tokens / 256 * 256);
    EXPECT_EQ(r.uncached_tokens(), docs[i].document_tokens % 256 + docs[i].question_tokens);
    EXPECT_GE(r.output_tokens, 1u);
    EXPECT_LE(r.output_tokens, 128u);
    EXPECT_EQ(r.source, docs[i].index);
    EXPECT_EQ(qwen[i].chunk_bytes, 48u << 20);
    EXPECT_EQ(qwen[i].output_tokens, r.output_tokens);            // same seed, same answers
    EXPECT_NE(qwen[i].chunk_keys.front(), r.chunk_keys.front());  // separate key spaces
  }
  // Different documents share no chunk.
  std::set<ObjectKey> keys;
  size_t total = 0;
  for (const Request& r : llama) {
    keys.insert(r.chunk_keys.begin(), r.chunk_keys.end());
    total += r.chunk_keys.size();
  }
  EXPECT_EQ(keys.size(), total);
}

TEST(RequestSet, SameDocumentSameKeys) {
  auto docs = loogle_documents(3, 2);
  docs.push_back(docs[0]);  // a second question on the first document
  RequestSetOptions o;
  o.kv_bytes_per_token = kLlamaKv;
  std::vector<Request> out;
  ASSERT_EQ(make_requests(docs, o, &out), 0);
  EXPECT_EQ(out[2].chunk_keys, out[0].chunk_keys);
  EXPECT_NE(out[1].chunk_keys.front(), out[0].chunk_keys.front());
}

TEST(RequestSet, RejectsBadOptions) {
  const auto docs = loogle_documents(1, 2);
  std::vector<Request> out;
  RequestSetOptions o;
  EXPECT_EQ(make_requests(docs, o, &out), -EINVAL);  // no KV bytes per token
  o.kv_bytes_per_token = kLlamaKv;
  o.prefix_cache_ratio = 1.5;
  EXPECT_EQ(make_requests(docs, o, &out), -EINVAL);
  o.prefix_cache_ratio = 1.0;
  o.chunk_tokens = 0;
  EXPECT_EQ(make_requests(docs, o, &out), -EINVAL);
  o.chunk_tokens = 256;
  o.output.cap = 0;
  EXPECT_EQ(make_requests(docs, o, &out), -EINVAL);
  o.output.cap = 32;
  o.arrivals.kind = ArrivalKind::kTimestamps;  // no timestamps given
  EXPECT_EQ(make_requests(docs, o, &out), -EINVAL);
  EXPECT_TRUE(out.empty());
  o.arrivals.timestamps = {0, 100};
  ASSERT_EQ(make_requests(docs, o, &out), 0);
  EXPECT_EQ(out[1].arrival, 100);
  for (const Request& r : out) EXPECT_LE(r.output_tokens, 32u);
}

}  // namespace
}  // namespace tempo

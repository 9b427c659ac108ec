#include "workload/trace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <istream>
#include <sstream>
#include <string>
#include <vector>

namespace tempo {
namespace {

struct Parsed {
  int rc = 0;
  std::vector<Request> requests;
  TraceStats stats;
  std::string error;
};

Parsed parse(const std::string& text, TraceOptions o) {
  std::istringstream in(text);
  Parsed p;
  p.rc = parse_trace(in, "trace.jsonl", o, &p.requests, &p.stats, &p.error);
  return p;
}

TraceOptions small_blocks() {
  TraceOptions o;
  o.block_tokens = 4;
  o.kv_bytes_per_token = 2;
  return o;
}

TEST(Trace, ParsesAndFindsReusablePrefixes) {
  const Parsed p = parse(
      R"({"timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": [1, 2, 3]}
{"timestamp": 1000, "input_length": 9, "output_length": 1, "hash_ids": [1, 2, 4], "extra": "x"}
{"timestamp": 500.5, "input_length": 8, "output_length": 2, "hash_ids": [1, 5]}
)",
      small_blocks());
  ASSERT_EQ(p.rc, 0) << p.error;
  EXPECT_EQ(p.stats.lines, 3u);
  EXPECT_EQ(p.stats.requests, 3u);
  EXPECT_EQ(p.stats.skipped, 0u);
  EXPECT_EQ(p.stats.reordered, 1u);
  ASSERT_EQ(p.requests.size(), 3u);
  const Request& a = p.requests[0];  // line 1
  const Request& b = p.requests[1];  // line 3, earlier than line 2
  const Request& c = p.requests[2];  // line 2
  EXPECT_EQ(a.source, 1u);
  EXPECT_EQ(b.source, 3u);
  EXPECT_EQ(c.source, 2u);
  EXPECT_EQ(b.arrival, 500'500'000);
  EXPECT_EQ(c.arrival, 1'000'000'000);
  EXPECT_EQ(a.id, 0u);
  EXPECT_EQ(c.id, 2u);
  EXPECT_EQ(a.input_tokens, 10u);
  EXPECT_EQ(a.output_tokens, 5u);
  EXPECT_EQ(a.chunk_tokens, 4u);
  EXPECT_EQ(a.chunk_bytes, 8u);
  // Full blocks only (10 tokens: 2 of 4); nothing is reusable for the first request.
  EXPECT_EQ(a.chunk_keys.size(), 2u);
  EXPECT_EQ(a.cached_tokens, 0u);
  // Block 1 was seen, block 5 not: one block reusable.
  EXPECT_EQ(b.cached_tokens, 4u);
  EXPECT_EQ(b.chunk_keys[0], a.chunk_keys[0]);
  EXPECT_NE(b.chunk_keys[1], a.chunk_keys[1]);
  // Blocks 1, 2 seen: both reusable; the partial third block never is.
  EXPECT_EQ(c.cached_tokens, 8u);
  EXPECT_EQ(c.chunk_keys, a.chunk_keys);
  EXPECT_EQ(c.manifest(), (Manifest{{a.chunk_keys[0], 8}, {a.chunk_keys[1], 8}}));
}

TEST(Trace, DefaultBlockIs512Tokens) {
  TraceOptions o;
  o.kv_bytes_per_token = 128 * 1024;
  Parsed p =
      parse(R"({"timestamp": 0, "input_length": 1000, "output_length": 3, "hash_ids": [1, 2]})", o);
  ASSERT_EQ(p.rc, 0) << p.error;
  EXPECT_EQ(p.requests[0].chunk_tokens, 512u);
  EXPECT_EQ(p.requests[0].chunk_keys.size(), 1u);  // 1000 tokens: one full block
  EXPECT_EQ(p.requests[0].chunk_bytes, 64u << 20);
  p = parse(R"({"timestamp": 0, "input_length": 1000, "output_length": 3, "hash_ids": [1, 2, 3]})",
            o);
  EXPECT_EQ(p.rc, -EINVAL);
  EXPECT_EQ(p.error,
            "trace.jsonl:1: 'hash_ids' has 3 blocks but input_length 1000 fills at most 2 of 512 "
            "tokens");
}

struct Malformed {
  const char* line;
  const char* why;
};

class TraceRejects : public testing::TestWithParam<Malformed> {};

// The bad line is the second; the first and third are good and must not leak into the
// output (a blank line is malformed only with a request after it).
TEST_P(TraceRejects, NamesTheLine) {
  const std::string good =
      R"({"timestamp": 0, "input_length": 8, "output_length": 1, "hash_ids": [1]})";
  const std::string text = good + "\n" + GetParam().line + "\n" + good + "\n";
  const Parsed p = parse(text, small_blocks());
  EXPECT_EQ(p.rc, -EINVAL);
  EXPECT_EQ(p.error, std::string("trace.jsonl:2: ") + GetParam().why);
  EXPECT_TRUE(p.requests.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Lines, TraceRejects,
    testing::Values(
        Malformed{R"({"timestamp": 1, "input_length": 8)", "not valid JSON"},
        Malformed{"[1, 2]", "not a JSON object"}, Malformed{"", "empty line"},
        Malformed{R"({"input_length": 8, "output_length": 1, "hash_ids": []})",
                  "missing 'timestamp'"},
        Malformed{R"({"timestamp": "5", "input_length": 8, "output_length": 1, "hash_ids": []})",
                  "'timestamp' must be a number (ms)"},
        Malformed{R"({"timestamp": -5, "input_length": 8, "output_length": 1, "hash_ids": []})",
                  "'timestamp' is negative"},
        Malformed{R"({"timestamp": 5, "output_length": 1, "hash_ids": []})",
                  "missing 'input_length'"},
        Malformed{R"({"timestamp": 5, "input_length": -3, "output_length": 1, "hash_ids": []})",
                  "'input_length' is negative"},
        Malformed{R"({"timestamp": 5, "input_length": 3.5, "output_length": 1, "hash_ids": []})",
                  "'input_length' must be a non-negative integer"},
        Malformed{R"({"timestamp": 5, "input_length": "8", "output_length": 1, "hash_ids": []})",
                  "'input_length' must be a non-negative integer"},
        Malformed{R"({"timestamp": 5, "input_length": 8, "output_length": 0, "hash_ids": []})",
                  "'output_length' must be in [1, 16777216], not 0"},
        Malformed{R"({"timestamp": 5, "input_length": 9223372036854775808, "hash_ids": []})",
                  "'input_length' must be in [1, 16777216], not 9223372036854775808"},
        Malformed{
            R"({"timestamp": 5, "input_length": 16777217, "output_length": 1, "hash_ids": []})",
            "'input_length' must be in [1, 16777216], not 16777217"},
        Malformed{
            R"({"timestamp": 5, "input_length": 8, "output_length": 4294967295, "hash_ids": []})",
            "'output_length' must be in [1, 16777216], not 4294967295"},
        Malformed{R"({"timestamp": 1e13, "input_length": 8, "output_length": 1, "hash_ids": []})",
                  "'timestamp' is too large (at most 9e12 ms)"},
        Malformed{R"({"timestamp": 5, "input_length": 8, "hash_ids": []})",
                  "missing 'output_length'"},
        Malformed{R"({"timestamp": 5, "input_length": 8, "output_length": 1})",
                  "missing 'hash_ids'"},
        Malformed{R"({"timestamp": 5, "input_length": 8, "output_length": 1, "hash_ids": "1,2"})",
                  "'hash_ids' must be an array"},
        Malformed{R"({"timestamp": 5, "input_length": 8, "output_length": 1, "hash_ids": [1, -2]})",
                  "'hash_ids[1]' must be a non-negative integer"},
        Malformed{
            R"({"timestamp": 5, "input_length": 8, "output_length": 1, "hash_ids": [1, "b"]})",
            "'hash_ids[1]' must be a non-negative integer"}));

TEST(Trace, SkipMalformedCountsWhatItSkips) {
  TraceOptions o = small_blocks();
  o.skip_malformed = true;
  const Parsed p =
      parse(R"({"timestamp": 0, "input_length": 8, "output_length": 1, "hash_ids": [1, 2]}
{"timestamp": 1, "input_length": -8, "output_length": 1, "hash_ids": []}
not json
{"timestamp": 2, "input_length": 8, "output_length": 1, "hash_ids": [1, 2]}
)",
            o);
  ASSERT_EQ(p.rc, 0) << p.error;
  EXPECT_EQ(p.stats.lines, 4u);
  EXPECT_EQ(p.stats.requests, 2u);
  EXPECT_EQ(p.stats.skipped, 2u);
  EXPECT_EQ(p.stats.first_skipped, "trace.jsonl:2: 'input_length' is negative");
  ASSERT_EQ(p.requests.size(), 2u);
  EXPECT_EQ(p.requests[1].source, 4u);
  EXPECT_EQ(p.requests[1].cached_tokens, 8u);
}

// One line of 'x' without an end, `limit` bytes long, counting the bytes read from it.
class EndlessLine : public std::streambuf {
 public:
  explicit EndlessLine(uint64_t limit) : left_(limit) {}
  uint64_t consumed() const { return given_ - static_cast<uint64_t>(egptr() - gptr()); }

 protected:
  int_type underflow() override {
    if (left_ == 0) return traits_type::eof();
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buf_.size(), left_));
    std::fill_n(buf_.begin(), n, 'x');
    left_ -= n;
    given_ += n;
    setg(buf_.data(), buf_.data(), buf_.data() + n);
    return traits_type::to_int_type('x');
  }

 private:
  std::array<char, 4096> buf_{};
  uint64_t left_;
  uint64_t given_ = 0;
};

// A 256 MiB line is refused after kMaxTraceLineBytes + 1 bytes, not read whole (a 1 GB
// line used to take 4.2 GB of memory before it was found not to be JSON).
TEST(Trace, AnOverlongLineIsNotReadWhole) {
  EndlessLine line(uint64_t{256} << 20);
  std::istream in(&line);
  std::vector<Request> out;
  TraceStats stats;
  std::string err;
  EXPECT_EQ(parse_trace(in, "trace.jsonl", small_blocks(), &out, &stats, &err), -EINVAL);
  EXPECT_EQ(err, "trace.jsonl:1: line longer than 16777216 bytes");
  EXPECT_EQ(line.consumed(), kMaxTraceLineBytes + 1);
}

TEST(Trace, SkipMalformedSkipsAnOverlongLineAndGoesOn) {
  TraceOptions o = small_blocks();
  o.skip_malformed = true;
  const Parsed p =
      parse(std::string(kMaxTraceLineBytes + 5, 'x') + "\n" +
                R"({"timestamp": 2, "input_length": 8, "output_length": 1, "hash_ids": [1, 2]})",
            o);
  ASSERT_EQ(p.rc, 0) << p.error;
  EXPECT_EQ(p.stats.lines, 2u);
  EXPECT_EQ(p.stats.skipped, 1u);
  EXPECT_EQ(p.stats.first_skipped, "trace.jsonl:1: line longer than 16777216 bytes");
  ASSERT_EQ(p.requests.size(), 1u);
  EXPECT_EQ(p.requests[0].source, 2u);
}

TEST(Trace, BadOptionsAndMissingFile) {
  TraceOptions o;  // kv_bytes_per_token unset
  Parsed p = parse("", o);
  EXPECT_EQ(p.rc, -EINVAL);
  EXPECT_EQ(p.error, "trace.jsonl: block_tokens and kv_bytes_per_token must be > 0");
  o.kv_bytes_per_token = 2;
  p = parse("", o);
  EXPECT_EQ(p.rc, 0);
  EXPECT_TRUE(p.requests.empty());
  std::vector<Request> out;
  TraceStats stats;
  std::string err;
  EXPECT_EQ(load_trace("/nonexistent/tempo.jsonl", o, &out, &stats, &err), -ENOENT);
  EXPECT_EQ(err, "/nonexistent/tempo.jsonl: cannot read: No such file or directory");
}

// A directory used to throw out of the reader (tempo-sim and tempo-replay aborted).
TEST(Trace, ADirectoryIsAnError) {
  TraceOptions o;
  o.kv_bytes_per_token = 2;
  std::vector<Request> out;
  TraceStats stats;
  std::string err;
  EXPECT_EQ(load_trace("/", o, &out, &stats, &err), -EISDIR);
  EXPECT_EQ(err, "/: cannot read: Is a directory");
  EXPECT_TRUE(out.empty());
}

// Blank lines at the end end the trace (tempo-sim used to refuse an editor's final blank
// line); before a request they are malformed, and skip_malformed counts each.
TEST(Trace, TrailingBlankLinesEndTheTrace) {
  const std::string good =
      R"({"timestamp": 0, "input_length": 8, "output_length": 1, "hash_ids": [1]})";
  TraceOptions o = small_blocks();
  Parsed p = parse(good + "\n\n \t\r\n\n", o);
  EXPECT_EQ(p.rc, 0) << p.error;
  EXPECT_EQ(p.requests.size(), 1u);
  p = parse(good + "\n\n  \n" + good + "\n", o);
  EXPECT_EQ(p.rc, -EINVAL);
  EXPECT_EQ(p.error, "trace.jsonl:2: empty line");
  o.skip_malformed = true;
  p = parse(good + "\n\n  \n" + good + "\n\n", o);
  EXPECT_EQ(p.rc, 0) << p.error;
  EXPECT_EQ(p.requests.size(), 2u);
  EXPECT_EQ(p.stats.skipped, 2u);
  EXPECT_EQ(p.stats.first_skipped, "trace.jsonl:2: empty line");
}

}  // namespace
}  // namespace tempo

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <vector>

#include "core/rng.h"
#include "workload/arrivals.h"
#include "workload/request.h"
#include "workload/request_set.h"

namespace tempo {
namespace {

TEST(ChainKey, EqualPrefixesShareKeysAndOnlyThem) {
  const ObjectKey a1 = chain_key(0, 11), a2 = chain_key(a1, 12);
  const ObjectKey b1 = chain_key(0, 11), b2 = chain_key(b1, 12);
  const ObjectKey c1 = chain_key(0, 99), c2 = chain_key(c1, 12);
  EXPECT_EQ(a1, b1);
  EXPECT_EQ(a2, b2);
  EXPECT_NE(a2, c2);  // same chunk content after a different prefix
  EXPECT_NE(chain_key(0, 12), a2);
}

TEST(Request, ManifestIsTheCachedChunks) {
  Request r;
  r.input_tokens = 1000;
  r.cached_tokens = 512;
  r.chunk_tokens = 256;
  r.chunk_bytes = 32;
  r.chunk_keys = {7, 8, 9};
  EXPECT_EQ(r.cached_chunks(), 2u);
  EXPECT_EQ(r.uncached_tokens(), 488u);
  EXPECT_EQ(r.cached_bytes(), 64u);
  EXPECT_EQ(r.manifest(), (Manifest{{7, 32}, {8, 32}}));
}

TEST(Rng, SameSeedSameStream) {
  Rng a(42), b(42), c(43);
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.next();
    EXPECT_EQ(x, b.next());
    EXPECT_NE(x, c.next());
  }
  Rng r(1);
  for (int i = 0; i < 1000; ++i) {
    const uint64_t v = r.uniform_int(3, 5);
    EXPECT_GE(v, 3u);
    EXPECT_LE(v, 5u);
    const double u = r.uniform();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
}

TEST(Arrivals, FixedInterval) {
  std::vector<TimeNs> t;
  ArrivalSpec s;  // 0.5 s by default, the paper's spacing
  ASSERT_EQ(arrival_times(s, 4, &t), 0);
  EXPECT_EQ(t, (std::vector<TimeNs>{0, 500'000'000, 1'000'000'000, 1'500'000'000}));
  s.interval = -1;
  EXPECT_EQ(arrival_times(s, 4, &t), -EINVAL);
}

TEST(Arrivals, PoissonIsSeededAndHasTheRate) {
  ArrivalSpec s;
  s.kind = ArrivalKind::kPoisson;
  s.rate_per_s = 4.0;
  s.seed = 7;
  std::vector<TimeNs> a, b;
  ASSERT_EQ(arrival_times(s, 20'000, &a), 0);
  ASSERT_EQ(arrival_times(s, 20'000, &b), 0);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.front(), 0);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  // 19,999 gaps of mean 0.25 s: within 3% (about 4 standard errors).
  EXPECT_NEAR(ns_to_sec(a.back()) / 19'999, 0.25, 0.25 * 0.03);
  s.rate_per_s = 0;
  EXPECT_EQ(arrival_times(s, 3, &a), -EINVAL);
}

TEST(Arrivals, Timestamps) {
  ArrivalSpec s;
  s.kind = ArrivalKind::kTimestamps;
  s.timestamps = {5, 5, 9};
  std::vector<TimeNs> t;
  ASSERT_EQ(arrival_times(s, 3, &t), 0);
  EXPECT_EQ(t, s.timestamps);
  EXPECT_EQ(arrival_times(s, 4, &t), -EINVAL);  // too few
  s.timestamps = {5, 4};
  EXPECT_EQ(arrival_times(s, 2, &t), -EINVAL);  // decreasing
  EXPECT_TRUE(t.empty());
  ArrivalKind k;
  EXPECT_EQ(parse_arrival_kind("poisson", &k), 0);
  EXPECT_EQ(k, ArrivalKind::kPoisson);
  EXPECT_EQ(parse_arrival_kind("uniform", &k), -EINVAL);
}

// Arrivals past kMaxArrivalNs would overflow the replay's times (a request arriving at a
// negative time, a negative TTFT): each arrival process refuses them, leaving nothing.
TEST(Arrivals, PastTheTimeRangeAreRefused) {
  std::vector<TimeNs> t;
  ArrivalSpec s;
  s.interval = kMaxArrivalNs / 3;
  ASSERT_EQ(arrival_times(s, 4, &t), 0);  // the last at 3 x interval, within the range
  EXPECT_EQ(t.back(), 3 * (kMaxArrivalNs / 3));
  EXPECT_EQ(arrival_times(s, 5, &t), -ERANGE);
  s.interval = kNever;
  EXPECT_EQ(arrival_times(s, 2, &t), -ERANGE);
  ASSERT_EQ(arrival_times(s, 1, &t), 0);  // one request arrives at 0 whatever the interval
  s.kind = ArrivalKind::kPoisson;
  s.rate_per_s = 1e-300;
  EXPECT_EQ(arrival_times(s, 2, &t), -ERANGE);
  EXPECT_TRUE(t.empty());
  s.kind = ArrivalKind::kTimestamps;
  s.timestamps = {0, kMaxArrivalNs, kMaxArrivalNs + 1};
  ASSERT_EQ(arrival_times(s, 2, &t), 0);
  EXPECT_EQ(arrival_times(s, 3, &t), -ERANGE);
  EXPECT_TRUE(t.empty());
}

TEST(OutputLengths, NaturalEndBelowTheCap) {
  Rng rng(3);
  OutputLengthModel m;  // median 112, sigma 0.35, cap 128
  int capped = 0;
  double sum = 0;
  std::vector<uint32_t> v;
  for (int i = 0; i < 10'000; ++i) {
    const uint32_t n = draw_output_tokens(m, rng);
    ASSERT_GE(n, 1u);
    ASSERT_LE(n, 128u);
    capped += n == 128;
    sum += n;
    v.push_back(n);
  }
  std::nth_element(v.begin(), v.begin() + 5'000, v.end());
  EXPECT_NEAR(v[5'000], 112.0, 2.0);
  // P(lognormal >= 128) = P(z > ln(128/112)/0.35 = 0.38) = 35.1%; the rest end naturally.
  EXPECT_NEAR(capped / 10'000.0, 0.351, 0.015);
  EXPECT_NEAR(sum / 10'000, 106.0, 1.5);  // E[min(X, 128)] = 61.0 + 128 x 0.351
  // A tight cap (the paper's Figure 6 uses 32) makes nearly every request hit it.
  m.cap = 32;
  int at_cap = 0;
  for (int i = 0; i < 1'000; ++i) at_cap += draw_output_tokens(m, rng) == 32;
  EXPECT_GE(at_cap, 995);  // P(X < 32) = 0.02%
}

}  // namespace
}  // namespace tempo

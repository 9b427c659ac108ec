#include "core/time.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace tempo {
namespace {

// round_ns stands in for std::llround on the TTU projections' path: every value it takes
// must round as llround does, the halfway cases and the edges of the double's precision too.
TEST(RoundNs, RoundsAsLlroundDoes) {
  std::vector<double> cases = {0.0,
                               0.5,
                               1.5,
                               2.5,
                               -0.5,
                               -1.5,
                               0.49999999999999994,
                               -0.49999999999999994,
                               4503599627370495.5,
                               4503599627370497.0,
                               9007199254740993.0,
                               1e18,
                               -1e18,
                               123456789.5,
                               1.0 - 1e-16};
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int i = 0; i < 200'000; ++i) {
    const double magnitude = std::ldexp(1.0, static_cast<int>(gen() % 62));
    const double x = unit(gen) * magnitude * ((gen() & 1) ? 1 : -1);
    cases.push_back(x);
    cases.push_back(std::nextafter(std::floor(x) + 0.5, 0.0));
    cases.push_back(std::floor(x) + 0.5);
  }
  for (double x : cases) ASSERT_EQ(round_ns(x), std::llround(x)) << std::hexfloat << x;
}

}  // namespace
}  // namespace tempo

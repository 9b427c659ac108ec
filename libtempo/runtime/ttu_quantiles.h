// A claim's time-to-use as a distribution: its TTU at a few fixed probabilities, what the
// runtime's estimator produces and the risk-aware commit rule (controller/risk_policy.h)
// reads. Quantile k is the time by which retrieval begins with probability kTtuLevels[k].
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <span>

#include "core/time.h"

namespace tempo {

inline constexpr std::array<double, 5> kTtuLevels = {0.05, 0.25, 0.5, 0.75, 0.95};

// Where probability p lies among kTtuLevels, for values given at those levels and taken
// linearly between them: `fraction` of the way from level upper - 1 to level upper
// (0 < upper < kTtuLevels.size()); upper 0 at or below the first level (the first value),
// upper kTtuLevels.size() above the last (the last value).
struct LevelSpan {
  size_t upper = 0;
  double fraction = 0;
};
LevelSpan level_span(double p);

struct TtuQuantiles {
  std::array<TimeNs, kTtuLevels.size()> at{};  // non-decreasing

  // Every quantile at one value: a TTU known exactly.
  static TtuQuantiles point(TimeNs ttu);
  // The TTU at probability p: linear between the levels, the outermost quantile beyond.
  TimeNs at_level(double p) const;
  // The same distribution `elapsed` later (every quantile shifted down).
  TtuQuantiles shifted(TimeNs elapsed) const;
};

// The nearest-rank p-quantile of `sorted` (not empty, ascending): the smallest value with at
// least a share p of them at or below it.
template <typename T>
T nearest_rank(std::span<const T> sorted, double p) {
  const double rank = std::ceil(p * static_cast<double>(sorted.size()));
  return sorted[static_cast<size_t>(std::max(rank, 1.0)) - 1];
}

// Element k: the nearest-rank kTtuLevels[k]-quantile of `values` (not empty; sorted in
// place).
template <typename T>
std::array<T, kTtuLevels.size()> level_quantiles(std::span<T> values) {
  std::sort(values.begin(), values.end());
  std::array<T, kTtuLevels.size()> out{};
  for (size_t k = 0; k < kTtuLevels.size(); ++k)
    out[k] = nearest_rank(std::span<const T>(values), kTtuLevels[k]);
  return out;
}

}  // namespace tempo

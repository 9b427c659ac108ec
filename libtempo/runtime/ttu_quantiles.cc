#include "runtime/ttu_quantiles.h"

#include <cmath>

namespace tempo {

TtuQuantiles TtuQuantiles::point(TimeNs ttu) {
  TtuQuantiles q;
  q.at.fill(ttu);
  return q;
}

LevelSpan level_span(double p) {
  if (p <= kTtuLevels.front()) return {};
  for (size_t k = 1; k < kTtuLevels.size(); ++k) {
    if (p > kTtuLevels[k]) continue;
    return {k, (p - kTtuLevels[k - 1]) / (kTtuLevels[k] - kTtuLevels[k - 1])};
  }
  return {kTtuLevels.size(), 0};
}

TimeNs TtuQuantiles::at_level(double p) const {
  const LevelSpan s = level_span(p);
  if (s.upper == 0) return at.front();
  if (s.upper == at.size()) return at.back();
  const double span = static_cast<double>(at[s.upper] - at[s.upper - 1]);
  return at[s.upper - 1] + static_cast<TimeNs>(std::llround(s.fraction * span));
}

TtuQuantiles TtuQuantiles::shifted(TimeNs elapsed) const {
  TtuQuantiles q = *this;
  for (TimeNs& t : q.at) t -= elapsed;
  return q;
}

}  // namespace tempo

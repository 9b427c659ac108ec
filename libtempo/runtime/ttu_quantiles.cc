#include "runtime/ttu_quantiles.h"

#include <cmath>

namespace tempo {

TtuQuantiles TtuQuantiles::point(TimeNs ttu) {
  TtuQuantiles q;
  q.at.fill(ttu);
  return q;
}

TimeNs TtuQuantiles::at_level(double p) const {
  if (p <= kTtuLevels.front()) return at.front();
  for (size_t k = 1; k < kTtuLevels.size(); ++k) {
    if (p > kTtuLevels[k]) continue;
    const double f = (p - kTtuLevels[k - 1]) / (kTtuLevels[k] - kTtuLevels[k - 1]);
    const double span = static_cast<double>(at[k] - at[k - 1]);
    return at[k - 1] + static_cast<TimeNs>(std::llround(f * span));
  }
  return at.back();
}

TtuQuantiles TtuQuantiles::shifted(TimeNs elapsed) const {
  TtuQuantiles q = *this;
  for (TimeNs& t : q.at) t -= elapsed;
  return q;
}

}  // namespace tempo

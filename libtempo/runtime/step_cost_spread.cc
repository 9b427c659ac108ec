#include "runtime/step_cost_spread.h"

#include <algorithm>
#include <span>
#include <vector>

namespace tempo {

StepCostSpread::StepCostSpread(size_t window) : window_(std::max<size_t>(window, 1)) {
  ratios_.reserve(window_);
}

void StepCostSpread::record(TimeNs predicted, TimeNs observed) {
  if (predicted <= 0) return;
  const double ratio = static_cast<double>(observed) / static_cast<double>(predicted);
  if (ratios_.size() < window_) {
    ratios_.push_back(ratio);
    return;
  }
  ratios_[next_] = ratio;
  next_ = (next_ + 1) % window_;
}

std::array<double, kTtuLevels.size()> StepCostSpread::factors() const {
  if (ratios_.empty()) {
    std::array<double, kTtuLevels.size()> ones{};
    ones.fill(1.0);
    return ones;
  }
  std::vector<double> sorted = ratios_;
  return level_quantiles(std::span<double>(sorted));
}

}  // namespace tempo

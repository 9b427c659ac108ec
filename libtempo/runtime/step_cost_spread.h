// How far observed GPU step times stray from the cost model: the ratio observed/predicted of
// recent prefill and decode steps, as quantiles the TTU estimator scales its step costs by.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "core/time.h"
#include "runtime/ttu_quantiles.h"

namespace tempo {

class StepCostSpread {
 public:
  // Keeps the last `window` steps (at least one).
  explicit StepCostSpread(size_t window = 256);

  // A step the model predicted at `predicted` took `observed`. Steps predicted at 0 or less
  // carry no ratio and are ignored.
  void record(TimeNs predicted, TimeNs observed);

  // Element k: the nearest-rank kTtuLevels[k]-quantile of the recorded ratios; 1.0 each with
  // nothing recorded (the model taken at its word).
  std::array<double, kTtuLevels.size()> factors() const;

  size_t size() const { return ratios_.size(); }

 private:
  size_t window_;
  size_t next_ = 0;  // ring position of the oldest entry once full
  std::vector<double> ratios_;
};

}  // namespace tempo

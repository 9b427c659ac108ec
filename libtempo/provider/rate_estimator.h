// The provider's effective aggregate staging rate, learned from completed operations over
// active staging intervals only: time with no staging outstanding does not count, so an
// idle device does not look slow. Starts from a calibration that real samples push out of a
// sliding window of `window` active time.
#pragma once

#include <deque>

#include "core/time.h"

namespace tempo {

class RateEstimator {
 public:
  RateEstimator(double calibration_bps, TimeNs window);

  // Staging outstanding went from none to some at `now`.
  void on_busy(TimeNs now);
  // An operation of `bytes` completed at `now`; `still_busy` says whether others remain.
  void on_complete(uint64_t bytes, TimeNs now, bool still_busy);

  double rate_bps() const;
  double calibration_bps() const { return calibration_; }
  TimeNs active_time() const { return total_active_; }

 private:
  struct Sample {
    double bytes;
    TimeNs active;
  };
  double calibration_;
  TimeNs window_;
  std::deque<Sample> samples_;  // the oldest may be the calibration prior, partly aged out
  double window_bytes_ = 0;
  TimeNs window_active_ = 0;
  TimeNs total_active_ = 0;
  TimeNs mark_ = 0;  // start of the active time not yet attributed to a sample
  bool busy_ = false;
};

}  // namespace tempo

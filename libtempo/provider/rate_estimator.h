// The provider's effective aggregate staging rate, learned from completed operations over
// active staging intervals only: time with no staging outstanding does not count, so an
// idle device does not look slow. Starts from a calibration that real samples push out of a
// sliding window of `window` active time.
#pragma once

#include <cstddef>
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

// A path whose requests wait a latency before their bytes flow (the cluster pool): the
// duration of a request of b bytes that shared the path with k requests in all is taken as
// latency + b * k / rate, fitted by least squares over the last `window` completions.
// Starts from two calibration samples (a request of 10 ms and one of 100 ms of bytes,
// alone) that real ones push out. Where the window holds one shape of request only, the
// rate stays as it was and the latency takes the rest of the mean duration.
class LatencyRateEstimator {
 public:
  LatencyRateEstimator(double calibration_bps, TimeNs calibration_latency, size_t window = 32);

  // A request of `bytes` ended after `duration`, `sharing` requests (itself included) in
  // flight when it did.
  void on_complete(uint64_t bytes, uint32_t sharing, TimeNs duration);

  double rate_bps() const { return rate_bps_; }
  TimeNs latency_ns() const { return latency_ns_; }

 private:
  void fit();
  struct Sample {
    double x;  // bytes * sharing
    double y;  // seconds
  };
  std::deque<Sample> samples_;
  size_t window_;
  double rate_bps_;
  TimeNs latency_ns_;
};

}  // namespace tempo

#include "provider/rate_estimator.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tempo {

RateEstimator::RateEstimator(double calibration_bps, TimeNs window)
    : calibration_(calibration_bps), window_(window) {
  if (!(calibration_bps > 0)) throw std::invalid_argument("rate estimator: calibration <= 0");
  if (window <= 0) throw std::invalid_argument("rate estimator: window <= 0");
  // The prior: a full window's worth of active time at the calibrated rate.
  samples_.push_back(Sample{calibration_bps * ns_to_sec(window), window});
  window_bytes_ = samples_.front().bytes;
  window_active_ = window;
}

void RateEstimator::on_busy(TimeNs now) {
  if (busy_) return;
  busy_ = true;
  mark_ = now;
}

void RateEstimator::on_complete(uint64_t bytes, TimeNs now, bool still_busy) {
  const TimeNs active = busy_ ? now - mark_ : 0;
  samples_.push_back(Sample{static_cast<double>(bytes), active});
  window_bytes_ += static_cast<double>(bytes);
  window_active_ += active;
  total_active_ += active;
  mark_ = now;
  busy_ = still_busy;
  // Age out the oldest samples beyond the window; the one crossing it is trimmed pro rata.
  while (window_active_ > window_ && samples_.size() > 1) {
    Sample& old = samples_.front();
    const TimeNs excess = window_active_ - window_;
    if (old.active <= excess) {
      window_bytes_ -= old.bytes;
      window_active_ -= old.active;
      samples_.pop_front();
    } else {
      const double keep =
          static_cast<double>(old.active - excess) / static_cast<double>(old.active);
      window_bytes_ -= old.bytes * (1 - keep);
      old.bytes *= keep;
      old.active -= excess;
      window_active_ -= excess;
    }
  }
}

double RateEstimator::rate_bps() const {
  if (window_active_ <= 0) return calibration_;
  return window_bytes_ / ns_to_sec(window_active_);
}

LatencyRateEstimator::LatencyRateEstimator(double calibration_bps, TimeNs calibration_latency,
                                           size_t window)
    : window_(std::max<size_t>(window, 2)),
      rate_bps_(calibration_bps),
      latency_ns_(calibration_latency) {
  if (!(calibration_bps > 0)) throw std::invalid_argument("latency estimator: rate <= 0");
  if (calibration_latency < 0) throw std::invalid_argument("latency estimator: latency < 0");
  for (double seconds : {0.01, 0.1})
    samples_.push_back(Sample{calibration_bps * seconds, ns_to_sec(calibration_latency) + seconds});
}

void LatencyRateEstimator::on_complete(uint64_t bytes, uint32_t sharing, TimeNs duration) {
  samples_.push_back(Sample{static_cast<double>(bytes) * std::max<uint32_t>(sharing, 1),
                            ns_to_sec(std::max<TimeNs>(duration, 0))});
  if (samples_.size() > window_) samples_.pop_front();
  fit();
}

void LatencyRateEstimator::fit() {
  const auto n = static_cast<double>(samples_.size());
  double mx = 0, my = 0;
  for (const Sample& s : samples_) {
    mx += s.x / n;
    my += s.y / n;
  }
  double sxx = 0, sxy = 0;
  for (const Sample& s : samples_) {
    sxx += (s.x - mx) * (s.x - mx);
    sxy += (s.x - mx) * (s.y - my);
  }
  // Seconds per byte; kept where the window cannot tell latency from bytes.
  const double slope = sxx > 1e-12 * mx * mx * n && sxy > 0 ? sxy / sxx : 1 / rate_bps_;
  rate_bps_ = 1 / slope;
  latency_ns_ = std::max<TimeNs>(0, std::llround((my - mx * slope) * 1e9));
}

}  // namespace tempo

#include "controller/risk_policy.h"

#include <algorithm>
#include <cmath>

namespace tempo {

double risk_ratio(uint64_t bytes, double lateness_gib_s) {
  const double gib = static_cast<double>(bytes) / static_cast<double>(1ull << 30);
  return gib / (gib + lateness_gib_s);
}

void RiskCalibration::observe(TimeNs margin) {
  if (margin < 0) {
    lead_ = std::min(lead_ - margin / 2, kMaxRiskLead);
    return;
  }
  lead_ -= lead_ / 20;
}

TimeNs risk_ttu(const TtuQuantiles& spread, uint64_t bytes, double lateness_gib_s,
                const RiskCalibration& calibration, uint64_t behind) {
  const double n = static_cast<double>(behind);
  const double others = n / (1 + n);
  const auto lead =
      static_cast<TimeNs>(std::llround(static_cast<double>(calibration.lead()) * others));
  return spread.at_level(risk_ratio(bytes, lateness_gib_s * (1 + n))) - lead;
}

}  // namespace tempo

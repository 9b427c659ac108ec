#include "controller/risk_policy.h"

#include <algorithm>

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
                const RiskCalibration& calibration) {
  return spread.at_level(risk_ratio(bytes, lateness_gib_s)) - calibration.lead();
}

}  // namespace tempo

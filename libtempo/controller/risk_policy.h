// The risk-aware commit rule (policy "tempo-risk"): commit a PLANNED claim once the
// probability that its retrieval begins before it could be stage-ready reaches the claim's
// critical ratio, i.e. once TTR >= the TTU quantile at that ratio.
//
// The ratio comes from one knob, the lateness weight W: how many GiB*s of protected
// capacity one second of TTFT is worth. Deferring a claim of B GiB for a moment dt saves
// B*dt GiB*s if it is not needed meanwhile, and costs W*dt (a dt later first token) if it
// is; committing pays when P(needed first) * W >= (1 - P) * B, so the ratio is B / (B + W).
// A large W commits early (toward immediate), a small W late (toward demand); a TTU known
// exactly commits exactly where the paper's point rule does, whatever W.
//
// Lateness is dearer the more requests wait behind the claim: a late claim holds its
// request's admission, so it delays its own first token and that of every request queued
// behind it on the engine. With n requests behind it (from the runtime's waiting order) the
// claim's weight is W * (1 + n): nobody behind, the ratio is B / (B + W); a deep queue
// commits earlier.
//
// Feedback: every transfer shows the margin between readiness and the retrieval request
// (retrieval - ready, what tempomargin plots). A late claim (margin < 0) raises a lead (half
// the lateness, up to kMaxRiskLead); each claim on time decays it by a twentieth. A claim
// with n requests behind it commits n / (1 + n) of the lead ahead: the quantile weighs its
// own first token, the lead the share of its lateness the requests behind it would pay, so a
// claim nobody waits behind commits where the quantile says. Claims deferred for capacity
// are not the rule's doing and are not observed.
#pragma once

#include <cstdint>

#include "core/time.h"
#include "runtime/ttu_quantiles.h"

namespace tempo {

inline constexpr double kDefaultLatenessGibS = 6.0;
inline constexpr TimeNs kMaxRiskLead = kNsPerSec;

// B / (B + W) with B = `bytes` in GiB and W = `lateness_gib_s` (> 0).
double risk_ratio(uint64_t bytes, double lateness_gib_s);

class RiskCalibration {
 public:
  // A claim's transfer began `margin` after it was stage-ready (negative: it was late).
  void observe(TimeNs margin);
  // How far ahead of the quantile rule claims commit now (>= 0).
  TimeNs lead() const { return lead_; }

 private:
  TimeNs lead_ = 0;
};

// The TTU the rule compares with TTR for a claim of `bytes` with `behind` requests queued
// behind it: the spread's quantile at B / (B + W * (1 + behind)), less behind / (1 + behind)
// of the calibration's lead.
TimeNs risk_ttu(const TtuQuantiles& spread, uint64_t bytes, double lateness_gib_s,
                const RiskCalibration& calibration, uint64_t behind);

}  // namespace tempo

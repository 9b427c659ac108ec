// Commitment policies: eligibility rules over the same controller/provider machinery.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "controller/risk_policy.h"

namespace tempo {

enum class CommitPolicy : uint8_t {
  kDemand,       // eligible only when retrieval is requested
  kImmediate,    // eligible when the claim is reported
  kQueueK,       // eligible among the first K of the runtime's waiting queue
  kTempoStatic,  // laxity <= 0 with an isolated, fixed-rate TTR
  kTempo,        // laxity <= 0 with the provider's state-aware TTR (the paper's point rule)
  kTempoRisk,    // state-aware TTR against the TTU spread's quantile (controller/risk_policy.h)
};

struct PolicySpec {
  CommitPolicy policy = CommitPolicy::kTempo;
  uint32_t queue_k = 0;                          // kQueueK only: K >= 1
  double lateness_gib_s = kDefaultLatenessGibS;  // kTempoRisk only: the knob W
  friend bool operator==(const PolicySpec&, const PolicySpec&) = default;
};

// Whether the policy reads a claim's TTU spread (tempo-risk): a runtime projects the spread
// only then.
inline bool reads_ttu_spread(const PolicySpec& spec) {
  return spec.policy == CommitPolicy::kTempoRisk;
}

// Parses "demand", "immediate", "queue-K" (K >= 1), "tempo-static", "tempo", "tempo-risk"
// and "tempo-risk:W" (W > 0, the lateness weight in GiB*s per second of TTFT).
std::optional<PolicySpec> parse_policy(std::string_view name);
std::string policy_name(const PolicySpec& spec);
// The accepted names, for error messages.
std::string_view policy_names_help();

}  // namespace tempo

#include "controller/commit_policy.h"

#include <charconv>
#include <cmath>

namespace tempo {

std::optional<PolicySpec> parse_policy(std::string_view name) {
  if (name == "demand") return PolicySpec{CommitPolicy::kDemand, 0};
  if (name == "immediate") return PolicySpec{CommitPolicy::kImmediate, 0};
  if (name == "tempo-static") return PolicySpec{CommitPolicy::kTempoStatic, 0};
  if (name == "tempo") return PolicySpec{CommitPolicy::kTempo, 0};
  if (name == "tempo-risk") return PolicySpec{CommitPolicy::kTempoRisk, 0};
  constexpr std::string_view kRisk = "tempo-risk:";
  if (name.starts_with(kRisk)) {
    const std::string_view digits = name.substr(kRisk.size());
    double w = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), w);
    if (ec == std::errc() && end == digits.data() + digits.size() && w > 0 && std::isfinite(w))
      return PolicySpec{CommitPolicy::kTempoRisk, 0, w};
    return std::nullopt;
  }
  constexpr std::string_view kQueue = "queue-";
  if (name.starts_with(kQueue)) {
    const std::string_view digits = name.substr(kQueue.size());
    uint32_t k = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), k);
    if (ec == std::errc() && end == digits.data() + digits.size() && k >= 1)
      return PolicySpec{CommitPolicy::kQueueK, k};
  }
  return std::nullopt;
}

std::string policy_name(const PolicySpec& spec) {
  switch (spec.policy) {
    case CommitPolicy::kDemand:
      return "demand";
    case CommitPolicy::kImmediate:
      return "immediate";
    case CommitPolicy::kQueueK:
      return "queue-" + std::to_string(spec.queue_k);
    case CommitPolicy::kTempoStatic:
      return "tempo-static";
    case CommitPolicy::kTempo:
      return "tempo";
    case CommitPolicy::kTempoRisk: {
      if (spec.lateness_gib_s == kDefaultLatenessGibS) return "tempo-risk";
      char buf[32];
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, spec.lateness_gib_s);
      return "tempo-risk:" + std::string(buf, ec == std::errc() ? end : buf);
    }
  }
  return "unknown";
}

std::string_view policy_names_help() {
  return "demand, immediate, queue-K (K >= 1), tempo-static, tempo, tempo-risk[:W] (W > 0)";
}

}  // namespace tempo

#include "policies/study_policies.h"

#include "policies/adaptive.h"
#include "policies/belady.h"
#include "policies/ewma.h"
#include "policies/predicted_reuse.h"

namespace tempo {

std::vector<std::string> study_policy_names() {
  return {"lru",
          "reuse-frequency",
          "reuse-frequency-persistent",
          "predicted-reuse",
          "ewma",
          "arc",
          "adaptive",
          "min"};
}

std::unique_ptr<EvictionPolicy> make_study_policy(std::string_view name, const PolicyOptions& o) {
  if (auto p = make_eviction_policy(name, o.capacity_entries)) return p;
  if (name == "predicted-reuse") return std::make_unique<PredictedReusePolicy>();
  if (name == "ewma") {
    if (!(o.ewma_alpha > 0 && o.ewma_alpha <= 1)) return nullptr;
    return std::make_unique<EwmaPolicy>(o.ewma_alpha);
  }
  if (name == "adaptive") {
    if (!(o.adaptive_learning_rate > 0) || o.adaptive_experts.empty()) return nullptr;
    std::vector<std::unique_ptr<EvictionPolicy>> experts;
    for (const auto& e : o.adaptive_experts) {
      if (e == "adaptive" || e == "min") return nullptr;
      auto p = make_study_policy(e, o);
      if (!p) return nullptr;
      experts.push_back(std::move(p));
    }
    return std::make_unique<AdaptivePolicy>(std::move(experts), o.capacity_entries,
                                            o.adaptive_learning_rate);
  }
  if (name == "min" && o.future != nullptr) return std::make_unique<BeladyPolicy>(*o.future);
  return nullptr;
}

}  // namespace tempo

#include "policy/adaptive.h"
#include "policy/arc.h"
#include "policy/belady.h"
#include "policy/eviction_policy.h"
#include "policy/ewma.h"
#include "policy/lru.h"
#include "policy/predicted_reuse.h"
#include "policy/reuse_frequency.h"

namespace tempo {

std::vector<std::string> eviction_policy_names() {
  return {"lru",
          "reuse-frequency",
          "reuse-frequency-persistent",
          "predicted-reuse",
          "ewma",
          "arc",
          "adaptive",
          "min"};
}

std::unique_ptr<EvictionPolicy> make_eviction_policy(std::string_view name) {
  return make_eviction_policy(name, PolicyOptions{});
}

std::unique_ptr<EvictionPolicy> make_eviction_policy(std::string_view name,
                                                     const PolicyOptions& o) {
  if (name == "lru") return std::make_unique<LruPolicy>();
  if (name == "reuse-frequency") return std::make_unique<ReuseFrequencyPolicy>(false);
  if (name == "reuse-frequency-persistent") return std::make_unique<ReuseFrequencyPolicy>(true);
  if (name == "predicted-reuse") return std::make_unique<PredictedReusePolicy>();
  if (name == "ewma") {
    if (!(o.ewma_alpha > 0 && o.ewma_alpha <= 1)) return nullptr;
    return std::make_unique<EwmaPolicy>(o.ewma_alpha);
  }
  if (name == "arc") return std::make_unique<ArcPolicy>(o.capacity_entries);
  if (name == "adaptive") {
    if (!(o.adaptive_learning_rate > 0) || o.adaptive_experts.empty()) return nullptr;
    std::vector<std::unique_ptr<EvictionPolicy>> experts;
    for (const auto& e : o.adaptive_experts) {
      if (e == "adaptive" || e == "min") return nullptr;
      auto p = make_eviction_policy(e, o);
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

#include "policy/arc.h"
#include "policy/eviction_policy.h"
#include "policy/lru.h"
#include "policy/reuse_frequency.h"

namespace tempo {

std::vector<std::string> eviction_policy_names() {
  return {"lru", "reuse-frequency", "reuse-frequency-persistent", "arc"};
}

std::unique_ptr<EvictionPolicy> make_eviction_policy(std::string_view name,
                                                     size_t capacity_entries) {
  if (name == "lru") return std::make_unique<LruPolicy>();
  if (name == "reuse-frequency") return std::make_unique<ReuseFrequencyPolicy>(false);
  if (name == "reuse-frequency-persistent") return std::make_unique<ReuseFrequencyPolicy>(true);
  if (name == "arc") return std::make_unique<ArcPolicy>(capacity_entries);
  return nullptr;
}

}  // namespace tempo

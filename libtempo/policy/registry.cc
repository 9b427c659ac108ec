#include "policy/eviction_policy.h"
#include "policy/lru.h"

namespace tempo {

std::vector<std::string> eviction_policy_names() { return {"lru"}; }

std::unique_ptr<EvictionPolicy> make_eviction_policy(std::string_view name) {
  if (name == "lru") return std::make_unique<LruPolicy>();
  return nullptr;
}

}  // namespace tempo

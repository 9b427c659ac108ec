// The placement study's eviction policies: the fast tier's (libtempo/policy) and the ones
// only a study runs: Belady MIN, which reads the future; ewma and adaptive (LeCaR), the
// placement paper's predictive policies; predicted-reuse as the paper shipped it (lru under
// another name). tempo-sim, the placement layer and the policy tests choose from these.
#pragma once

#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "policy/eviction_policy.h"

namespace tempo {

// The future, for offline policies (Belady MIN): the position of the next reference of
// `id` after the current one, on any monotone scale, or kNoFutureUse.
class FutureOracle {
 public:
  static constexpr uint64_t kNoFutureUse = std::numeric_limits<uint64_t>::max();
  virtual ~FutureOracle() = default;
  virtual uint64_t next_use(BlockId id) const = 0;
};

struct PolicyOptions {
  // Entries the owner holds when full; 0 = learn it as the high-water mark of size().
  // Sizes ghost lists (arc, adaptive) and the adaptive policy's regret discount.
  size_t capacity_entries = 0;
  // Weight of the newest gap in the ewma policy's next-touch predictor, in (0, 1].
  double ewma_alpha = 0.5;
  // Learning rate of the adaptive policy (LeCaR's lambda) and the experts it weighs.
  double adaptive_learning_rate = 0.45;
  std::vector<std::string> adaptive_experts{"lru", "reuse-frequency-persistent", "ewma"};
  // Required by "min"; must outlive the policy.
  const FutureOracle* future = nullptr;
};

// Every policy a study can choose, in a stable order.
std::vector<std::string> study_policy_names();
// Returns nullptr for an unknown name, and for "min" without options.future.
std::unique_ptr<EvictionPolicy> make_study_policy(std::string_view name,
                                                  const PolicyOptions& options = {});

}  // namespace tempo

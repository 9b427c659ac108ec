// A one-tier demand-paging cache over a reference string, driving an EvictionPolicy the
// way an owner must: hit -> record_access; miss on a full cache -> pick_victim_for(id) +
// evict, then add. Time is the reference's position.
#pragma once

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "policies/belady.h"
#include "policies/study_policies.h"

namespace tempo::test {

struct CacheRun {
  uint64_t misses = 0;
  std::vector<BlockId> victims;
};

inline CacheRun run_cache(const std::string& policy, size_t capacity,
                          const std::vector<BlockId>& trace) {
  TraceOracle oracle(trace);
  PolicyOptions opts;
  opts.capacity_entries = capacity;
  opts.future = &oracle;
  auto p = make_study_policy(policy, opts);
  CacheRun r;
  std::unordered_set<BlockId> resident;
  for (size_t i = 0; i < trace.size(); ++i) {
    oracle.advance(i);
    const BlockId id = trace[i];
    const auto now = static_cast<TimeNs>(i);
    if (resident.contains(id)) {
      p->record_access(id, now);
      continue;
    }
    ++r.misses;
    if (resident.size() == capacity) {
      const auto v = p->pick_victim_for(id);
      p->evict(*v);
      resident.erase(*v);
      r.victims.push_back(*v);
    }
    p->add(id, 1, now);
    resident.insert(id);
  }
  return r;
}

}  // namespace tempo::test

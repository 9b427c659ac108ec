#include "replay_engine.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tempo {

size_t ReplayEngine::claim_index(const LiveRequest& l, ClaimId id) {
  return static_cast<size_t>(std::find(l.claims.begin(), l.claims.end(), id) - l.claims.begin());
}

void ReplayEngine::admit_layered(LiveRequest& l) {
  l.rec.path = RetrievalPath::kStaged;
  l.ordinary.assign(l.claims.size(), 0);
  for (size_t c = 0; c < l.claims.size(); ++c) {
    RetrievalOutcome out{};
    const int r = st_.claims().request_retrieval(l.claims[c], &out);
    if (r != 0) throw std::logic_error("replay: retrieval request refused: " + std::to_string(r));
    if (out == RetrievalOutcome::kReady) {
      claim_groups_ready(l, c);
    } else if (out == RetrievalOutcome::kOrdinary) {
      if (c == 0) record_claim(l);
      read_ordinary_claim(l, c);
    } else if (l.claims.size() == 1) {
      objects_landed(l);
    }
  }
}

void ReplayEngine::read_ordinary_claim(LiveRequest& l, size_t c) {
  l.rec.path = RetrievalPath::kOrdinary;
  l.ordinary[c] = 1;
  LiveRequest* lp = &l;
  const int r = st_.claims().ordinary_read_async(l.claims[c], [this, lp, c](int st) {
    if (st != 0) throw std::logic_error("replay: demand read failed");
    claim_groups_ready(*lp, c);
  });
  if (r != 0) throw std::logic_error("replay: demand read refused: " + std::to_string(r));
}

void ReplayEngine::claim_groups_ready(LiveRequest& l, size_t c) {
  if (l.claims.size() > 1) return group_ready(l, static_cast<uint32_t>(c));
  for (uint32_t g = 0; g < cfg_.layer_groups; ++g) group_ready(l, g);
}

void ReplayEngine::objects_landed(LiveRequest& l) {
  std::vector<uint8_t> ready;
  if (st_.claims().ready_objects(l.claim, &ready) != 0)
    throw std::logic_error("replay: the claim surface has no per-object readiness");
  const size_t per = ready.size() / cfg_.layer_groups;
  for (uint32_t g = 0; g < cfg_.layer_groups; ++g)
    if (std::all_of(ready.begin() + static_cast<std::ptrdiff_t>(g * per),
                    ready.begin() + static_cast<std::ptrdiff_t>((g + 1) * per),
                    [](uint8_t r) { return r != 0; }))
      group_ready(l, g);
}

void ReplayEngine::group_ready(LiveRequest& l, uint32_t g) {
  if (l.group_ready[g] >= 0) return;
  l.group_ready[g] = now();
  if (g == 0 && l.phase == RequestPhase::kAwaitKv) kv_available(l);
  if (l.stalled == int64_t{g}) {
    l.stalled = -1;
    run_group(l, g);
  }
}

void ReplayEngine::run_group(LiveRequest& l, uint32_t g) {
  const uint32_t n = cfg_.layer_groups;
  if (g == n) {
    runtime_.step_spread().record(n * l.group_prefill + n * group_copy_time(l),
                                  now() - l.rec.retrieval_start);
    return first_token(l);
  }
  if (l.group_ready[g] < 0) {
    l.stalled = g;
    prefilling_ = kNone;  // the GPU waits for the group to land
    return;
  }
  prefilling_ = static_cast<size_t>(&l - live_.data());
  busy_until_ = now() + (n - g) * (group_copy_time(l) + l.group_prefill);
  const bool per_group = l.claims.size() > 1;
  const size_t c = per_group ? g : 0;
  const bool transfers = !l.ordinary[c] && (per_group || g == n - 1);
  if (transfers) {
    if (st_.claims().transfer_begin(l.claims[c]) != 0)
      throw std::logic_error("replay: transfer of a claim that is not stage-ready");
    copied_bytes_ += st_.copy_out(l.claims[c]);
  }
  st_.driver().schedule_after(group_copy_time(l), [this, &l, g, c, transfers, n] {
    if (transfers) st_.claims().transfer_end(l.claims[c]);
    if (g == n - 1) {
      l.rec.retrieval_end = now();
      l.retrieved = true;
      if (!l.ordinary[0]) record_claim(l);
    }
    st_.driver().schedule_after(l.group_prefill, [this, &l, g] { run_group(l, g + 1); });
  });
}

TimeNs ReplayEngine::group_copy_time(const LiveRequest& l) const {
  return costs_.retrieval_time(l.rec.kv_bytes * cfg_.byte_scale / cfg_.layer_groups);
}

}  // namespace tempo

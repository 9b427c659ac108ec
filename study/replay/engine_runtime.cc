#include "replay_engine.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "controller/commit_policy.h"

namespace tempo {

HitClaims ReplayEngine::hit_claims() const {
  switch (cfg_.layer_wise) {
    case LayerWise::kLead:
      return HitClaims::kLayered;
    case LayerWise::kPerGroup:
      return HitClaims::kPerGroup;
    default:
      return HitClaims::kOne;
  }
}

void ReplayEngine::update_estimates() {
  if (dax_) return;
  // An arrival during the GPU's work: the projection starts when that work is predicted
  // to end, with its request prefilled or its decode batch one token further.
  const TimeNs busy_for = gpu_busy_ ? std::max<TimeNs>(busy_until_ - now(), 0) : 0;
  std::vector<RunningRequest> running;
  for (size_t i : running_) {
    const LiveRequest& l = live_[i];
    RunningRequest r;
    const bool in_prefill = gpu_busy_ && i == prefilling_;
    const bool prefilled = l.phase == RequestPhase::kDecoding || in_prefill;
    const uint32_t stepping = gpu_busy_ && std::ranges::find(decoding_, i) != decoding_.end();
    // The matched prefix counts as done; its retrieval is in retrieval_bytes_remaining.
    r.prompt_tokens_done = prefilled ? l.req->prompt_tokens : l.rec.cached_tokens;
    r.prompt_tokens_remaining = prefilled ? 0 : l.uncached_tokens;
    const uint32_t generated = in_prefill ? 1 : l.generated + stepping;
    r.tokens_generated = prefilled ? generated : 0;
    r.context_tokens = prefilled ? l.req->prompt_tokens + generated : r.prompt_tokens_done;
    r.retrieval_bytes_remaining = l.retrieved || in_prefill ? 0 : l.rec.kv_bytes;
    r.ready_in = l.phase == RequestPhase::kAwaitKv ? committed_ready_in(l) : 0;
    if (cfg_.known_outputs) r.output_tokens = l.req->output_tokens;
    running.push_back(r);
  }
  if (const int r = runtime_.step(now(), running, *this, busy_for, order_changed_, *this); r != 0)
    throw std::logic_error("replay: the runtime side refused a step: " + std::to_string(r));
  order_changed_ = false;
}

WaitingEntry ReplayEngine::at(size_t q) const {
  const LiveRequest& l = live_[waiting_[q]];
  WaitingEntry e;
  e.key = waiting_[q];
  e.hit = !l.hit.empty();
  e.request.uncached_prompt_tokens = l.uncached_tokens;
  e.request.cached_prompt_tokens = l.rec.cached_tokens;
  e.request.retrieval_bytes = l.rec.kv_bytes;
  e.request.ready_in = committed_ready_in(l);
  if (cfg_.known_outputs) e.request.output_tokens = l.req->output_tokens;
  return e;
}

void ReplayEngine::on_reported(uint64_t key, std::span<const ClaimId> claims) {
  LiveRequest& l = live_[key];
  l.claim = claims.front();
  if (layered_) l.claims.assign(claims.begin(), claims.end());
  for (const ClaimId id : claims) by_claim_[id] = key;
}

TimeNs ReplayEngine::committed_ready_in(const LiveRequest& l) const {
  ClaimView v;
  if (!l.claim || st_.claims().query(l.claim, &v) != 0 || v.state != ClaimState::kStaging) return 0;
  return v.ttr.value_or(0);
}

}  // namespace tempo

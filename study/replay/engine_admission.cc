#include "replay_engine.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "keys/chain_hash.h"

namespace tempo {

namespace {

// Shifts every time of a record by -start (records are relative to the run's start).
void rebase(RequestRecord* r, TimeNs start) {
  for (TimeNs* t : {&r->timing.arrival, &r->timing.first_token, &r->timing.finish, &r->admitted,
                    &r->kv_available, &r->retrieval_start, &r->retrieval_end, &r->claim.reported,
                    &r->claim.committed, &r->claim.ready, &r->claim.retrieval_requested,
                    &r->claim.transfer_begin, &r->claim.ended})
    if (*t >= 0) *t -= start;
}

}  // namespace

ReplayEngine::ReplayEngine(const ReplayWorkload& w, const std::vector<size_t>& mine, uint32_t index,
                           ServingStack& stack, const EngineConfig& cfg, const StepCosts& costs,
                           OrderSink order, const std::unordered_set<ObjectKey>* reusable)
    : cfg_(cfg),
      costs_(costs),
      st_(stack),
      publish_order_(std::move(order)),
      reusable_(reusable),
      dax_(cfg.policy == "dax-l1"),
      runtime_(stack.claims(), costs,
               RuntimeSideConfig{cfg.max_active, cfg.generation_limit, cfg.ttu_horizon}) {
  if (!dax_ && !parse_policy(cfg.policy))
    throw std::invalid_argument("unknown policy '" + cfg.policy + "': accepted " +
                                std::string(policy_names_help()) + ", dax-l1");
  if (cfg.max_active == 0 || cfg.generation_limit == 0)
    throw std::invalid_argument("max_active and generation_limit must be positive");
  layered_ = cfg.layer_wise != LayerWise::kOff;
  if (layered_ && (dax_ || cfg.layer_groups == 0 || cfg.layer_groups > kMaxLayerGroups))
    throw std::invalid_argument("layer-wise loading takes 1 to " + std::to_string(kMaxLayerGroups) +
                                " layer groups and a commitment policy (not dax-l1)");
  live_.resize(mine.size());
  for (size_t k = 0; k < mine.size(); ++k) {
    const ReplayRequest& q = w.requests[mine[k]];
    live_[k].req = &q;
    live_[k].index = mine[k];
    live_[k].rec.id = q.id;
    live_[k].rec.engine = index;
    live_[k].rec.timing.arrival = q.arrival;
    live_[k].rec.prompt_tokens = q.prompt_tokens;
  }
}

void ReplayEngine::schedule_arrival(size_t k, TimeNs start) {
  live_[k].rec.timing.arrival = start + live_[k].req->arrival;
  st_.driver().schedule_at(live_[k].rec.timing.arrival, [this, k] { arrive(k); });
}

void ReplayEngine::collect(TimeNs start, std::vector<RequestRecord>* out) {
  for (LiveRequest& l : live_) {
    if (l.phase != RequestPhase::kDone) throw std::logic_error("replay: a request never finished");
    rebase(&l.rec, start);
    (*out)[l.index] = l.rec;
  }
}

void ReplayEngine::on_claim_ready(ClaimId id) {
  auto it = by_claim_.find(id);
  if (it == by_claim_.end()) return;
  LiveRequest& l = live_[it->second];
  if (layered_) {
    if (l.rec.admitted >= 0) claim_groups_ready(l, claim_index(l, id));
  } else if (l.phase == RequestPhase::kAwaitKv) {
    kv_available(l);
  }
}

void ReplayEngine::on_claim_ordinary(ClaimId id) {
  auto it = by_claim_.find(id);
  if (it == by_claim_.end()) return;
  LiveRequest& l = live_[it->second];
  if (layered_) {
    const size_t c = claim_index(l, id);
    if (c == 0) record_claim(l);
    if (l.rec.admitted >= 0) read_ordinary_claim(l, c);
    return;
  }
  record_claim(l);
  if (l.phase == RequestPhase::kAwaitKv) read_ordinary(l, RetrievalPath::kOrdinary);
}

void ReplayEngine::on_claim_progress(ClaimId id) {
  auto it = by_claim_.find(id);
  if (it == by_claim_.end() || !layered_) return;
  LiveRequest& l = live_[it->second];
  if (l.rec.admitted >= 0 && l.claims.size() == 1) objects_landed(l);
}

void ReplayEngine::record_claim(LiveRequest& l) {
  ClaimView v;
  if (st_.claims().query(l.claim, &v) != 0)
    throw std::logic_error("replay: an ended claim was already erased");
  l.rec.claim = v.timing;
  l.rec.deferrals = v.deferrals;
}

void ReplayEngine::save_computed(const LiveRequest& l) {
  if (!reusable_) return;
  for (size_t c = l.hit.size(); c < l.req->chunks.size(); ++c) {
    const KvObject& o = l.req->chunks[c];
    if (reusable_->contains(o.key)) st_.save(o);
  }
}

uint64_t ReplayEngine::kv_tokens(const LiveRequest& l) const {
  return l.req->prompt_tokens + std::min(l.req->output_tokens, cfg_.generation_limit);
}

void ReplayEngine::arrive(size_t i) {
  LiveRequest& l = live_[i];
  const bool too_long = cfg_.max_context_tokens > 0 && kv_tokens(l) > cfg_.max_context_tokens;
  const bool too_big = cfg_.kv_capacity_tokens > 0 && kv_tokens(l) > cfg_.kv_capacity_tokens;
  if (too_long || too_big) {
    l.rec.path = RetrievalPath::kRejected;
    l.phase = RequestPhase::kDone;
    ++finished_;
    return;
  }
  // Prefix lookup: the longest run of leading chunks the SSD tier (or the pool below it)
  // holds.
  std::vector<ObjectKey> prefix;
  for (const KvObject& o : l.req->prefix_chunks) {
    l.rec.reusable_bytes += o.bytes;
    // Layer-wise, a chunk is held when its first group is (they are stored together).
    prefix.push_back(layered_ ? layer_group_key(o.key, 0) : o.key);
  }
  size_t held = 0;
  if (st_.claims().store_lookup(prefix, &held) != 0)
    throw std::runtime_error("replay: the store's prefix lookup failed");
  for (const KvObject& o : std::span(l.req->prefix_chunks).first(held)) {
    l.hit.push_back(o);
    l.keys.push_back(o.key);
    l.rec.kv_bytes += o.bytes;
    if (!st_.holds_locally(o.key)) l.rec.pool_bytes += o.bytes;
  }
  l.rec.cached_tokens = l.hit.size() * l.req->chunk_tokens;
  l.uncached_tokens = l.req->prompt_tokens - l.rec.cached_tokens;
  if (layered_ && !l.hit.empty()) {
    const uint32_t g = cfg_.layer_groups;
    l.groups.assign(g, {});
    for (const KvObject& chunk : l.hit) {
      const std::vector<KvObject> parts = layer_group_objects(chunk, g);
      for (uint32_t k = 0; k < g; ++k) l.groups[k].push_back(parts[k]);
    }
    l.group_ready.assign(g, -1);
    l.group_prefill = costs_.prefill_time(l.uncached_tokens, l.rec.cached_tokens) / g;
  }
  if (!l.hit.empty() && !dax_)
    runtime_.add_hit(i, layered_ ? l.groups : std::vector<Manifest>{l.hit}, hit_claims(),
                     cfg_.layer_groups, l.group_prefill);
  l.phase = RequestPhase::kWaiting;
  waiting_.push_back(i);
  order_changed_ = true;
  // The adapter reports the new hit with its TTU at once; admission waits for the GPU.
  scheduling_ = true;
  update_estimates();
  scheduling_ = false;
  start_iteration();
}

void ReplayEngine::start_iteration() {
  // KV that becomes available while scheduling is picked up below, not by re-entering.
  if (gpu_busy_ || scheduling_) return;
  scheduling_ = true;
  while (running_.size() < cfg_.max_active && !waiting_.empty() &&
         (cfg_.kv_capacity_tokens == 0 ||
          kv_used_ + kv_tokens(live_[waiting_.front()]) <= cfg_.kv_capacity_tokens)) {
    const size_t i = waiting_.front();
    kv_used_ += kv_tokens(live_[i]);
    waiting_.pop_front();
    runtime_.forget(i);
    order_changed_ = true;
    running_.push_back(i);
    admit(live_[i]);
  }
  update_estimates();
  scheduling_ = false;
  iter_ready_.clear();
  iter_batch_.clear();
  for (size_t i : running_) {
    if (live_[i].phase == RequestPhase::kKvReady) iter_ready_.push_back(i);
    if (live_[i].phase == RequestPhase::kDecoding) iter_batch_.push_back(i);
  }
  if (iter_ready_.empty() && iter_batch_.empty()) return;  // idle until an event
  gpu_busy_ = true;
  iter_pos_ = 0;
  step();
}

void ReplayEngine::admit(LiveRequest& l) {
  l.rec.admitted = now();
  l.phase = RequestPhase::kAwaitKv;
  if (l.hit.empty()) return kv_available(l);
  if (dax_) return read_ordinary(l, RetrievalPath::kDaxL1);
  if (layered_) return admit_layered(l);
  RetrievalOutcome out{};
  const int r = st_.claims().request_retrieval(l.claim, &out);
  if (r != 0) throw std::logic_error("replay: retrieval request refused: " + std::to_string(r));
  l.rec.path = RetrievalPath::kStaged;
  if (out == RetrievalOutcome::kReady) return kv_available(l);
  if (out == RetrievalOutcome::kOrdinary) {
    record_claim(l);
    return read_ordinary(l, RetrievalPath::kOrdinary);
  }
}

void ReplayEngine::read_ordinary(LiveRequest& l, RetrievalPath path) {
  l.rec.path = path;
  LiveRequest* lp = &l;
  auto done = [this, lp](int st) {
    if (st != 0) throw std::logic_error("replay: demand read failed");
    kv_available(*lp);
  };
  const int r = path == RetrievalPath::kDaxL1
                    ? st_.read_dax_l1(l.keys, std::move(done))
                    : st_.claims().ordinary_read_async(l.claim, std::move(done));
  if (r != 0) throw std::logic_error("replay: demand read refused: " + std::to_string(r));
}

void ReplayEngine::kv_available(LiveRequest& l) {
  l.phase = RequestPhase::kKvReady;
  l.rec.kv_available = now();
  if (!gpu_busy_) start_iteration();
}

}  // namespace tempo

#include "serving_engine.h"

#include <algorithm>
#include <cerrno>
#include <deque>
#include <functional>
#include <memory>
#include <queue>
#include <span>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "keys/chain_hash.h"
#include "router.h"
#include "runtime/runtime_side.h"
#include "serving_stack.h"

namespace tempo {

namespace {

enum class Phase : uint8_t { kArriving, kWaiting, kAwaitKv, kKvReady, kDecoding, kDone };

struct Live {
  const ReplayRequest* req = nullptr;
  size_t index = 0;  // in the workload
  RequestRecord rec;
  std::vector<KvObject> hit;    // cached chunks found at lookup
  std::vector<ObjectKey> keys;  // their keys, for demand reads
  uint64_t uncached_tokens = 0;
  ClaimId claim = 0;
  Phase phase = Phase::kArriving;
  bool retrieved = false;
  uint32_t generated = 0;
  // Layer-wise: each group's objects; the claims (one, or one per group with kPerGroup,
  // claims[0] == claim) and which of them took the ordinary path; when each group's KV
  // became ready (-1: not yet); the group a stalled prefill waits for (-1: none); one group's
  // share of the prefill.
  std::vector<Manifest> groups;
  std::vector<ClaimId> claims;
  std::vector<uint8_t> ordinary;
  std::vector<TimeNs> group_ready;
  int64_t stalled = -1;
  TimeNs group_prefill = 0;
};

// Shifts every time of a record by -start (records are relative to the run's start).
void rebase(RequestRecord* r, TimeNs start) {
  for (TimeNs* t : {&r->timing.arrival, &r->timing.first_token, &r->timing.finish, &r->admitted,
                    &r->kv_available, &r->retrieval_start, &r->retrieval_end, &r->claim.reported,
                    &r->claim.committed, &r->claim.ready, &r->claim.retrieval_requested,
                    &r->claim.transfer_begin, &r->claim.ended})
    if (*t >= 0) *t -= start;
}

// Publishes an engine's waiting order (its claims, kNoClaim for requests without one).
using OrderSink = std::function<void(std::vector<ClaimId>)>;

// One emulated GPU: its FCFS queue, running batch, TTU estimator and GPU KV memory, serving
// the requests routed to it through the (possibly shared) stack of its host.
class Engine final : private RuntimeListener, private WaitingView {
 public:
  // `mine`: the indices in `w` of the requests routed here, in arrival order.
  // `reusable`: the objects later requests reuse, which a request that computes them saves
  // (null: nothing is saved, the workload's objects are all preloaded).
  Engine(const ReplayWorkload& w, const std::vector<size_t>& mine, uint32_t index,
         ServingStack& stack, const EngineConfig& cfg, const StepCosts& costs, OrderSink order,
         const std::unordered_set<ObjectKey>* reusable)
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
      throw std::invalid_argument("layer-wise loading takes 1 to " +
                                  std::to_string(kMaxLayerGroups) +
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

  bool done() const { return finished_ == live_.size(); }
  uint64_t copied_bytes() const { return copied_bytes_; }

  // On the driver: request k (of mine) arrives at `start` plus its arrival time.
  void schedule_arrival(size_t k, TimeNs start) {
    live_[k].rec.timing.arrival = start + live_[k].req->arrival;
    st_.driver().schedule_at(live_[k].rec.timing.arrival, [this, k] { arrive(k); });
  }

  // Moves the records, relative to `start`, to (*out)[workload index].
  void collect(TimeNs start, std::vector<RequestRecord>* out) {
    for (Live& l : live_) {
      if (l.phase != Phase::kDone) throw std::logic_error("replay: a request never finished");
      rebase(&l.rec, start);
      (*out)[l.index] = l.rec;
    }
  }

  // A claim can be ready inside its own report() (every object already resident), before
  // its id is known here: it is still waiting then, and admission finds it ready. Claims
  // of the host's other engines are not found here and ignored.
  void on_claim_ready(ClaimId id) {
    auto it = by_claim_.find(id);
    if (it == by_claim_.end()) return;
    Live& l = live_[it->second];
    if (layered_) {
      if (l.rec.admitted >= 0) claim_groups_ready(l, claim_index(l, id));
    } else if (l.phase == Phase::kAwaitKv) {
      kv_available(l);
    }
  }

  void on_claim_ordinary(ClaimId id) {
    auto it = by_claim_.find(id);
    if (it == by_claim_.end()) return;
    Live& l = live_[it->second];
    if (layered_) {
      const size_t c = claim_index(l, id);
      if (c == 0) record_claim(l);
      if (l.rec.admitted >= 0) read_ordinary_claim(l, c);
      return;
    }
    record_claim(l);
    if (l.phase == Phase::kAwaitKv) read_ordinary(l, RetrievalPath::kOrdinary);
  }

  // Layer-wise, one claim per request: some of its objects landed; groups whose objects all
  // did may start.
  void on_claim_progress(ClaimId id) {
    auto it = by_claim_.find(id);
    if (it == by_claim_.end() || !layered_) return;
    Live& l = live_[it->second];
    if (l.rec.admitted >= 0 && l.claims.size() == 1) objects_landed(l);
  }

 private:
  TimeNs now() const { return st_.driver().now(); }

  // Keeps the claim's timing once it ended (the stack erases ended claims after a while).
  void record_claim(Live& l) {
    ClaimView v;
    if (st_.claims().query(l.claim, &v) != 0)
      throw std::logic_error("replay: an ended claim was already erased");
    l.rec.claim = v.timing;
    l.rec.deferrals = v.deferrals;
  }

  // Replays across hosts: the reusable chunks this request computed (those after its hit)
  // go to its host's store, and through it to the pool.
  void save_computed(const Live& l) {
    if (!reusable_) return;
    for (size_t c = l.hit.size(); c < l.req->chunks.size(); ++c) {
      const KvObject& o = l.req->chunks[c];
      if (reusable_->contains(o.key)) st_.save(o);
    }
  }

  // KV tokens a request holds in GPU memory by its end (its prompt and its output); held
  // from admission, as no preemption is modelled.
  uint64_t kv_tokens(const Live& l) const {
    return l.req->prompt_tokens + std::min(l.req->output_tokens, cfg_.generation_limit);
  }

  void arrive(size_t i) {
    Live& l = live_[i];
    const bool too_long = cfg_.max_context_tokens > 0 && kv_tokens(l) > cfg_.max_context_tokens;
    const bool too_big = cfg_.kv_capacity_tokens > 0 && kv_tokens(l) > cfg_.kv_capacity_tokens;
    if (too_long || too_big) {
      l.rec.path = RetrievalPath::kRejected;
      l.phase = Phase::kDone;
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
    l.phase = Phase::kWaiting;
    waiting_.push_back(i);
    order_changed_ = true;
    // The adapter reports the new hit with its TTU at once; admission waits for the GPU.
    scheduling_ = true;
    update_estimates();
    scheduling_ = false;
    start_iteration();
  }

  // Scheduling: FCFS admission into free slots, then this iteration's GPU work.
  void start_iteration() {
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
      if (live_[i].phase == Phase::kKvReady) iter_ready_.push_back(i);
      if (live_[i].phase == Phase::kDecoding) iter_batch_.push_back(i);
    }
    if (iter_ready_.empty() && iter_batch_.empty()) return;  // idle until an event
    gpu_busy_ = true;
    iter_pos_ = 0;
    step();
  }

  void admit(Live& l) {
    l.rec.admitted = now();
    l.phase = Phase::kAwaitKv;
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

  // The ordinary path: the claim's ordinary read (or the dax-l1 baseline's device reads)
  // fetches what is not resident from SSD.
  void read_ordinary(Live& l, RetrievalPath path) {
    l.rec.path = path;
    Live* lp = &l;
    auto done = [this, lp](int st) {
      if (st != 0) throw std::logic_error("replay: demand read failed");
      kv_available(*lp);
    };
    const int r = path == RetrievalPath::kDaxL1
                      ? st_.read_dax_l1(l.keys, std::move(done))
                      : st_.claims().ordinary_read_async(l.claim, std::move(done));
    if (r != 0) throw std::logic_error("replay: demand read refused: " + std::to_string(r));
  }

  void kv_available(Live& l) {
    l.phase = Phase::kKvReady;
    l.rec.kv_available = now();
    if (!gpu_busy_) start_iteration();
  }

  // Layer-wise: which of the request's claims `id` is.
  static size_t claim_index(const Live& l, ClaimId id) {
    return static_cast<size_t>(std::find(l.claims.begin(), l.claims.end(), id) - l.claims.begin());
  }

  // Admission of a layer-wise request: each claim's retrieval; groups ready now start, the
  // others as they land (or as their ordinary read ends).
  void admit_layered(Live& l) {
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

  // Claim c's ordinary read: its groups are ready once it is done.
  void read_ordinary_claim(Live& l, size_t c) {
    l.rec.path = RetrievalPath::kOrdinary;
    l.ordinary[c] = 1;
    Live* lp = &l;
    const int r = st_.claims().ordinary_read_async(l.claims[c], [this, lp, c](int st) {
      if (st != 0) throw std::logic_error("replay: demand read failed");
      claim_groups_ready(*lp, c);
    });
    if (r != 0) throw std::logic_error("replay: demand read refused: " + std::to_string(r));
  }

  // Every group claim c holds is ready: all of them (one claim), or group c (one per group).
  void claim_groups_ready(Live& l, size_t c) {
    if (l.claims.size() > 1) return group_ready(l, static_cast<uint32_t>(c));
    for (uint32_t g = 0; g < cfg_.layer_groups; ++g) group_ready(l, g);
  }

  // One claim per request: the groups whose objects (manifest positions g * n / G onwards,
  // the claim's manifest being group-major) are all resident and protected.
  void objects_landed(Live& l) {
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

  // Group g's KV is ready: the request may run once group 0's is; a prefill stalled on
  // group g goes on.
  void group_ready(Live& l, uint32_t g) {
    if (l.group_ready[g] >= 0) return;
    l.group_ready[g] = now();
    if (g == 0 && l.phase == Phase::kAwaitKv) kv_available(l);
    if (l.stalled == int64_t{g}) {
      l.stalled = -1;
      run_group(l, g);
    }
  }

  // Layer-wise prefill, group by group: group g's copy to the GPU once its KV is ready
  // (the whole claim transferring for the last group's copy; claim g's own with one per
  // group), then its share of the prefill, then group g + 1.
  void run_group(Live& l, uint32_t g) {
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

  TimeNs group_copy_time(const Live& l) const {
    return costs_.retrieval_time(l.rec.kv_bytes * cfg_.byte_scale / cfg_.layer_groups);
  }

  // Prefill done: the first token, then decode (or the end).
  void first_token(Live& l) {
    prefilling_ = kNone;
    l.rec.timing.first_token = now();
    save_computed(l);
    l.generated = 1;
    if (l.generated >= l.req->output_tokens)
      finish(l);
    else
      l.phase = Phase::kDecoding;
    step();
  }

  // Runs this iteration's retrievals and prefills in admission order, then one decode step.
  void step() {
    if (iter_pos_ < iter_ready_.size()) {
      prefilling_ = iter_ready_[iter_pos_++];
      Live& l = live_[prefilling_];
      l.rec.retrieval_start = now();
      if (layered_ && l.rec.kv_bytes > 0) return run_group(l, 0);
      TimeNs dur = 0;
      if (l.rec.kv_bytes > 0) {
        if (l.rec.path == RetrievalPath::kStaged) {
          if (st_.claims().transfer_begin(l.claim) != 0)
            throw std::logic_error("replay: transfer of a claim that is not stage-ready");
          copied_bytes_ += st_.copy_out(l.claim);
        }
        dur = costs_.retrieval_time(l.rec.kv_bytes * cfg_.byte_scale);
      }
      busy_until_ = now() + dur + costs_.prefill_time(l.uncached_tokens, l.rec.cached_tokens);
      st_.driver().schedule_after(dur, [this, &l] {
        l.rec.retrieval_end = now();
        l.retrieved = true;
        if (l.rec.kv_bytes > 0 && l.rec.path == RetrievalPath::kStaged) {
          st_.claims().transfer_end(l.claim);
          record_claim(l);
        }
        const TimeNs prefill = costs_.prefill_time(l.uncached_tokens, l.rec.cached_tokens);
        st_.driver().schedule_after(prefill, [this, &l, prefill, begun = now()] {
          runtime_.step_spread().record(prefill, now() - begun);
          first_token(l);
        });
      });
      return;
    }
    std::vector<size_t> batch;
    uint64_t context = 0;
    for (size_t i : iter_batch_) {
      if (live_[i].phase != Phase::kDecoding) continue;
      batch.push_back(i);
      context += live_[i].req->prompt_tokens + live_[i].generated;
    }
    if (batch.empty()) return end_iteration();
    const TimeNs predicted = costs_.decode_step_time(batch.size(), context);
    busy_until_ = now() + predicted;
    decoding_ = batch;
    st_.driver().schedule_after(predicted, [this, batch, predicted, begun = now()] {
      decoding_.clear();
      runtime_.step_spread().record(predicted, now() - begun);
      for (size_t i : batch) {
        Live& l = live_[i];
        if (++l.generated >= l.req->output_tokens) finish(l);
      }
      end_iteration();
    });
  }

  void end_iteration() {
    gpu_busy_ = false;
    start_iteration();
  }

  void finish(Live& l) {
    l.phase = Phase::kDone;
    l.rec.timing.finish = now();
    l.rec.timing.output_tokens = l.generated;
    runtime_.history().record(l.generated);
    std::erase(running_, static_cast<size_t>(&l - live_.data()));
    kv_used_ -= kv_tokens(l);
    ++finished_;
  }

  // How a hit becomes claims, by the layer-wise mode.
  HitClaims hit_claims() const {
    switch (cfg_.layer_wise) {
      case LayerWise::kLead:
        return HitClaims::kLayered;
      case LayerWise::kPerGroup:
        return HitClaims::kPerGroup;
      default:
        return HitClaims::kOne;
    }
  }

  // The runtime side, after every scheduling iteration: the running requests as the GPU's
  // work in flight leaves them, the waiting queue (this engine's WaitingView); new hits are
  // reported, the others revised, the order published when it changed.
  void update_estimates() {
    if (dax_) return;
    // An arrival during the GPU's work: the projection starts when that work is predicted
    // to end, with its request prefilled or its decode batch one token further.
    const TimeNs busy_for = gpu_busy_ ? std::max<TimeNs>(busy_until_ - now(), 0) : 0;
    std::vector<RunningRequest> running;
    for (size_t i : running_) {
      const Live& l = live_[i];
      RunningRequest r;
      const bool in_prefill = gpu_busy_ && i == prefilling_;
      const bool prefilled = l.phase == Phase::kDecoding || in_prefill;
      const uint32_t stepping = gpu_busy_ && std::ranges::find(decoding_, i) != decoding_.end();
      // The matched prefix counts as done; its retrieval is in retrieval_bytes_remaining.
      r.prompt_tokens_done = prefilled ? l.req->prompt_tokens : l.rec.cached_tokens;
      r.prompt_tokens_remaining = prefilled ? 0 : l.uncached_tokens;
      const uint32_t generated = in_prefill ? 1 : l.generated + stepping;
      r.tokens_generated = prefilled ? generated : 0;
      r.context_tokens = prefilled ? l.req->prompt_tokens + generated : r.prompt_tokens_done;
      r.retrieval_bytes_remaining = l.retrieved || in_prefill ? 0 : l.rec.kv_bytes;
      r.ready_in = l.phase == Phase::kAwaitKv ? committed_ready_in(l) : 0;
      if (cfg_.known_outputs) r.output_tokens = l.req->output_tokens;
      running.push_back(r);
    }
    if (const int r = runtime_.step(now(), running, *this, busy_for, order_changed_, *this); r != 0)
      throw std::logic_error("replay: the runtime side refused a step: " + std::to_string(r));
    order_changed_ = false;
  }

  // WaitingView: the queue, as the runtime side reads it.
  size_t size() const override { return waiting_.size(); }
  WaitingEntry at(size_t q) const override {
    const Live& l = live_[waiting_[q]];
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

  // RuntimeListener: request `key`'s hit became claims; the waiting order changed.
  void on_reported(uint64_t key, std::span<const ClaimId> claims) override {
    Live& l = live_[key];
    l.claim = claims.front();
    if (layered_) l.claims.assign(claims.begin(), claims.end());
    for (const ClaimId id : claims) by_claim_[id] = key;
  }
  void on_order(std::vector<ClaimId> order) override { publish_order_(std::move(order)); }

  // How long until a committed, still staging claim is stage-ready (the stack's TTR).
  TimeNs committed_ready_in(const Live& l) const {
    ClaimView v;
    if (!l.claim || st_.claims().query(l.claim, &v) != 0 || v.state != ClaimState::kStaging)
      return 0;
    return v.ttr.value_or(0);
  }

  EngineConfig cfg_;
  const StepCosts& costs_;
  ServingStack& st_;
  OrderSink publish_order_;
  const std::unordered_set<ObjectKey>* reusable_;
  size_t finished_ = 0;
  uint64_t copied_bytes_ = 0;
  bool dax_ = false;
  RuntimeSide runtime_;
  bool layered_ = false;  // cfg_.layer_wise != kOff
  std::vector<Live> live_;
  std::deque<size_t> waiting_;
  std::vector<size_t> running_;
  std::unordered_map<ClaimId, size_t> by_claim_;
  uint64_t kv_used_ = 0;  // GPU KV tokens held by the running requests
  bool order_changed_ = false;
  bool gpu_busy_ = false;
  static constexpr size_t kNone = SIZE_MAX;
  // The GPU's work in flight: when it is predicted to end, the request it retrieves and
  // prefills (kNone: none), the decode batch it steps.
  TimeNs busy_until_ = 0;
  size_t prefilling_ = kNone;
  std::vector<size_t> decoding_;
  bool scheduling_ = false;
  std::vector<size_t> iter_ready_, iter_batch_;
  size_t iter_pos_ = 0;
};

// The engines of one host around its stack: the stack's observer (each engine ignores the
// claims of the others) and its engines' waiting queues, given to the controller together
// (Controller::update_orders, as tempod gives its engines'): queue-K commits each engine's
// first K, and a claim's requests behind it are its own engine's.
class Host final : public StackObserver {
 public:
  explicit Host(ServingStack& st) : st_(st) {}
  ServingStack& stack() { return st_; }

  void add(Engine* e) {
    engines_.push_back(e);
    orders_.emplace_back();
  }
  OrderSink sink(size_t local) {
    return [this, local](std::vector<ClaimId> order) {
      orders_[local] = std::move(order);
      publish();
    };
  }

  void on_claim_ready(ClaimId id) override {
    for (Engine* e : engines_) e->on_claim_ready(id);
  }
  void on_claim_ordinary(ClaimId id) override {
    for (Engine* e : engines_) e->on_claim_ordinary(id);
  }
  void on_claim_progress(ClaimId id) override {
    for (Engine* e : engines_) e->on_claim_progress(id);
  }

 private:
  void publish() {
    views_.assign(orders_.begin(), orders_.end());
    st_.claims().update_orders(views_);
  }

  ServingStack& st_;
  std::vector<Engine*> engines_;
  std::vector<std::vector<ClaimId>> orders_;  // per engine of this host
  std::vector<std::span<const ClaimId>> views_;
};

// Every engine of every host in one run on the hosts' shared driver.
// Places the workload's objects before the run. One host holds them all. Across hosts, each
// object starts on the host of the first request that reuses it (its "home", as if that host
// had computed it earlier) and in the pool, if there is one; a trace's objects, computed by
// its own earlier requests, start nowhere: a request saves what it computed.
// Layer-wise (`groups` > 0, one host), each object is stored as its layer groups' objects.
void place_objects(const ReplayWorkload& w, std::span<ServingStack* const> stacks,
                   const std::vector<uint32_t>& host_of, ClusterPool* pool, uint32_t groups) {
  std::string error;
  auto put = [&](ServingStack& st, const KvObject& o) {
    if (st.preload(o, &error) != 0) throw std::invalid_argument("preload: " + error);
  };
  if (stacks.size() == 1) {
    for (const KvObject& o : w.preloaded) {
      if (groups > 0) {
        for (const KvObject& part : layer_group_objects(o, groups)) put(*stacks[0], part);
        continue;
      }
      put(*stacks[0], o);
      if (pool) pool->preload(o);
    }
    return;
  }
  if (w.computed_in_run) return;
  std::unordered_map<ObjectKey, uint32_t> home;
  for (size_t i = 0; i < w.requests.size(); ++i)
    for (const KvObject& o : w.requests[i].prefix_chunks) home.try_emplace(o.key, host_of[i]);
  for (const KvObject& o : w.preloaded) {
    auto it = home.find(o.key);
    put(*stacks[it == home.end() ? 0 : it->second], o);
    if (pool) pool->preload(o);
  }
}

// The commits of the claims from `source` (SourceCommits).
SourceCommits commits_of(const std::vector<RequestRecord>& records, Source source) {
  SourceCommits c;
  std::vector<TimeNs> leads;
  for (const RequestRecord& q : records) {
    const Source s = q.pool_bytes > 0 ? Source::kRemote : Source::kLocal;
    if (q.claim.reported < 0 || s != source) continue;
    ++c.claims;
    if (q.claim.committed < 0) continue;
    ++c.committed;
    const TimeNs used = q.claim.retrieval_requested;
    if (used < 0) continue;
    leads.push_back(used - q.claim.committed);
    if (q.claim.ready >= 0 && q.claim.ready <= used)
      ++c.on_time;
    else
      ++c.late;
  }
  if (leads.empty()) return c;
  double sum = 0;
  for (TimeNs l : leads) sum += ns_to_sec(l);
  c.mean_lead_s = sum / double(leads.size());
  std::sort(leads.begin(), leads.end());
  const size_t mid = leads.size() / 2;
  c.median_lead_s = leads.size() % 2 ? ns_to_sec(leads[mid])
                                     : (ns_to_sec(leads[mid - 1]) + ns_to_sec(leads[mid])) / 2;
  return c;
}

RunResult serve_fleet(const ReplayWorkload& w, std::span<ServingStack* const> stacks,
                      const EngineConfig& cfg, const Deployment& d, const StepCosts& costs,
                      ClusterPool* pool) {
  if (d.hosts == 0 || d.engines_per_host == 0 || d.hosts > kMaxDeploymentSize ||
      d.engines_per_host > kMaxDeploymentSize || stacks.size() != d.hosts)
    throw std::invalid_argument("a deployment has 1 to " + std::to_string(kMaxDeploymentSize) +
                                " hosts of 1 to " + std::to_string(kMaxDeploymentSize) +
                                " engines");
  const uint32_t engines = d.hosts * d.engines_per_host;
  const std::vector<uint32_t> engine_of = route(w, engines, d.router);
  std::vector<uint32_t> host_of(engine_of.size());
  for (size_t i = 0; i < engine_of.size(); ++i) host_of[i] = engine_of[i] / d.engines_per_host;
  const bool layered = cfg.layer_wise != LayerWise::kOff;
  if (layered && (d.hosts > 1 || pool))
    throw std::invalid_argument("layer-wise loading is modelled on one host without a pool");
  place_objects(w, stacks, host_of, pool, layered ? cfg.layer_groups : 0);
  std::unordered_set<ObjectKey> reusable;
  if (d.hosts > 1)
    for (const KvObject& o : w.preloaded) reusable.insert(o.key);
  std::vector<std::vector<size_t>> mine(engines);
  for (size_t i = 0; i < engine_of.size(); ++i) mine[engine_of[i]].push_back(i);
  std::vector<std::unique_ptr<Host>> hosts;
  for (ServingStack* st : stacks) hosts.push_back(std::make_unique<Host>(*st));
  std::vector<std::unique_ptr<Engine>> fleet;
  for (uint32_t g = 0; g < engines; ++g) {
    Host& h = *hosts[g / d.engines_per_host];
    fleet.push_back(std::make_unique<Engine>(w, mine[g], g, h.stack(), cfg, costs,
                                             h.sink(g % d.engines_per_host),
                                             d.hosts > 1 ? &reusable : nullptr));
    h.add(fleet.back().get());
  }
  Driver& driver = stacks[0]->driver();
  // Arrivals are relative to the start of the run; records are reported relative to it.
  TimeNs start = 0;
  driver.call([&] {
    for (auto& h : hosts) h->stack().claims().observe(h.get(), driver);
    start = driver.now();
    std::vector<size_t> next(engines, 0);
    for (const uint32_t g : engine_of) fleet[g]->schedule_arrival(next[g]++, start);
  });
  stacks[0]->run([&] {
    return std::all_of(fleet.begin(), fleet.end(), [](const auto& e) { return e->done(); });
  });
  RunResult r;
  r.policy = cfg.policy;
  r.requests.resize(w.requests.size());
  driver.call([&] {
    for (auto& h : hosts) h->stack().claims().observe(nullptr, driver);
    for (auto& e : fleet) {
      e->collect(start, &r.requests);
      r.copied_bytes += e->copied_bytes();
    }
    // In the model's bytes on every device: a real device ran at 1/byte_scale of them.
    for (auto& h : hosts) {
      const StackStats stats = h->stack().stack().stats();
      if (stats.provider.ledger_bytes != 0 || stats.device_stats.pins != 0)
        throw std::logic_error("replay: protection leaked past the run");
      r.ledger_byte_seconds += stats.provider.ledger_byte_seconds * double(cfg.byte_scale);
      r.capacity_deferrals += stats.controller.capacity_deferrals;
      r.deferred_claims += stats.controller.deferred_claims;
      r.ordinary_claims += stats.controller.ordinary;
      r.staged_bytes += stats.provider.staged_bytes * cfg.byte_scale;
      r.demand_bytes += stats.device_stats.demand_bytes * cfg.byte_scale;
    }
    r.end_time = driver.now() - start;
    if (pool) r.pool_written_bytes = pool->written_bytes();
  });
  summarize_run(&r, engines, d.engines_per_host);
  return r;
}

}  // namespace

void summarize_run(RunResult* r, uint32_t engines, uint32_t engines_per_host) {
  std::vector<RequestTiming> timings;
  std::vector<std::vector<RequestTiming>> per_engine(engines);
  for (RequestRecord& q : r->requests) {
    q.host = q.engine / engines_per_host;
    r->reusable_bytes += q.reusable_bytes;
    r->hit_bytes += q.kv_bytes;
    r->pool_hit_bytes += q.pool_bytes;
    if (q.path == RetrievalPath::kRejected) {
      ++r->rejected;
      continue;
    }
    timings.push_back(q.timing);
    per_engine[q.engine].push_back(q.timing);
  }
  r->summary = summarize(timings, r->ledger_byte_seconds);
  for (Source s : {Source::kLocal, Source::kRemote})
    r->commits[static_cast<size_t>(s)] = commits_of(r->requests, s);
  if (engines > 1)
    for (const auto& t : per_engine) r->engines.push_back(summarize(t, 0));
}

EngineRun serve_engine(const ReplayWorkload& w, std::span<const size_t> mine, uint32_t index,
                       ServingStack& stack, const EngineConfig& cfg, const StepCosts& costs,
                       TimeNs start) {
  Host host(stack);
  Engine engine(w, std::vector<size_t>(mine.begin(), mine.end()), index, stack, cfg, costs,
                host.sink(0), nullptr);
  host.add(&engine);
  Driver& driver = stack.driver();
  driver.call([&] {
    stack.claims().observe(&host, driver);
    for (size_t k = 0; k < mine.size(); ++k) engine.schedule_arrival(k, start);
  });
  stack.run([&] { return engine.done(); });
  EngineRun out;
  std::vector<RequestRecord> all(w.requests.size());
  driver.call([&] {
    stack.claims().observe(nullptr, driver);
    engine.collect(start, &all);
    out.copied_bytes = engine.copied_bytes();
  });
  for (const size_t i : mine) out.requests.push_back(all[i]);
  return out;
}

std::string_view layer_wise_name(LayerWise mode) {
  switch (mode) {
    case LayerWise::kOff:
      return "off";
    case LayerWise::kWhole:
      return "whole";
    case LayerWise::kLead:
      return "lead";
    case LayerWise::kPerGroup:
      return "per-group";
  }
  return "off";
}

std::optional<LayerWise> parse_layer_wise(std::string_view name) {
  for (LayerWise m : {LayerWise::kOff, LayerWise::kWhole, LayerWise::kLead, LayerWise::kPerGroup})
    if (name == layer_wise_name(m)) return m;
  return std::nullopt;
}

std::vector<KvObject> layer_group_objects(const KvObject& chunk, uint32_t groups) {
  std::vector<KvObject> out;
  for (uint32_t g = 0; g < groups; ++g)
    out.push_back(
        {layer_group_key(chunk.key, g), chunk.bytes / groups + (g < chunk.bytes % groups)});
  return out;
}

RunResult run_serving(const ReplayWorkload& workload, ServingStack& stack,
                      const EngineConfig& engine, const StepCosts& costs,
                      const Deployment& deployment) {
  if (deployment.hosts != 1)
    throw std::invalid_argument("several hosts run on the sim device only");
  if (deployment.cluster.enabled)
    throw std::invalid_argument("the cluster tier is modelled on the sim device only");
  ServingStack* stacks[] = {&stack};
  return serve_fleet(workload, stacks, engine, deployment, costs, nullptr);
}

RunResult run_serving(const ReplayWorkload& workload, const SimStackConfig& stack,
                      const EngineConfig& engine, const StepCosts& costs,
                      const Interference& interference, const Deployment& deployment) {
  SimStackConfig s = stack;
  if (engine.policy != "dax-l1") {
    auto p = parse_policy(engine.policy);
    if (!p) throw std::invalid_argument("unknown policy '" + engine.policy + "'");
    s.controller.policy = *p;
  }
  const ClusterModel& cm = deployment.cluster;
  if (cm.enabled && (!(cm.rate_bps > 0) || cm.latency < 0 || cm.slots == 0))
    throw std::invalid_argument(
        "the cluster tier needs a positive rate, a latency >= 0 and at least one slot");
  VirtualDriver driver;
  std::unique_ptr<ClusterPool> pool;
  if (cm.enabled) {
    pool = std::make_unique<ClusterPool>(driver, cm);
    s.remote = pool_source(cm, *pool);
  }
  std::vector<std::unique_ptr<SimServingStack>> hosts;
  std::vector<ServingStack*> stacks;
  for (uint32_t h = 0; h < std::max(deployment.hosts, 1u); ++h) {
    hosts.push_back(std::make_unique<SimServingStack>(driver, s, pool.get()));
    hosts.back()->device().set_interference(interference);
    stacks.push_back(hosts.back().get());
  }
  RunResult r = serve_fleet(workload, stacks, engine, deployment, costs, pool.get());
  for (const auto& h : hosts) r.pool_read_bytes += h->device().remote_read_bytes();
  return r;
}

}  // namespace tempo

#include "serving_engine.h"

#include <cerrno>
#include <deque>
#include <stdexcept>
#include <unordered_map>

#include "runtime/ttu_estimator.h"
#include "serving_stack.h"

namespace tempo {

namespace {

enum class Phase : uint8_t { kArriving, kWaiting, kAwaitKv, kKvReady, kDecoding, kDone };

struct Live {
  const ReplayRequest* req = nullptr;
  RequestRecord rec;
  std::vector<KvObject> hit;    // cached chunks found at lookup
  std::vector<ObjectKey> keys;  // their keys, for demand reads
  uint64_t uncached_tokens = 0;
  ClaimId claim = 0;
  Phase phase = Phase::kArriving;
  bool retrieved = false;
  uint32_t generated = 0;
};

// Shifts every time of a record by -start (records are relative to the run's start).
void rebase(RequestRecord* r, TimeNs start) {
  for (TimeNs* t : {&r->timing.arrival, &r->timing.first_token, &r->timing.finish, &r->admitted,
                    &r->kv_available, &r->retrieval_start, &r->retrieval_end, &r->claim.reported,
                    &r->claim.committed, &r->claim.ready, &r->claim.retrieval_requested,
                    &r->claim.transfer_begin, &r->claim.ended})
    if (*t >= 0) *t -= start;
}

class Engine final : public StackObserver {
 public:
  Engine(const ReplayWorkload& w, ServingStack& stack, const EngineConfig& cfg,
         const StepCosts& costs)
      : cfg_(cfg), costs_(costs), st_(stack) {
    dax_ = cfg.policy == "dax-l1";
    if (!dax_ && !parse_policy(cfg.policy))
      throw std::invalid_argument("unknown policy '" + cfg.policy + "': accepted " +
                                  std::string(policy_names_help()) + ", dax-l1");
    if (cfg.max_active == 0 || cfg.generation_limit == 0)
      throw std::invalid_argument("max_active and generation_limit must be positive");
    std::string error;
    for (const KvObject& o : w.preloaded)
      if (st_.preload(o, &error) != 0) throw std::invalid_argument("preload: " + error);
    live_.resize(w.requests.size());
    for (size_t i = 0; i < w.requests.size(); ++i) {
      live_[i].req = &w.requests[i];
      live_[i].rec.id = w.requests[i].id;
      live_[i].rec.timing.arrival = w.requests[i].arrival;
      live_[i].rec.prompt_tokens = w.requests[i].prompt_tokens;
    }
  }

  RunResult run() {
    // Arrivals are relative to the start of the run; records are reported relative to it.
    TimeNs start = 0;
    st_.driver().call([&] {
      st_.stack().set_observer(this);
      start = now();
      for (size_t i = 0; i < live_.size(); ++i) {
        live_[i].rec.timing.arrival = start + live_[i].req->arrival;
        st_.driver().schedule_at(live_[i].rec.timing.arrival, [this, i] { arrive(i); });
      }
    });
    st_.run([this] { return finished_ == live_.size(); });
    RunResult r;
    st_.driver().call([&] {
      st_.stack().set_observer(nullptr);
      r = results(start);
    });
    return r;
  }

  RunResult results(TimeNs start) {
    RunResult r;
    r.policy = cfg_.policy;
    std::vector<RequestTiming> timings;
    for (Live& l : live_) {
      if (l.phase != Phase::kDone) throw std::logic_error("replay: a request never finished");
      rebase(&l.rec, start);
      timings.push_back(l.rec.timing);
      r.requests.push_back(l.rec);
    }
    const StackStats stats = st_.stack().stats();
    const ControllerStats& cs = stats.controller;
    const ProviderStats& ps = stats.provider;
    r.ledger_byte_seconds = ps.ledger_byte_seconds;
    r.summary = summarize(timings, r.ledger_byte_seconds);
    r.capacity_deferrals = cs.capacity_deferrals;
    r.deferred_claims = cs.deferred_claims;
    r.ordinary_claims = cs.ordinary;
    r.end_time = now() - start;
    r.staged_bytes = ps.staged_bytes;
    r.demand_bytes = stats.device_stats.demand_bytes;
    r.copied_bytes = copied_bytes_;
    if (ps.ledger_bytes != 0 || stats.device_stats.pins != 0)
      throw std::logic_error("replay: protection leaked past the run");
    return r;
  }

  // A claim can be ready inside its own report() (every object already resident), before
  // its id is known here: it is still waiting then, and admission finds it ready.
  void on_claim_ready(ClaimId id) override {
    auto it = by_claim_.find(id);
    if (it != by_claim_.end() && live_[it->second].phase == Phase::kAwaitKv)
      kv_available(live_[it->second]);
  }

  void on_claim_ordinary(ClaimId id) override {
    auto it = by_claim_.find(id);
    if (it == by_claim_.end()) return;
    Live& l = live_[it->second];
    record_claim(l);
    if (l.phase == Phase::kAwaitKv) read_ordinary(l, RetrievalPath::kOrdinary);
  }

 private:
  TimeNs now() const { return st_.driver().now(); }

  // Keeps the claim's timing once it ended (the stack erases ended claims after a while).
  void record_claim(Live& l) {
    ClaimView v;
    if (st_.stack().query(l.claim, &v) != 0)
      throw std::logic_error("replay: an ended claim was already erased");
    l.rec.claim = v.timing;
    l.rec.deferrals = v.deferrals;
  }

  void arrive(size_t i) {
    Live& l = live_[i];
    // Prefix lookup: the longest run of leading chunks the SSD tier holds.
    for (const KvObject& o : l.req->prefix_chunks) {
      if (st_.stack().object_size(o.key) < 0) break;
      l.hit.push_back(o);
      l.keys.push_back(o.key);
      l.rec.kv_bytes += o.bytes;
    }
    l.rec.cached_tokens = l.hit.size() * l.req->chunk_tokens;
    l.uncached_tokens = l.req->prompt_tokens - l.rec.cached_tokens;
    l.phase = Phase::kWaiting;
    waiting_.push_back(i);
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
    while (running_.size() < cfg_.max_active && !waiting_.empty()) {
      const size_t i = waiting_.front();
      waiting_.pop_front();
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
    RetrievalOutcome out{};
    const int r = st_.stack().request_retrieval(l.claim, &out);
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
                      : st_.stack().ordinary_read(l.claim, std::move(done));
    if (r != 0) throw std::logic_error("replay: demand read refused: " + std::to_string(r));
  }

  void kv_available(Live& l) {
    l.phase = Phase::kKvReady;
    l.rec.kv_available = now();
    if (!gpu_busy_) start_iteration();
  }

  // Runs this iteration's retrievals and prefills in admission order, then one decode step.
  void step() {
    if (iter_pos_ < iter_ready_.size()) {
      Live& l = live_[iter_ready_[iter_pos_++]];
      l.rec.retrieval_start = now();
      TimeNs dur = 0;
      if (l.rec.kv_bytes > 0) {
        if (l.rec.path == RetrievalPath::kStaged) {
          if (st_.stack().begin_transfer(l.claim) != 0)
            throw std::logic_error("replay: transfer of a claim that is not stage-ready");
          copied_bytes_ += st_.copy_out(l.claim);
        }
        dur = costs_.retrieval_time(l.rec.kv_bytes * cfg_.byte_scale);
      }
      st_.driver().schedule_after(dur, [this, &l] {
        l.rec.retrieval_end = now();
        l.retrieved = true;
        if (l.rec.kv_bytes > 0 && l.rec.path == RetrievalPath::kStaged) {
          st_.stack().end_transfer(l.claim);
          record_claim(l);
        }
        const TimeNs prefill = costs_.prefill_time(l.uncached_tokens, l.rec.cached_tokens);
        st_.driver().schedule_after(prefill, [this, &l] {
          l.rec.timing.first_token = now();
          l.generated = 1;
          if (l.generated >= l.req->output_tokens)
            finish(l);
          else
            l.phase = Phase::kDecoding;
          step();
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
    st_.driver().schedule_after(costs_.decode_step_time(batch.size(), context), [this, batch] {
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
    history_.record(l.generated);
    std::erase(running_, static_cast<size_t>(&l - live_.data()));
    ++finished_;
  }

  // The runtime adapter: a snapshot after the scheduling iteration, projected to TTUs;
  // new hits are reported, the others revised; then the waiting order.
  void update_estimates() {
    if (dax_) return;
    std::vector<RunningRequest> running;
    for (size_t i : running_) {
      const Live& l = live_[i];
      RunningRequest r;
      const bool prefilled = l.phase == Phase::kDecoding;
      // The matched prefix counts as done; its retrieval is in retrieval_bytes_remaining.
      r.prompt_tokens_done = prefilled ? l.req->prompt_tokens : l.rec.cached_tokens;
      r.prompt_tokens_remaining = prefilled ? 0 : l.uncached_tokens;
      r.tokens_generated = prefilled ? l.generated : 0;
      r.context_tokens = prefilled ? l.req->prompt_tokens + l.generated : r.prompt_tokens_done;
      r.retrieval_bytes_remaining = l.retrieved ? 0 : l.rec.kv_bytes;
      r.ready_in = l.phase == Phase::kAwaitKv ? committed_ready_in(l) : 0;
      running.push_back(r);
    }
    std::vector<WaitingRequest> waiting;
    for (size_t i : waiting_) {
      const Live& l = live_[i];
      WaitingRequest wr;
      wr.uncached_prompt_tokens = l.uncached_tokens;
      wr.cached_prompt_tokens = l.rec.cached_tokens;
      if (!l.hit.empty()) wr.claim = l.claim;  // kNoClaim until reported
      wr.retrieval_bytes = l.rec.kv_bytes;
      wr.ready_in = committed_ready_in(l);
      waiting.push_back(wr);
    }
    SchedulerSnapshot snap{running, waiting, cfg_.max_active, cfg_.generation_limit};
    std::vector<ClaimTtu> ttus;
    if (estimate_ttu(snap, costs_, history_, &ttus) != 0)
      throw std::logic_error("replay: TTU estimator refused the snapshot");
    for (const ClaimTtu& t : ttus) {
      Live& l = live_[waiting_[t.queue_position]];
      if (l.claim) {
        st_.stack().revise(l.claim, t.ttu);
        continue;
      }
      if (st_.stack().report(l.hit, t.ttu, &l.claim) != 0)
        throw std::logic_error("replay: claim report refused");
      by_claim_[l.claim] = static_cast<size_t>(&l - live_.data());
    }
    std::vector<ClaimId> order;
    for (size_t i : waiting_) order.push_back(live_[i].claim ? live_[i].claim : kNoClaim);
    st_.stack().update_order(order);
  }

  // How long until a committed, still staging claim is stage-ready (the stack's TTR).
  TimeNs committed_ready_in(const Live& l) {
    ClaimView v;
    if (!l.claim || st_.stack().query(l.claim, &v) != 0 || v.state != ClaimState::kStaging)
      return 0;
    return v.ttr.value_or(0);
  }

  EngineConfig cfg_;
  const StepCosts& costs_;
  ServingStack& st_;
  size_t finished_ = 0;
  uint64_t copied_bytes_ = 0;
  bool dax_ = false;
  std::vector<Live> live_;
  std::deque<size_t> waiting_;
  std::vector<size_t> running_;
  std::unordered_map<ClaimId, size_t> by_claim_;
  OutputLengthHistory history_;
  bool gpu_busy_ = false;
  bool scheduling_ = false;
  std::vector<size_t> iter_ready_, iter_batch_;
  size_t iter_pos_ = 0;
};

}  // namespace

RunResult run_serving(const ReplayWorkload& workload, ServingStack& stack,
                      const EngineConfig& engine, const StepCosts& costs) {
  Engine e(workload, stack, engine, costs);
  return e.run();
}

RunResult run_serving(const ReplayWorkload& workload, const SimStackConfig& stack,
                      const EngineConfig& engine, const StepCosts& costs) {
  SimStackConfig s = stack;
  if (engine.policy != "dax-l1") {
    auto p = parse_policy(engine.policy);
    if (!p) throw std::invalid_argument("unknown policy '" + engine.policy + "'");
    s.controller.policy = *p;
  }
  SimServingStack st(s);
  return run_serving(workload, st, engine, costs);
}

}  // namespace tempo

// The C ABI for engines (ABI 0.3 of include/tempo/tempo.h): the key scheme, the store's
// lookup, delete and asynchronous put, and the runtime side's per-step call. Like
// tempo_capi.cc, nothing throws across it.
#include <syslog.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <iterator>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "capi/capi_context.h"
#include "controller/controller.h"
#include "keys/chain_hash.h"
#include "runtime/runtime_side.h"
#include "runtime/step_cost_learner.h"
#include "runtime/ttu_estimator.h"
#include "surface/claim_surface.h"
#include "tempo/tempo.h"

namespace {

using tempo_capi::guard;
using tempo_capi::read_strided;

// A tempo_step stride: 0 reads as the 0.6 struct.
template <typename T>
size_t stride_of(uint32_t stride) {
  return stride ? stride : sizeof(T);
}

// Runs `f` on the handle's claim surface inside the fence; -EINVAL for no handle.
template <typename F>
int with_surface(tempo_ctx* ctx, F&& f) {
  tempo::ClaimSurface* s = tempo_capi_surface(ctx);
  if (!s) return -EINVAL;
  return guard([&] { return f(*s); });
}

bool all_zero(std::span<const uint64_t> v) {
  for (uint64_t x : v)
    if (x != 0) return false;
  return true;
}

}  // namespace

struct tempo_writer {
  struct Job {
    uint64_t key;
    const void* data;
    size_t bytes;
    uint64_t cookie;
  };

  std::atomic<int> refs{1};
  tempo_ctx* ctx = nullptr;
  std::mutex mu;
  std::condition_variable work;                // a job was queued, or the writer is closing
  std::condition_variable idle;                // the last running job finished
  std::deque<Job> queue;                       // guarded by mu
  std::deque<tempo_put_completion> completed;  // guarded by mu
  size_t running = 0;                          // guarded by mu
  bool closing = false;                        // guarded by mu
  std::vector<std::thread> threads;

  void run() {
    std::unique_lock lock(mu);
    for (;;) {
      work.wait(lock, [&] { return closing || !queue.empty(); });
      if (queue.empty()) return;
      const Job job = queue.front();
      queue.pop_front();
      ++running;
      lock.unlock();
      const int status = tempo_store_put(ctx, job.key, job.data, job.bytes);
      lock.lock();
      completed.push_back({job.key, job.cookie, status, 0});
      if (--running == 0 && queue.empty()) idle.notify_all();
    }
  }
};

namespace {

// A step's waiting queue as the runtime side reads it: each request's claim is its key.
class StepWaiting final : public tempo::WaitingView {
 public:
  explicit StepWaiting(std::span<const tempo_waiting_seq> waiting) : w_(waiting) {}
  size_t size() const override { return w_.size(); }
  tempo::WaitingEntry at(size_t q) const override {
    const tempo_waiting_seq& w = w_[q];
    tempo::WaitingEntry e;
    e.key = w.claim;
    e.hit = w.claim != TEMPO_NO_CLAIM;
    e.request.uncached_prompt_tokens = w.prompt_tokens - w.cached_tokens;
    e.request.cached_prompt_tokens = w.cached_tokens;
    e.request.retrieval_bytes = w.retrieval_bytes;
    return e;
  }

 private:
  std::span<const tempo_waiting_seq> w_;
};

// The engine publishes its waiting order itself, before the step (it proves every claim
// known): the runtime side reports no hit of its own here.
class PublishedOrder final : public tempo::RuntimeListener {
 public:
  void on_order(std::vector<tempo::ClaimId>) override {}
};

}  // namespace

struct tempo_runtime {
  std::atomic<int> refs{1};
  tempo_ctx* ctx = nullptr;
  std::mutex mu;
  std::unique_ptr<tempo::StepCostLearner> costs;  // guarded by mu
  std::unique_ptr<tempo::RuntimeSide> side;       // guarded by mu
  bool learn = false;
  // Scratch reused by every step; guarded by mu.
  std::vector<tempo::RunningRequest> running;
  std::vector<tempo::ClaimId> order;
  std::vector<tempo::ClaimId> waiting_claims;  // the last step's, sorted
  std::vector<tempo::ClaimId> seen;
  std::vector<tempo_running_seq> running_in;
  std::vector<tempo_waiting_seq> waiting_in;
  // The bytes of each claim of the waiting queue, asked once per claim (they never change).
  std::unordered_map<tempo::ClaimId, uint64_t> claim_bytes;
  // The waiting queue whose checks, order and claims the runtime side took last: the same
  // queue again (most steps of an engine) needs none of it again.
  std::vector<tempo_waiting_seq> taken_waiting;
  // The last step that succeeded, for tempo_runtime_get_projection; guarded by mu.
  std::vector<tempo::RunningRequest> last_running;
  std::vector<tempo_waiting_seq> last_waiting;
  tempo::TimeNs last_busy_ns = 0;
  tempo::TimeNs last_now = 0;
};

namespace {

// Each waiting claim's retrieval_bytes against the claim's own bytes: fewer is the engine's
// mistake (its projection would move less than the claim holds); 0 stays "none given", as
// in 0.6. A claim the
// context does not know is left to update_orders' -ENOENT.
int check_retrieval_bytes(tempo_runtime& rt, tempo::ClaimSurface& surface) {
  for (size_t q = 0; q < rt.waiting_in.size(); ++q) {
    const tempo_waiting_seq& w = rt.waiting_in[q];
    if (w.claim == TEMPO_NO_CLAIM) continue;
    auto it = rt.claim_bytes.find(w.claim);
    if (it == rt.claim_bytes.end()) {
      tempo::ClaimView view;
      if (surface.query(w.claim, &view) != 0) continue;
      it = rt.claim_bytes.emplace(w.claim, view.bytes).first;
    }
    if (w.retrieval_bytes != 0 && w.retrieval_bytes < it->second) {
      tempo_capi_log(rt.ctx, LOG_ERR,
                     "tempo_runtime_step: waiting[" + std::to_string(q) + "] retrieval_bytes " +
                         std::to_string(w.retrieval_bytes) + " below the " +
                         std::to_string(it->second) + " bytes of its claim " +
                         std::to_string(w.claim));
      return -EINVAL;
    }
  }
  return 0;
}

}  // namespace

extern "C" {

TEMPO_EXPORT int tempo_key_seed(const tempo_key_namespace* ns, uint64_t* seed) {
  if (!ns || !seed || !ns->model || !ns->dtype || !*ns->model || !*ns->dtype) return -EINVAL;
  if (ns->tp_size == 0 || ns->tp_rank >= ns->tp_size || !all_zero(ns->reserved)) return -EINVAL;
  *seed = tempo::key_namespace_seed({ns->model, ns->dtype, ns->tp_rank, ns->tp_size});
  return 0;
}

TEMPO_EXPORT int tempo_key_chain(uint64_t parent, const uint32_t* tokens, size_t count,
                                 uint32_t chunk_tokens, uint64_t* keys, size_t capacity,
                                 size_t* written) {
  if (!written || chunk_tokens == 0 || (!tokens && count) || (!keys && capacity)) return -EINVAL;
  const size_t n = count / chunk_tokens;
  *written = n;
  if (capacity < n) return -ENOSPC;
  tempo::chain_keys(parent, std::span(tokens, count), chunk_tokens, keys);
  return 0;
}

TEMPO_EXPORT uint64_t tempo_key_layer_group(uint64_t chain_key, uint32_t group) {
  return tempo::layer_group_key(chain_key, group);
}

TEMPO_EXPORT int tempo_key_get_layer_group(uint64_t chain_key, uint32_t group, uint64_t* key) {
  if (!key) return -EINVAL;
  *key = tempo::layer_group_key(chain_key, group);
  return 0;
}

TEMPO_EXPORT int tempo_store_lookup(tempo_ctx* ctx, const uint64_t* keys, size_t count,
                                    size_t* prefix) {
  if (!prefix || (!keys && count)) return -EINVAL;
  return with_surface(ctx, [&](tempo::ClaimSurface& s) {
    return s.store_lookup(std::span<const tempo::ObjectKey>(keys, count), prefix);
  });
}

TEMPO_EXPORT int tempo_store_delete(tempo_ctx* ctx, uint64_t key) {
  return with_surface(ctx, [&](tempo::ClaimSurface& s) { return s.store_delete(key); });
}

TEMPO_EXPORT int tempo_ctx_fast_tier(tempo_ctx* ctx, void** base, uint64_t* bytes) {
  if (!base || !bytes) return -EINVAL;
  return with_surface(ctx, [&](tempo::ClaimSurface& s) { return s.fast_tier(base, bytes); });
}

TEMPO_EXPORT int tempo_ctx_get_fast_tier(tempo_ctx* ctx, void** base, uint64_t* bytes) {
  return tempo_ctx_fast_tier(ctx, base, bytes);
}

TEMPO_EXPORT int tempo_claim_label(tempo_ctx* ctx, tempo_claim_id id, const char* request) {
  if (!request || std::strlen(request) > 39) return -EINVAL;
  return with_surface(ctx, [&](tempo::ClaimSurface& s) { return s.label(id, request); });
}

TEMPO_EXPORT int tempo_writer_new(tempo_ctx* ctx, unsigned threads, tempo_writer** out) {
  if (!tempo_capi_surface(ctx) || !out || threads == 0 || threads > 64) return -EINVAL;
  *out = nullptr;
  return guard([&] {
    auto w = std::make_unique<tempo_writer>();
    w->ctx = tempo_ctx_ref(ctx);
    try {
      for (unsigned i = 0; i < threads; ++i) w->threads.emplace_back([p = w.get()] { p->run(); });
    } catch (...) {
      tempo_writer_free(w.release());
      throw;
    }
    *out = w.release();
    return 0;
  });
}

TEMPO_EXPORT int tempo_writer_put(tempo_writer* w, uint64_t key, const void* data, size_t bytes,
                                  uint64_t cookie) {
  if (!w || !data || bytes == 0) return -EINVAL;
  return guard([&] {
    std::lock_guard lock(w->mu);
    if (w->closing) return -ESHUTDOWN;
    w->queue.push_back({key, data, bytes, cookie});
    w->work.notify_one();
    return 0;
  });
}

TEMPO_EXPORT int tempo_writer_completions(tempo_writer* w, tempo_put_completion* out,
                                          size_t capacity, size_t* count) {
  return tempo_writer_get_completions(w, out, sizeof(tempo_put_completion), capacity, count);
}

TEMPO_EXPORT int tempo_writer_get_completions(tempo_writer* w, tempo_put_completion* out,
                                              size_t completion_size, size_t capacity,
                                              size_t* count) {
  if (!w || !count || (!out && capacity) || completion_size < sizeof(tempo_put_completion) ||
      completion_size > TEMPO_STRUCT_SIZE_MAX)
    return -EINVAL;
  auto* to = reinterpret_cast<unsigned char*>(out);
  std::lock_guard lock(w->mu);
  size_t n = 0;
  for (; n < capacity && !w->completed.empty(); ++n) {
    unsigned char* e = to + n * completion_size;
    std::memcpy(e, &w->completed.front(), sizeof(tempo_put_completion));
    std::memset(e + sizeof(tempo_put_completion), 0,
                completion_size - sizeof(tempo_put_completion));
    w->completed.pop_front();
  }
  *count = n;
  return 0;
}

TEMPO_EXPORT int tempo_writer_wait(tempo_writer* w, int64_t timeout_ns) {
  if (!w || timeout_ns < 0) return -EINVAL;
  std::unique_lock lock(w->mu);
  const bool done = w->idle.wait_for(lock, std::chrono::nanoseconds(timeout_ns),
                                     [&] { return w->queue.empty() && w->running == 0; });
  return done ? 0 : -ETIMEDOUT;
}

TEMPO_EXPORT tempo_writer* tempo_writer_ref(tempo_writer* w) {
  if (w) w->refs.fetch_add(1, std::memory_order_relaxed);
  return w;
}

TEMPO_EXPORT void tempo_writer_free(tempo_writer* w) { tempo_writer_unref(w); }

TEMPO_EXPORT void tempo_writer_unref(tempo_writer* w) {
  if (!w || w->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  {
    std::lock_guard lock(w->mu);
    w->closing = true;
  }
  w->work.notify_all();
  for (std::thread& t : w->threads) t.join();
  tempo_ctx_unref(w->ctx);
  delete w;
}

TEMPO_EXPORT int tempo_runtime_new(tempo_ctx* ctx, const tempo_runtime_config* config,
                                   tempo_runtime** out) {
  if (!tempo_capi_surface(ctx) || !config || !out) return -EINVAL;
  *out = nullptr;
  const tempo_step_costs& c = config->costs;
  if (config->max_active == 0 || config->generation_limit == 0 || !all_zero(config->reserved) ||
      !all_zero(c.reserved))
    return -EINVAL;
  for (double v : {c.prefill_pass_ns, c.prefill_token_ns, c.prefill_pair_ns, c.decode_pass_ns,
                   c.decode_seq_ns, c.decode_context_ns})
    if (!(v >= 0 && std::isfinite(v))) return -EINVAL;
  if (!(c.retrieval_bps > 0 && std::isfinite(c.retrieval_bps))) return -EINVAL;
  return guard([&] {
    auto rt = std::make_unique<tempo_runtime>();
    rt->costs = std::make_unique<tempo::StepCostLearner>(tempo::StepCostCoefficients{
        c.prefill_pass_ns, c.prefill_token_ns, c.prefill_pair_ns, c.decode_pass_ns, c.decode_seq_ns,
        c.decode_context_ns, c.retrieval_bps});
    // The runtime side's own horizon, as tempo-replay's engines run it: claims past it hold
    // a lower bound and are revised when it decays (Documentation/ttu-estimator.md).
    tempo::RuntimeSideConfig side;
    side.max_active = config->max_active;
    side.generation_limit = config->generation_limit;
    if (config->history_window) side.history_window = config->history_window;
    rt->side = std::make_unique<tempo::RuntimeSide>(*tempo_capi_surface(ctx), *rt->costs, side);
    rt->learn = config->learn != 0;
    rt->ctx = tempo_ctx_ref(ctx);
    *out = rt.release();
    return 0;
  });
}

TEMPO_EXPORT tempo_runtime* tempo_runtime_ref(tempo_runtime* rt) {
  if (rt) rt->refs.fetch_add(1, std::memory_order_relaxed);
  return rt;
}

TEMPO_EXPORT void tempo_runtime_free(tempo_runtime* rt) { tempo_runtime_unref(rt); }

TEMPO_EXPORT void tempo_runtime_unref(tempo_runtime* rt) {
  if (!rt || rt->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  tempo_ctx_unref(rt->ctx);
  delete rt;
}

TEMPO_EXPORT int tempo_runtime_step(tempo_runtime* rt, const tempo_step* step) {
  if (!rt || !step || (!step->running && step->running_count) ||
      (!step->waiting && step->waiting_count) || step->duration_ns < 0 || step->busy_ns < 0 ||
      !all_zero(step->reserved))
    return -EINVAL;
  // A step in flight for longer than the clock's range: no TTU behind it can be given.
  if (step->busy_ns > tempo::kMaxTimeNs) return -EOVERFLOW;
  const tempo::StepWork work{step->prefill_tokens, step->prefill_context_tokens, step->decode_seqs,
                             step->decode_context_tokens};
  if (step->duration_ns > 0 && work.prefill_tokens == 0 && work.decode_seqs == 0) return -EINVAL;
  return guard([&] {
    std::lock_guard lock(rt->mu);
    if (const int r =
            read_strided(step->running, step->running_count,
                         stride_of<tempo_running_seq>(step->running_size), &rt->running_in);
        r != 0)
      return r;
    if (const int r =
            read_strided(step->waiting, step->waiting_count,
                         stride_of<tempo_waiting_seq>(step->waiting_size), &rt->waiting_in);
        r != 0)
      return r;
    rt->running.clear();
    for (const tempo_running_seq& r : rt->running_in) {
      if (r.computed_tokens > r.prompt_tokens) return -EINVAL;
      tempo::RunningRequest q;
      q.prompt_tokens_done = r.computed_tokens;
      q.prompt_tokens_remaining = r.prompt_tokens - r.computed_tokens;
      q.tokens_generated = r.tokens_generated;
      q.context_tokens = r.prompt_tokens + r.tokens_generated - (r.tokens_generated ? 1 : 0);
      q.retrieval_bytes_remaining = r.retrieval_bytes;
      q.output_tokens = r.output_tokens;
      rt->running.push_back(q);
    }
    tempo::ClaimSurface& surface = *tempo_capi_surface(rt->ctx);
    const bool same_queue = rt->waiting_in.size() == rt->taken_waiting.size() &&
                            (rt->waiting_in.empty() ||
                             std::memcmp(rt->waiting_in.data(), rt->taken_waiting.data(),
                                         rt->waiting_in.size() * sizeof(tempo_waiting_seq)) == 0);
    if (!same_queue) {
      rt->order.clear();
      rt->seen.clear();
      for (const tempo_waiting_seq& w : rt->waiting_in) {
        if (w.cached_tokens > w.prompt_tokens) return -EINVAL;
        rt->order.push_back(w.claim);
        if (w.claim != TEMPO_NO_CLAIM) rt->seen.push_back(w.claim);
      }
      // A claim waits at one place in the queue: twice is the engine's mistake (each place
      // would give it another TTU).
      std::sort(rt->seen.begin(), rt->seen.end());
      if (std::adjacent_find(rt->seen.begin(), rt->seen.end()) != rt->seen.end()) return -EINVAL;
      if (const int r = check_retrieval_bytes(*rt, surface); r != 0) return r;
    }
    // The step's time against what the costs predicted widens the TTU spread; then learn
    // from it before projecting, so this step's TTUs use it.
    if (step->duration_ns > 0) {
      rt->side->step_spread().record(rt->costs->predict(work), step->duration_ns);
      if (rt->learn) {
        if (const int r = rt->costs->observe(work, step->duration_ns); r != 0) return r;
      }
    }
    // The order first: it proves every claim known (-ENOENT changes nothing). Given every
    // step, the same one too: another caller may have ordered the context meanwhile.
    const std::span<const tempo::ClaimId> order(rt->order);
    if (const int r = surface.update_orders({&order, 1}); r != 0) return r;
    if (!same_queue) {
      // Claims no longer waiting (admitted, cancelled) leave the runtime side.
      std::vector<tempo::ClaimId> gone;
      std::set_difference(rt->waiting_claims.begin(), rt->waiting_claims.end(), rt->seen.begin(),
                          rt->seen.end(), std::back_inserter(gone));
      for (const tempo::ClaimId id : gone) rt->side->forget(id);
      for (const tempo::ClaimId id : rt->seen) rt->side->adopt(id, id);
      rt->waiting_claims.swap(rt->seen);
      // Claims a refused step asked about and that never waited stay cached no longer.
      std::erase_if(rt->claim_bytes, [&](const auto& kv) {
        return !std::binary_search(rt->waiting_claims.begin(), rt->waiting_claims.end(), kv.first);
      });
      rt->taken_waiting = rt->waiting_in;
    }
    tempo::TimeNs now = 0;
    if (const int r = surface.now(&now); r != 0) return r;
    PublishedOrder published;
    const int r = rt->side->step(now, rt->running, StepWaiting(rt->waiting_in), step->busy_ns,
                                 false, published);
    if (r == 0) {
      // Kept by swapping the scratch, which the next step refills.
      rt->last_running.swap(rt->running);
      rt->last_waiting.swap(rt->waiting_in);
      rt->last_busy_ns = step->busy_ns;
      rt->last_now = now;
    }
    return r;
  });
}

TEMPO_EXPORT int tempo_runtime_get_projection(tempo_runtime* rt, tempo_waiting_projection* out,
                                              size_t projection_size, size_t capacity,
                                              size_t* count) {
  if (!rt || !count || (!out && capacity) || projection_size < sizeof(tempo_waiting_projection) ||
      projection_size > TEMPO_STRUCT_SIZE_MAX)
    return -EINVAL;
  return guard([&] {
    std::lock_guard lock(rt->mu);
    const size_t n = rt->last_waiting.size();
    *count = n;
    if (capacity < n) return -ENOSPC;
    // The estimator projects the entries that have a claim: every entry gets one of its own
    // here (its position + 1), so requests without a claim are projected too.
    std::vector<tempo::WaitingRequest> waiting(n);
    for (size_t q = 0; q < n; ++q) {
      const tempo_waiting_seq& w = rt->last_waiting[q];
      waiting[q].uncached_prompt_tokens = w.prompt_tokens - w.cached_tokens;
      waiting[q].cached_prompt_tokens = w.cached_tokens;
      waiting[q].retrieval_bytes = w.retrieval_bytes;
      waiting[q].claim = q + 1;
    }
    const tempo::RuntimeSideConfig& config = rt->side->config();
    const tempo::SchedulerSnapshot snap{rt->last_running,        waiting,       config.max_active,
                                        config.generation_limit, tempo::kNever, rt->last_busy_ns};
    std::vector<tempo::ClaimTtu> ttus;
    if (const int r = tempo::estimate_ttu(snap, *rt->costs, rt->side->history(), &ttus); r != 0)
      return r;
    tempo::TimeNs now = 0;
    if (const int r = tempo_capi_surface(rt->ctx)->now(&now); r != 0) return r;
    const uint32_t output = rt->side->history().predict_remaining(0, config.generation_limit);
    auto* to = reinterpret_cast<unsigned char*>(out);
    for (const tempo::ClaimTtu& t : ttus) {
      const tempo_waiting_seq& w = rt->last_waiting[t.queue_position];
      const tempo_waiting_projection p{t.ttu - (now - rt->last_now), output,
                                       w.claim != TEMPO_NO_CLAIM ? TEMPO_PROJECTION_F_CLAIM : 0u};
      unsigned char* e = to + t.queue_position * projection_size;
      std::memcpy(e, &p, sizeof p);
      std::memset(e + sizeof p, 0, projection_size - sizeof p);
    }
    return 0;
  });
}

TEMPO_EXPORT int tempo_runtime_get_history(tempo_runtime* rt, uint32_t* lengths, size_t capacity,
                                           size_t* count) {
  if (!rt || !count || (!lengths && capacity)) return -EINVAL;
  return guard([&] {
    std::lock_guard lock(rt->mu);
    const std::vector<uint32_t> kept = rt->side->history().in_order();
    *count = kept.size();
    if (capacity < kept.size()) return -ENOSPC;
    std::copy(kept.begin(), kept.end(), lengths);
    return 0;
  });
}

TEMPO_EXPORT int tempo_runtime_get_given_ttus(tempo_runtime* rt, const tempo_claim_id* ids,
                                              size_t count, int64_t* ttus) {
  if (!rt || ((!ids || !ttus) && count)) return -EINVAL;
  std::lock_guard lock(rt->mu);
  for (size_t i = 0; i < count; ++i)
    ttus[i] = rt->side->given_ttu(ids[i], rt->last_now).value_or(TEMPO_TTU_UNKNOWN);
  return 0;
}

TEMPO_EXPORT int tempo_runtime_finished(tempo_runtime* rt, uint32_t output_tokens) {
  // Every request that finished generated its first token at least.
  if (!rt || output_tokens == 0) return -EINVAL;
  std::lock_guard lock(rt->mu);
  rt->side->history().record(output_tokens);
  return 0;
}

TEMPO_EXPORT int tempo_runtime_get_costs_sized(tempo_runtime* rt, tempo_step_costs* out,
                                               size_t size, uint64_t* steps_learned) {
  if (!rt || !out || size == 0 || size > TEMPO_STRUCT_SIZE_MAX) return -EINVAL;
  tempo_step_costs c;
  uint64_t n = 0;
  if (const int r = tempo_runtime_get_costs(rt, &c, &n); r != 0) return r;
  std::memcpy(out, &c, std::min(size, sizeof c));
  if (size > sizeof c) std::memset(reinterpret_cast<char*>(out) + sizeof c, 0, size - sizeof c);
  if (steps_learned) *steps_learned = n;
  return 0;
}

TEMPO_EXPORT int tempo_runtime_get_costs(tempo_runtime* rt, tempo_step_costs* out,
                                         uint64_t* steps_learned) {
  if (!rt || !out) return -EINVAL;
  std::lock_guard lock(rt->mu);
  const tempo::StepCostCoefficients c = rt->costs->coefficients();
  *out =
      tempo_step_costs{c.prefill_pass_ns, c.prefill_token_ns,  c.prefill_pair_ns, c.decode_pass_ns,
                       c.decode_seq_ns,   c.decode_context_ns, c.retrieval_bps,   {0, 0}};
  if (steps_learned) *steps_learned = rt->costs->observations();
  return 0;
}

}  // extern "C"

#include "runtime/ttu_estimator.h"

#include <algorithm>
#include <cerrno>
#include <limits>

namespace tempo {
namespace {

// A request holding a slot on the projected timeline.
struct Seq {
  bool pending = false;  // retrieval and prefill still to run
  bool reached = false;  // step 2 has reached it (its TTU is taken)
  int64_t out_index = -1;
  TimeNs ready_at = 0;
  uint64_t retrieval_bytes = 0;
  uint64_t prefill_tokens = 0;
  uint64_t prefill_context = 0;
  uint64_t steps_after_prefill = 0;
  uint64_t context = 0;    // KV tokens while decoding
  uint64_t remaining = 0;  // decode steps left
};

bool finished(const Seq& s) { return !s.pending && s.remaining == 0; }

int validate(const SchedulerSnapshot& s) {
  if (s.max_active == 0 || s.generation_limit == 0) return -EINVAL;
  if (s.running.size() > s.max_active) return -EINVAL;
  if (s.waiting.size() > std::numeric_limits<uint32_t>::max()) return -EINVAL;
  for (const RunningRequest& r : s.running) {
    const bool before_prefill = r.prompt_tokens_remaining > 0 || r.retrieval_bytes_remaining > 0;
    if (before_prefill && r.tokens_generated > 0) return -EINVAL;
    if (r.ready_in < 0 || r.ready_in == kNever) return -EINVAL;
  }
  for (const WaitingRequest& w : s.waiting) {
    if (w.ready_in < 0 || w.ready_in == kNever) return -EINVAL;
  }
  return 0;
}

}  // namespace

int estimate_ttu(const SchedulerSnapshot& snapshot, const StepCosts& costs,
                 const OutputLengthHistory& history, std::vector<ClaimTtu>* out) {
  out->clear();
  if (int rc = validate(snapshot); rc != 0) return rc;
  const auto& waiting = snapshot.waiting;
  size_t last_claim = 0;
  for (size_t i = 0; i < waiting.size(); ++i) {
    if (waiting[i].claim) {
      out->push_back({*waiting[i].claim, static_cast<uint32_t>(i), 0});
      last_claim = i;
    }
  }
  if (out->empty()) return 0;

  const uint32_t limit = snapshot.generation_limit;
  // Output of a request not started yet; its prefill produces the first token.
  const uint64_t new_steps = history.predict_remaining(0, limit) - 1;
  std::vector<Seq> active;
  active.reserve(snapshot.max_active);
  for (const RunningRequest& r : snapshot.running) {
    Seq s;
    if (r.prompt_tokens_remaining > 0 || r.retrieval_bytes_remaining > 0) {
      s.pending = true;
      s.reached = true;
      s.ready_at = r.ready_in;
      s.retrieval_bytes = r.retrieval_bytes_remaining;
      s.prefill_tokens = r.prompt_tokens_remaining;
      s.prefill_context = r.prompt_tokens_done;
      s.steps_after_prefill = new_steps;
    } else {
      s.context = r.context_tokens;
      s.remaining = history.predict_remaining(r.tokens_generated, limit);
      if (s.remaining == 0) continue;
    }
    active.push_back(s);
  }

  TimeNs t = 0;
  size_t next = 0;
  int64_t next_out = 0;
  const int64_t last_out = static_cast<int64_t>(out->size()) - 1;
  for (;;) {
    // 1. Admission in queue order into free slots.
    while (active.size() < snapshot.max_active && next <= last_claim) {
      const WaitingRequest& w = waiting[next++];
      Seq s;
      s.pending = true;
      s.out_index = w.claim ? next_out++ : -1;
      s.ready_at = w.ready_in;
      s.retrieval_bytes = w.retrieval_bytes;
      s.prefill_tokens = w.uncached_prompt_tokens;
      s.prefill_context = w.cached_prompt_tokens;
      s.steps_after_prefill = new_steps;
      active.push_back(s);
    }
    // 2. Retrieval then prefill of admitted requests, in admission order.
    for (Seq& s : active) {
      if (!s.pending) continue;
      if (!s.reached) {
        s.reached = true;
        if (s.out_index >= 0) {
          (*out)[s.out_index].ttu = t;
          if (s.out_index == last_out) return 0;
        }
      }
      if (s.ready_at > t) continue;
      t += costs.retrieval_time(s.retrieval_bytes);
      t += costs.prefill_time(s.prefill_tokens, s.prefill_context);
      s.pending = false;
      s.context = s.prefill_context + s.prefill_tokens;
      s.remaining = s.steps_after_prefill;
    }
    std::erase_if(active, finished);
    // 3. Decode steps of the whole batch, up to the next event: a request finishing, or
    // (step by step) a pending request's KV becoming ready.
    uint64_t batch = 0;
    uint64_t context = 0;
    uint64_t steps = std::numeric_limits<uint64_t>::max();
    TimeNs earliest_ready = kNever;
    for (const Seq& s : active) {
      if (s.pending) {
        earliest_ready = std::min(earliest_ready, s.ready_at);
      } else {
        ++batch;
        context += s.context;
        steps = std::min(steps, s.remaining);
      }
    }
    if (batch == 0) {
      // Nothing to decode: either every slot waits for staging, or slots are free.
      if (earliest_ready != kNever) t = std::max(t, earliest_ready);
      continue;
    }
    if (earliest_ready != kNever) steps = 1;
    t += costs.decode_steps_time(batch, context, steps);
    for (Seq& s : active) {
      if (s.pending) continue;
      s.context += steps;
      s.remaining -= steps;
    }
    // 4. Finished requests free their slots.
    std::erase_if(active, finished);
  }
}

}  // namespace tempo

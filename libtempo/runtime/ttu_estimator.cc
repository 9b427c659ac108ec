#include "runtime/ttu_estimator.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <limits>
#include <numeric>
#include <span>
#include <unordered_map>

#include "core/rng.h"

namespace tempo {
namespace {

// A request holding a slot on the projected timeline.
struct Seq {
  bool pending = false;  // retrieval and prefill still to run
  bool reached = false;  // step 2 has reached it (its TTU is taken)
  int64_t out_index = -1;
  TimeNs ready_at = 0;
  TimeNs retrieval = 0;  // its retrieval's time
  TimeNs prefill = 0;    // its prefill's time, unscaled
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
  if (s.busy_for < 0 || s.busy_for == kNever) return -EINVAL;
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

// What a waiting request's retrieval and prefill take (the prefill unscaled): the same in
// every projection of a snapshot, so taken once.
struct Admission {
  TimeNs retrieval = 0;
  TimeNs prefill = 0;
};

std::vector<Admission> admissions(const SchedulerSnapshot& snapshot, const StepCosts& costs,
                                  size_t last_claim) {
  std::vector<Admission> a(snapshot.waiting.empty() ? 0 : last_claim + 1);
  for (size_t q = 0; q < a.size(); ++q) {
    const WaitingRequest& w = snapshot.waiting[q];
    a[q] = {costs.retrieval_time(w.retrieval_bytes),
            costs.prefill_time(w.uncached_prompt_tokens, w.cached_prompt_tokens)};
  }
  return a;
}

// The step-cost factor at probability `level`: linear between the spread's levels, the
// outermost beyond them.
double factor_at(const std::array<double, kTtuLevels.size()>& factors, double level) {
  const LevelSpan s = level_span(level);
  if (s.upper == 0) return factors.front();
  if (s.upper == factors.size()) return factors.back();
  return factors[s.upper - 1] + s.fraction * (factors[s.upper] - factors[s.upper - 1]);
}

// Lists the claims of the queue into *out (TTUs 0); returns the queue index of the last.
size_t list_claims(const SchedulerSnapshot& snapshot, std::vector<ClaimTtu>* out) {
  size_t last_claim = 0;
  for (size_t i = 0; i < snapshot.waiting.size(); ++i) {
    if (snapshot.waiting[i].claim) {
      out->push_back({*snapshot.waiting[i].claim, static_cast<uint32_t>(i), 0, {}});
      last_claim = i;
    }
  }
  return last_claim;
}

// One projection of the timeline, its prefill and decode steps `factor` times as long (the
// retrievals not); `remaining(generated)` is the output a request that has generated
// `generated` tokens still produces, unless the snapshot gives its output length; `admitted`
// the queue's admissions(). Writes the TTU of claim j to ttus[j]. Returns the first claim past
// the horizon (ttus->size() if none): it and those behind it get the time the projection
// stopped.
template <typename Remaining>
size_t project(const SchedulerSnapshot& snapshot, const StepCosts& costs, double factor,
               std::span<const Admission> admitted, Remaining remaining, size_t last_claim,
               std::vector<TimeNs>* ttus, std::vector<Seq>* scratch) {
  auto scaled = [factor](TimeNs t) {
    return factor == 1.0 ? t : round_ns(static_cast<double>(t) * factor);
  };
  const auto& waiting = snapshot.waiting;
  // Decode steps of a request not started yet (its prefill produces the first token).
  auto new_steps = [&] {
    const uint64_t n = remaining(0);
    return n > 0 ? n - 1 : 0;
  };
  // Decode steps left to a request with `generated` tokens (the prefill's included) whose
  // output length the engine gave.
  auto known_steps = [&](uint32_t output, uint32_t generated) -> uint64_t {
    output = std::min(output, snapshot.generation_limit);
    return output > generated ? output - generated : 0;
  };
  // Never more than every request given, whatever max_active says. The caller's, so the
  // spread's projections reuse one allocation.
  std::vector<Seq>& active = *scratch;
  active.clear();
  active.reserve(
      std::min<size_t>(snapshot.max_active, snapshot.running.size() + snapshot.waiting.size()));
  for (const RunningRequest& r : snapshot.running) {
    Seq s;
    if (r.prompt_tokens_remaining > 0 || r.retrieval_bytes_remaining > 0) {
      s.pending = true;
      s.reached = true;
      s.ready_at = r.ready_in;
      s.retrieval = costs.retrieval_time(r.retrieval_bytes_remaining);
      s.prefill = costs.prefill_time(r.prompt_tokens_remaining, r.prompt_tokens_done);
      s.prefill_tokens = r.prompt_tokens_remaining;
      s.prefill_context = r.prompt_tokens_done;
      s.steps_after_prefill = r.output_tokens ? known_steps(r.output_tokens, 1) : new_steps();
    } else {
      s.context = r.context_tokens;
      s.remaining = r.output_tokens ? known_steps(r.output_tokens, r.tokens_generated)
                                    : remaining(r.tokens_generated);
      if (s.remaining == 0) continue;
    }
    active.push_back(s);
  }

  TimeNs t = snapshot.busy_for;
  size_t next = 0;
  int64_t next_out = 0;
  const int64_t last_out = static_cast<int64_t>(ttus->size()) - 1;
  for (;;) {
    // 1. Admission in queue order into free slots.
    while (active.size() < snapshot.max_active && next <= last_claim) {
      const Admission& a = admitted[next];
      const WaitingRequest& w = waiting[next++];
      Seq s;
      s.pending = true;
      s.out_index = w.claim ? next_out++ : -1;
      s.ready_at = w.ready_in;
      s.retrieval = a.retrieval;
      s.prefill = a.prefill;
      s.prefill_tokens = w.uncached_prompt_tokens;
      s.prefill_context = w.cached_prompt_tokens;
      s.steps_after_prefill = w.output_tokens ? known_steps(w.output_tokens, 1) : new_steps();
      active.push_back(s);
    }
    // 2. Retrieval then prefill of admitted requests, in admission order.
    bool ended = false;  // a request with no decode step after its prefill
    for (Seq& s : active) {
      if (!s.pending) continue;
      if (!s.reached) {
        s.reached = true;
        if (s.out_index >= 0) {
          if (t > snapshot.horizon) {
            std::fill(ttus->begin() + s.out_index, ttus->end(), t);
            return static_cast<size_t>(s.out_index);
          }
          (*ttus)[s.out_index] = t;
          if (s.out_index == last_out) return ttus->size();
        }
      }
      if (s.ready_at > t) continue;
      t += s.retrieval;
      t += scaled(s.prefill);
      s.pending = false;
      s.context = s.prefill_context + s.prefill_tokens;
      s.remaining = s.steps_after_prefill;
      ended = ended || s.remaining == 0;
    }
    if (ended) std::erase_if(active, finished);
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
    t += scaled(costs.decode_steps_time(batch, context, steps));
    ended = false;
    for (Seq& s : active) {
      if (s.pending) continue;
      s.context += steps;
      s.remaining -= steps;
      ended = ended || s.remaining == 0;
    }
    // 4. Finished requests free their slots.
    if (ended) std::erase_if(active, finished);
  }
}

// estimate_ttu, leaving the queue's admissions() in *admitted for the spread's projections.
int estimate_point(const SchedulerSnapshot& snapshot, const StepCosts& costs,
                   const OutputLengthHistory& history, std::vector<ClaimTtu>* out,
                   std::vector<Admission>* admitted) {
  out->clear();
  if (int rc = validate(snapshot); rc != 0) return rc;
  const size_t last_claim = list_claims(snapshot, out);
  if (out->empty()) return 0;
  const uint32_t limit = snapshot.generation_limit;
  std::vector<TimeNs> ttus(out->size());
  std::vector<Seq> active;
  *admitted = admissions(snapshot, costs, last_claim);
  const uint64_t fresh = history.predict_remaining(0, limit);
  const size_t beyond = project(
      snapshot, costs, 1.0, *admitted,
      [&](uint32_t generated) {
        return generated == 0 ? fresh : uint64_t{history.predict_remaining(generated, limit)};
      },
      last_claim, &ttus, &active);
  for (size_t j = 0; j < out->size(); ++j) {
    (*out)[j].ttu = ttus[j];
    (*out)[j].spread = TtuQuantiles::point(ttus[j]);
    (*out)[j].beyond = j >= beyond;
  }
  return 0;
}

}  // namespace

int estimate_ttu(const SchedulerSnapshot& snapshot, const StepCosts& costs,
                 const OutputLengthHistory& history, std::vector<ClaimTtu>* out) {
  std::vector<Admission> admitted;
  return estimate_point(snapshot, costs, history, out, &admitted);
}

int estimate_ttu_spread(const SchedulerSnapshot& snapshot, const StepCosts& costs,
                        const OutputLengthHistory& history, const StepCostSpread& step_spread,
                        std::vector<ClaimTtu>* out) {
  std::vector<Admission> admitted;
  if (int rc = estimate_point(snapshot, costs, history, out, &admitted); rc != 0 || out->empty())
    return rc;
  const size_t last_claim = out->back().queue_position;
  const uint32_t limit = snapshot.generation_limit;
  const auto factors = step_spread.factors();
  // Conditional output populations by tokens generated so far, built once per value, as the
  // draw each stratum takes: the nearest rank at the stratum's midpoint.
  struct Strata {
    bool empty = true;
    std::array<uint32_t, kTtuSamples> at{};
  };
  std::unordered_map<uint32_t, Strata> populations;
  const Strata* fresh = nullptr;  // generated 0, most draws: no lookup
  auto population = [&](uint32_t generated) -> const Strata& {
    if (generated == 0 && fresh) return *fresh;
    auto it = populations.find(generated);
    if (it == populations.end()) {
      std::vector<uint32_t> pop = history.remaining_population(generated, limit);
      std::sort(pop.begin(), pop.end());
      Strata st;
      st.empty = pop.empty();
      for (size_t k = 0; k < kTtuSamples && !pop.empty(); ++k)
        st.at[k] = nearest_rank(std::span<const uint32_t>(pop),
                                (static_cast<double>(k) + 0.5) / static_cast<double>(kTtuSamples));
      it = populations.emplace(generated, st).first;
    }
    if (generated == 0) fresh = &it->second;
    return it->second;
  };
  // Latin hypercube draws: the i-th sequence a projection draws for takes, in sample k, the
  // stratum perms[i * kTtuSamples + k] of its population, every stratum once over the
  // samples in an order of its own. Each sequence's draws cover its distribution evenly; the
  // orders keep the sequences independent of each other. The same orders on every call (a
  // snapshot projects to the same spread), so the thread keeps them from call to call.
  struct Orders {
    Rng rng{kTtuSpreadSeed};
    std::vector<uint8_t> perms;
  };
  static_assert(kTtuSamples <= 256);
  thread_local Orders orders;
  auto draw = [&](size_t i, size_t k, uint32_t generated) -> uint64_t {
    const Strata& pop = population(generated);
    if (pop.empty) return 0;
    while (orders.perms.size() <= i * kTtuSamples) {
      std::array<uint8_t, kTtuSamples> p;
      std::iota(p.begin(), p.end(), uint8_t{0});
      for (size_t n = p.size(); n > 1; --n)
        std::swap(p[n - 1], p[orders.rng.uniform_int(0, n - 1)]);
      orders.perms.insert(orders.perms.end(), p.begin(), p.end());
    }
    return pop.at[orders.perms[i * kTtuSamples + k]];
  };
  // The samples stop at kTtuSpreadHorizon (or the snapshot's nearer horizon): a claim past
  // it in some sample keeps a point spread, unless the snapshot's own horizon cut it (then
  // its samples are the lower bounds the point is too).
  SchedulerSnapshot sampled = snapshot;
  sampled.horizon = std::min(snapshot.horizon, kTtuSpreadHorizon);
  const bool own_horizon = snapshot.horizon <= kTtuSpreadHorizon;
  size_t reached = out->size();  // claims [0, reached) are within the horizon in every sample
  std::vector<TimeNs> ttus(out->size());
  std::vector<Seq> active;
  // Claim j's TTU in sample k at j * kTtuSamples + k.
  std::vector<TimeNs> samples(out->size() * kTtuSamples);
  for (size_t k = 0; k < kTtuSamples; ++k) {
    const double level = (static_cast<double>(k) + 0.5) / static_cast<double>(kTtuSamples);
    size_t drawn = 0;
    const size_t beyond = project(
        sampled, costs, factor_at(factors, level), admitted,
        [&](uint32_t generated) { return draw(drawn++, k, generated); }, last_claim, &ttus,
        &active);
    if (!own_horizon) reached = std::min(reached, beyond);
    for (size_t j = 0; j < (own_horizon ? out->size() : reached); ++j) {
      samples[j * kTtuSamples + k] = ttus[j];
      if (j < beyond) (*out)[j].beyond = false;
    }
  }
  for (size_t j = 0; j < out->size(); ++j) {
    ClaimTtu& c = (*out)[j];
    c.spread = j < reached ? TtuQuantiles{level_quantiles(
                                 std::span(samples).subspan(j * kTtuSamples, kTtuSamples))}
                           : TtuQuantiles::point(c.ttu);
  }
  return 0;
}

}  // namespace tempo

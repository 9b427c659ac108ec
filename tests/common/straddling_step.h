// The hand-worked engine step that gives a claim a TTU spread straddling its TTR, shared by
// the in-process C ABI test and tempod's client-mode test (both pin the risk rule on it).
//
// One slot, held by a sequence with one token out; the output-length history says outputs
// end at 4 or at 64 tokens (the generation limit), ten of each. The waiting claim's
// retrieval then begins after 3 more decode steps (about 16 ms) with probability 0.5, after
// 63 (about 330 ms) otherwise: about 170 ms at the mean, which is the point TTU.
#pragma once

#include "tempo/tempo.h"

namespace tempo_test {

// Round numbers: a 1 ms prefill pass, 50 us per token, 1 ns per attention pair; a 5 ms
// decode step, 20 us per sequence, 10 ns per KV token; 10 GB/s retrieval.
constexpr tempo_step_costs kRoundCosts{1e6, 5e4, 1.0, 5e6, 2e4, 10.0, 1e10, {0, 0}};

// Runs the step above for claim `id` through a new runtime on `ctx` and reads the claim
// back into `info`. Returns 0 or the first failing call's negative errno.
inline int run_straddling_step(tempo_ctx* ctx, tempo_claim_id id, tempo_claim_info* info) {
  const tempo_runtime_config cfg{kRoundCosts, 1, 64, 0, 0, {0, 0, 0, 0}};
  tempo_runtime* rt = nullptr;
  int rc = tempo_runtime_new(ctx, &cfg, &rt);
  if (rc != 0) return rc;
  for (int i = 0; i < 10 && rc == 0; ++i) {
    rc = tempo_runtime_finished(rt, 4);
    if (rc == 0) rc = tempo_runtime_finished(rt, 64);
  }
  const tempo_running_seq running[] = {{1000, 1000, 1, 0, 0}};
  const tempo_waiting_seq waiting[] = {{2000, 1000, id, 0}};
  tempo_step step{};
  step.running = running;
  step.running_count = 1;
  step.waiting = waiting;
  step.waiting_count = 1;
  if (rc == 0) rc = tempo_runtime_step(rt, &step);
  if (rc == 0) rc = tempo_claim_query(ctx, id, info, sizeof *info);
  tempo_runtime_free(rt);
  return rc;
}

}  // namespace tempo_test

// The workloads tempo-replay serves, built from libtempo/workload's generators and trace
// parser: the paper's NarrativeQA setup, a LooGLE-like set, or a JSONL request trace.
#pragma once

#include <string>

#include "model/exec_model.h"
#include "replay_request.h"
#include "workload/arrivals.h"
#include "workload/request.h"

namespace tempo {

struct WorkloadSpec {
  std::string name = "narrativeqa";  // narrativeqa | loogle | trace
  std::string trace_path;            // trace only
  uint32_t documents = 0;            // 0: the paper's count (12 NarrativeQA, 16 LooGLE)
  double prefix_cache_ratio = 1.0;
  uint32_t output_cap = 128;
  uint32_t chunk_tokens = 256;        // document sets
  uint32_t trace_block_tokens = 512;  // traces
  bool skip_malformed = false;        // traces
  // Traces keep their output lengths unless this is set (then output_cap caps them too).
  bool cap_trace_outputs = false;
  // Traces: arrivals start at 0 (the first kept request's timestamp is subtracted) and are
  // then multiplied by time_scale (0.5: twice as fast); `skip` requests are dropped from the
  // start and at most `first` kept (0: all).
  double time_scale = 1.0;
  uint64_t skip = 0;
  uint64_t first = 0;
  ArrivalSpec arrivals;  // document sets; traces use their timestamps
  uint64_t seed = 1;
};

// Builds the workload for `model` (its KV bytes per token size the chunks). Returns 0, or a
// negative errno with *error saying what is wrong (file:line for traces).
int build_workload(const WorkloadSpec& spec, const ExecModel& model, ReplayWorkload* out,
                   std::string* error);

// The replay form of generated requests: the cached chunks become the claim's prefix and
// are preloaded on the SSD tier.
ReplayWorkload to_replay(const std::vector<Request>& requests);

}  // namespace tempo

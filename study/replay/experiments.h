// tempo-replay's experiments: the default policy comparison and the paper's figures, each
// writing CSVs that scripts/figures/*.py draw.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "model/exec_model.h"
#include "serving_engine.h"
#include "uring/uring_device_options.h"
#include "workloads.h"

namespace tempo {

struct ReplaySetup {
  std::string model = "llama-3.1-8b-instruct";
  std::string gpu = "h100-pcie-80gb";
  // The stack's device, budget and controller, and the uring device's options, as the
  // settings build them (config/from_settings.h).
  SimStackConfig stack;
  UringDeviceOptions uring;
  Interference interference;  // sim device only: a window of reduced staging rate
  // Admission waits for GPU KV memory (90% of HBM after the weights); off by default, as
  // in the paper's figures (their workloads fit).
  bool gpu_kv_memory = false;
  EngineConfig engine;
  Deployment deployment;  // engines and hosts (one of each by default), their router
  WorkloadSpec workload;
  double device_link_bps = 24.0 * (1ull << 30);  // fast tier -> GPU (CXL x8)
  std::vector<std::string> policies;             // empty: all seven and (where asked) dax-l1
  // --default-comparison: after the one-engine comparison, the same policies with this many
  // engines sharing the device and budget, arrivals this many times as often (0: none).
  uint32_t shared_engines_run = 0;
  // "sim" (virtual time), "uring" (real I/O on the wall clock: objects, fast tier and
  // budget shrunk by byte_scale, the store kept in store_dir between runs) or "daemon" (the
  // same device served by a tempod started per policy, each engine a process of its own:
  // daemon_engines.h).
  std::string device = "sim";
  std::string store_dir = "tempo-replay-store";
  std::string tempod;  // daemon: the tempod binary ("": the one beside tempo-replay)
  uint64_t byte_scale = 16;
  // uring: the emulated GPU, its link, the arrivals and the stack's timers run this many
  // times as fast as the model's, so a run of hundreds of requests lasts seconds; the real
  // reads do not, so the device's rate in the model's time is byte_scale / speedup times the
  // disk's. Results are reported in the model's time.
  double speedup = 1;
  double uring_calibration_bps = 2.0 * (1ull << 30);  // this disk's O_DIRECT rate, roughly
  std::string out_dir = "tempo-replay-out";
  bool progress = false;  // a progress bar on stderr
  // Policies of one setup run side by side on this many threads (sim device only; results
  // are the same as one at a time).
  unsigned jobs = 1;
};

// The paper's defaults: the settings table's stack (100 GiB fast tier, 50 GiB budget,
// 11 GiB/s staging in 8 slots, 2 GiB/s demand path), 4 active sequences, NarrativeQA at
// 0.5 s intervals, 128-token cap.
ReplaySetup default_setup();

// The paper's six commitment policies in its order, then tempo-risk.
const std::vector<std::string>& all_policies();

struct ExperimentRow {
  std::vector<std::pair<std::string, std::string>> labels;  // e.g. {"model", "llama"}
  RunResult result;
};

// Runs `setup` once per policy. Returns 0 or a negative errno with *error.
int run_comparison(const ReplaySetup& setup, std::vector<ExperimentRow>* rows, std::string* error);

// Runs a named experiment ("compare", "fig1", "fig2", "fig4", "fig5", "fig6",
// "interference", "cluster") and writes its CSVs under setup.out_dir/<name>/. Prints the
// summary table for "compare", "interference" and "cluster"; "compare" with
// shared_engines_run N prints the N-engine run's table after it and writes its CSVs under
// compare/engines-N/.
int run_experiment(const std::string& name, const ReplaySetup& setup, std::string* error);

std::vector<std::string> experiment_names();

}  // namespace tempo

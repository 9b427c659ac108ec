// tempo-replay's engines as processes sharing one tempod (`-d daemon`, issue 12): a run
// writes a tempod configuration from the replay's options (the uring device on the store
// directory, the byte-scaled fast tier and budget, the run's policy), starts the daemon,
// forks one process per engine and gathers their records. Each engine process serves the
// requests the router gave it with serving_engine.cc's Engine, on a threaded driver of its
// own, through a DaemonClient: claims, waiting order, readiness waits, ordinary reads and
// extents read in place from the daemon's fast tier. The daemon merges the engines' orders
// and holds the one budget; C is its ledger's byte-time, for the whole device.
#pragma once

#include <string>

#include "router.h"
#include "serving_engine.h"

namespace tempo {

struct DaemonRunOptions {
  std::string tempod;               // the daemon's binary ("": default_tempod_path())
  std::string store_dir;            // the object store, kept between runs
  uint64_t fast_tier_bytes = 0;     // the daemon's, already byte-scaled ...
  uint64_t budget_bytes = 0;        // ... as the budget is
  double calibration_rate_bps = 0;  // the provider's starting rate, TempoKV-Static's rate
  uint32_t engines = 1;             // engine processes
  Router router = Router::kRoundRobin;
};

// The tempod beside this executable (the build tree's tools/tempod/tempod, or an
// installation's sbin/tempod), else "tempod" (looked up on PATH).
std::string default_tempod_path();

// Runs `workload` (its objects already byte-scaled: engine.byte_scale) under
// `engine.policy`, with `options.engines` engine processes against one tempod started for
// the run and stopped after it. The records are the engines' (times from the common start
// of the arrivals); C, deferrals and bytes moved are the daemon's counters (in the model's
// bytes). Throws std::invalid_argument for an invalid configuration (dax-l1, which reads
// the device without the controller, has no daemon form), std::runtime_error when tempod
// or an engine process fails (with the reason, tempod's log tail), std::logic_error when
// protection is left in the daemon's ledger after the engines ended.
RunResult run_daemon_engines(const ReplayWorkload& workload, const EngineConfig& engine,
                             const StepCosts& costs, const DaemonRunOptions& options);

}  // namespace tempo

// What a serving run is judged by: TTFT (p95, mean), output throughput, and the
// protected-capacity cost C = (integral of protected + reserved bytes dt) / N in
// GiB*s per completed request, counted until every reservation is released.
#pragma once

#include <cstdint>
#include <vector>

#include "core/time.h"

namespace tempo {

struct RequestTiming {
  TimeNs arrival = 0;
  TimeNs first_token = -1;
  TimeNs finish = -1;
  uint32_t output_tokens = 0;
};

struct ServingSummary {
  uint64_t completed = 0;
  double p95_ttft_s = 0;
  double mean_ttft_s = 0;
  double throughput_tps = 0;   // output tokens / (last completion - first arrival)
  double c_gib_s_per_req = 0;  // protected-capacity cost
};

// p-th percentile (0..100) by linear interpolation between closest ranks (numpy's default).
double percentile(std::vector<double> values, double p);

// Summarises completed requests; `ledger_byte_seconds` is the ledger's integral over the
// whole run (until all reservations were released).
ServingSummary summarize(const std::vector<RequestTiming>& requests, double ledger_byte_seconds);

}  // namespace tempo

#include "metrics/serving_metrics.h"

#include <algorithm>
#include <cmath>

namespace tempo {

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = p / 100.0 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (rank - static_cast<double>(lo));
}

ServingSummary summarize(const std::vector<RequestTiming>& requests, double ledger_byte_seconds) {
  ServingSummary s;
  std::vector<double> ttft;
  TimeNs first_arrival = kNever, last_finish = 0;
  uint64_t tokens = 0;
  for (const RequestTiming& r : requests) {
    first_arrival = std::min(first_arrival, r.arrival);
    if (r.finish < 0) continue;
    ++s.completed;
    ttft.push_back(ns_to_sec(r.first_token - r.arrival));
    last_finish = std::max(last_finish, r.finish);
    tokens += r.output_tokens;
  }
  if (s.completed == 0) return s;
  s.p95_ttft_s = percentile(ttft, 95);
  double sum = 0;
  for (double t : ttft) sum += t;
  s.mean_ttft_s = sum / static_cast<double>(ttft.size());
  const double span = ns_to_sec(last_finish - first_arrival);
  s.throughput_tps = span > 0 ? static_cast<double>(tokens) / span : 0;
  s.c_gib_s_per_req = ledger_byte_seconds / double(1ull << 30) / static_cast<double>(s.completed);
  return s;
}

}  // namespace tempo

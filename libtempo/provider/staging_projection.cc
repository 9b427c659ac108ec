#include "provider/staging_projection.h"

#include <algorithm>
#include <cmath>

namespace tempo {

namespace {

// Runs the model until every operation is done or `horizon` seconds pass. Records
// completion times (seconds) when `done_at` is given.
void run_model(std::span<double> rem, uint32_t slots, double rate, double horizon,
               std::vector<double>* done_at) {
  std::vector<size_t> active;
  size_t next = 0;
  double t = 0;
  auto admit = [&] {
    while (active.size() < slots && next < rem.size()) {
      if (rem[next] <= 0) {
        if (done_at) (*done_at)[next] = t;
      } else {
        active.push_back(next);
      }
      ++next;
    }
  };
  admit();
  while (!active.empty() && t < horizon) {
    const double share = rate / static_cast<double>(active.size());
    double least = rem[active.front()];
    for (size_t i : active) least = std::min(least, rem[i]);
    const bool cut = least / share > horizon - t;
    const double dt = cut ? horizon - t : least / share;
    t += dt;
    for (size_t i : active) {
      // Without a cut, the operations holding the least remaining bytes finish now.
      const bool finishes = !cut && rem[i] <= least * (1 + 1e-12);
      rem[i] = finishes ? 0 : std::max(0.0, rem[i] - share * dt);
    }
    std::erase_if(active, [&](size_t i) {
      if (rem[i] > 0) return false;
      if (done_at) (*done_at)[i] = t;
      return true;
    });
    admit();
  }
}

}  // namespace

std::vector<TimeNs> project_completions(std::span<const double> remaining, uint32_t slots,
                                        double rate_bps) {
  std::vector<double> rem(remaining.begin(), remaining.end());
  std::vector<double> done_at(rem.size(), 0);
  run_model(rem, std::max<uint32_t>(slots, 1), rate_bps, INFINITY, &done_at);
  std::vector<TimeNs> out(done_at.size());
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<TimeNs>(std::llround(done_at[i] * 1e9));
  return out;
}

void advance_projection(std::span<double> remaining, uint32_t slots, double rate_bps, TimeNs dt) {
  if (dt <= 0) return;
  run_model(remaining, std::max<uint32_t>(slots, 1), rate_bps, ns_to_sec(dt), nullptr);
}

}  // namespace tempo

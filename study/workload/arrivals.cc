#include "workload/arrivals.h"

#include <cerrno>
#include <cmath>

#include "core/rng.h"

namespace tempo {

int arrival_times(const ArrivalSpec& spec, size_t n, std::vector<TimeNs>* out) {
  out->clear();
  switch (spec.kind) {
    case ArrivalKind::kFixedInterval:
      if (spec.interval < 0) return -EINVAL;
      if (n > 1 && spec.interval > 0 &&
          static_cast<uint64_t>(n - 1) > static_cast<uint64_t>(kMaxArrivalNs / spec.interval))
        return -ERANGE;
      for (size_t i = 0; i < n; ++i) out->push_back(static_cast<TimeNs>(i) * spec.interval);
      return 0;
    case ArrivalKind::kPoisson: {
      if (!std::isfinite(spec.rate_per_s) || spec.rate_per_s <= 0) return -EINVAL;
      Rng rng(spec.seed);
      double t = 0;
      for (size_t i = 0; i < n; ++i) {
        if (i > 0) t += rng.exponential(spec.rate_per_s);
        if (!(t <= ns_to_sec(kMaxArrivalNs))) {
          out->clear();
          return -ERANGE;
        }
        out->push_back(sec_to_ns(t));
      }
      return 0;
    }
    case ArrivalKind::kTimestamps:
      if (spec.timestamps.size() < n) return -EINVAL;
      for (size_t i = 0; i < n; ++i) {
        const TimeNs t = spec.timestamps[i];
        if (t < 0 || (i > 0 && t < spec.timestamps[i - 1])) {
          out->clear();
          return -EINVAL;
        }
        if (t > kMaxArrivalNs) {
          out->clear();
          return -ERANGE;
        }
        out->push_back(t);
      }
      return 0;
  }
  return -EINVAL;
}

int parse_arrival_kind(std::string_view name, ArrivalKind* out) {
  if (name == "fixed") {
    *out = ArrivalKind::kFixedInterval;
  } else if (name == "poisson") {
    *out = ArrivalKind::kPoisson;
  } else if (name == "trace") {
    *out = ArrivalKind::kTimestamps;
  } else {
    return -EINVAL;
  }
  return 0;
}

}  // namespace tempo

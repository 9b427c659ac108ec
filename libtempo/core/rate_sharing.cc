#include "core/rate_sharing.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace tempo {

void share_rate(double total, std::span<const double> caps, std::span<double> rates) {
  const size_t n = caps.size();
  if (n == 0) return;
  // Serve capped flows in increasing cap order; each takes min(cap, equal share of what is left).
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  auto cap_of = [&](size_t i) { return caps[i] > 0 ? caps[i] : total; };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cap_of(a) < cap_of(b); });
  double left = total;
  for (size_t k = 0; k < n; ++k) {
    const size_t i = order[k];
    const double fair = left / static_cast<double>(n - k);
    rates[i] = std::min(cap_of(i), fair);
    left -= rates[i];
  }
}

}  // namespace tempo

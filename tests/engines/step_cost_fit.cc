#include "step_cost_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

namespace tempo {
namespace {

using Row = std::array<double, 3>;

// Least squares of y ~ x.c over rows weighted by 1/y (relative error), by the normal
// equations and Gaussian elimination with partial pivoting; negative terms become 0.
class Fit3 {
 public:
  void add(const Row& x, double y) {
    const double w = 1.0 / (y * y);
    for (int i = 0; i < 3; ++i) {
      b_[i] += w * x[i] * y;
      for (int j = 0; j < 3; ++j) a_[i][j] += w * x[i] * x[j];
    }
  }
  Row solve() const {
    auto a = a_;
    auto b = b_;
    for (int c = 0; c < 3; ++c) {
      int pivot = c;
      for (int r = c + 1; r < 3; ++r)
        if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
      std::swap(a[c], a[pivot]);
      std::swap(b[c], b[pivot]);
      for (int r = c + 1; r < 3; ++r) {
        const double f = a[r][c] / a[c][c];
        for (int k = c; k < 3; ++k) a[r][k] -= f * a[c][k];
        b[r] -= f * b[c];
      }
    }
    Row x{};
    for (int r = 2; r >= 0; --r) {
      double s = b[r];
      for (int k = r + 1; k < 3; ++k) s -= a[r][k] * x[k];
      x[r] = s / a[r][r];
    }
    for (double& v : x) v = std::max(v, 0.0);
    return x;
  }

 private:
  std::array<Row, 3> a_{};
  Row b_{};
};

double d(uint64_t v) { return static_cast<double>(v); }

}  // namespace

StepCostCoefficients fit_step_costs(const ExecModel& model, double retrieval_bps) {
  Fit3 prefill;
  for (uint64_t n = 64; n <= 16384; n *= 2) {
    for (uint64_t ctx : {0ull, 1024ull, 4096ull, 16384ull}) {
      const double pairs = d(n) * (d(ctx) + (d(n) + 1) / 2);
      prefill.add({1.0, d(n), pairs}, static_cast<double>(model.prefill_time(n, ctx)));
    }
  }
  Fit3 decode;
  for (uint64_t b = 1; b <= 64; b *= 2) {
    for (uint64_t per_seq : {256ull, 1024ull, 4096ull, 16384ull}) {
      decode.add({1.0, d(b), d(b * per_seq)},
                 static_cast<double>(model.decode_step_time(b, b * per_seq)));
    }
  }
  const Row p = prefill.solve();
  const Row q = decode.solve();
  // The model's host link when no slower source is named.
  const double bps = retrieval_bps > 0 ? retrieval_bps
                                       : 1e9 * d(1ull << 30) /
                                             static_cast<double>(model.retrieval_time(1ull << 30));
  return {p[0], p[1], p[2], q[0], q[1], q[2], bps};
}

}  // namespace tempo

// Reference gravity (reference.hpp): compensated sums, one particle per task.
#include "reference.hpp"

#include <cmath>

#include "parallel.hpp"

namespace orrery {
namespace {

struct CompensatedSum {
  double sum = 0.0, carry = 0.0;
  void add(double x) {
    double t = sum + x;
    carry += std::fabs(sum) >= std::fabs(x) ? (sum - t) + x : (x - t) + sum;
    sum = t;
  }
  double value() const { return sum + carry; }
};

}  // namespace

void reference_accelerations(const double* p, const double* m, std::size_t n, double softening,
                             unsigned threads, double* a, double* phi) {
  const double eps2 = softening * softening;
  if (threads == 0) threads = ThreadPool::hardware_threads();
  ThreadPool::instance().parallel_for(n, 16, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      CompensatedSum ax, ay, az, ui;
      for (std::size_t j = 0; j < n; ++j) {
        if (j == i) continue;
        double dx = p[3 * j] - p[3 * i], dy = p[3 * j + 1] - p[3 * i + 1], dz = p[3 * j + 2] - p[3 * i + 2];
        double r2 = dx * dx + dy * dy + dz * dz + eps2;
        double inv_r = 1.0 / std::sqrt(r2);
        double w = m[j] * inv_r * inv_r * inv_r;
        ax.add(w * dx);
        ay.add(w * dy);
        az.add(w * dz);
        if (phi) ui.add(-m[j] * inv_r);
      }
      a[3 * i] = ax.value();
      a[3 * i + 1] = ay.value();
      a[3 * i + 2] = az.value();
      if (phi) phi[i] = ui.value();
    }
  });
}

}  // namespace orrery

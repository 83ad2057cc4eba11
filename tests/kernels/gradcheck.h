// Gradient-check helpers for kernel tests (header-only).
// Pattern: write the reference forward as a template over T, run it in double to get a scalar
// loss L(x) = sum(forward(x) * R) for a fixed random projection R, take central differences
// (x +- h) in double, and compare with the analytic backward given dy = R.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

namespace olmo::testing {

// Central-difference gradient of f at x (all double). Cost: 2 * x.size() calls of f.
inline std::vector<double> numeric_grad(const std::function<double(const std::vector<double>&)>& f,
                                        std::vector<double> x, double h = 1e-6) {
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    double xi = x[i];
    x[i] = xi + h;
    double fp = f(x);
    x[i] = xi - h;
    double fm = f(x);
    x[i] = xi;
    g[i] = (fp - fm) / (2 * h);
  }
  return g;
}

// max_i |a_i - b_i| / (atol + rtol * |b_i|) <= 1 means "close".
inline double max_scaled_err(const std::vector<double>& a, const std::vector<double>& b,
                             double rtol, double atol) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i)
    m = std::fmax(m, std::fabs(a[i] - b[i]) / (atol + rtol * std::fabs(b[i])));
  return m;
}

// Relative L2 error ||a - b|| / ||b||.
template <class A, class B>
double rel_l2(const A& a, const B& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  return std::sqrt(num / (den > 0 ? den : 1e-300));
}

inline std::vector<double> randn(size_t n, uint64_t seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd(0.0, scale);
  std::vector<double> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

template <class T>
std::vector<T> to(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

}  // namespace olmo::testing

// The serving simulator's random numbers (src/serve.cpp draws requests, src/serve_continuous.cpp
// accepted drafts): one generator, so --seed gives the same answer everywhere.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace capcalc::serving {

// xoshiro256** seeded by splitmix64, and the distributions drawn from it by hand: the standard
// library's distributions differ between implementations, and --seed must give the same
// requests everywhere.
inline constexpr double kPi = 3.14159265358979323846;

class Random {
 public:
  explicit Random(std::uint64_t seed) {
    for (auto& word : state_) {
      seed += 0x9e3779b97f4a7c15ULL;
      std::uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      word = z ^ (z >> 31);
    }
  }

  /// Uniform in (0, 1).
  double uniform() {
    const std::uint64_t bits = next() >> 11;
    return (static_cast<double>(bits) + 0.5) * 0x1.0p-53;
  }
  double exponential() { return -std::log(uniform()); }
  double normal() {  // Box-Muller; one of the pair is enough.
    return std::sqrt(-2 * std::log(uniform())) * std::cos(2 * kPi * uniform());
  }
  /// Gamma(shape, 1): Marsaglia and Tsang (2000); shape < 1 by Gamma(shape + 1)·U^(1/shape).
  double gamma(double shape) {
    if (shape < 1) return gamma(shape + 1) * std::pow(uniform(), 1 / shape);
    const double d = shape - 1.0 / 3;
    const double c = 1 / std::sqrt(9 * d);
    for (;;) {
      double x = 0;
      double v = 0;
      do {
        x = normal();
        v = 1 + c * x;
      } while (v <= 0);
      v = v * v * v;
      const double u = uniform();
      if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
    }
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t next() {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }
  std::array<std::uint64_t, 4> state_{};
};

}  // namespace capcalc::serving

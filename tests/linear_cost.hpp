// Step times a reader can add up, for the serving simulator's tests: a fixed part, per decode
// sequence and per prompt token.
#pragma once

#include <cstdint>

#include "capcalc/serve.hpp"

namespace capcalc::test {

class LinearCost final : public StepCost {
 public:
  LinearCost(double fixed_s, double per_sequence_s, double per_token_s)
      : fixed_s_(fixed_s), per_sequence_s_(per_sequence_s), per_token_s_(per_token_s) {}
  double step_s(std::int64_t decode, double, std::int64_t prefill_tokens, std::int64_t,
                double) override {
    return fixed_s_ + per_sequence_s_ * static_cast<double>(decode) +
           per_token_s_ * static_cast<double>(prefill_tokens);
  }
  double batch_s(std::int64_t batch) override {
    return fixed_s_ + per_sequence_s_ * static_cast<double>(batch);
  }

 private:
  double fixed_s_, per_sequence_s_, per_token_s_;
};

}  // namespace capcalc::test

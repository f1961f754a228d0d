// The serving simulator tests' helpers: step times a reader can add up, and a Hugging Face
// config of data/models at any batch, sequence and cache length.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "capcalc/model.hpp"
#include "capcalc/serve.hpp"

#include "input_file.hpp"
#include "test_data.hpp"

namespace capcalc::test {

// A fixed part, per decode sequence and per prompt token.
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

// data/models/`file` at batch b, seq s over c cached tokens (the file read once).
inline BatchGraphBuilder model_builder(const std::string& file) {
  auto text = std::make_shared<std::string>(read_input_file(data_path("models/" + file)));
  return [text, file](std::int64_t batch, std::int64_t seq, std::int64_t cached) {
    ModelOptions options;
    options.dims["batch"] = batch;
    if (seq > 0) options.dims["seq"] = seq;
    options.counting.kv_cache_length = cached;
    return parse_model(*text, file, options);
  };
}

}  // namespace capcalc::test

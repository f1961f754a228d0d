// The operator table of the native model format: one row per operator, each with a function
// that reads the layer's attributes, infers the output shape and counts the layer exactly.
// Adding an operator is one row plus its function plus its test.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "capcalc/graph.hpp"
#include "capcalc/model.hpp"

#include "expr.hpp"
#include "json_view.hpp"

namespace capcalc {

/// A layer's attributes: located reads that evaluate integer expressions in scope and
/// remember which keys were read, so that unknown keys can be reported.
class Attributes {
 public:
  Attributes(const JsonView& layer, const NameScope& scope, std::string layer_name);

  std::int64_t positive(std::string_view key);
  std::int64_t positive(std::string_view key, std::int64_t fallback);
  std::optional<std::int64_t> optional_positive(std::string_view key);
  std::int64_t non_negative(std::string_view key, std::int64_t fallback);
  std::int64_t integer(std::string_view key);
  std::int64_t integer(std::string_view key, std::int64_t fallback);
  double number(std::string_view key, double fallback);
  bool flag(std::string_view key, bool fallback);
  std::string text(std::string_view key, std::string fallback);
  std::optional<std::string> optional_text(std::string_view key);
  /// An integer or a list of `count` integers (kernel sizes, strides); each must be >= minimum.
  std::vector<std::int64_t> per_axis(std::string_view key, std::size_t count, std::int64_t fallback,
                                     std::int64_t minimum);
  /// A list of integers (may be negative, e.g. -1 in a reshape).
  std::vector<std::int64_t> integer_list(std::string_view key);
  /// Whether the key is present (and marks it read).
  bool has(std::string_view key);
  /// Whether the key is present and holds a string (a mode such as "same", or an expression).
  bool is_string(std::string_view key);

  /// Fails at the attribute's location (or the layer's, if the key is absent).
  [[noreturn]] void fail_at(std::string_view key, const std::string& message) const;
  /// Fails at the layer, naming it.
  [[noreturn]] void fail(const std::string& message) const;

  /// Fails on the first key that is neither read nor one of `structural`.
  void reject_unknown(const std::vector<std::string_view>& structural,
                      std::string_view op_name) const;

  const std::string& layer_name() const { return layer_name_; }

 private:
  std::int64_t evaluate(const JsonView& value) const;
  std::optional<JsonView> get(std::string_view key);

  JsonView layer_;
  const NameScope& scope_;
  std::string layer_name_;
  std::vector<std::string> read_;
};

/// What an operator's function sees.
struct OpContext {
  Attributes& attrs;
  std::vector<const Shape*> inputs;    ///< Shapes of the inputs, in order.
  std::vector<bool> input_needs_grad;  ///< False for model inputs (they need no gradient).
  const CountOptions& options;
  /// Finds an earlier layer by name in the current scope (for `tied_to`); nullptr if none.
  std::function<const Layer*(const std::string&)> find_layer;

  [[noreturn]] void fail(const std::string& message) const { attrs.fail(message); }
  bool any_input_needs_grad() const;
};

/// What an operator's function returns.
struct OpResult {
  Shape output;
  LayerCounts counts;
  bool view = false;
  /// Parameters used per token, when fewer than counts.params (moe); unset: all of them.
  std::optional<std::int64_t> active_params;
  std::optional<GemmView> gemm;     ///< Matrix layers: the product the matrix units see.
  bool rotary = false;              ///< Attention with a rotary position embedding.
  std::int64_t weight_tensors = 0;  ///< Weight matrices and biases of its products.
  std::int64_t bias_tensors = 0;    ///< Of weight_tensors, the biases.
  std::int64_t param_tensors = 0;   ///< All learnable tensors; 0: weight_tensors, else 1.
  AdapterShape adapters{};          ///< LoRA adapters where the GEMM view does not give them.
};

/// One row of the operator table.
struct OpKind {
  std::string_view name;
  int min_inputs;
  int max_inputs;  ///< -1: any number.
  OpResult (*infer)(OpContext&);
  OpClass op_class;
  Fusion fusion;
};

/// The row for `name`, or nullptr.
const OpKind* find_op(std::string_view name);

/// All operator names, in table order.
std::vector<std::string_view> op_names();

}  // namespace capcalc

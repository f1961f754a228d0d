// The members of ops.hpp's Attributes (located, expression-aware reads of a layer's attributes
// that remember what they read) and OpContext.
#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "checked.hpp"
#include "ops.hpp"
#include "spellcheck.hpp"

namespace capcalc {

Attributes::Attributes(const JsonView& layer, const NameScope& scope, std::string layer_name)
    : layer_(layer), scope_(scope), layer_name_(std::move(layer_name)) {
  read_.reserve(8);  // Most operators read a few attributes: one allocation.
}

std::optional<JsonView> Attributes::get(std::string_view key) {
  read_.emplace_back(key);
  return layer_.find(key);
}

bool Attributes::has(std::string_view key) {
  return get(key).has_value();
}

bool Attributes::is_string(std::string_view key) {
  const std::optional<JsonView> value = get(key);
  return value && value->is_string();
}

std::int64_t Attributes::evaluate(const JsonView& value) const {
  if (value.is_string()) {
    try {
      return evaluate_expression(value.as_string(), scope_);
    } catch (const ExpressionError& e) {
      value.fail(e.what());
    } catch (const OverflowError&) {
      value.fail("expression overflows a 64-bit integer");
    }
  }
  if (!value.json().is_number_integer()) {
    value.fail("expected an integer or an expression string, got " + json_type_name(value.json()));
  }
  return value.as_integer();
}

std::int64_t Attributes::integer(std::string_view key) {
  if (auto value = get(key)) return evaluate(*value);
  layer_.fail(fmt::format("layer \"{}\": missing required attribute \"{}\"", layer_name_, key));
}

std::int64_t Attributes::integer(std::string_view key, std::int64_t fallback) {
  if (auto value = get(key)) return evaluate(*value);
  return fallback;
}

std::int64_t Attributes::positive(std::string_view key) {
  const std::int64_t value = integer(key);
  if (value <= 0) fail_at(key, fmt::format("expected a positive integer, got {}", value));
  return value;
}

std::int64_t Attributes::positive(std::string_view key, std::int64_t fallback) {
  if (!has(key)) return fallback;
  return positive(key);
}

std::optional<std::int64_t> Attributes::optional_positive(std::string_view key) {
  if (!has(key)) return std::nullopt;
  return positive(key);
}

std::int64_t Attributes::non_negative(std::string_view key, std::int64_t fallback) {
  const std::int64_t value = integer(key, fallback);
  if (value < 0) fail_at(key, fmt::format("expected a non-negative integer, got {}", value));
  return value;
}

double Attributes::number(std::string_view key, double fallback) {
  if (auto value = get(key)) return value->as_number();
  return fallback;
}

bool Attributes::flag(std::string_view key, bool fallback) {
  if (auto value = get(key)) return value->as_bool();
  return fallback;
}

std::string Attributes::text(std::string_view key, std::string fallback) {
  if (auto value = get(key)) return value->as_string();
  return fallback;
}

std::optional<std::string> Attributes::optional_text(std::string_view key) {
  if (auto value = get(key)) return value->as_string();
  return std::nullopt;
}

std::vector<std::int64_t> Attributes::per_axis(std::string_view key, std::size_t count,
                                               std::int64_t fallback, std::int64_t minimum) {
  std::vector<std::int64_t> values(count, fallback);
  const std::optional<JsonView> value = get(key);
  if (!value) return values;
  if (value->is_array()) {
    if (value->array_size() != count) {
      value->fail(fmt::format("layer \"{}\": expected {} values, got {}", layer_name_, count,
                              value->array_size()));
    }
    for (std::size_t i = 0; i < count; ++i)
      values[i] = evaluate(value->at(i));
  } else {
    std::fill(values.begin(), values.end(), evaluate(*value));
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (values[i] < minimum) {
      const JsonView where = value->is_array() ? value->at(i) : *value;
      where.fail(fmt::format("layer \"{}\": expected a {} integer, got {}", layer_name_,
                             minimum > 0 ? "positive" : "non-negative", values[i]));
    }
  }
  return values;
}

std::vector<std::int64_t> Attributes::integer_list(std::string_view key) {
  const std::optional<JsonView> value = get(key);
  if (!value) {
    layer_.fail(fmt::format("layer \"{}\": missing required attribute \"{}\"", layer_name_, key));
  }
  std::vector<std::int64_t> values;
  for (std::size_t i = 0; i < value->array_size(); ++i)
    values.push_back(evaluate(value->at(i)));
  return values;
}

void Attributes::fail_at(std::string_view key, const std::string& message) const {
  const std::string text = fmt::format("layer \"{}\": {}", layer_name_, message);
  if (auto value = layer_.find(key)) value->fail(text);
  layer_.fail(text);
}

void Attributes::fail(const std::string& message) const {
  layer_.fail(fmt::format("layer \"{}\": {}", layer_name_, message));
}

void Attributes::reject_unknown(const std::vector<std::string_view>& structural,
                                std::string_view op_name) const {
  const nlohmann::json& json = layer_.json();
  if (!json.is_object()) {
    if (!json.empty()) layer_.expect_object();  // null and [] have no keys to reject.
    return;
  }
  for (auto it = json.begin(); it != json.end(); ++it) {
    const std::string& key = it.key();
    if (std::find(structural.begin(), structural.end(), key) != structural.end()) {
      if (is_free_text_key(key)) check_free_text(layer_.member(it), key);
      continue;
    }
    if (std::find(read_.begin(), read_.end(), key) != read_.end()) continue;
    std::vector<std::string_view> known(structural.begin(), structural.end());
    for (const std::string& name : read_)
      known.emplace_back(name);
    const std::string message =
        fmt::format("layer \"{}\": unknown attribute \"{}\" for {}", layer_name_, key, op_name);
    layer_.member(it).fail(with_suggestion(message, key, known));
  }
}

bool OpContext::any_input_needs_grad() const {
  return std::any_of(input_needs_grad.begin(), input_needs_grad.end(), [](bool b) { return b; });
}

}  // namespace capcalc

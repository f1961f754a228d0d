// Located, read-only access to parsed JSON: every accessor returns a value or throws
// capcalc::Error naming the file and the JSON pointer. This is the only place that knows how
// nlohmann::json reports errors; its exception text never reaches a user.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace capcalc {

/// Parses JSON text; a syntax error, or arrays and objects nested deeper than kMaxNestingDepth
/// (limits.hpp), becomes `file:line:col: message`.
nlohmann::json parse_json_text(std::string_view text, const std::string& file);

/// A view of one JSON value that remembers where it came from. Views point into the document
/// and the file name: never keep one beyond the document's lifetime.
class JsonView {
 public:
  using Pointer = nlohmann::json::json_pointer;

  JsonView(const nlohmann::json& value, const std::string& file, Pointer where = Pointer())
      : value_(&value), file_(&file), where_(std::move(where)) {}

  JsonView at(std::string_view key) const;                   ///< Required member.
  std::optional<JsonView> find(std::string_view key) const;  ///< Optional member.
  JsonView at(std::size_t index) const;                      ///< Array element.
  std::size_t array_size() const;                            ///< Fails unless an array.

  bool is_string() const { return value_->is_string(); }
  bool is_number() const { return value_->is_number(); }
  bool is_array() const { return value_->is_array(); }
  bool is_object() const { return value_->is_object(); }
  bool is_null() const { return value_->is_null(); }

  std::string as_string() const;
  double as_number() const;
  double as_positive_number() const;
  std::int64_t as_integer() const;
  std::int64_t as_positive_int() const;
  bool as_bool() const;
  void expect_object() const;

  const nlohmann::json& json() const { return *value_; }
  const std::string& file() const { return *file_; }
  std::string pointer() const { return where_.to_string(); }

  /// Throws capcalc::Error at this value's location.
  [[noreturn]] void fail(const std::string& message) const;

 private:
  const nlohmann::json* value_;
  const std::string* file_;
  Pointer where_;
};

/// Fails on the first key of `object` not in `known`: `unknown key "x" in <what>`, with
/// "did you mean" when a known key is close.
void reject_unknown_keys(const JsonView& object, const std::vector<std::string_view>& known,
                         std::string_view what);

/// The keys that hold free text in every capcalc file ("comment", "$schema", "description",
/// "notes") must be strings, even where capcalc ignores them: fails at `value` otherwise.
/// reject_unknown_keys checks them on every known key.
void check_free_text(const JsonView& value, std::string_view key);

/// "an object", "a string", "a number", ... for messages.
std::string json_type_name(const nlohmann::json& value);

}  // namespace capcalc

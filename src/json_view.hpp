// Located, read-only access to parsed JSON: every accessor returns a value or throws
// capcalc::Error naming the file and the JSON pointer. This is the only place that knows how
// nlohmann::json reports errors; its exception text never reaches a user.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
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
/// (its values and its object keys) and the file name: never keep one beyond the document's
/// lifetime, nor across a change to the document.
///
/// The JSON pointer is built only when asked for (messages): a view holds its last
/// kInlineSteps steps from the root inline, each an object key owned by the document or an
/// array index, and the escaped pointer above them in a prefix shared with its descendants.
class JsonView {
 public:
  using Pointer = nlohmann::json::json_pointer;

  /// A view of a document's root.
  JsonView(const nlohmann::json& value, const std::string& file) : value_(&value), file_(&file) {}
  /// A view of `value` found at `where` in its document: messages name `where` and below.
  JsonView(const nlohmann::json& value, const std::string& file, const Pointer& where);

  JsonView at(std::string_view key) const;                   ///< Required member.
  std::optional<JsonView> find(std::string_view key) const;  ///< Optional member.
  JsonView at(std::size_t index) const;                      ///< Array element.
  std::size_t array_size() const;                            ///< Fails unless an array.
  /// The member `it` points to, from iterating this object's json().
  JsonView member(nlohmann::json::const_iterator it) const;

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
  /// RFC 6901, as json_pointer::to_string() writes it: "" at the root, "/a~1b/0" below.
  std::string pointer() const;

  /// Throws capcalc::Error at this value's location.
  [[noreturn]] void fail(const std::string& message) const;

 private:
  static constexpr std::size_t kInlineSteps = 6;

  // One step down from the parent: an object key (owned by the document) or an array index.
  struct Step {
    const std::string* key = nullptr;  // nullptr: an array index.
    std::size_t index = 0;
  };

  JsonView child(const nlohmann::json& value, Step step) const;
  void append_steps(std::string& out) const;

  const nlohmann::json* value_;
  const std::string* file_;
  std::shared_ptr<const std::string> prefix_{};  // The escaped pointer above steps_; null: "".
  // The prefix of this view's children, once the inline steps are full: written by the first
  // child, shared by the others (a view is used by one thread at a time).
  mutable std::shared_ptr<const std::string> children_prefix_{};
  std::array<Step, kInlineSteps> steps_{};
  std::size_t depth_ = 0;  // Steps used.
};

/// Fails on the first key of `object` not in `known`: `unknown key "x" in <what>`, with
/// "did you mean" when a known key is close.
void reject_unknown_keys(const JsonView& object, const std::vector<std::string_view>& known,
                         std::string_view what);

/// Whether `key` is one of the free-text keys below.
bool is_free_text_key(std::string_view key);

/// The keys that hold free text in every capcalc file ("comment", "$schema", "description",
/// "notes") must be strings, even where capcalc ignores them: fails at `value` otherwise.
/// reject_unknown_keys checks them on every known key.
void check_free_text(const JsonView& value, std::string_view key);

/// "an object", "a string", "a number", ... for messages.
std::string json_type_name(const nlohmann::json& value);

}  // namespace capcalc

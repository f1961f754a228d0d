// capcalc::Error — the one exception type the library throws for bad input: every message is
// ready for a user, compiler style (`file:/json/pointer: message`, `file:line:col: message` for
// syntax, `file: message` for I/O); the CLI prints what() and exits with 2. The one other that
// leaves the library is std::overflow_error: a well-formed count past 64 bits once a workload
// scales it (a batch of 2^40). It has no place; the CLI names the flags that scale counts.
#pragma once

#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace capcalc {

/// Where in the user's input a problem was found.
struct SourceLocation {
  std::string file{};     ///< As the user wrote it; "<input>" for in-memory text.
  std::string pointer{};  ///< RFC 6901 JSON pointer, e.g. "/layers/3/kernel"; empty if none.
  int line = 0;           ///< 1-based; 0 when unknown (only syntax errors know).
  int column = 0;         ///< 1-based; 0 when unknown.
};

/// The exception capcalc throws for bad input (files, values, flags).
///
/// what() is ready for a user:
///   model.json:/layers/3/kernel: expected a positive integer, got -1
///   model.json:3:14: syntax error while parsing value - unexpected ','
///
/// A message may name settings by key (the workload's field as JSON output names it, e.g.
/// "dataset_size"); what_with() lets a front end spell them its own way, as a CLI's flags.
class Error : public std::runtime_error {
 public:
  Error(SourceLocation where, std::string message);

  /// A message naming settings: each `key` between backticks in `text` is a setting's key.
  /// message() and what() show the key bare ("give tokens or dataset_size"). A value placed in
  /// text (a user's name) goes through verbatim() first.
  static Error naming_keys(SourceLocation where, std::string_view text);

  /// `text` as naming_keys() reads it literally: its backticks doubled.
  static std::string verbatim(std::string_view text);

  const SourceLocation& where() const noexcept { return where_; }
  const std::string& message() const noexcept { return message_; }

  /// The keys message() names, in order; empty for most messages.
  std::vector<std::string> keys() const;

  /// what(), with each named key written as spell(key) (a CLI passes its flag for the key).
  std::string what_with(const std::function<std::string(std::string_view key)>& spell) const;

 private:
  SourceLocation where_;
  std::string message_;
  std::vector<std::pair<std::size_t, std::size_t>> key_spans_;  // [offset, size) in message_.
};

}  // namespace capcalc

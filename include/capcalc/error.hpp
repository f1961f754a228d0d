// capcalc::Error — the one exception type the library throws for bad input.
//
// Every message is ready for a user and written compiler style, with the place in the input
// first: `file:/json/pointer: message` for a bad value, `file:line:col: message` for a syntax
// error, `file: message` for I/O. The CLI prints what() and exits with code 2.
#pragma once

#include <stdexcept>
#include <string>

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
class Error : public std::runtime_error {
 public:
  Error(SourceLocation where, std::string message);

  const SourceLocation& where() const noexcept { return where_; }
  const std::string& message() const noexcept { return message_; }

 private:
  SourceLocation where_;
  std::string message_;
};

}  // namespace capcalc

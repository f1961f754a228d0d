#include "json_view.hpp"

#include <algorithm>
#include <deque>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "capcalc/error.hpp"

#include "input_file.hpp"
#include "limits.hpp"
#include "spellcheck.hpp"

namespace capcalc {
namespace {

// nlohmann reports a byte offset; editors want a line and a column.
void locate(std::string_view text, std::size_t offset, int& line, int& column) {
  line = 1;
  column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
}

// nlohmann's text looks like "[json.exception.parse_error.101] parse error at line 3,
// column 14: syntax error while parsing value - unexpected ','; expected ...". Keep only the
// description after the location.
std::string describe_parse_error(const std::string& what) {
  const std::size_t at = what.find(": ");
  std::string description = at == std::string::npos ? what : what.substr(at + 2);
  if (description.rfind("syntax error", 0) != 0 && description.rfind("invalid", 0) != 0) {
    description = "syntax error: " + description;
  }
  return description;
}

// Finds where the parser stopped: nlohmann's out_of_range (a number too large for a double,
// "1e999") carries no offset, but its SAX interface reports one for every error.
struct ErrorLocator : nlohmann::json::json_sax_t {
  std::size_t position = 0;
  std::string token;

  bool null() override { return true; }
  bool boolean(bool /*value*/) override { return true; }
  bool number_integer(number_integer_t /*value*/) override { return true; }
  bool number_unsigned(number_unsigned_t /*value*/) override { return true; }
  bool number_float(number_float_t /*value*/, const string_t& /*text*/) override { return true; }
  bool string(string_t& /*value*/) override { return true; }
  bool binary(binary_t& /*value*/) override { return true; }
  bool start_object(std::size_t /*size*/) override { return true; }
  bool key(string_t& /*value*/) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t /*size*/) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t at, const std::string& last_token,
                   const nlohmann::json::exception& /*error*/) override {
    position = at;
    token = last_token;
    return false;
  }
};

// nlohmann parses nesting without recursion, but copies, compares, dumps and destroys it
// recursively: a document nested deeper than kMaxNestingDepth is refused before parsing, at
// its first bracket too many.
void check_nesting(std::string_view text, const std::string& file) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxNestingDepth) {
        SourceLocation where{file, "", 0, 0};
        locate(text, i, where.line, where.column);
        throw Error(where, fmt::format("arrays and objects nest more than {} deep (the limit)",
                                       kMaxNestingDepth));
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

// nlohmann keeps the last of two equal keys; a user who wrote "layers" twice meant one of
// them. The text has parsed, so a plain scan finds every object's keys: a string followed by
// ':' is a key. Keys with escapes are decoded before comparing ("a" and "\u0061" are equal).
void check_duplicate_keys(std::string_view text, const std::string& file) {
  // Keys are views into the text (decoded copies, where escaped, live in `decoded`); a small
  // object is searched in order, a large one through a hash set built when it grows. Frames
  // past `depth` were closed: they are kept for their buffers, reused by the next object or
  // array opened at their depth.
  struct Frame {
    bool object = false;
    std::vector<std::string_view> keys{};
    std::unordered_set<std::string_view> index{};
    std::size_t element = 0;  // Array: the element being read.
  };
  constexpr std::size_t kLinearKeys = 16;
  std::deque<std::string> decoded;
  std::vector<Frame> frames;
  std::size_t depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '{' || c == '[') {
      if (depth == frames.size()) frames.emplace_back();
      Frame& frame = frames[depth++];
      frame.object = c == '{';
      frame.keys.clear();
      if (!frame.index.empty()) frame.index = std::unordered_set<std::string_view>();
      frame.element = 0;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    } else if (c == ',' && depth > 0 && !frames[depth - 1].object) {
      ++frames[depth - 1].element;
    } else if (c == '"') {
      const std::size_t start = i;
      bool escaped = false;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') {
          escaped = true;
          ++i;
        }
      }
      std::size_t next = i + 1;
      while (next < text.size() && (text[next] == ' ' || text[next] == '\t' || text[next] == '\n' ||
                                    text[next] == '\r')) {
        ++next;
      }
      if (next >= text.size() || text[next] != ':' || depth == 0 || !frames[depth - 1].object) {
        continue;
      }
      const std::string_view raw = text.substr(start, i + 1 - start);
      std::string_view key = raw.substr(1, raw.size() - 2);
      if (escaped) key = decoded.emplace_back(nlohmann::json::parse(raw).get<std::string>());
      Frame& frame = frames[depth - 1];
      bool seen = false;
      if (frame.keys.size() < kLinearKeys) {
        seen = std::find(frame.keys.begin(), frame.keys.end(), key) != frame.keys.end();
      } else {
        if (frame.index.empty()) frame.index.insert(frame.keys.begin(), frame.keys.end());
        seen = !frame.index.insert(key).second;
      }
      if (seen) {
        nlohmann::json::json_pointer where;
        for (std::size_t f = 0; f + 1 < depth; ++f) {
          where = frames[f].object ? where / std::string(frames[f].keys.back())
                                   : where / frames[f].element;
        }
        SourceLocation location{file, "", 0, 0};
        locate(text, start, location.line, location.column);
        const std::string in = where.to_string().empty() ? "/" : where.to_string();
        throw Error(location, fmt::format("duplicate key \"{}\" in the object at {}", key, in));
      }
      frame.keys.push_back(key);  // Last: the member being read, for the pointer.
    }
  }
}

std::string short_dump(const nlohmann::json& value) {
  std::string text = value.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

}  // namespace

bool is_free_text_key(std::string_view key) {
  static constexpr std::string_view kFreeText[] = {"comment", "$schema", "description", "notes"};
  return std::find(std::begin(kFreeText), std::end(kFreeText), key) != std::end(kFreeText);
}

void check_free_text(const JsonView& value, std::string_view key) {
  if (!is_free_text_key(key)) return;
  if (!value.is_string()) value.fail("expected a string, got " + json_type_name(value.json()));
}

void reject_unknown_keys(const JsonView& object, const std::vector<std::string_view>& known,
                         std::string_view what) {
  const nlohmann::json& json = object.json();
  if (!json.is_object()) {
    if (!json.empty()) object.expect_object();  // null and [] have no keys to reject.
    return;
  }
  for (auto it = json.begin(); it != json.end(); ++it) {
    const std::string& key = it.key();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      object.member(it).fail(
          with_suggestion(fmt::format("unknown key \"{}\" in {}", key, what), key, known));
    }
    if (is_free_text_key(key)) check_free_text(object.member(it), key);
  }
}

std::string json_type_name(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::object:
      return "an object";
    case nlohmann::json::value_t::array:
      return "an array";
    case nlohmann::json::value_t::string:
      return "a string";
    case nlohmann::json::value_t::boolean:
      return "a boolean";
    default:
      return "a number";
  }
}

nlohmann::json parse_json_text(std::string_view text, const std::string& file) {
  check_nesting(text, file);
  try {
    // Not with nlohmann's parser callback, which counts each object's keys cheaply but is
    // quadratic in an array of objects (40,000 of them took 1.7 s).
    nlohmann::json document = nlohmann::json::parse(text.begin(), text.end());
    reject_nul_bytes(text, file, "JSON");  // nlohmann may stop at one as at the end of input.
    check_duplicate_keys(text, file);
    return document;
  } catch (const nlohmann::json::parse_error& e) {
    // A NUL byte before the place the parser gave up is the cause (one that ends a string
    // early reads as the end of the input).
    if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos && nul < e.byte) {
      reject_nul_bytes(text, file, "JSON");
    }
    SourceLocation where{file, "", 0, 0};
    // The byte offset is one past the offending character.
    locate(text, e.byte > 0 ? e.byte - 1 : 0, where.line, where.column);
    throw Error(where, describe_parse_error(e.what()));
  } catch (const nlohmann::json::out_of_range&) {
    ErrorLocator locator;
    nlohmann::json::sax_parse(text.begin(), text.end(), &locator);
    SourceLocation where{file, "", 0, 0};
    // The position is one past the number's last character; point at its first.
    const std::size_t end = locator.position > 0 ? locator.position - 1 : 0;
    locate(text, end >= locator.token.size() ? end + 1 - locator.token.size() : 0, where.line,
           where.column);
    throw Error(where, fmt::format("number {} is out of range (larger than a double can hold)",
                                   locator.token));
  }
}

JsonView::JsonView(const nlohmann::json& value, const std::string& file, const Pointer& where)
    : value_(&value), file_(&file) {
  if (!where.empty()) prefix_ = std::make_shared<const std::string>(where.to_string());
}

// json_pointer::escape: "~" becomes "~0" and "/" becomes "~1".
void JsonView::append_steps(std::string& out) const {
  for (std::size_t i = 0; i < depth_; ++i) {
    out += '/';
    if (steps_[i].key == nullptr) {
      out += std::to_string(steps_[i].index);
      continue;
    }
    for (const char c : *steps_[i].key) {
      if (c == '~') {
        out += "~0";
      } else if (c == '/') {
        out += "~1";
      } else {
        out += c;
      }
    }
  }
}

std::string JsonView::pointer() const {
  std::string out = prefix_ ? *prefix_ : std::string();
  append_steps(out);
  return out;
}

JsonView JsonView::child(const nlohmann::json& value, Step step) const {
  JsonView view(value, *file_);
  if (depth_ < kInlineSteps) {
    view.prefix_ = prefix_;
    view.steps_ = steps_;
    view.steps_[depth_] = step;
    view.depth_ = depth_ + 1;
    return view;
  }
  if (!children_prefix_) children_prefix_ = std::make_shared<const std::string>(pointer());
  view.prefix_ = children_prefix_;
  view.steps_[0] = step;
  view.depth_ = 1;
  return view;
}

void JsonView::fail(const std::string& message) const {
  std::string where = pointer();
  if (where.empty()) where = "/";
  throw Error({*file_, where, 0, 0}, message);
}

void JsonView::expect_object() const {
  if (!value_->is_object()) fail("expected an object, got " + json_type_name(*value_));
}

std::optional<JsonView> JsonView::find(std::string_view key) const {
  expect_object();
  const auto it = value_->find(key);
  if (it == value_->end()) return std::nullopt;
  return member(it);
}

JsonView JsonView::member(nlohmann::json::const_iterator it) const {
  return child(*it, Step{&it.key(), 0});
}

JsonView JsonView::at(std::string_view key) const {
  if (auto found = find(key)) return *found;
  fail(fmt::format("missing required key \"{}\"", key));
}

std::size_t JsonView::array_size() const {
  if (!value_->is_array()) fail("expected an array, got " + json_type_name(*value_));
  return value_->size();
}

JsonView JsonView::at(std::size_t index) const {
  if (index >= array_size()) fail(fmt::format("index {} is out of range", index));
  return child((*value_)[index], Step{nullptr, index});
}

std::string JsonView::as_string() const {
  if (!value_->is_string()) fail("expected a string, got " + json_type_name(*value_));
  return value_->get<std::string>();
}

double JsonView::as_number() const {
  if (!value_->is_number()) fail("expected a number, got " + json_type_name(*value_));
  return value_->get<double>();
}

double JsonView::as_positive_number() const {
  const double value = as_number();
  if (!(value > 0)) fail(fmt::format("expected a positive number, got {}", short_dump(*value_)));
  return value;
}

std::int64_t JsonView::as_integer() const {
  if (!value_->is_number_integer()) {
    fail(fmt::format("expected an integer, got {}", short_dump(*value_)));
  }
  if (value_->is_number_unsigned() &&
      value_->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
    fail(fmt::format("integer {} is too large", short_dump(*value_)));
  }
  return value_->get<std::int64_t>();
}

std::int64_t JsonView::as_positive_int() const {
  if (!value_->is_number_integer() || as_integer() <= 0) {
    fail(fmt::format("expected a positive integer, got {}", short_dump(*value_)));
  }
  return value_->get<std::int64_t>();
}

bool JsonView::as_bool() const {
  if (!value_->is_boolean()) fail("expected true or false, got " + json_type_name(*value_));
  return value_->get<bool>();
}

}  // namespace capcalc

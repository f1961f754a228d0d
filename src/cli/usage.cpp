#include "usage.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "capcalc/units.hpp"

#include "spellcheck.hpp"

namespace capcalc::cli {
namespace {

[[noreturn]] void reject(const std::string& flag, const std::string& requirement,
                         const std::string& got) {
  throw Error({}, fmt::format("{} must be {} (got {})", flag, requirement, got));
}

bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

bool is_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), is_digit);
}

// A decimal number as people write it: an optional '-', digits with an optional fraction, an
// optional exponent. strtod alone would also take "nan", "inf", hex and leading spaces.
bool is_decimal(std::string_view text) {
  std::size_t i = 0;
  if (i < text.size() && text[i] == '-') ++i;
  std::size_t digits = 0;
  for (; i < text.size() && is_digit(text[i]); ++i)
    ++digits;
  if (i < text.size() && text[i] == '.') {
    for (++i; i < text.size() && is_digit(text[i]); ++i)
      ++digits;
  }
  if (digits == 0) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (i == text.size() || !is_digit(text[i])) return false;
    while (i < text.size() && is_digit(text[i]))
      ++i;
  }
  return i == text.size();
}

// "a, b or c".
std::string or_list(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string number_text(double value) {
  return fmt::format("{}", value);
}

// The subcommands the parse selected, outermost first: {capcalc}, {capcalc, hw, list}.
std::vector<const CLI::App*> selected_chain(const CLI::App& app) {
  std::vector<const CLI::App*> chain{&app};
  for (std::vector<CLI::App*> subs = app.get_subcommands(); !subs.empty();
       subs = chain.back()->get_subcommands()) {
    chain.push_back(subs.front());
  }
  return chain;
}

// "hw list" for {capcalc, hw, list}; "capcalc" for the top level alone.
std::string command_of(const std::vector<const CLI::App*>& chain, std::size_t depth) {
  if (depth == 0) return "capcalc";
  std::string name;
  for (std::size_t i = 1; i <= depth; ++i) {
    name += (i > 1 ? " " : "") + chain[i]->get_name();
  }
  return name;
}

bool is_option_word(const std::string& word) {
  return word.size() > 1 && word[0] == '-';
}

std::string unknown_option(const CLI::App& where, const std::string& word) {
  const std::string name = word.substr(0, word.find('='));
  std::string message = fmt::format("unknown option {}", name);
  if (name.rfind("--", 0) != 0) return message;
  std::vector<std::string> longs;
  for (const CLI::Option* option : where.get_options()) {
    for (const std::string& lname : option->get_lnames())
      longs.push_back(lname);
  }
  const std::vector<std::string_view> known(longs.begin(), longs.end());
  if (auto guess = closest_match(std::string_view(name).substr(2), known)) {
    message += fmt::format("; did you mean --{}?", *guess);
  }
  return message;
}

std::string unknown_command(const std::vector<const CLI::App*>& chain, std::size_t depth,
                            const std::string& word) {
  std::vector<std::string> names;
  for (const CLI::App* sub : chain[depth]->get_subcommands({})) {
    names.push_back(sub->get_name());
  }
  const std::string kind = depth == 0 ? "command" : command_of(chain, depth) + " command";
  const std::string unknown = fmt::format("unknown {} \"{}\"", kind, word);
  const std::string message =
      with_suggestion(unknown, word, std::vector<std::string_view>(names.begin(), names.end()));
  if (message != unknown) return message;
  // No close name ("help", "show"): say what there is.
  const std::string command = command_of(chain, depth);
  return fmt::format("{}; {} has {} (see {}{} --help)", unknown, command, or_list(names),
                     depth == 0 ? "" : "capcalc ", command);
}

// True when `parse` takes "1" + `word`.
template <typename Parse>
bool parses_after_number(const std::string& word, Parse parse) {
  try {
    parse("1" + word);
    return true;
  } catch (const Error&) {
    return false;
  }
}

// For a stray "tokens/s" or "ms": the shell split `--min-throughput 3k tokens/s` or
// `--max-latency 20 ms` in two.
std::string stray_rate_hint(const std::string& word) {
  if (parses_after_number(" " + word, [](const std::string& t) {
        if (parse_counted_rate(t).item == RateItem::kNone) throw Error({}, "");
      })) {
    return fmt::format(
        ": a rate that names what it counts is one argument, quoted (\"3k {}\") or "
        "without the space (3k{})",
        word, word);
  }
  if (parses_after_number(word, [](const std::string& t) { parse_duration(t); }) ||
      parses_after_number(word, [](const std::string& t) { parse_bytes(t); })) {
    return fmt::format(
        ": a number and its unit are one argument, without the space or quoted (e.g. 20{} or "
        "\"20 {}\")",
        word, word);
  }
  return "";
}

// An unknown option, else a stray argument; the innermost subcommand's first, whose options
// the "did you mean" draws on.
std::optional<std::string> leftover_message(const std::vector<const CLI::App*>& chain) {
  // A mistyped command first: the options after it ("Estimate m.json --gpu A100") are the
  // command's, unknown only because the command is.
  const std::size_t inner = chain.size() - 1;
  if (!chain[inner]->get_subcommands({}).empty()) {
    const std::vector<std::string> words = chain[inner]->remaining();
    if (!words.empty() && !is_option_word(words.front())) {
      return unknown_command(chain, inner, words.front());
    }
  }
  for (std::size_t depth = chain.size(); depth-- > 0;) {
    for (const std::string& word : chain[depth]->remaining()) {
      if (is_option_word(word)) return unknown_option(*chain[depth], word);
    }
  }
  for (std::size_t depth = chain.size(); depth-- > 0;) {
    const std::vector<std::string> words = chain[depth]->remaining();
    if (words.empty()) continue;
    if (!chain[depth]->get_subcommands({}).empty() && chain[depth]->get_subcommands().empty()) {
      return unknown_command(chain, depth, words.front());
    }
    const std::string hint = stray_rate_hint(words.front());
    return depth == 0 ? fmt::format("unexpected argument \"{}\"{}", words.front(), hint)
                      : fmt::format("{}: unexpected argument \"{}\"{}", command_of(chain, depth),
                                    words.front(), hint);
  }
  return std::nullopt;
}

std::string missing_command(const std::vector<const CLI::App*>& chain, std::size_t depth) {
  std::vector<std::string> names;
  for (const CLI::App* sub : chain[depth]->get_subcommands({})) {
    names.push_back(sub->get_name());
  }
  const std::string command = command_of(chain, depth);
  return fmt::format("{} needs a command: {} (see {}{} --help)", command, or_list(names),
                     depth == 0 ? "" : "capcalc ", command);
}

std::optional<std::string> missing_required(const std::vector<const CLI::App*>& chain) {
  for (std::size_t depth = chain.size(); depth-- > 0;) {
    const CLI::App& app = *chain[depth];
    for (const CLI::Option* option : app.get_options()) {
      if (!option->get_required() || option->count() > 0) continue;
      std::string name = option->get_name();
      if (option->get_lnames().empty() && option->get_snames().empty()) {
        std::transform(name.begin(), name.end(), name.begin(), [](char c) {
          return static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        });
      }
      const std::string command = command_of(chain, depth);
      return fmt::format("{}: missing {} (see capcalc {} --help)", command, name, command);
    }
  }
  return std::nullopt;
}

// The pair of given options that CLI11 found to exclude (or need) one another.
std::optional<std::string> conflict(const std::vector<const CLI::App*>& chain, bool excludes) {
  for (const CLI::App* app : chain) {
    for (const CLI::Option* option : app->get_options()) {
      if (option->count() == 0) continue;
      for (const CLI::Option* other : excludes ? option->get_excludes() : option->get_needs()) {
        if (excludes && other->count() > 0) {
          return fmt::format("give {} or {}, not both", option->get_name(), other->get_name());
        }
        if (!excludes && other->count() == 0) {
          return fmt::format("{} needs {}", option->get_name(), other->get_name());
        }
      }
    }
  }
  return std::nullopt;
}

// The option a CLI11 message is about: the first word that names one of the chain's options.
const CLI::Option* option_named_in(const std::vector<const CLI::App*>& chain,
                                   const std::string& message) {
  std::size_t start = 0;
  while (start < message.size()) {
    const std::size_t end = std::min(message.find_first_of(" :=,", start), message.size());
    const std::string word = message.substr(start, end - start);
    if (is_option_word(word)) {
      for (std::size_t depth = chain.size(); depth-- > 0;) {
        for (const CLI::Option* option : chain[depth]->get_options()) {
          if (option->check_name(word)) return option;
        }
      }
    }
    start = end + 1;
  }
  return nullptr;
}

// CLI11's own text, for what no rule above covers: at least on one line.
std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  while (!text.empty() && text.back() == ' ')
    text.pop_back();
  return text;
}

}  // namespace

CLI::Option* whole_number(CLI::Option* option, std::int64_t min, std::int64_t max) {
  const std::string flag = option->get_name();
  const std::string requirement = max == std::numeric_limits<std::int64_t>::max()
                                      ? fmt::format("a whole number ≥ {}", min)
                                      : fmt::format("a whole number from {} to {}", min, max);
  // transform, not check: CLI11 hands a check a copy, and the decimal text must reach the option.
  option->transform(CLI::Validator(
      [flag, requirement, min, max](std::string& text) {
        if (!is_digits(text)) reject(flag, requirement, text);
        errno = 0;
        const long long value = std::strtoll(text.c_str(), nullptr, 10);
        if (errno == ERANGE || value < min || value > max) reject(flag, requirement, text);
        text = std::to_string(value);  // CLI11 would read "010" as octal.
        return std::string();
      },
      max != std::numeric_limits<std::int64_t>::max() ? fmt::format("in [{} - {}]", min, max)
      : min == 0                                      ? std::string("NONNEGATIVE")
      : min == 1                                      ? std::string("POSITIVE")
                                                      : fmt::format("≥ {}", min)));
  return option;
}

CLI::Option* number_above(CLI::Option* option, double above, double max) {
  const std::string flag = option->get_name();
  const std::string requirement = fmt::format("a number > {}", number_text(above));
  const std::string bound = fmt::format("a number at most {} (the limit)", number_text(max));
  option->check(CLI::Validator(
      [flag, requirement, bound, above, max](std::string& text) {
        if (!is_decimal(text)) reject(flag, requirement, text);
        const double value = std::strtod(text.c_str(), nullptr);
        if (!std::isfinite(value) || !(value > above)) reject(flag, requirement, text);
        if (value > max) reject(flag, bound, text);
        return std::string();
      },
      above == 0 ? std::string("POSITIVE") : "> " + number_text(above)));
  return option;
}

CLI::Option* count_above(CLI::Option* option, double above, double max) {
  const std::string flag = option->get_name();
  const std::string requirement =
      fmt::format("a count > {} (e.g. 2e12, 2T, 1.5M)", number_text(above));
  const std::string bound = fmt::format("a count at most {} (the limit)", number_text(max));
  option->transform(CLI::Validator(
      [flag, requirement, bound, above, max](std::string& text) {
        double value = 0;
        try {
          value = parse_count(text);
        } catch (const Error&) {
          reject(flag, requirement, text);
        }
        if (!std::isfinite(value) || !(value > above)) reject(flag, requirement, text);
        if (value > max) reject(flag, bound, text);
        text = fmt::format("{:.17g}", value);
        return std::string();
      },
      above == 0 ? std::string("POSITIVE") : "> " + number_text(above)));
  return option;
}

CLI::Option* number_in(CLI::Option* option, double min, double max) {
  const std::string flag = option->get_name();
  const bool unbounded = max == std::numeric_limits<double>::max();
  const std::string requirement =
      unbounded ? fmt::format("a number ≥ {}", number_text(min))
                : fmt::format("a number from {} to {}", number_text(min), number_text(max));
  option->check(CLI::Validator(
      [flag, requirement, min, max](std::string& text) {
        if (!is_decimal(text)) reject(flag, requirement, text);
        const double value = std::strtod(text.c_str(), nullptr);
        if (!std::isfinite(value) || value < min || value > max) reject(flag, requirement, text);
        return std::string();
      },
      unbounded ? "≥ " + number_text(min)
                : fmt::format("in [{} - {}]", number_text(min), number_text(max))));
  return option;
}

CLI::Option* one_of(CLI::Option* option, const std::vector<std::string_view>& known) {
  const std::string flag = option->get_name();
  const std::vector<std::string> names(known.begin(), known.end());
  const std::string description = fmt::format("{{{}}}", fmt::join(names, ","));
  option->transform(CLI::Validator(
      [flag, names](std::string& text) {
        for (const std::string& name : names) {
          if (iequals(text, name)) {
            text = name;
            return std::string();
          }
        }
        throw Error(
            {}, with_suggestion(
                    fmt::format("{} must be one of {} (got \"{}\")", flag, or_list(names), text),
                    text, std::vector<std::string_view>(names.begin(), names.end())));
      },
      description));
  return option;
}

void reject_empty_list_items(const CLI::App& app, int argc, const char* const* argv) {
  const CLI::App* current = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") return;  // What follows is positional, whatever it looks like.
    if (arg.empty() || arg[0] != '-') {
      // A subcommand's name moves the scan into it; anything else is a value or positional.
      for (const CLI::App* sub : current->get_subcommands({})) {
        if (sub->check_name(arg)) {
          current = sub;
          break;
        }
      }
      continue;
    }
    const std::size_t equals = arg.find('=');
    const std::string name = arg.substr(0, equals);
    const CLI::Option* option = current->get_option_no_throw(name);
    if (option == nullptr || option->get_delimiter() == '\0') continue;
    std::string value;
    if (equals != std::string::npos) {
      value = arg.substr(equals + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      continue;  // CLI11 says the value is missing.
    }
    const char comma = option->get_delimiter();
    if (value.find(comma) == std::string::npos) continue;
    std::size_t item = 1;
    std::size_t start = 0;
    while (true) {
      const std::size_t end = value.find(comma, start);
      if ((end == std::string::npos ? value.size() : end) == start) {
        throw Error({}, fmt::format("{} \"{}\": item {} of the comma-separated list is empty", name,
                                    value, item));
      }
      if (end == std::string::npos) break;
      start = end + 1;
      ++item;
    }
  }
}

Error usage_error(const CLI::App& app, const CLI::ParseError& error) {
  const std::vector<const CLI::App*> chain = selected_chain(app);
  std::optional<std::string> message;
  if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr) {
    const std::size_t depth = chain.size() - 1;
    if (chain[depth]->get_require_subcommand_min() > 0) {
      message = leftover_message(chain);
      if (!message) message = missing_command(chain, depth);
    } else {
      message = missing_required(chain);
    }
  } else if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
    message = leftover_message(chain);
  } else if (dynamic_cast<const CLI::ExcludesError*>(&error) != nullptr) {
    message = conflict(chain, true);
  } else if (dynamic_cast<const CLI::RequiresError*>(&error) != nullptr) {
    message = conflict(chain, false);
  } else if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr) {
    if (const CLI::Option* option = option_named_in(chain, error.what())) {
      message = option->count() > 1
                    ? fmt::format("{} given {} times ({}): give it once", option->get_name(),
                                  option->count(), fmt::join(option->results(), ", "))
                    : fmt::format("{} needs a value", option->get_name());
    }
  } else if (dynamic_cast<const CLI::ConversionError*>(&error) != nullptr) {
    const CLI::Option* option = option_named_in(chain, error.what());
    if (option != nullptr && option->get_expected_min() == 0) {
      message = fmt::format("{} is a flag: it takes no value", option->get_name());
    }
  }
  return Error({}, message ? *message : one_line(error.what()));
}

std::string flag_for_key(std::string_view key) {
  // Keys whose flag is not the key with dashes ("max_train_time" -> "--max-train-time").
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 5> kFlagNames = {{
      {"dims", "--set"},
      {"input_shapes", "--input-shape"},
      {"price_per_hour_usd", "--price-per-hour"},
      {"tensor_parallel", "--tensor-parallel"},
      {"zero_stage", "--zero"},
  }};
  for (const auto& [name, flag] : kFlagNames) {
    if (name == key) return std::string(flag);
  }
  std::string flag = "--" + std::string(key);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

}  // namespace capcalc::cli

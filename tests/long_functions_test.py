#!/usr/bin/env python3
"""Checks tools/long_functions.py on small sources: what counts as a function, and its length.

  long_functions_test.py TOOLS_DIR
"""

import sys

sys.path.insert(0, sys.argv[1])
import long_functions  # noqa: E402

SOURCE = r'''
namespace capcalc {
namespace {
// A data table: not a function, however long.
constexpr std::array kRows = {
    Row{"a", 1},
    Row{"b", 2},
};
const std::map<std::string, int> kNames{{"x", 1}, {"y", 2}};
enum class Kind { kA, kB };
struct Frame {
  double px(double x) const { return x; }
};
}  // namespace

std::string render(const Input& in) {
  const char* brace = "}{";  // Braces in literals and comments do not count: }
  const auto f = [&](int v) { return v; };
  return R"(raw } text)";
}

Foo::Foo(int a) : a_{a}, b_(a) {
  run();
}
}  // namespace capcalc
'''


def main():
    found = {name: (first, last) for name, first, last in long_functions.functions(SOURCE)}
    expected = {"px": (12, 12), "render": (16, 20), "Foo::Foo": (22, 24)}
    if found != expected:
        print(f"functions: got {found}, expected {expected}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

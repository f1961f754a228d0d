#!/usr/bin/env python3
"""Lists the functions of src/**/*.cpp longer than a limit (issue 22: about 120 lines).

A function is a brace block opened at namespace or class level after a parameter list; its
length runs from the line of its signature to its closing brace. Data tables (a brace after
`=` or straight after a name: `constexpr std::array kRows = {...}`, `kRows{...}`) and enums are
not functions and are not counted. Lambdas and local tables count toward the function that holds
them. Comments, string, character and raw string literals are blanked first, so braces in them
do not count. Only python3's standard library is needed.

  tools/long_functions.py [--limit N] [--check] [--exclude GLOB ...] ROOT

Prints `lines  file:line  name` for each function over the limit, longest first. With --check,
exits 1 when any is listed (the ctest `style.function_length`).
"""

import argparse
import fnmatch
import pathlib
import re
import sys


def blank_literals(text):
    """The text with comments and literals replaced by spaces (newlines kept)."""
    out = []
    i = 0
    n = len(text)

    def blank(chunk):
        return "".join("\n" if c == "\n" else " " for c in chunk)

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(blank(text[i:end]))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(blank(text[i:end]))
            i = end
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i + 2)
            delim = text[i + 2:open_paren]
            end = text.find(")" + delim + '"', open_paren)
            end = n if end < 0 else end + len(delim) + 2
            out.append('""' + blank(text[i + 2:end]))
            i = end
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            # A digit separator (1'000) is not a character literal: it follows a digit.
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + blank(text[i + 1:j]) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


FUNCTION_TAIL = re.compile(
    r"\)\s*(?:const|noexcept(?:\([^)]*\))?|override|final|mutable|&&|&|\s)*"
    r"(?:->\s*[\w:<>,\s*&]+)?\s*(?::.*)?$", re.S)
NAME_BEFORE_PAREN = re.compile(r"([~\w:]+(?:<[^()]*>)?|operator\s*[^\s(]+)\s*\($")


def kind_of(header):
    """What a `{` opens, from the text since the previous `;`, `{` or `}` at its level."""
    h = " ".join(header.split())
    if re.search(r"\bnamespace\b", h) or re.match(r'^extern\s*""$', h):
        return "scope", ""
    if re.search(r"\benum\b", h):
        return "data", ""
    if re.search(r"\b(class|struct|union)\b", h) and "(" not in h:
        return "scope", ""
    if re.search(r"\)\s*:[^:]", h) and re.search(r"\w$", h):
        return "data", ""  # A member initializer's brace: `Foo() : a_{1}`.
    if "(" in h and FUNCTION_TAIL.search(h) and not re.search(r"(^|[^=!<>])=([^=]|$)", h.split("(")[0]):
        depth = 0
        for pos, ch in enumerate(h):  # The name before the first top-level parameter list.
            if ch == "(":
                if depth == 0:
                    match = NAME_BEFORE_PAREN.search(h[:pos + 1])
                    return "function", match.group(1) if match else h[:pos]
                depth += 1
            elif ch == ")":
                depth -= 1
        return "function", h
    return "data", ""


def functions(text):
    """(name, first line, last line) of each function in C++ source text."""
    code = blank_literals(text)
    found = []
    header = []
    header_line = None
    line = 1
    i = 0
    n = len(code)
    while i < n:
        c = code[i]
        if c == "\n":
            line += 1
        if c in ";}":
            header, header_line = [], None
        elif c == "{":
            kind, name = kind_of("".join(header))
            if kind == "scope":
                header, header_line = [], None
            else:
                depth, start = 0, line
                while i < n:  # To the matching brace.
                    if code[i] == "\n":
                        line += 1
                    elif code[i] == "{":
                        depth += 1
                    elif code[i] == "}":
                        depth -= 1
                        if depth == 0:
                            break
                    i += 1
                if kind == "function":
                    found.append((name, header_line or start, line))
                    header, header_line = [], None
                else:
                    header.append("{}")  # An initializer: part of the declaration it is in.
        else:
            if header_line is None and not c.isspace():
                header_line = line
            header.append(c)
        i += 1
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=pathlib.Path)
    parser.add_argument("--limit", type=int, default=120)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--exclude", action="append", default=[],
                        help="a glob of paths under ROOT to skip, e.g. 'src/import/onnx*.cpp'")
    args = parser.parse_args()
    rows = []
    for path in sorted((args.root / "src").rglob("*.cpp")):
        rel = path.relative_to(args.root).as_posix()
        if any(fnmatch.fnmatch(rel, pattern) for pattern in args.exclude):
            continue
        for name, first, last in functions(path.read_text(encoding="utf-8")):
            length = last - first + 1
            if length > args.limit:
                rows.append((length, f"{rel}:{first}", name))
    for length, where, name in sorted(rows, key=lambda r: (-r[0], r[1])):
        print(f"{length:5}  {where}  {name}")
    if args.check and rows:
        print(f"{len(rows)} function(s) over {args.limit} lines: split them into named stages",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

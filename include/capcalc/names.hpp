// One table per enumeration: each value's name, the other spellings a reader accepts, and the
// list that the CLI offers (its --help "{a,b}" lists, which the bash completion reads), that
// did-you-mean suggests from and that error messages print. An enumeration's name, parse and
// names functions are one-line calls on its table, so no list is written twice.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace capcalc {

/// A row of a name table: a value, a spelling, and whether that spelling is only accepted
/// (an alias, such as "adamw" for Adam) rather than printed.
template <typename E>
struct Named {
  E value;
  std::string_view name;
  bool alias = false;
};

/// An enumeration's names, in the order they are listed.
template <typename E, std::size_t N>
struct NameTable {
  std::array<Named<E>, N> rows;

  /// The value's printed name: its first row that is not an alias ("" if it has none).
  constexpr std::string_view name(E value) const {
    for (const Named<E>& row : rows) {
      if (!row.alias && row.value == value) return row.name;
    }
    return {};
  }

  /// The value a spelling names, exactly (aliases too); nullopt if none.
  constexpr std::optional<E> parse(std::string_view text) const {
    for (const Named<E>& row : rows) {
      if (row.name == text) return row.value;
    }
    return std::nullopt;
  }

  /// The spellings in table order: the printed names, and the aliases too when asked (what a
  /// reader accepts, and what the CLI lists).
  std::vector<std::string_view> names(bool with_aliases = false) const {
    std::vector<std::string_view> out;
    for (const Named<E>& row : rows) {
      if (with_aliases || !row.alias) out.push_back(row.name);
    }
    return out;
  }
};

/// Builds a table from its rows: name_table<E>({{E::kA, "a"}, {E::kB, "b"}}).
template <typename E, std::size_t N>
constexpr NameTable<E, N> name_table(const Named<E> (&rows)[N]) {
  NameTable<E, N> table{};
  for (std::size_t i = 0; i < N; ++i)
    table.rows[i] = rows[i];
  return table;
}

}  // namespace capcalc

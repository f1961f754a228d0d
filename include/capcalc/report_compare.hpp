// Rendering `capcalc compare` and `capcalc check` results: text for people (80 columns,
// numbers right-aligned), JSON and CSV for programs, Markdown for pull-request comments and
// JUnit XML for CI. Everything renders to a string; the CLI only prints.
//
// JSON carries "schema_version" (kOutputSchemaVersion): compare output is described by
// data/schema/compare-output.schema.json. CSV has one header line and the same rows as JSON.
#pragma once

#include <string>

#include "capcalc/budget.hpp"
#include "capcalc/compare.hpp"

namespace capcalc {

/// `capcalc compare`: a title, one row per device (× batch × precision in a sweep), notes.
std::string render_compare_text(const CompareTable& table);
std::string render_compare_json(const CompareTable& table);
std::string render_compare_csv(const CompareTable& table);
std::string render_compare_markdown(const CompareTable& table);

/// `capcalc check`: one line per limit (failures first), then a summary line. `color`: mark
/// FAIL red and ok green with ANSI escapes (the CLI asks for it only on a terminal).
std::string render_check_text(const CheckReport& report, bool color = false);
std::string render_check_json(const CheckReport& report);
/// JUnit XML: one testsuite per budget, one testcase per model × device × limit; a failure
/// carries the message.
std::string render_check_junit(const CheckReport& report);
/// A summary line and a table, for a pull-request comment.
std::string render_check_markdown(const CheckReport& report);

}  // namespace capcalc

#include "capcalc/units.hpp"

#include "catch.hpp"

using namespace capcalc;

TEST_CASE("format_duration picks a sensible unit with 3 significant digits", "[units]") {
  CHECK(format_duration(0) == "0 s");
  CHECK(format_duration(4.2e-9) == "4.20 ns");
  CHECK(format_duration(842e-6) == "842 µs");
  CHECK(format_duration(1.234e-3) == "1.23 ms");
  CHECK(format_duration(12.5) == "12.5 s");
  CHECK(format_duration(90) == "1.50 min");
  CHECK(format_duration(3 * 3600.0) == "3.00 h");
  CHECK(format_duration(2.5 * 86400) == "2.50 d");
}

TEST_CASE("format_count uses SI suffixes", "[units]") {
  CHECK(format_count(25557032) == "25.6 M");
  CHECK(format_count(4.089e9) == "4.09 G");
  CHECK(format_count(999) == "999");
  CHECK(format_count(1000) == "1.00 k");
  CHECK(format_count(1.5e15) == "1.50 P");
}

TEST_CASE("format_bytes is decimal", "[units]") {
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_bytes(102228128) == "102 MB");
  CHECK(format_bytes(80e9) == "80.0 GB");
}

TEST_CASE("format_rate and format_grouped", "[units]") {
  CHECK(format_rate(312e12, "FLOP/s") == "312 TFLOP/s");
  CHECK(format_rate(2.039e12, "B/s") == "2.04 TB/s");
  CHECK(format_grouped(25557032) == "25,557,032");
  CHECK(format_grouped(-1234) == "-1,234");
  CHECK(format_grouped(12) == "12");
}

#include "capcalc/units.hpp"

#include <cstdint>
#include <limits>

#include "capcalc/error.hpp"

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
  // The extremes, which negation or a double's conversion made undefined behaviour.
  CHECK(format_grouped(INT64_MIN) == "-9,223,372,036,854,775,808");
  CHECK(format_grouped(INT64_MAX) == "9,223,372,036,854,775,807");
  CHECK(format_count(std::numeric_limits<double>::infinity()) == "inf");
}

TEST_CASE("format_figure: 4 significant digits, grouped from 1,000, never an exponent", "[units]") {
  CHECK(format_figure(0) == "0");
  CHECK(format_figure(19.5) == "19.5");
  CHECK(format_figure(989.44) == "989.4");
  CHECK(format_figure(999.4) == "999.4");
  CHECK(format_figure(999.5) == "1,000");
  CHECK(format_figure(3350) == "3,350");
  CHECK(format_figure(26215.4) == "26,215");  // {:.4g} printed 2.622e+04.
  CHECK(format_figure(2e4) == "20,000");      // and 2e+04 for a --rate of 20000/s.
  CHECK(format_figure(-1234.6) == "-1,235");
  CHECK(format_figure(0.0123) == "0.0123");
  CHECK(format_figure(0.000123456) == "0.0001235");
  CHECK(format_figure(1e-6) == "0.000001");
}

TEST_CASE("parse_duration takes ns to days", "[units][parse]") {
  CHECK(parse_duration("20ms") == Approx(0.020));
  CHECK(parse_duration("20 ms") == Approx(0.020));
  CHECK(parse_duration("5ns") == Approx(5e-9));
  CHECK(parse_duration("842us") == Approx(842e-6));
  CHECK(parse_duration("842µs") == Approx(842e-6));
  CHECK(parse_duration("1.5s") == Approx(1.5));
  CHECK(parse_duration("10min") == Approx(600));
  CHECK(parse_duration("3h") == Approx(3 * 3600.0));
  CHECK(parse_duration("3d") == Approx(3 * 86400.0));
  CHECK(parse_duration("1e-3s") == Approx(1e-3));
  // Seconds or milliseconds? A bare number is an error that shows both.
  REQUIRE_THROWS_WITH(parse_duration("20"), "20 has no unit: write 20ms or 20s");
  REQUIRE_THROWS_WITH(parse_duration(" 2.5 "), "2.5 has no unit: write 2.5ms or 2.5s");
  // The fix suits what is timed: a spot restart in minutes, a training run in days.
  REQUIRE_THROWS_WITH(parse_duration("15", DurationScale::kInterval),
                      "15 has no unit: write 15min or 15h");
  REQUIRE_THROWS_WITH(parse_duration("30", DurationScale::kRun),
                      "30 has no unit: write 30h or 30d");
  CHECK(parse_duration("30d", DurationScale::kRun) == Approx(30 * 86400.0));
  REQUIRE_THROWS_WITH(parse_duration("20 parsecs"),
                      "invalid duration \"20 parsecs\": expected a number and a unit ns, us, ms, "
                      "s, min, h or d (e.g. 20ms, 3d)");
  REQUIRE_THROWS_WITH(
      parse_duration("20MS"),
      "invalid duration \"20MS\": units are case-sensitive; did you mean \"20ms\"?");
  REQUIRE_THROWS_WITH(
      parse_bytes("1.5 gib"),
      "invalid size \"1.5 gib\": units are case-sensitive; did you mean \"1.5 GiB\"?");
  REQUIRE_THROWS_AS(parse_duration("ms"), capcalc::Error);
  REQUIRE_THROWS_AS(parse_duration("-5ms"), capcalc::Error);
  REQUIRE_THROWS_AS(parse_duration(""), capcalc::Error);
  REQUIRE_THROWS_AS(parse_duration("inf"), capcalc::Error);
}

TEST_CASE("parse_bytes keeps decimal and binary units apart", "[units][parse]") {
  CHECK(parse_bytes("512B") == 512);
  REQUIRE_THROWS_WITH(parse_bytes("16"), "16 has no unit: write 16GB or 16GiB");
  CHECK(parse_bytes("1kB") == 1e3);
  CHECK(parse_bytes("1KB") == 1e3);
  CHECK(parse_bytes("16GB") == 16e9);
  CHECK(parse_bytes("2TB") == 2e12);
  CHECK(parse_bytes("1KiB") == 1024);
  CHECK(parse_bytes("1 MiB") == 1024.0 * 1024);
  CHECK(parse_bytes("16GiB") == 16.0 * 1024 * 1024 * 1024);
  CHECK(parse_bytes("1TiB") == 1024.0 * 1024 * 1024 * 1024);
  CHECK(parse_bytes("16GiB") != parse_bytes("16GB"));
  REQUIRE_THROWS_WITH(parse_bytes("16 gigs"),
                      ContainsSubstring("invalid size \"16 gigs\": expected"));
  REQUIRE_THROWS_AS(parse_bytes("16Gb"), capcalc::Error);  // Bits are not bytes.
  REQUIRE_THROWS_AS(parse_bytes("GiB"), capcalc::Error);
}

TEST_CASE("parse_count takes SI suffixes, plain numbers and exponents", "[units][parse]") {
  CHECK(parse_count("100M") == 100e6);
  CHECK(parse_count("5G") == 5e9);
  CHECK(parse_count("1.5k") == 1500);
  CHECK(parse_count("2T") == 2e12);
  CHECK(parse_count("25557032") == 25557032);
  CHECK(parse_count("1e9") == 1e9);
  CHECK(parse_count("1E9") == 1e9);
  REQUIRE_THROWS_WITH(parse_count("5X"),
                      "invalid count \"5X\": expected a number with an optional "
                      "suffix k, M, G or T (e.g. 100M, 1e9)");
  REQUIRE_THROWS_AS(parse_count("0x10"), capcalc::Error);
  REQUIRE_THROWS_AS(parse_count("nan"), capcalc::Error);
}

TEST_CASE("parse_money takes USD or a dollar sign", "[units][parse]") {
  CHECK(parse_money("500USD") == 500);
  CHECK(parse_money("500 usd") == 500);
  CHECK(parse_money("$500") == 500);
  CHECK(parse_money("$1.5k") == 1500);
  CHECK(parse_money("0.25USD") == 0.25);
  REQUIRE_THROWS_WITH(parse_money("500"), "500 has no unit: write 500USD or $500");
  REQUIRE_THROWS_WITH(parse_money("1.5k"), "1.5k has no unit: write 1.5kUSD or $1.5k");
  REQUIRE_THROWS_WITH(parse_money("500EUR"),
                      "invalid amount \"500EUR\": expected an amount in US dollars (e.g. 500USD, "
                      "$500)");
  REQUIRE_THROWS_AS(parse_money("$"), capcalc::Error);
}

TEST_CASE("parse_rate takes a count per second, minute or hour", "[units][parse]") {
  CHECK(parse_rate("1000/s") == 1000);
  CHECK(parse_rate("1k/s") == 1000);
  CHECK(parse_rate("1.5k / s") == 1500);
  CHECK(parse_rate("60/min") == Approx(1));
  CHECK(parse_rate("3600/h") == Approx(1));
  REQUIRE_THROWS_WITH(parse_rate("250"), "250 has no unit: write 250/s or 250/min");
  REQUIRE_THROWS_WITH(parse_rate("1k"), "1k has no unit: write 1k/s or 1k/min");
  REQUIRE_THROWS_WITH(parse_rate("5X/s"), ContainsSubstring("invalid rate \"5X/s\""));
  REQUIRE_THROWS_WITH(parse_rate("1000/day"),
                      "invalid rate \"1000/day\": expected a count per unit of time (e.g. 1000/s, "
                      "1k/s, 60/min, 3600/h)");
  REQUIRE_THROWS_AS(parse_rate("/s"), capcalc::Error);
  REQUIRE_THROWS_AS(parse_rate("fast"), capcalc::Error);
}

TEST_CASE("parse_rate refuses a rate that names its items", "[units][parse]") {
  REQUIRE_THROWS_WITH(parse_rate("3k tokens/s"),
                      "invalid rate \"3k tokens/s\": expected a count per unit of time (e.g. "
                      "1000/s, 1k/s, 60/min, 3600/h)");
}

TEST_CASE("parse_counted_rate names what a rate counts", "[units][parse]") {
  const CountedRate tokens = parse_counted_rate("3k tokens/s");
  CHECK(tokens.per_second == 3000);
  CHECK(tokens.item == RateItem::kTokens);
  CHECK(tokens.item_word == "tokens");
  CHECK(parse_counted_rate("3ktokens/s").per_second == 3000);
  CHECK(parse_counted_rate("3ktokens/s").item == RateItem::kTokens);
  CHECK(parse_counted_rate("3 k tokens / s").per_second == 3000);
  CHECK(parse_counted_rate("1 token/s").item == RateItem::kTokens);
  CHECK(parse_counted_rate("1 token/s").item_word == "tokens");
  // "Tokens" is a word, not tera-"okens"; "MTokens" is mega-tokens.
  CHECK(parse_counted_rate("5 Tokens/s").per_second == 5);
  CHECK(parse_counted_rate("5MTokens/s").per_second == 5e6);
  const CountedRate sequences = parse_counted_rate("2 sequences/min");
  CHECK(sequences.per_second == Approx(2.0 / 60));
  CHECK(sequences.item == RateItem::kSequences);
  CHECK(parse_counted_rate("1 sequence/h").per_second == Approx(1.0 / 3600));
  const CountedRate images = parse_counted_rate("100 images/s");
  CHECK(images.per_second == 100);
  CHECK(images.item == RateItem::kSamples);
  CHECK(images.item_word == "images");
  CHECK(parse_counted_rate("1 image/s").item == RateItem::kSamples);
  CHECK(parse_counted_rate("1 sample/s").item == RateItem::kSamples);
  CHECK(parse_counted_rate("1 sample/s").item_word == "samples");
  const CountedRate bare = parse_counted_rate("1.5k/s");
  CHECK(bare.per_second == 1500);
  CHECK(bare.item == RateItem::kNone);
  CHECK(bare.item_word.empty());
}

TEST_CASE("parse_counted_rate errors name the item", "[units][parse]") {
  REQUIRE_THROWS_WITH(parse_counted_rate("100 tokns/s"),
                      "invalid rate \"100 tokns/s\": unknown item \"tokns\"; did you mean "
                      "\"tokens\"?");
  REQUIRE_THROWS_WITH(parse_counted_rate("3ksequnces/s"),
                      "invalid rate \"3ksequnces/s\": unknown item \"sequnces\"; did you mean "
                      "\"sequences\"?");
  REQUIRE_THROWS_WITH(parse_counted_rate("100 widgets/s"),
                      "invalid rate \"100 widgets/s\": unknown item \"widgets\"; a rate counts "
                      "tokens, sequences, samples or images (e.g. 3k tokens/s), or goes bare "
                      "(1000/s)");
  REQUIRE_THROWS_WITH(parse_counted_rate("3k tokens"),
                      "3k tokens has no time unit: write 3k tokens/s or 3k tokens/min");
  REQUIRE_THROWS_WITH(parse_counted_rate("250"), "250 has no unit: write 250/s or 250/min");
  REQUIRE_THROWS_WITH(parse_counted_rate("100 tokens/day"),
                      "invalid rate \"100 tokens/day\": expected a count per unit of time, "
                      "optionally naming what it counts (e.g. 3k tokens/s, 2 sequences/min, 100 "
                      "images/s, 1000/s)");
  REQUIRE_THROWS_AS(parse_counted_rate("tokens/s"), capcalc::Error);
  REQUIRE_THROWS_AS(parse_counted_rate("-3 tokens/s"), capcalc::Error);
}

TEST_CASE("rate_with_item rewrites what a rate counts, as written", "[units][parse]") {
  CHECK(rate_with_item("100/s", "tokens") == "100 tokens/s");
  CHECK(rate_with_item(" 1.5k / min ", "sequences") == "1.5k sequences/min");
  CHECK(rate_with_item("3ktokens/h", "") == "3k/h");
  CHECK(rate_with_item("3 k tokens/s", "samples") == "3k samples/s");
}

TEST_CASE("format_usd", "[units]") {
  CHECK(format_usd(0.5534) == "$0.553");
  CHECK(format_usd(0.01234) == "$0.0123");
  CHECK(format_usd(0.15) == "$0.150");
  CHECK(format_usd(12.34) == "$12.3");
  CHECK(format_usd(553.4) == "$553");
  CHECK(format_usd(1234.5) == "$1,235");
  CHECK(format_usd(1e300) == "$9,223,372,036,854,775,807");  // Clamped, not undefined.
}

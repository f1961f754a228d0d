// Printing quantities in sensible units: "1.23 ms", "25.56 M", "102.8 MB", "312 TFLOP/s".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace capcalc {

/// Binary units of the tables' memory keys (`reserved_memory_mib`, `min_memory_gib`).
inline constexpr double kBytesPerMiB = 1048576.0;
inline constexpr double kBytesPerGiB = 1073741824.0;

/// Seconds as ns/µs/ms/s/min/h/d with 3 significant digits: "842 µs", "1.23 ms", "3.40 h".
std::string format_duration(double seconds);

/// A count with an SI suffix (k, M, G, T, P, E), 3 significant digits: "25.6 M", "4.09 G".
std::string format_count(double count);

/// Bytes in decimal units (kB, MB, GB, TB): "102 MB", "80.0 GB".
std::string format_bytes(double bytes);

/// A rate with an SI prefix and a unit: format_rate(3.12e14, "FLOP/s") == "312 TFLOP/s".
std::string format_rate(double per_second, const std::string& unit);

/// Digits grouped by thousands: 25557032 -> "25,557,032".
std::string format_grouped(std::int64_t value);

/// An amount of something with its own unit (kWh, device-hours): 3 significant digits below
/// 1000, whole numbers grouped above: "0.553", "12.3", "515,899".
std::string format_amount(double value);

/// A figure in a table's column of its own unit: 4 significant digits below 1000, whole
/// numbers grouped from 1000 on, never an exponent: "0.0123", "19.5", "989.4", "3,350",
/// "26,215".
std::string format_figure(double value);

/// US dollars, 3 significant digits below $1000, whole dollars grouped above: "$0.553",
/// "$12.3", "$1,235".
std::string format_usd(double usd);

// Parsing quantities that people write on a command line or in a budget file: a number
// (plain, decimal or with an exponent: "20", "0.5", "1e9") followed, with or without a space,
// by a unit. Negative and non-finite values are rejected. Each throws capcalc::Error with a
// message naming the text and the units it accepts. Only counts may go without a unit: a bare
// "16" where a size is due is an error that shows the fix ("16 has no unit: write 16GB or
// 16GiB"), never a guess at bytes.

/// The units a bare number's "no unit" message suggests: a latency's ms or s ("20 has no unit:
/// write 20ms or 20s"), an interval's min or h, a run's h or d.
enum class DurationScale { kLatency, kInterval, kRun };

/// Seconds from "20ms", "1.5 s", "842us" (or "µs"), "5ns", "10min", "3h", "3d".
double parse_duration(std::string_view text, DurationScale scale = DurationScale::kLatency);

/// Bytes from "16GiB" or "512 B". Decimal kB/MB/GB/TB (powers of 1000; "KB" is taken as kB)
/// and binary KiB/MiB/GiB/TiB (powers of 1024) are distinct.
double parse_bytes(std::string_view text);

/// A count from "100M", "5G", "1.5k", "25557032" or "1e9": SI suffixes k, M, G, T (powers of
/// 1000).
double parse_count(std::string_view text);

/// US dollars from "500USD", "500 usd", "$500" or "$1.5k".
double parse_money(std::string_view text);

/// Per second from "1000/s", "1k/s", "60/min" or "3600/h". A rate that names what it counts
/// ("3k tokens/s") is an error here: see parse_counted_rate.
double parse_rate(std::string_view text);

/// What a rate counts, as its text names it.
enum class RateItem {
  kNone,       ///< A bare "1000/s": whatever the context counts.
  kTokens,     ///< "token", "tokens".
  kSequences,  ///< "sequence", "sequences": a language model's samples.
  kSamples,    ///< "sample", "samples", "image", "images".
};

/// A rate and what it counts.
struct CountedRate {
  double per_second = 0;
  RateItem item = RateItem::kNone;
  std::string item_word;  ///< The item in the plural, as named ("images"); "" for kNone.
};

/// A rate that may name what it counts, singular or plural, in any case, with or without a
/// space: "3k tokens/s", "3ktokens/s", "2 sequences/min", "100 images/s", "1 sample/s", or a
/// bare "1000/s". An unknown item is an error naming it, with a "did you mean".
CountedRate parse_counted_rate(std::string_view text);

/// The rate `text` as written, counting `item_word` instead ("" for a bare rate):
/// rate_with_item("100/s", "tokens") == "100 tokens/s", rate_with_item("3ktokens/min", "") ==
/// "3k/min". For the fix an error suggests. Throws as parse_counted_rate.
std::string rate_with_item(std::string_view text, std::string_view item_word);

}  // namespace capcalc

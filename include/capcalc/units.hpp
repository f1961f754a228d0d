// Printing quantities in sensible units: "1.23 ms", "25.56 M", "102.8 MB", "312 TFLOP/s".
#pragma once

#include <cstdint>
#include <string>

namespace capcalc {

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

}  // namespace capcalc

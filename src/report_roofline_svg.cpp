// render_roofline_svg (roofline.hpp): the roofline as an SVG document.
#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include "capcalc/ranges.hpp"
#include "capcalc/roofline.hpp"
#include "capcalc/units.hpp"

#include "markup.hpp"

namespace capcalc {
namespace {

// Colours by bound (matplotlib's tab10: readable on white and for most colour-blind readers).
constexpr std::string_view kComputeColour = "#1f77b4";
constexpr std::string_view kMemoryColour = "#ff7f0e";
constexpr std::string_view kOverheadColour = "#7f7f7f";
constexpr std::string_view kRoofColour = "#c0392b";
constexpr std::string_view kCeilingColour = "#9a9a9a";

std::string_view bound_colour(Bound bound) {
  switch (bound) {
    case Bound::kCompute:
      return kComputeColour;
    case Bound::kMemory:
      return kMemoryColour;
    default:
      return kOverheadColour;
  }
}

// A log-log frame: plot area in pixels and the decades it spans.
struct Frame {
  double left = 0, top = 0, width = 0, height = 0;
  double x_lo = 0, x_hi = 0;  // log10 of the axis ends
  double y_lo = 0, y_hi = 0;

  double px(double x) const { return left + (std::log10(x) - x_lo) / (x_hi - x_lo) * width; }
  double py(double y) const {
    return top + height - (std::log10(y) - y_lo) / (y_hi - y_lo) * height;
  }
  double right() const { return left + width; }
  double bottom() const { return top + height; }
};

// A decade's label: plain decimals from 0.001 to 10000, "1e-5" style beyond.
std::string decade_label(int exponent) {
  if (exponent >= 0 && exponent <= 4)
    return "1" + std::string(static_cast<std::size_t>(exponent), '0');
  if (exponent < 0 && exponent >= -3) {
    return "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + "1";
  }
  return fmt::format("1e{}", exponent);
}

// A rate scaled to the axis unit, 3 significant digits.
std::string scaled(double value) {
  return value >= 1000 ? fmt::format("{:.0f}", value) : fmt::format("{:.3g}", value);
}

struct Box {
  double x0, y0, x1, y1;
  // With a few pixels of space between labels side by side.
  bool overlaps(const Box& o) const {
    constexpr double kPad = 4;
    return x0 < o.x1 + kPad && o.x0 < x1 + kPad && y0 < o.y1 && o.y0 < y1;
  }
};

constexpr double kFontSize = 11;
// Width of a label in pixels: DejaVu Sans averages about 0.62 em per character (digits 0.64).
double text_width(const std::string& text, double font_size = kFontSize) {
  std::size_t chars = 0;
  for (char c : text)
    chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return 0.64 * font_size * static_cast<double>(chars);
}

// A layer name with its numbering left out: each part between dots or slashes that is a number
// becomes N ("layers.12.self_attn" -> "layers.N.self_attn"); "conv2" keeps its digit.
std::string numbered_pattern(const std::string& name) {
  std::string out;
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find_first_of("./", start);
    if (end == std::string::npos) end = name.size();
    const std::string part = name.substr(start, end - start);
    const bool number = !part.empty() && std::all_of(part.begin(), part.end(),
                                                     [](char c) { return c >= '0' && c <= '9'; });
    out += number ? "N" : part;
    if (end < name.size()) out += name[end];
    start = end + 1;
  }
  return out;
}

// "prefill " / "decode " before a serving roofline's layer names; "" otherwise.
std::string phase_prefix(const Roofline& r, RooflinePhase phase) {
  if (!r.serving) return "";
  return phase == RooflinePhase::kDecode ? "decode " : "prefill ";
}

// Ceilings of equal rate, drawn as one line with one label ("fp16/bf16 matrix").
struct CeilingGroup {
  double flops_per_s = 0;
  bool workload = false;
  std::vector<const RooflineCeiling*> members;
};

std::string group_label(const CeilingGroup& group) {
  std::vector<std::string> parts;
  for (bool matrix : {true, false}) {
    std::vector<std::string_view> names;
    for (const RooflineCeiling* c : group.members) {
      if (c->matrix_units == matrix) names.push_back(precision_name(c->precision));
    }
    if (!names.empty()) {
      parts.push_back(fmt::format("{} {}", fmt::join(names, "/"), matrix ? "matrix" : "vector"));
    }
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

// Spreads label baselines (sorted top to bottom) at least `gap` apart, staying near their lines.
void spread(std::vector<double>& ys, double gap) {
  for (std::size_t i = 1; i < ys.size(); ++i)
    ys[i] = std::max(ys[i], ys[i - 1] + gap);
}

constexpr double kSvgWidth = 1000;
constexpr double kSvgHeight = 640;

// The highest ceiling's rate: the top of the y axis.
double top_ceiling_rate(const Roofline& r) {
  double top_rate = r.roof_flops_per_s;
  for (const RooflineCeiling& c : r.ceilings)
    top_rate = std::max(top_rate, c.flops_per_s);
  return top_rate;
}

// The plot area and its axis ranges.
Frame roofline_frame(const Roofline& r) {
  Frame f;
  f.left = 84;
  f.top = 70;
  f.width = kSvgWidth - f.left - 270;   // The right margin holds the ceiling labels.
  f.height = kSvgHeight - f.top - 126;  // The bottom margin: ticks, axis title, legend, notes.

  // Axis ranges in whole decades: every point, every ceiling, and the slope up to the highest
  // ridge with a decade of slope before the lowest one.
  const double top_rate = top_ceiling_rate(r);
  double low_rate = r.roof_flops_per_s;
  for (const RooflineCeiling& c : r.ceilings)
    low_rate = std::min(low_rate, c.flops_per_s);
  const double bw = r.bandwidth_bytes_per_s;
  double x_min = low_rate / bw / 10;
  double x_max = top_rate / bw * 4;
  double y_min = low_rate;
  std::vector<RooflinePoint> all = r.points;
  all.insert(all.end(), r.passes.begin(), r.passes.end());
  for (const RooflinePoint& p : all) {
    if (p.intensity_flops_per_byte <= 0 || p.attained_flops_per_s <= 0) continue;
    x_min = std::min(x_min, p.intensity_flops_per_byte);
    x_max = std::max(x_max, p.intensity_flops_per_byte);
    y_min = std::min(y_min, p.attained_flops_per_s);
  }
  f.x_lo = std::floor(std::log10(x_min));
  f.x_hi = std::max(std::ceil(std::log10(x_max)), f.x_lo + 1);
  f.y_lo = std::floor(std::log10(y_min));
  // Headroom above the highest ceiling so that its label never touches the frame.
  f.y_hi = std::max(std::ceil(std::log10(top_rate * 1.5)), f.y_lo + 1);
  return f;
}

// The y axis unit: TFLOP/s for roofs of 10 TFLOP/s and up (as datasheets give them), else
// the largest of G/M FLOP/s that keeps the roof's figure at 10 or more.
struct RateUnit {
  double scale;
  std::string_view name;
  int exponent() const { return static_cast<int>(std::lround(std::log10(scale))); }
};

RateUnit rate_unit(double top_rate) {
  constexpr RateUnit kUnits[] = {
      {1e12, "TFLOP/s"}, {1e9, "GFLOP/s"}, {1e6, "MFLOP/s"}, {1, "FLOP/s"}};
  RateUnit unit = kUnits[3];
  for (const RateUnit& u : kUnits) {
    if (top_rate >= 10 * u.scale) {
      unit = u;
      break;
    }
  }
  return unit;
}

// The opening tag, the title and the subtitle lines.
std::string svg_heading(const Roofline& r, const RooflineSvgOptions& options, const Frame& f) {
  std::string svg;
  svg += options.standalone
             ? fmt::format(
                   "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0}\" "
                   "height=\"{1}\" viewBox=\"0 0 {0} {1}\"",
                   kSvgWidth, kSvgHeight)
             : fmt::format("<svg width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\"",
                           kSvgWidth, kSvgHeight);
  svg += " font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"11\">\n";
  const std::string title = fmt::format("Roofline: {} on {}", r.model, r.device);
  svg += fmt::format("<title>{}</title>\n", escape_markup(title));
  svg += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n",
                     kSvgWidth, kSvgHeight);
  svg +=
      fmt::format("<text x=\"{:.1f}\" y=\"26\" font-size=\"16\" font-weight=\"bold\">{}</text>\n",
                  f.left, escape_markup(title));
  std::string subtitle = fmt::format("{}, batch {}, {}, {} profile", precision_name(r.precision),
                                     r.batch, mode_name(r.mode), profile_name(r.profile));
  subtitle += fmt::format(" \xC2\xB7 roof {} at {}, ridge {:.3g} FLOP/byte",
                          format_rate(r.roof_flops_per_s, "FLOP/s"),
                          format_rate(r.bandwidth_bytes_per_s, "B/s"), r.ridge_flops_per_byte());
  svg += fmt::format("<text x=\"{:.1f}\" y=\"46\" font-size=\"12\" fill=\"#444444\">{}</text>\n",
                     f.left, escape_markup(subtitle));
  if (r.serving) {
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"62\" font-size=\"12\" fill=\"#444444\">{}</text>\n", f.left,
        escape_markup(fmt::format(
            "LLM serving: prefill of {} prompt tokens (circles), decode step at {} cached tokens "
            "(squares); rings: each pass whole",
            format_grouped(r.serving->prompt_tokens), format_grouped(r.mean_context))));
  }
  return svg;
}

// Grid and ticks: decades labelled, 2..9 as minor ticks; the frame and the axis titles.
std::string svg_axes(const Frame& f, const RateUnit& unit) {
  std::string svg;
  svg += "<g stroke=\"#e4e4e4\" stroke-width=\"1\">\n";
  for (double d = f.x_lo; d <= f.x_hi; d += 1) {
    const double x = f.px(std::pow(10.0, d));
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>\n", x,
                       f.top, f.bottom());
  }
  for (double d = f.y_lo; d <= f.y_hi; d += 1) {
    const double y = f.py(std::pow(10.0, d));
    svg += fmt::format("<line x1=\"{1:.1f}\" y1=\"{0:.1f}\" x2=\"{2:.1f}\" y2=\"{0:.1f}\"/>\n", y,
                       f.left, f.right());
  }
  svg += "</g>\n<g stroke=\"#333333\" stroke-width=\"1\">\n";
  for (double d = f.x_lo; d <= f.x_hi; d += 1) {
    for (int m = 1; m <= 9 && (m == 1 || d < f.x_hi); ++m) {
      const double x = f.px(m * std::pow(10.0, d));
      svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>\n", x,
                         f.bottom(), f.bottom() + (m == 1 ? 6 : 3));
    }
  }
  for (double d = f.y_lo; d <= f.y_hi; d += 1) {
    for (int m = 1; m <= 9 && (m == 1 || d < f.y_hi); ++m) {
      const double y = f.py(m * std::pow(10.0, d));
      svg += fmt::format("<line x1=\"{1:.1f}\" y1=\"{0:.1f}\" x2=\"{2:.1f}\" y2=\"{0:.1f}\"/>\n", y,
                         f.left - (m == 1 ? 6 : 3), f.left);
    }
  }
  svg += "</g>\n";
  svg += fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" "
      "stroke=\"#333333\"/>\n",
      f.left, f.top, f.width, f.height);
  svg += "<g fill=\"#333333\">\n";
  for (double d = f.x_lo; d <= f.x_hi; d += 1) {
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                       f.px(std::pow(10.0, d)), f.bottom() + 19, decade_label(static_cast<int>(d)));
  }
  for (double d = f.y_lo; d <= f.y_hi; d += 1) {
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
                       f.left - 9, f.py(std::pow(10.0, d)) + 4,
                       decade_label(static_cast<int>(d) - unit.exponent()));
  }
  svg += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"12\">arithmetic "
      "intensity (FLOP/byte)</text>\n",
      f.left + f.width / 2, f.bottom() + 40);
  const double y_title_x = f.left - 56;
  const double y_title_y = f.top + f.height / 2;
  svg += fmt::format(
      "<text x=\"{0:.1f}\" y=\"{1:.1f}\" text-anchor=\"middle\" font-size=\"12\" "
      "transform=\"rotate(-90 {0:.1f} {1:.1f})\">attained ({2})</text>\n",
      y_title_x, y_title_y, unit.name);
  svg += "</g>\n";
  return svg;
}

// Ceilings: one line per distinct rate, from its ridge to the right edge, labelled in the margin.
std::string svg_ceilings(const Roofline& r, const Frame& f, const RateUnit& unit) {
  const double bw = r.bandwidth_bytes_per_s;
  std::string svg;
  std::vector<CeilingGroup> groups;
  for (const RooflineCeiling& c : r.ceilings) {
    auto same = std::find_if(groups.begin(), groups.end(), [&](const CeilingGroup& g) {
      return std::abs(g.flops_per_s - c.flops_per_s) <= 1e-9 * c.flops_per_s;
    });
    if (same == groups.end()) {
      groups.push_back({c.flops_per_s, false, {}});
      same = groups.end() - 1;
    }
    same->members.push_back(&c);
    same->workload = same->workload || c.workload;
  }
  struct CeilingLabel {
    double y;
    std::string text;
    bool highlight;
  };
  std::vector<CeilingLabel> labels;
  bool roof_drawn = false;
  for (const CeilingGroup& g : groups) {
    const double y = f.py(g.flops_per_s);
    const double x0 = std::max(f.left, f.px(g.flops_per_s / bw));
    const bool is_roof =
        g.workload && std::abs(g.flops_per_s - r.roof_flops_per_s) <= 1e-9 * r.roof_flops_per_s;
    roof_drawn = roof_drawn || is_roof;
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
        "stroke-width=\"{}\"/>\n",
        x0, y, f.right(), y, g.workload ? kRoofColour : kCeilingColour,
        is_roof      ? 2.5
        : g.workload ? 1.5
                     : 1);
    labels.push_back(
        {y + 4,
         fmt::format("{} {} {}", group_label(g), scaled(g.flops_per_s / unit.scale), unit.name),
         g.workload});
  }
  if (!roof_drawn) {
    // 2:4 sparsity (or a fallback unit) lifts the workload's roof above its dense ceilings.
    const double y = f.py(r.roof_flops_per_s);
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
        "stroke-width=\"2.5\"/>\n",
        std::max(f.left, f.px(r.ridge_flops_per_byte())), y, f.right(), y, kRoofColour);
    const std::string what = r.sparsity_speedup > 1
                                 ? fmt::format("{} 2:4 sparse", precision_name(r.precision))
                                 : fmt::format("{} roof", precision_name(r.precision));
    labels.push_back(
        {y + 4, fmt::format("{} {} {}", what, scaled(r.roof_flops_per_s / unit.scale), unit.name),
         true});
  }
  std::stable_sort(labels.begin(), labels.end(),
                   [](const CeilingLabel& a, const CeilingLabel& b) { return a.y < b.y; });
  std::vector<double> label_y;
  for (const CeilingLabel& l : labels)
    label_y.push_back(l.y);
  spread(label_y, 13);
  for (std::size_t i = 0; i < labels.size(); ++i) {
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"{}\"{}>{}</text>\n", f.right() + 6,
                       label_y[i], labels[i].highlight ? kRoofColour : std::string_view("#555555"),
                       labels[i].highlight ? " font-weight=\"bold\"" : "",
                       escape_markup(labels[i].text));
  }
  return svg;
}

// The bandwidth slope up to the highest ceiling, and the achievable one (dashed) up to the
// workload's roof. Both start at the frame (left edge or bottom, whichever comes first).
std::string svg_slopes(const Roofline& r, const Frame& f) {
  const double bw = r.bandwidth_bytes_per_s;
  const double top_rate = top_ceiling_rate(r);
  std::string svg;
  const auto slope = [&](double bytes_per_s, double up_to_flops_per_s, std::string_view style) {
    const double x_start = std::max(std::pow(10.0, f.x_lo), std::pow(10.0, f.y_lo) / bytes_per_s);
    const double x_end = up_to_flops_per_s / bytes_per_s;
    return fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" {}/>\n",
                       f.px(x_start), f.py(x_start * bytes_per_s), f.px(x_end),
                       f.py(up_to_flops_per_s), style);
  };
  // Above the workload's roof the peak slope only leads to other precisions' ceilings: thin.
  if (top_rate > r.roof_flops_per_s) {
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\"/>\n",
        f.px(r.ridge_flops_per_byte()), f.py(r.roof_flops_per_s), f.px(top_rate / bw),
        f.py(top_rate), kCeilingColour);
  }
  svg +=
      slope(bw, r.roof_flops_per_s, fmt::format("stroke=\"{}\" stroke-width=\"2.5\"", kRoofColour));
  svg += slope(
      r.achievable_bandwidth_bytes_per_s, r.roof_flops_per_s,
      fmt::format("stroke=\"{}\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"", kRoofColour));
  return svg;
}

// The slope's label, along it, a decade up from its start (log-log: 45° in decade units); the
// boxes it covers go to `placed`, where no layer label may go.
std::string svg_slope_label(const Roofline& r, const Frame& f, std::vector<Box>& placed) {
  const double bw = r.bandwidth_bytes_per_s;
  std::string svg;
  const double angle = -std::atan2(f.height / (f.y_hi - f.y_lo), f.width / (f.x_hi - f.x_lo)) *
                       180 / 3.14159265358979323846;
  const double x_start = std::max(std::pow(10.0, f.x_lo), std::pow(10.0, f.y_lo) / bw);
  const double x_at = std::min(x_start * 3, r.ridge_flops_per_byte() / 3);
  const double lx = f.px(x_at);
  const double ly = f.py(x_at * bw) - 6;
  const std::string text = fmt::format("{} (achievable {}, dashed)", format_rate(bw, "B/s"),
                                       format_rate(r.achievable_bandwidth_bytes_per_s, "B/s"));
  svg += fmt::format(
      "<text x=\"{0:.1f}\" y=\"{1:.1f}\" fill=\"{2}\" transform=\"rotate({3:.1f} {0:.1f} "
      "{1:.1f})\">{4}</text>\n",
      lx, ly, kRoofColour, angle, escape_markup(text));
  const double radians = angle * 3.14159265358979323846 / 180;
  for (double along = 0; along <= text_width(text); along += 6) {
    // The glyphs' middle, 4 px above the baseline (perpendicular to it).
    const double x = lx + along * std::cos(radians) + 4 * std::sin(radians);
    const double y = ly + along * std::sin(radians) - 4 * std::cos(radians);
    placed.push_back({x - 5, y - 6, x + 5, y + 6});
  }
  return svg;
}

// Dot sizes: area grows with the share of its pass's time (a decode step's layers are as
// visible as the prefill's).
class PointWeights {
 public:
  explicit PointWeights(const Roofline& r) {
    for (const RooflinePoint& p : r.points)
      phase_time_[static_cast<std::size_t>(p.phase)] =
          std::max(phase_time_[static_cast<std::size_t>(p.phase)], p.time_s);
  }
  double weight(const RooflinePoint& p) const {
    const double max_time = phase_time_[static_cast<std::size_t>(p.phase)];
    return max_time > 0 ? p.time_s / max_time : 1.0;
  }
  double radius(const RooflinePoint& p) const { return 2.5 + 5 * std::sqrt(weight(p)); }

 private:
  std::array<double, 3> phase_time_{};
};

constexpr double kPassRadius = 9;

// The layers' indices, heaviest first.
std::vector<std::size_t> heaviest_first(const Roofline& r, const PointWeights& weights) {
  std::vector<std::size_t> order(r.points.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return weights.weight(r.points[a]) > weights.weight(r.points[b]);
  });
  return order;
}

// Points, lightest first so the heaviest are on top. Decode layers are squares; whole passes
// rings on top of the layers.
std::string svg_points(const Roofline& r, const Frame& f, const std::vector<std::size_t>& order,
                       const PointWeights& weights) {
  std::string svg;
  svg += "<g stroke=\"#ffffff\" stroke-width=\"0.6\" fill-opacity=\"0.8\">\n";
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const RooflinePoint& p = r.points[*it];
    const double radius = weights.radius(p);
    const std::string tip = fmt::format(
        "{}{} ({}): {:.3g} FLOP/byte, {}, {}, {}-bound", phase_prefix(r, p.phase), p.name, p.op,
        p.intensity_flops_per_byte, format_rate(p.attained_flops_per_s, "FLOP/s"),
        format_duration(p.time_s), bound_name(p.bound));
    const double cx = f.px(p.intensity_flops_per_byte);
    const double cy = f.py(p.attained_flops_per_s);
    if (p.phase == RooflinePhase::kDecode) {
      const double half = radius * 0.886;  // A square of the circle's area.
      svg += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
          "fill=\"{}\"><title>{}</title></rect>\n",
          cx - half, cy - half, 2 * half, 2 * half, bound_colour(p.bound), escape_markup(tip));
    } else {
      svg += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{:.1f}\" "
          "fill=\"{}\"><title>{}</title></circle>\n",
          cx, cy, radius, bound_colour(p.bound), escape_markup(tip));
    }
  }
  svg += "</g>\n";
  // Whole passes: rings on top of the layers.
  for (const RooflinePoint& p : r.passes) {
    if (p.intensity_flops_per_byte <= 0 || p.attained_flops_per_s <= 0) continue;
    const std::string tip =
        fmt::format("{} (whole pass): {:.3g} FLOP/byte, {}, {}, mostly {}-bound", p.name,
                    p.intensity_flops_per_byte, format_rate(p.attained_flops_per_s, "FLOP/s"),
                    format_duration(p.time_s), bound_name(p.bound));
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{:.1f}\" fill=\"none\" stroke=\"#222222\" "
        "stroke-width=\"2.5\"><title>{}</title></circle>\n",
        f.px(p.intensity_flops_per_byte), f.py(p.attained_flops_per_s), kPassRadius,
        escape_markup(tip));
  }
  return svg;
}

// Labels: the whole passes first, then the heaviest layers. Layers that differ only in their
// numbers and sit on one spot (a transformer's blocks) share one label with their count. Each
// label takes the first place that stays inside the frame and clear of the labels already
// placed: right or left of the dot, above or below it, then rows further up and down (with a
// leader line). A label with no free place is left out.
struct LabelItem {
  double cx, cy, radius;
  std::string text;
  bool bold;
};

// What gets a label: the whole passes, then the heaviest groups of layers.
std::vector<LabelItem> label_items(const Roofline& r, const Frame& f,
                                   const std::vector<std::size_t>& order,
                                   const PointWeights& weights, const RooflineSvgOptions& options) {
  std::vector<LabelItem> items;
  for (const RooflinePoint& p : r.passes) {
    if (p.intensity_flops_per_byte <= 0 || p.attained_flops_per_s <= 0) continue;
    items.push_back({f.px(p.intensity_flops_per_byte), f.py(p.attained_flops_per_s), kPassRadius,
                     p.name, true});
  }
  {
    struct Group {
      std::string key;
      std::size_t first;  // Index into order: the heaviest member.
      std::size_t count;
    };
    std::vector<Group> label_groups;
    std::unordered_map<std::string, std::size_t> group_of;  // Key -> index in label_groups.
    for (std::size_t k = 0; k < order.size(); ++k) {
      const RooflinePoint& p = r.points[order[k]];
      // Members must share the spot to the pixel: a label names where its dot is.
      const std::string key =
          fmt::format("{}|{}|{}|{:.0f}|{:.0f}", static_cast<int>(p.phase), numbered_pattern(p.name),
                      p.op, f.px(p.intensity_flops_per_byte), f.py(p.attained_flops_per_s));
      const auto [at, added] = group_of.emplace(key, label_groups.size());
      if (added) {
        label_groups.push_back({key, k, 1});
      } else {
        label_groups[at->second].count++;
      }
    }
    for (std::size_t g = 0; g < std::min(options.labels, label_groups.size()); ++g) {
      const RooflinePoint& p = r.points[order[label_groups[g].first]];
      const std::string name =
          label_groups[g].count > 1
              ? fmt::format("{} x{}", shorten(numbered_pattern(p.name), 40), label_groups[g].count)
              : shorten(p.name, 40);
      items.push_back({f.px(p.intensity_flops_per_byte), f.py(p.attained_flops_per_s),
                       weights.radius(p), phase_prefix(r, p.phase) + name, false});
    }
  }
  return items;
}

// A place for a label: its baseline anchor, its box, and whether it needs a leader line.
struct LabelSpot {
  double x, y;
  std::string_view anchor;
  Box box;
  bool leader;
};

// The places to try for a label `w` wide at a dot of centre (cx, cy), `gap` from its centre,
// in order of preference.
std::vector<LabelSpot> label_spots(double cx, double cy, double w, double gap) {
  constexpr double kRow = 13;  // Line height of a label.
  std::vector<LabelSpot> candidates;
  const auto beside = [&](double dy) {
    const double y = cy + dy;
    candidates.push_back(
        {cx + gap, y + 4, "start", {cx + gap, y - 7, cx + gap + w, y + 5}, dy != 0});
    candidates.push_back({cx - gap, y + 4, "end", {cx - gap - w, y - 7, cx - gap, y + 5}, dy != 0});
  };
  beside(0);
  candidates.push_back(
      {cx, cy - gap - 2, "middle", {cx - w / 2, cy - gap - 13, cx + w / 2, cy - gap}, false});
  candidates.push_back(
      {cx, cy + gap + 10, "middle", {cx - w / 2, cy + gap, cx + w / 2, cy + gap + 12}, false});
  for (int row = 1; row <= 8; ++row) {
    beside(-kRow * row);
    beside(kRow * row);
  }
  return candidates;
}

// The labels where they fit, clear of `placed`.
std::string svg_labels(const std::vector<LabelItem>& items, const Frame& f,
                       std::vector<Box> placed) {
  std::string svg;
  // Leader lines first, then each label twice: a white outline (a halo that keeps it legible
  // over lines and dots; SVG 1.1 has no paint-order) and the text itself.
  std::string leaders;
  std::string halos;
  std::string names;
  for (const LabelItem& item : items) {
    const double cx = item.cx;
    const double cy = item.cy;
    const std::string& text = item.text;
    const double w = text_width(text) * (item.bold ? 1.12 : 1);  // Bold glyphs are wider.
    const double gap = item.radius + 3;
    const std::vector<LabelSpot> candidates = label_spots(cx, cy, w, gap);
    const auto is_free = [&](const LabelSpot& c) {
      const bool inside = c.box.x0 >= f.left + 2 && c.box.x1 <= f.right() - 2 &&
                          c.box.y0 >= f.top + 2 && c.box.y1 <= f.bottom() - 2;
      return inside && std::none_of(placed.begin(), placed.end(),
                                    [&](const Box& b) { return b.overlaps(c.box); });
    };
    const auto chosen = std::find_if(candidates.begin(), candidates.end(), is_free);
    if (chosen == candidates.end()) continue;
    placed.push_back(chosen->box);
    if (chosen->leader) {
      const double lx = chosen->anchor == "start" ? chosen->box.x0 - 1 : chosen->box.x1 + 1;
      leaders += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n",
                             cx, cy, lx, chosen->y - 4);
    }
    const std::string label = fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\"{}>{}</text>\n", chosen->x, chosen->y,
        chosen->anchor, item.bold ? " font-weight=\"bold\"" : "", escape_markup(text));
    halos += label;
    names += label;
  }
  svg += "<g stroke=\"#999999\" stroke-width=\"0.7\">\n" + leaders + "</g>\n";
  svg +=
      "<g fill=\"#ffffff\" stroke=\"#ffffff\" stroke-width=\"3\" stroke-linejoin=\"round\" "
      "opacity=\"0.85\">\n" +
      halos + "</g>\n";
  svg += "<g fill=\"#222222\">\n" + names + "</g>\n";
  return svg;
}

// Legend and notes under the axis title.
std::string svg_legend(const Roofline& r, const Frame& f) {
  std::string svg;
  double lx = f.left;
  const double ly = f.bottom() + 64;
  for (Bound b : {Bound::kCompute, Bound::kMemory, Bound::kHost}) {
    const std::string text = fmt::format("{}-bound", bound_name(b));
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4.5\" fill=\"{}\"/><text x=\"{:.1f}\" "
        "y=\"{:.1f}\">{}</text>\n",
        lx + 5, ly - 4, bound_colour(b), lx + 14, ly, text);
    lx += 24 + text_width(text);
  }
  svg += fmt::format(
      "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" "
      "stroke-width=\"2.5\"/><text x=\"{4:.1f}\" y=\"{5:.1f}\">{6} roof (peak)</text>\n",
      lx, ly - 4, lx + 24, kRoofColour, lx + 30, ly, precision_name(r.precision));
  lx += 50 + text_width(fmt::format("{} roof (peak)", precision_name(r.precision)));
  svg += fmt::format(
      "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" "
      "stroke-width=\"1\"/><text x=\"{4:.1f}\" y=\"{5:.1f}\">other precisions</text>\n",
      lx, ly - 4, lx + 24, kCeilingColour, lx + 30, ly);
  if (r.serving) {
    lx += 50 + text_width("other precisions");
    svg += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"8\" height=\"8\" fill=\"{}\"/><text x=\"{:.1f}\" "
        "y=\"{:.1f}\">decode layer</text>\n",
        lx + 1, ly - 8, kComputeColour, lx + 14, ly);
    lx += 24 + text_width("decode layer");
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"none\" stroke=\"#222222\" "
        "stroke-width=\"2\"/><text x=\"{:.1f}\" y=\"{:.1f}\">whole pass</text>\n",
        lx + 5, ly - 4, lx + 14, ly);
  }

  std::vector<std::string> notes = {
      "Each layer at FLOPs / bytes moved and FLOPs / predicted time (1 MAC = 2 FLOPs); dot area "
      "grows with the layer's time.",
      fmt::format("Predicted with {:.0f} % of the peak bandwidth (dashed) and {:.0f} % of the "
                  "matrix peak; a layer never rises above the roof.",
                  100 * r.memory_efficiency, 100 * r.matrix_efficiency)};
  if (r.skipped_layers > 0) {
    notes.push_back(fmt::format(
        "{} layer{} without FLOPs or bytes (views, fused elementwise layers) not shown.",
        r.skipped_layers, r.skipped_layers == 1 ? "" : "s"));
  }
  for (std::size_t i = 0; i < notes.size(); ++i) {
    svg +=
        fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" fill=\"#555555\">{}</text>\n",
                    f.left, ly + 20 + 13 * static_cast<double>(i), escape_markup(notes[i]));
  }
  return svg;
}

}  // namespace

std::string render_roofline_svg(const Roofline& r, const RooflineSvgOptions& options) {
  const Frame f = roofline_frame(r);
  const RateUnit unit = rate_unit(top_ceiling_rate(r));
  std::vector<Box> placed;  // Boxes no layer label may cover.
  std::string svg = svg_heading(r, options, f) + svg_axes(f, unit) + svg_ceilings(r, f, unit) +
                    svg_slopes(r, f) + svg_slope_label(r, f, placed);
  const PointWeights weights(r);
  const std::vector<std::size_t> order = heaviest_first(r, weights);
  svg += svg_points(r, f, order, weights);
  svg += svg_labels(label_items(r, f, order, weights, options), f, placed);
  svg += svg_legend(r, f);
  svg += "</svg>\n";
  return svg;
}

}  // namespace capcalc

// Shape and data-movement operators of the native format: concat, the views (flatten, reshape,
// transpose, permute, select, slice, dropout and identity) and upsample.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "checked.hpp"
#include "count_formulas.hpp"
#include "ops/helpers.hpp"
#include "ops/infer.hpp"
#include "spellcheck.hpp"

namespace capcalc::native_ops {

OpResult infer_concat(OpContext& ctx) {
  const Shape& first = expect_min_rank(ctx, 0, 1);
  const std::size_t axis = axis_index(ctx, "axis", ctx.attrs.integer("axis", 1), first.size());
  Shape out = first;
  for (std::size_t i = 1; i < ctx.inputs.size(); ++i) {
    const Shape& next = *ctx.inputs[i];
    bool ok = next.size() == first.size();
    for (std::size_t a = 0; ok && a < first.size(); ++a)
      ok = a == axis || next[a] == first[a];
    if (!ok) {
      ctx.fail(fmt::format("cannot concatenate {} and {} on axis {}", shape_to_string(first),
                           shape_to_string(next), axis));
    }
    out[axis] = checked_add(out[axis], next[axis]);
  }
  return elementwise(ctx, out, 0);
}

// ---------------------------------------------------------------------------------------------
// Shape-only operators (views: no traffic, no time)

OpResult infer_flatten(OpContext& ctx) {
  const Shape& in = *ctx.inputs[0];
  if (in.empty()) ctx.fail("cannot flatten a scalar");
  const std::size_t start =
      axis_index(ctx, "start_dim", ctx.attrs.integer("start_dim", 1), in.size());
  const std::size_t end = axis_index(ctx, "end_dim", ctx.attrs.integer("end_dim", -1), in.size());
  if (end < start) ctx.attrs.fail_at("end_dim", "end_dim is before start_dim");
  Shape out(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(start));
  std::int64_t merged = 1;
  for (std::size_t a = start; a <= end; ++a)
    merged = checked_mul(merged, in[a]);
  out.push_back(merged);
  out.insert(out.end(), in.begin() + static_cast<std::ptrdiff_t>(end) + 1, in.end());
  return view_of(std::move(out));
}

OpResult infer_reshape(OpContext& ctx) {
  const Shape& in = *ctx.inputs[0];
  Shape out = ctx.attrs.integer_list("shape");
  const std::int64_t total = element_count(in);
  std::int64_t known = 1;
  std::optional<std::size_t> free_axis;
  for (std::size_t a = 0; a < out.size(); ++a) {
    if (out[a] == -1 && free_axis) {
      ctx.attrs.fail_at("shape", fmt::format("{} has more than one -1 (entries {} and {}): only "
                                             "one entry can be inferred",
                                             shape_to_string(out), *free_axis, a));
    } else if (out[a] == -1) {
      free_axis = a;
    } else if (out[a] <= 0) {
      ctx.attrs.fail_at("shape", fmt::format("entry {} of shape must be positive (or a single -1), "
                                             "got {}",
                                             a, out[a]));
    } else {
      known = checked_mul(known, out[a]);
    }
  }
  if (free_axis && total % known != 0) {
    ctx.attrs.fail_at("shape",
                      fmt::format("the -1 in {} cannot be inferred: {} ({} elements) does not "
                                  "divide by the other entries' {}",
                                  shape_to_string(out), shape_to_string(in), total, known));
  }
  if (free_axis) out[*free_axis] = total / known;
  if (element_count(out) != total) {
    ctx.attrs.fail_at("shape", fmt::format("cannot reshape {} ({} elements) to {}",
                                           shape_to_string(in), total, shape_to_string(out)));
  }
  return view_of(std::move(out));
}

OpResult infer_transpose(OpContext& ctx) {
  Shape out = *ctx.inputs[0];
  const std::size_t a = axis_index(ctx, "dim0", ctx.attrs.integer("dim0"), out.size());
  const std::size_t b = axis_index(ctx, "dim1", ctx.attrs.integer("dim1"), out.size());
  std::swap(out[a], out[b]);
  return view_of(std::move(out));
}

OpResult infer_permute(OpContext& ctx) {
  const Shape& in = *ctx.inputs[0];
  const std::vector<std::int64_t> dims = ctx.attrs.integer_list("dims");
  if (dims.size() != in.size()) {
    ctx.attrs.fail_at("dims", fmt::format("dims has {} entries but the input {} has rank {}",
                                          dims.size(), shape_to_string(in), in.size()));
  }
  Shape out;
  std::vector<bool> seen(in.size(), false);
  for (std::int64_t d : dims) {
    const std::size_t a = axis_index(ctx, "dims", d, in.size());
    if (seen[a]) ctx.attrs.fail_at("dims", fmt::format("axis {} appears twice", d));
    seen[a] = true;
    out.push_back(in[a]);
  }
  return view_of(std::move(out));
}

OpResult infer_select(OpContext& ctx) {
  const Shape& in = expect_min_rank(ctx, 0, 1);
  const std::size_t axis = axis_index(ctx, "axis", ctx.attrs.integer("axis"), in.size());
  const std::int64_t index = ctx.attrs.integer("index");
  if (index < -in[axis] || index >= in[axis]) {
    ctx.attrs.fail_at("index", fmt::format("index {} is out of range for axis {} of size {}", index,
                                           axis, in[axis]));
  }
  Shape out = in;
  out.erase(out.begin() + static_cast<std::ptrdiff_t>(axis));
  return view_of(std::move(out));
}

OpResult infer_slice(OpContext& ctx) {
  const Shape& in = expect_min_rank(ctx, 0, 1);
  const std::size_t axis = axis_index(ctx, "axis", ctx.attrs.integer("axis"), in.size());
  const std::int64_t size = in[axis];
  const std::int64_t start = std::clamp<std::int64_t>(ctx.attrs.integer("start", 0), -size, size);
  const std::int64_t end = std::clamp<std::int64_t>(ctx.attrs.integer("end", size), -size, size);
  const std::int64_t step = ctx.attrs.positive("step", 1);
  const std::int64_t from = start < 0 ? start + size : start;
  const std::int64_t to = end < 0 ? end + size : end;
  if (to <= from)
    ctx.fail(fmt::format("slice [{}:{}] of axis {} (size {}) is empty", start, end, axis, size));
  Shape out = in;
  out[axis] = (to - from + step - 1) / step;
  return view_of(std::move(out));
}

OpResult infer_identity(OpContext& ctx) {
  const double p = ctx.attrs.number("p", 0.0);
  if (p < 0 || p >= 1) ctx.attrs.fail_at("p", fmt::format("p must be in [0, 1), got {}", p));
  return view_of(*ctx.inputs[0]);
}

OpResult infer_upsample(OpContext& ctx) {
  const Shape& in = expect_rank(ctx, 0, 4, "[N, C, H, W]");
  const std::string mode = ctx.attrs.text("mode", "nearest");
  if (mode != "nearest" && mode != "bilinear") {
    ctx.attrs.fail_at("mode", with_suggestion(fmt::format("unknown mode \"{}\"", mode), mode,
                                              {"nearest", "bilinear"}));
  }
  const bool by_size = ctx.attrs.has("size");
  const bool by_scale = ctx.attrs.has("scale_factor");
  if (by_size == by_scale) ctx.fail("give exactly one of \"size\" and \"scale_factor\"");
  Shape out{in[0], in[1], 0, 0};
  if (by_size) {
    const std::vector<std::int64_t> size = ctx.attrs.per_axis("size", 2, 1, 1);
    out[2] = size[0];
    out[3] = size[1];
  } else {
    const std::vector<std::int64_t> scale = ctx.attrs.per_axis("scale_factor", 2, 1, 1);
    out[2] = checked_mul(in[2], scale[0]);
    out[3] = checked_mul(in[3], scale[1]);
  }
  // Bilinear: 4 weights applied and summed (4 mul + 3 add) per output element.
  return elementwise(ctx, out, mode == "bilinear" ? formulas::kBilinearFlops : 0);
}

}  // namespace capcalc::native_ops

// Pooling operators of the native format: max, average, adaptive and global average pooling.
#include <numeric>
#include <vector>

#include "checked.hpp"
#include "ops/helpers.hpp"
#include "ops/infer.hpp"

namespace capcalc::native_ops {

// ---------------------------------------------------------------------------------------------
// Pooling

namespace {

OpResult pooling(OpContext& ctx, bool max_pool) {
  const Shape& in = expect_rank(ctx, 0, 4, "[N, C, H, W]");
  if (!ctx.attrs.has("kernel")) ctx.attrs.integer("kernel");  // Reports it as missing.
  const std::vector<std::int64_t> kernel = ctx.attrs.per_axis("kernel", 2, 1, 1);
  const std::vector<std::int64_t> stride =
      ctx.attrs.has("stride") ? ctx.attrs.per_axis("stride", 2, 1, 1) : kernel;
  const std::vector<std::int64_t> padding = ctx.attrs.per_axis("padding", 2, 0, 0);
  const std::vector<std::int64_t> dilation =
      max_pool ? ctx.attrs.per_axis("dilation", 2, 1, 1) : std::vector<std::int64_t>{1, 1};
  const bool ceil_mode = ctx.attrs.flag("ceil_mode", false);
  if (!max_pool) ctx.attrs.flag("count_include_pad", true);
  Shape out{in[0], in[1]};
  for (std::size_t a = 0; a < 2; ++a) {
    if (2 * padding[a] > kernel[a]) {
      ctx.attrs.fail_at("padding", "padding must be at most half the kernel");
    }
    out.push_back(window_output(ctx, in[a + 2], kernel[a], stride[a], 2 * padding[a], dilation[a],
                                ceil_mode));
  }
  return elementwise(ctx, out, kernel[0] * kernel[1]);
}

}  // namespace

OpResult infer_maxpool2d(OpContext& ctx) {
  return pooling(ctx, true);
}
OpResult infer_avgpool2d(OpContext& ctx) {
  return pooling(ctx, false);
}

namespace {

// Sum of the adaptive pooling bins' lengths along one axis. PyTorch's bin i covers
// [floor(i in / out), ceil((i + 1) in / out)); summed over the bins, in + out - gcd(in, out).
// In closed form: a loop over the bins ran for as long as an output_size of 10^12 asked.
std::int64_t adaptive_bin_total(std::int64_t in, std::int64_t out) {
  return checked_add(in, out) - std::gcd(in, out);
}

}  // namespace

OpResult infer_adaptive_avgpool2d(OpContext& ctx) {
  const Shape& in = expect_rank(ctx, 0, 4, "[N, C, H, W]");
  if (!ctx.attrs.has("output_size")) ctx.attrs.integer("output_size");
  const std::vector<std::int64_t> size = ctx.attrs.per_axis("output_size", 2, 1, 1);
  Shape out{in[0], in[1], size[0], size[1]};
  OpResult result = elementwise(ctx, out, 0);
  result.counts.other_flops = checked_mul(in[0], in[1], adaptive_bin_total(in[2], size[0]),
                                          adaptive_bin_total(in[3], size[1]));
  result.counts.backward_other_flops = checked_mul(result.counts.other_flops, 2);
  return result;
}

OpResult infer_global_avgpool(OpContext& ctx) {
  const Shape& in = expect_min_rank(ctx, 0, 3);
  Shape out = in;
  for (std::size_t a = 2; a < out.size(); ++a)
    out[a] = 1;
  OpResult result = elementwise(ctx, out, 0);
  result.counts.other_flops = element_count(in);
  result.counts.backward_other_flops = checked_mul(result.counts.other_flops, 2);
  return result;
}

}  // namespace capcalc::native_ops

#include "ops.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

#include <fmt/format.h>

#include "checked.hpp"
#include "count_formulas.hpp"
#include "spellcheck.hpp"

namespace capcalc {

// ---------------------------------------------------------------------------------------------
// Attributes

Attributes::Attributes(const JsonView& layer, const NameScope& scope, std::string layer_name)
    : layer_(layer), scope_(scope), layer_name_(std::move(layer_name)) {
  read_.reserve(8);  // Most operators read a few attributes: one allocation.
}

std::optional<JsonView> Attributes::get(std::string_view key) {
  read_.emplace_back(key);
  return layer_.find(key);
}

bool Attributes::has(std::string_view key) {
  return get(key).has_value();
}

bool Attributes::is_string(std::string_view key) {
  const std::optional<JsonView> value = get(key);
  return value && value->is_string();
}

std::int64_t Attributes::evaluate(const JsonView& value) const {
  if (value.is_string()) {
    try {
      return evaluate_expression(value.as_string(), scope_);
    } catch (const ExpressionError& e) {
      value.fail(e.what());
    } catch (const OverflowError&) {
      value.fail("expression overflows a 64-bit integer");
    }
  }
  if (!value.json().is_number_integer()) {
    value.fail("expected an integer or an expression string, got " + json_type_name(value.json()));
  }
  return value.as_integer();
}

std::int64_t Attributes::integer(std::string_view key) {
  if (auto value = get(key)) return evaluate(*value);
  layer_.fail(fmt::format("layer \"{}\": missing required attribute \"{}\"", layer_name_, key));
}

std::int64_t Attributes::integer(std::string_view key, std::int64_t fallback) {
  if (auto value = get(key)) return evaluate(*value);
  return fallback;
}

std::int64_t Attributes::positive(std::string_view key) {
  const std::int64_t value = integer(key);
  if (value <= 0) fail_at(key, fmt::format("expected a positive integer, got {}", value));
  return value;
}

std::int64_t Attributes::positive(std::string_view key, std::int64_t fallback) {
  if (!has(key)) return fallback;
  return positive(key);
}

std::optional<std::int64_t> Attributes::optional_positive(std::string_view key) {
  if (!has(key)) return std::nullopt;
  return positive(key);
}

std::int64_t Attributes::non_negative(std::string_view key, std::int64_t fallback) {
  const std::int64_t value = integer(key, fallback);
  if (value < 0) fail_at(key, fmt::format("expected a non-negative integer, got {}", value));
  return value;
}

double Attributes::number(std::string_view key, double fallback) {
  if (auto value = get(key)) return value->as_number();
  return fallback;
}

bool Attributes::flag(std::string_view key, bool fallback) {
  if (auto value = get(key)) return value->as_bool();
  return fallback;
}

std::string Attributes::text(std::string_view key, std::string fallback) {
  if (auto value = get(key)) return value->as_string();
  return fallback;
}

std::optional<std::string> Attributes::optional_text(std::string_view key) {
  if (auto value = get(key)) return value->as_string();
  return std::nullopt;
}

std::vector<std::int64_t> Attributes::per_axis(std::string_view key, std::size_t count,
                                               std::int64_t fallback, std::int64_t minimum) {
  std::vector<std::int64_t> values(count, fallback);
  const std::optional<JsonView> value = get(key);
  if (!value) return values;
  if (value->is_array()) {
    if (value->array_size() != count) {
      value->fail(fmt::format("layer \"{}\": expected {} values, got {}", layer_name_, count,
                              value->array_size()));
    }
    for (std::size_t i = 0; i < count; ++i)
      values[i] = evaluate(value->at(i));
  } else {
    std::fill(values.begin(), values.end(), evaluate(*value));
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (values[i] < minimum) {
      const JsonView where = value->is_array() ? value->at(i) : *value;
      where.fail(fmt::format("layer \"{}\": expected a {} integer, got {}", layer_name_,
                             minimum > 0 ? "positive" : "non-negative", values[i]));
    }
  }
  return values;
}

std::vector<std::int64_t> Attributes::integer_list(std::string_view key) {
  const std::optional<JsonView> value = get(key);
  if (!value) {
    layer_.fail(fmt::format("layer \"{}\": missing required attribute \"{}\"", layer_name_, key));
  }
  std::vector<std::int64_t> values;
  for (std::size_t i = 0; i < value->array_size(); ++i)
    values.push_back(evaluate(value->at(i)));
  return values;
}

void Attributes::fail_at(std::string_view key, const std::string& message) const {
  const std::string text = fmt::format("layer \"{}\": {}", layer_name_, message);
  if (auto value = layer_.find(key)) value->fail(text);
  layer_.fail(text);
}

void Attributes::fail(const std::string& message) const {
  layer_.fail(fmt::format("layer \"{}\": {}", layer_name_, message));
}

void Attributes::reject_unknown(const std::vector<std::string_view>& structural,
                                std::string_view op_name) const {
  const nlohmann::json& json = layer_.json();
  if (!json.is_object()) {
    if (!json.empty()) layer_.expect_object();  // null and [] have no keys to reject.
    return;
  }
  for (auto it = json.begin(); it != json.end(); ++it) {
    const std::string& key = it.key();
    if (std::find(structural.begin(), structural.end(), key) != structural.end()) {
      if (is_free_text_key(key)) check_free_text(layer_.member(it), key);
      continue;
    }
    if (std::find(read_.begin(), read_.end(), key) != read_.end()) continue;
    std::vector<std::string_view> known(structural.begin(), structural.end());
    for (const std::string& name : read_)
      known.emplace_back(name);
    const std::string message =
        fmt::format("layer \"{}\": unknown attribute \"{}\" for {}", layer_name_, key, op_name);
    layer_.member(it).fail(with_suggestion(message, key, known));
  }
}

bool OpContext::any_input_needs_grad() const {
  return std::any_of(input_needs_grad.begin(), input_needs_grad.end(), [](bool b) { return b; });
}

namespace {

// ---------------------------------------------------------------------------------------------
// Shape helpers

std::size_t axis_index(OpContext& ctx, std::string_view key, std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  const std::int64_t normal = axis < 0 ? axis + r : axis;
  if (normal < 0 || normal >= r) {
    ctx.attrs.fail_at(key,
                      fmt::format("axis {} is out of range for a tensor of rank {}", axis, rank));
  }
  return static_cast<std::size_t>(normal);
}

const Shape& expect_rank(OpContext& ctx, std::size_t input, std::size_t rank,
                         std::string_view layout) {
  const Shape& shape = *ctx.inputs[input];
  if (shape.size() != rank) {
    ctx.fail(fmt::format("expected an input of rank {} {}, got {}", rank, layout,
                         shape_to_string(shape)));
  }
  return shape;
}

const Shape& expect_min_rank(OpContext& ctx, std::size_t input, std::size_t rank) {
  const Shape& shape = *ctx.inputs[input];
  if (shape.size() < rank) {
    ctx.fail(
        fmt::format("expected an input of rank {} or more, got {}", rank, shape_to_string(shape)));
  }
  return shape;
}

std::int64_t sum_input_elements(const OpContext& ctx) {
  std::int64_t total = 0;
  for (const Shape* shape : ctx.inputs)
    total = checked_add(total, element_count(*shape));
  return total;
}

// Counts for an op that reads its inputs, writes its output and does `per_output` non-MAC
// FLOPs per output element; the backward pass costs twice the other FLOPs.
OpResult elementwise(OpContext& ctx, Shape output, std::int64_t per_output) {
  OpResult result;
  result.counts =
      formulas::elementwise_counts(sum_input_elements(ctx), element_count(output), per_output);
  result.output = std::move(output);
  return result;
}

OpResult view_of(Shape output) {
  OpResult result;
  result.output = std::move(output);
  result.view = true;
  return result;
}

// Backward of a layer with weights: the weight gradient costs the forward MACs, the input
// gradient costs them again unless no input needs a gradient.
void weighted_backward(const OpContext& ctx, LayerCounts& counts) {
  formulas::add_weighted_backward(counts, ctx.any_input_needs_grad());
}

// ---------------------------------------------------------------------------------------------
// Convolutions

// Output length of a convolution or pooling window along one axis (PyTorch's formula).
std::int64_t window_output(OpContext& ctx, std::int64_t in, std::int64_t kernel,
                           std::int64_t stride, std::int64_t pad_total, std::int64_t dilation,
                           bool ceil_mode) {
  const std::int64_t span = dilation * (kernel - 1) + 1;
  const std::int64_t room = in + pad_total - span;
  if (room < 0) {
    ctx.fail(
        fmt::format("window of {} (kernel {}, dilation {}) is larger than the padded input "
                    "of {}",
                    span, kernel, dilation, in + pad_total));
  }
  std::int64_t out = room / stride + 1;
  if (ceil_mode && room % stride != 0) {
    ++out;
    // PyTorch: the last window must start inside the input or the left padding.
    if ((out - 1) * stride >= in + pad_total / 2) --out;
  }
  return out;
}

struct Padding {
  std::vector<std::int64_t> total;  // Both sides together, per spatial axis.
  bool same = false;
};

Padding read_padding(OpContext& ctx, std::size_t spatial) {
  Padding padding;
  if (ctx.attrs.is_string("padding")) {
    const std::string mode = ctx.attrs.text("padding", "");
    if (mode == "same" || mode == "valid") {
      padding.same = mode == "same";
      padding.total.assign(spatial, 0);
      return padding;
    }
    // Any other string is an integer expression.
  }
  for (std::int64_t p : ctx.attrs.per_axis("padding", spatial, 0, 0))
    padding.total.push_back(2 * p);
  return padding;
}

// conv1d / conv2d / conv_transpose2d share this: `spatial` axes after [N, C].
OpResult convolution(OpContext& ctx, std::size_t spatial, bool transposed) {
  const std::string layout = spatial == 1 ? "[N, C, L]" : "[N, C, H, W]";
  const Shape& in = expect_rank(ctx, 0, spatial + 2, layout);
  const std::int64_t out_channels = ctx.attrs.positive("out_channels");
  if (!ctx.attrs.has("kernel")) ctx.attrs.integer("kernel");  // Reports it as missing.
  const std::vector<std::int64_t> kernel = ctx.attrs.per_axis("kernel", spatial, 1, 1);
  const std::vector<std::int64_t> stride = ctx.attrs.per_axis("stride", spatial, 1, 1);
  const std::vector<std::int64_t> dilation = ctx.attrs.per_axis("dilation", spatial, 1, 1);
  const std::int64_t groups = ctx.attrs.positive("groups", 1);
  const bool bias = ctx.attrs.flag("bias", true);
  std::vector<std::int64_t> output_padding(spatial, 0);
  if (transposed) output_padding = ctx.attrs.per_axis("output_padding", spatial, 0, 0);
  const Padding padding = transposed ? Padding{[&] {
    std::vector<std::int64_t> total;
    for (std::int64_t p : ctx.attrs.per_axis("padding", spatial, 0, 0))
      total.push_back(2 * p);
    return total;
  }()}
                                     : read_padding(ctx, spatial);

  const std::int64_t in_channels = in[1];
  if (auto declared = ctx.attrs.optional_positive("in_channels");
      declared && *declared != in_channels) {
    ctx.attrs.fail_at("in_channels", fmt::format("in_channels is {} but the input {} has {}",
                                                 *declared, shape_to_string(in), in_channels));
  }
  if (in_channels % groups != 0 || out_channels % groups != 0) {
    ctx.attrs.fail_at("groups", fmt::format("groups = {} must divide both in_channels ({}) and "
                                            "out_channels ({})",
                                            groups, in_channels, out_channels));
  }

  Shape out{in[0], out_channels};
  for (std::size_t a = 0; a < spatial; ++a) {
    const std::int64_t size = in[a + 2];
    if (transposed) {
      if (output_padding[a] >= std::max(stride[a], dilation[a])) {
        ctx.attrs.fail_at("output_padding",
                          "output_padding must be smaller than stride or "
                          "dilation");
      }
      const std::int64_t o = (size - 1) * stride[a] - padding.total[a] +
                             dilation[a] * (kernel[a] - 1) + output_padding[a] + 1;
      if (o <= 0) ctx.fail(fmt::format("output size {} along axis {} is not positive", o, a + 2));
      out.push_back(o);
    } else if (padding.same) {
      out.push_back((size + stride[a] - 1) / stride[a]);  // TensorFlow's "same": ceil(in / s).
    } else {
      out.push_back(
          window_output(ctx, size, kernel[a], stride[a], padding.total[a], dilation[a], false));
    }
  }

  std::int64_t kernel_elements = 1;
  for (std::int64_t k : kernel)
    kernel_elements = checked_mul(kernel_elements, k);

  OpResult result;
  LayerCounts& c = result.counts;
  c = formulas::conv_counts({element_count(in), element_count(out), in_channels, out_channels,
                             groups, kernel_elements, bias, transposed});
  weighted_backward(ctx, c);
  // Implicit GEMM per group; a transposed convolution scatters each input pixel's product with
  // the kernel (col2im), so its rows are input pixels and its columns channels x kernel.
  const std::int64_t per_group_in = in_channels / groups;
  const std::int64_t per_group_out = out_channels / groups;
  result.weight_tensors = bias ? 2 : 1;
  result.bias_tensors = bias ? 1 : 0;
  result.gemm = transposed
                    ? GemmView{element_count(in) / in_channels,
                               checked_mul(per_group_out, kernel_elements), per_group_in, groups}
                    : GemmView{element_count(out) / out_channels, per_group_out,
                               checked_mul(per_group_in, kernel_elements), groups};
  result.output = std::move(out);
  return result;
}

OpResult infer_conv1d(OpContext& ctx) {
  return convolution(ctx, 1, false);
}
OpResult infer_conv2d(OpContext& ctx) {
  return convolution(ctx, 2, false);
}
OpResult infer_conv_transpose2d(OpContext& ctx) {
  return convolution(ctx, 2, true);
}

// ---------------------------------------------------------------------------------------------
// Dense layers

OpResult infer_linear(OpContext& ctx) {
  const Shape& in = expect_min_rank(ctx, 0, 1);
  const std::int64_t in_features = in.back();
  const std::int64_t out_features = ctx.attrs.positive("out_features");
  const bool bias = ctx.attrs.flag("bias", true);
  if (auto declared = ctx.attrs.optional_positive("in_features");
      declared && *declared != in_features) {
    ctx.attrs.fail_at("in_features", fmt::format("in_features is {} but the input {} has {}",
                                                 *declared, shape_to_string(in), in_features));
  }
  bool tied = false;
  if (auto target = ctx.attrs.optional_text("tied_to")) {
    const Layer* layer = ctx.find_layer(*target);
    if (layer == nullptr || layer->op != "embedding") {
      ctx.attrs.fail_at(
          "tied_to",
          fmt::format("tied_to must name an earlier embedding layer, got \"{}\"", *target));
    }
    const std::int64_t rows = layer->counts.params / layer->output.back();
    if (layer->output.back() != in_features || rows != out_features) {
      ctx.attrs.fail_at(
          "tied_to", fmt::format("cannot tie a {}x{} linear to embedding \"{}\" of "
                                 "{}x{}",
                                 in_features, out_features, *target, rows, layer->output.back()));
    }
    tied = true;
  }

  Shape out = in;
  out.back() = out_features;
  OpResult result;
  LayerCounts& c = result.counts;
  const std::int64_t rows = element_count(in) / in_features;
  c = formulas::linear_counts(rows, in_features, out_features, bias, tied);
  weighted_backward(ctx, c);
  result.gemm = GemmView{rows, out_features, in_features, 1};
  result.weight_tensors = bias ? 2 : 1;
  result.bias_tensors = bias ? 1 : 0;
  result.output = std::move(out);
  return result;
}

// NumPy broadcasting of two shapes; empty optional if they do not broadcast.
std::optional<Shape> broadcast(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    const std::int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[out.size() - 1 - i] = std::max(x, y);
  }
  return out;
}

OpResult infer_matmul(OpContext& ctx) {
  const Shape& a = expect_min_rank(ctx, 0, 2);
  const Shape& b = expect_min_rank(ctx, 1, 2);
  const bool transpose_b = ctx.attrs.flag("transpose_b", false);
  const std::int64_t m = a[a.size() - 2];
  const std::int64_t k = a.back();
  const std::int64_t kb = transpose_b ? b.back() : b[b.size() - 2];
  const std::int64_t n = transpose_b ? b[b.size() - 2] : b.back();
  if (k != kb) {
    ctx.fail(fmt::format("cannot multiply {} by {}{}: inner sizes {} and {} differ",
                         shape_to_string(a), shape_to_string(b), transpose_b ? " (transposed)" : "",
                         k, kb));
  }
  const Shape batch_a(a.begin(), a.end() - 2);
  const Shape batch_b(b.begin(), b.end() - 2);
  const std::optional<Shape> batch = broadcast(batch_a, batch_b);
  if (!batch) {
    ctx.fail(fmt::format("batch axes of {} and {} do not broadcast", shape_to_string(a),
                         shape_to_string(b)));
  }
  Shape out = *batch;
  out.push_back(m);
  out.push_back(n);

  OpResult result;
  const auto needing_grad =
      static_cast<int>(std::count(ctx.input_needs_grad.begin(), ctx.input_needs_grad.end(), true));
  result.counts = formulas::matmul_counts(element_count(*batch), m, n, k, sum_input_elements(ctx),
                                          element_count(out), needing_grad);
  result.gemm = GemmView{m, n, k, element_count(*batch)};
  result.output = std::move(out);
  return result;
}

OpResult infer_embedding(OpContext& ctx) {
  const Shape& ids = *ctx.inputs[0];
  const std::int64_t rows = ctx.attrs.positive("num_embeddings");
  const std::int64_t dim = ctx.attrs.positive("embedding_dim");
  Shape out = ids;
  out.push_back(dim);
  OpResult result;
  LayerCounts& c = result.counts;
  c.params = checked_mul(rows, dim);
  c.input_elements = element_count(ids);
  c.output_elements = element_count(out);
  c.weight_elements_read = c.output_elements;  // A gather reads one row per id.
  c.backward_other_flops = c.output_elements;  // The weight gradient scatter-adds each row.
  result.output = std::move(out);
  return result;
}

// An attention layer's attributes and input sizes, checked.
struct AttentionSpec {
  std::int64_t batch = 0;
  std::int64_t s = 0;        // Queries per sample.
  std::int64_t d_model = 0;  // Query features.
  std::int64_t s_kv = 0;     // Keys per sample.
  std::int64_t d_kv = 0;     // Key/value features.
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t d_out = 0;
  bool causal = false;
  std::int64_t window = 0;
  std::int64_t chunk = 0;
  bool qkv_bias = false;
  bool out_bias = false;
  bool qk_norm = false;
  bool qk_norm_affine = false;
  bool sinks = false;
  bool rotary = false;
};

AttentionSpec read_attention(OpContext& ctx) {
  AttentionSpec a;
  const Shape& x = expect_rank(ctx, 0, 3, "[batch, seq, features]");
  const Shape& kv = ctx.inputs.size() > 1 ? expect_rank(ctx, 1, 3, "[batch, seq, features]") : x;
  if (kv[0] != x[0]) {
    ctx.fail(fmt::format("query {} and key/value {} have different batch sizes", shape_to_string(x),
                         shape_to_string(kv)));
  }
  a.batch = x[0];
  a.s = x[1];
  a.d_model = x[2];
  a.s_kv = kv[1];
  a.d_kv = kv[2];
  a.heads = ctx.attrs.positive("heads");
  a.kv_heads = ctx.attrs.positive("kv_heads", a.heads);
  if (a.heads % a.kv_heads != 0) {
    ctx.attrs.fail_at("kv_heads",
                      fmt::format("kv_heads = {} must divide heads = {}", a.kv_heads, a.heads));
  }
  if (!ctx.attrs.has("head_dim") && a.d_model % a.heads != 0) {
    ctx.attrs.fail_at("heads", fmt::format("features {} are not divisible by heads = {}; give "
                                           "head_dim",
                                           a.d_model, a.heads));
  }
  a.head_dim = ctx.attrs.positive("head_dim", a.d_model / a.heads);
  a.d_out = ctx.attrs.positive("out_features", a.d_model);
  a.causal = ctx.attrs.flag("causal", false);
  a.window = ctx.attrs.non_negative("window", 0);
  // Llama 4: chunked local attention, each query over its own chunk of `chunk` positions.
  a.chunk = ctx.attrs.non_negative("chunk", 0);
  const bool bias = ctx.attrs.flag("bias", true);
  // Qwen2 has biases on the Q, K and V projections but none on the output projection.
  a.qkv_bias = ctx.attrs.flag("qkv_bias", bias);
  a.out_bias = ctx.attrs.flag("out_bias", bias);
  // Qwen3 normalises each head's queries and keys (RMSNorm over head_dim, one scale vector for
  // the queries and one for the keys) before the product.
  a.qk_norm = ctx.attrs.flag("qk_norm", false);
  // Llama 4's is an L2 norm without scales (Llama4TextL2Norm).
  a.qk_norm_affine = ctx.attrs.flag("qk_norm_affine", true);
  // gpt-oss: a learned "sink" logit per head joins every query's softmax (one parameter per
  // head, one more logit per query and head).
  a.sinks = ctx.attrs.flag("sinks", false);
  // Rotary position embedding applied to Q and K (Llama, GPT-NeoX): not counted in FLOPs, as
  // the counters the counts are checked against leave it out; runtimes launch kernels for it.
  a.rotary = ctx.attrs.flag("rotary", false);
  if (a.window > 0 && !a.causal) ctx.attrs.fail_at("window", "a window needs \"causal\": true");
  if (a.chunk > 0 && !a.causal)
    ctx.attrs.fail_at("chunk", "chunked attention needs \"causal\": true");
  if (a.chunk > 0 && a.window > 0) ctx.attrs.fail_at("chunk", "give a window or a chunk, not both");
  if (a.causal && a.s > a.s_kv) {
    ctx.fail(fmt::format("causal attention with {} queries over {} keys", a.s, a.s_kv));
  }
  return a;
}

// Biases, query/key norms and sinks: parameters and elementwise FLOPs.
void add_attention_extras(const AttentionSpec& a, std::int64_t q_width, std::int64_t kv_width,
                          LayerCounts& c) {
  if (a.qkv_bias) {
    c.params = checked_add(c.params, checked_add(q_width, checked_mul(2, kv_width)));
    c.other_flops = checked_add(
        c.other_flops,
        checked_add(checked_mul(a.batch, a.s, q_width), checked_mul(a.batch, a.s_kv, 2, kv_width)));
  }
  if (a.out_bias) {
    c.params = checked_add(c.params, a.d_out);
    c.other_flops = checked_add(c.other_flops, checked_mul(a.batch, a.s, a.d_out));
  }
  if (a.qk_norm) {
    if (a.qk_norm_affine) c.params = checked_add(c.params, checked_mul(2, a.head_dim));
    c.other_flops = checked_add(
        c.other_flops,
        checked_mul(formulas::kRmsNormFlops, checked_add(checked_mul(a.batch, a.s, q_width),
                                                         checked_mul(a.batch, a.s_kv, kv_width))));
  }
  if (a.sinks) {
    c.params = checked_add(c.params, a.heads);
    c.other_flops = checked_add(c.other_flops, checked_mul(a.batch, a.heads, a.s, 5));
  }
}

OpResult infer_attention(OpContext& ctx) {
  const AttentionSpec a = read_attention(ctx);
  const std::int64_t q_width = checked_mul(a.heads, a.head_dim);
  const std::int64_t kv_width = checked_mul(a.kv_heads, a.head_dim);
  // With a KV cache (LLM decode), self-attention's keys are the cached positions plus the new
  // ones; only the new tokens are projected, and kernels read exactly the cached keys (inside
  // the window), so pairs are counted exactly.
  // Only causal self-attention caches: an encoder's (an image's, BERT's) runs once.
  const bool self_attention = ctx.inputs.size() == 1 && a.causal;
  const std::int64_t cached = self_attention ? ctx.options.kv_cache_length : 0;
  const std::int64_t keys = checked_add(a.s_kv, cached);
  const CausalCounting counting = cached > 0 ? CausalCounting::kHalf : ctx.options.causal;
  const std::int64_t pairs =
      a.chunk > 0 ? formulas::chunked_attention_pairs(a.s, keys, a.chunk, counting)
                  : formulas::attention_pairs(a.s, keys, a.causal, a.window, counting);
  const std::int64_t q_macs = checked_mul(a.batch, a.s, a.d_model, q_width);
  const std::int64_t kv_macs = checked_mul(2, a.batch, a.s_kv, a.d_kv, kv_width);
  const std::int64_t out_macs = checked_mul(a.batch, a.s, q_width, a.d_out);
  const std::int64_t projection_macs = checked_add(checked_add(q_macs, kv_macs), out_macs);
  const std::int64_t score_macs =
      checked_mul(a.batch, a.heads, pairs, a.head_dim);  // Q·Kᵀ; AV same.
  const std::int64_t scores = checked_mul(a.batch, a.heads, pairs);

  Shape out{a.batch, a.s, a.d_out};
  OpResult result;
  LayerCounts& c = result.counts;
  c.attention_heads = a.heads;
  c.params =
      checked_add(checked_add(checked_mul(a.d_model, q_width), checked_mul(2, a.d_kv, kv_width)),
                  checked_mul(q_width, a.d_out));
  // Scale and softmax on every score: 1 + 5 FLOPs.
  c.other_flops = checked_mul(scores, 6);
  add_attention_extras(a, q_width, kv_width, c);
  c.macs = checked_add(projection_macs, checked_mul(score_macs, 2));
  c.score_macs = checked_mul(score_macs, 2);
  c.input_elements = sum_input_elements(ctx);
  c.weight_elements_read = c.params;
  c.output_elements = element_count(out);
  // Q, K, V and the attention output are written and read once each; the scores stay on chip
  // (fused attention kernels).
  const std::int64_t intermediates =
      checked_add(checked_mul(2, a.batch, a.s, q_width), checked_mul(2, a.batch, a.s_kv, kv_width));
  c.input_elements = checked_add(c.input_elements, intermediates);
  c.output_elements = checked_add(c.output_elements, intermediates);
  c.saved_elements = intermediates / 2;  // Q, K, V and context, once each.
  c.attention_heads = a.heads;
  c.attention_kv_heads = a.kv_heads;
  if (self_attention) {
    c.kv_cache_per_token = checked_mul(2, kv_width);
    // A chunked layer keeps at most one chunk (transformers' and vLLM's chunked caches).
    c.kv_cache_window = a.chunk > 0 ? a.chunk : a.window;
    c.kv_cache_heads = a.kv_heads;
  }
  if (cached > 0) {
    // Read the cache (the last `window` positions at most, the current chunk's); the new K, V
    // are already counted.
    const std::int64_t read = a.chunk > 0    ? cached % a.chunk
                              : a.window > 0 ? std::min(cached, a.window)
                                             : cached;
    c.kv_cache_read_elements = checked_mul(a.batch, read, 2, kv_width);
  }
  // Projections: the weight gradient always; the input gradient of the Q (K, V) projection
  // only if the query (key/value) input needs one. The output projection's input gradient is
  // always needed: it flows back into the Q, K and V weights. Q·Kᵀ and AV: 2 operands each.
  const bool q_grad = ctx.input_needs_grad[0];
  const bool kv_grad = ctx.input_needs_grad.size() > 1 ? ctx.input_needs_grad[1] : q_grad;
  c.backward_macs = checked_add(
      checked_add(checked_mul(q_macs, q_grad ? 2 : 1), checked_mul(kv_macs, kv_grad ? 2 : 1)),
      checked_add(checked_mul(out_macs, 2), checked_mul(score_macs, 4)));
  c.backward_other_flops = checked_mul(c.other_flops, 2);
  result.output = std::move(out);
  result.rotary = a.rotary;
  result.weight_tensors = 4 + (a.qkv_bias ? 3 : 0) + (a.out_bias ? 1 : 0);
  result.bias_tensors = (a.qkv_bias ? 3 : 0) + (a.out_bias ? 1 : 0);
  return result;
}

// ---------------------------------------------------------------------------------------------
// Normalisation

OpResult infer_layernorm(OpContext& ctx) {
  const Shape& in = expect_min_rank(ctx, 0, 1);
  const bool affine = ctx.attrs.flag("affine", true);
  const bool bias = ctx.attrs.flag("bias", true);
  OpResult result = elementwise(ctx, in, formulas::kLayerNormFlops);
  result.counts.params = affine ? checked_mul(in.back(), bias ? 2 : 1) : 0;
  result.counts.weight_elements_read = result.counts.params;
  result.param_tensors = affine ? (bias ? 2 : 1) : 0;
  return result;
}

OpResult infer_rmsnorm(OpContext& ctx) {
  const Shape& in = expect_min_rank(ctx, 0, 1);
  OpResult result = elementwise(ctx, in, formulas::kRmsNormFlops);
  result.counts.params = in.back();
  result.counts.weight_elements_read = result.counts.params;
  return result;
}

OpResult infer_batchnorm(OpContext& ctx) {
  const Shape& in = expect_min_rank(ctx, 0, 2);
  // Inference folds the statistics into one scale and shift per channel.
  OpResult result = elementwise(ctx, in, formulas::kBatchNormFlops);
  result.counts.params = checked_mul(in[1], 2);
  result.param_tensors = 2;                                    // Scale and shift.
  result.counts.weight_elements_read = checked_mul(in[1], 4);  // Scale, shift, mean, variance.
  return result;
}

OpResult infer_groupnorm(OpContext& ctx) {
  const Shape& in = expect_min_rank(ctx, 0, 2);
  const std::int64_t groups = ctx.attrs.positive("groups");
  if (in[1] % groups != 0) {
    ctx.attrs.fail_at("groups", fmt::format("groups = {} must divide the {} channels of {}", groups,
                                            in[1], shape_to_string(in)));
  }
  OpResult result = elementwise(ctx, in, formulas::kGroupNormFlops);
  result.counts.params = checked_mul(in[1], 2);
  result.param_tensors = 2;  // Scale and shift.
  result.counts.weight_elements_read = result.counts.params;
  return result;
}

// ---------------------------------------------------------------------------------------------
// Elementwise

template <std::int64_t kFlopsPerElement>
OpResult infer_unary(OpContext& ctx) {
  return elementwise(ctx, *ctx.inputs[0], kFlopsPerElement);
}

OpResult infer_softmax(OpContext& ctx) {
  const Shape& in = expect_min_rank(ctx, 0, 1);
  axis_index(ctx, "axis", ctx.attrs.integer("axis", -1), in.size());
  return elementwise(ctx, in, formulas::kSoftmaxFlops);
}

OpResult infer_binary(OpContext& ctx) {
  Shape out = *ctx.inputs[0];
  for (std::size_t i = 1; i < ctx.inputs.size(); ++i) {
    const std::optional<Shape> next = broadcast(out, *ctx.inputs[i]);
    if (!next) {
      ctx.fail(fmt::format("shapes {} and {} do not broadcast", shape_to_string(out),
                           shape_to_string(*ctx.inputs[i])));
    }
    out = *next;
  }
  return elementwise(ctx, out, static_cast<std::int64_t>(ctx.inputs.size()) - 1);
}

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
// Pooling

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

OpResult infer_maxpool2d(OpContext& ctx) {
  return pooling(ctx, true);
}
OpResult infer_avgpool2d(OpContext& ctx) {
  return pooling(ctx, false);
}

// Sum of the adaptive pooling bins' lengths along one axis. PyTorch's bin i covers
// [floor(i in / out), ceil((i + 1) in / out)); summed over the bins, in + out - gcd(in, out).
// In closed form: a loop over the bins ran for as long as an output_size of 10^12 asked.
std::int64_t adaptive_bin_total(std::int64_t in, std::int64_t out) {
  return checked_add(in, out) - std::gcd(in, out);
}

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

// ---------------------------------------------------------------------------------------------
// Learned tokens and positions (ViT, BERT, GPT-2)

OpResult infer_class_token(OpContext& ctx) {
  const Shape& in = expect_rank(ctx, 0, 3, "[batch, seq, features]");
  const std::int64_t tokens = ctx.attrs.positive("tokens", 1);
  Shape out = in;
  out[1] = checked_add(out[1], tokens);
  OpResult result = elementwise(ctx, out, 0);
  result.counts.params = checked_mul(tokens, in[2]);
  result.counts.weight_elements_read = result.counts.params;
  return result;
}

OpResult infer_position_embedding(OpContext& ctx) {
  const Shape& in = expect_min_rank(ctx, 0, 2);
  const std::int64_t positions = ctx.attrs.positive("positions");
  const std::int64_t seq = in[in.size() - 2];
  if (seq > positions) {
    ctx.attrs.fail_at("positions", fmt::format("sequence length {} exceeds the {} learned "
                                               "positions",
                                               seq, positions));
  }
  OpResult result = elementwise(ctx, in, 1);
  result.counts.params = checked_mul(positions, in.back());
  result.counts.weight_elements_read = checked_mul(seq, in.back());
  return result;
}

// ---------------------------------------------------------------------------------------------
// Latent attention (DeepSeek)

// Multi-head latent attention (DeepSeek-V2/V3, Kimi K2): queries through an optional low-rank
// pair (q_a_proj to q_lora_rank, RMSNorm, q_b_proj to heads x (nope + rope)), keys and values
// through one shared latent (kv_a_proj_with_mqa to kv_lora_rank plus a shared rope key,
// RMSNorm, kv_b_proj up to heads x (nope + v)), output projection from heads x v.
// The cache keeps the latent and the rope key, kv_lora_rank + rope per token, as serving
// engines do (vLLM, SGLang, FlashMLA). Without a cache (training, prefill) keys and values are
// expanded and attention runs per head over nope + rope; with one (decode) kv_b_proj is
// absorbed: queries map into the latent, attention runs over kv_lora_rank + rope per key and
// kv_lora_rank per value, and the context maps back out (DeepSeek-V2 paper, section 2.1.2).
OpResult infer_mla_attention(OpContext& ctx) {
  const Shape& x = expect_rank(ctx, 0, 3, "[batch, seq, features]");
  const std::int64_t batch = x[0];
  const std::int64_t s = x[1];
  const std::int64_t d = x[2];
  const std::int64_t heads = ctx.attrs.positive("heads");
  const std::int64_t q_rank = ctx.attrs.non_negative("q_lora_rank", 0);
  const std::int64_t kv_rank = ctx.attrs.positive("kv_lora_rank");
  const std::int64_t nope = ctx.attrs.positive("qk_nope_head_dim");
  const std::int64_t rope = ctx.attrs.positive("qk_rope_head_dim");
  const std::int64_t v_dim = ctx.attrs.positive("v_head_dim");
  const std::int64_t d_out = ctx.attrs.positive("out_features", d);
  const bool causal = ctx.attrs.flag("causal", true);
  const std::int64_t window = ctx.attrs.non_negative("window", 0);
  if (window > 0 && !causal) ctx.attrs.fail_at("window", "a window needs \"causal\": true");

  const std::int64_t qk_dim = checked_add(nope, rope);
  const std::int64_t q_width = checked_mul(heads, qk_dim);
  const std::int64_t latent = checked_add(kv_rank, rope);  // Cached per token.
  const std::int64_t up_width = checked_mul(heads, checked_add(nope, v_dim));
  const std::int64_t cached = causal ? ctx.options.kv_cache_length : 0;
  const std::int64_t keys = checked_add(s, cached);
  const std::int64_t pairs = formulas::attention_pairs(
      s, keys, causal, window, cached > 0 ? CausalCounting::kHalf : ctx.options.causal);
  const std::int64_t tokens = checked_mul(batch, s);

  OpResult result;
  LayerCounts& c = result.counts;
  // Weights: the query path, the latent down-projection and its norm, the up-projection, out.
  const std::int64_t q_params =
      q_rank > 0
          ? checked_add(checked_add(checked_mul(d, q_rank), q_rank), checked_mul(q_rank, q_width))
          : checked_mul(d, q_width);
  c.params =
      checked_add(checked_add(q_params, checked_add(checked_mul(d, latent), kv_rank)),
                  checked_add(checked_mul(kv_rank, up_width), checked_mul(heads, v_dim, d_out)));
  const std::int64_t q_macs =
      q_rank > 0
          ? checked_mul(tokens, checked_add(checked_mul(d, q_rank), checked_mul(q_rank, q_width)))
          : checked_mul(tokens, d, q_width);
  const std::int64_t down_macs = checked_mul(tokens, d, latent);
  const std::int64_t out_macs = checked_mul(tokens, heads, v_dim, d_out);
  std::int64_t up_macs = 0;  // kv_b_proj: expanding the new keys and values, or absorbed.
  std::int64_t qk_macs = 0;
  std::int64_t av_macs = 0;
  if (cached == 0) {
    up_macs = checked_mul(tokens, kv_rank, up_width);
    qk_macs = checked_mul(batch, heads, pairs, qk_dim);
    av_macs = checked_mul(batch, heads, pairs, v_dim);
  } else {
    // Queries' nope part into the latent, and the latent context out to v per head.
    up_macs = checked_mul(tokens, heads, kv_rank, checked_add(nope, v_dim));
    qk_macs = checked_mul(batch, heads, pairs, latent);
    av_macs = checked_mul(batch, heads, pairs, kv_rank);
  }
  const std::int64_t projection_macs =
      checked_add(checked_add(q_macs, down_macs), checked_add(up_macs, out_macs));
  c.attention_heads = heads;
  c.score_macs = checked_add(qk_macs, av_macs);
  c.macs = checked_add(projection_macs, c.score_macs);
  const std::int64_t scores = checked_mul(batch, heads, pairs);
  // Scale and softmax on every score (1 + 5), RMSNorm of the latents.
  c.other_flops = checked_add(checked_mul(scores, 6), checked_mul(formulas::kRmsNormFlops, tokens,
                                                                  checked_add(q_rank, kv_rank)));
  c.weight_elements_read = c.params;
  // Written once and read once each: the latents, the queries, the expanded keys and values
  // (without a cache) and the context.
  const std::int64_t intermediates = checked_mul(
      tokens, checked_add(checked_add(q_rank, latent),
                          checked_add(q_width, checked_add(cached == 0 ? up_width : 0,
                                                           checked_mul(heads, v_dim)))));
  c.input_elements = checked_add(sum_input_elements(ctx), intermediates);
  Shape out{batch, s, d_out};
  c.output_elements = checked_add(element_count(out), intermediates);
  c.saved_elements = intermediates;
  if (causal) {
    c.kv_cache_per_token = latent;
    c.kv_cache_window = window;
    c.kv_cache_heads = 1;  // One latent for all heads: every tensor-parallel device keeps it.
  }
  c.attention_heads = heads;
  if (cached > 0) {
    const std::int64_t read = window > 0 ? std::min(cached, window) : cached;
    c.kv_cache_read_elements = checked_mul(batch, read, latent);
  }
  // Weight and input gradients of every projection (the first one's input gradient only if
  // the input needs one); both operands of the two products.
  const std::int64_t reads_input =
      checked_add(q_rank > 0 ? checked_mul(tokens, d, q_rank) : q_macs, down_macs);
  c.backward_macs =
      checked_add(checked_mul(projection_macs, 2) - (ctx.input_needs_grad[0] ? 0 : reads_input),
                  checked_mul(c.score_macs, 2));
  c.backward_other_flops = checked_mul(c.other_flops, 2);
  // q (or q_a and q_b), kv_a, kv_b and o: DeepSeek's projections have no biases.
  result.weight_tensors = q_rank > 0 ? 5 : 4;
  result.output = std::move(out);
  return result;
}

// ---------------------------------------------------------------------------------------------
// Mixture of experts (Mixtral's sparse MoE block)

// A router (Linear d -> experts, no bias unless router_bias) picks experts_per_token experts
// per token; each expert is a SwiGLU MLP down(silu(gate(x)) * up(x)) with `hidden` units, no
// biases unless expert_bias. Shazeer et
// al. 2017 (arXiv:1701.06538); Jiang et al. 2024, Mixtral of Experts (arXiv:2401.04088), and
// Hugging Face's MixtralSparseMoeBlock. Params count every expert; MACs only the chosen ones.
OpResult infer_moe(OpContext& ctx) {
  const Shape& in = expect_min_rank(ctx, 0, 1);
  const std::int64_t experts = ctx.attrs.positive("experts");
  const std::int64_t top_k = ctx.attrs.positive("experts_per_token");
  const std::int64_t hidden = ctx.attrs.positive("hidden");
  const std::string kind = ctx.attrs.text("kind", "swiglu");
  if (kind != "swiglu") {
    ctx.attrs.fail_at(
        "kind", with_suggestion(fmt::format("unknown expert kind \"{}\"", kind), kind, {"swiglu"}));
  }
  if (top_k > experts) {
    ctx.attrs.fail_at("experts_per_token",
                      fmt::format("experts_per_token = {} exceeds experts = {}", top_k, experts));
  }
  // DeepSeek's MoE: an always-on shared SwiGLU MLP of shared_hidden beside the routed
  // experts. A per-expert router bias: DeepSeek-V3's e_score_correction_bias, gpt-oss's.
  const std::int64_t shared_hidden = ctx.attrs.non_negative("shared_hidden", 0);
  // Qwen2-MoE: the shared MLP's output scaled by sigmoid(x · w), w of d.
  const bool shared_gate = ctx.attrs.flag("shared_gate", false);
  if (shared_gate && shared_hidden == 0) {
    ctx.attrs.fail_at("shared_gate", "a shared_gate needs a shared expert (shared_hidden)");
  }
  const bool router_bias = ctx.attrs.flag("router_bias", false);
  // gpt-oss: biases on each expert's gate/up (2 x hidden) and down (d) projections.
  const bool expert_bias = ctx.attrs.flag("expert_bias", false);
  const std::int64_t d = in.back();
  const std::int64_t tokens = element_count(in) / d;
  const std::int64_t router = checked_add(checked_mul(d, experts), router_bias ? experts : 0);
  // gate, up (d x hidden), down (+ their biases).
  const std::int64_t expert = checked_add(checked_mul(3, d, hidden),
                                          expert_bias ? checked_add(checked_mul(2, hidden), d) : 0);
  const std::int64_t shared = checked_add(checked_mul(3, d, shared_hidden), shared_gate ? d : 0);
  const std::int64_t routed = checked_mul(tokens, top_k);  // Token-expert pairs.

  OpResult result;
  LayerCounts& c = result.counts;
  c.params = checked_add(checked_add(checked_mul(experts, expert), router), shared);
  result.active_params = checked_add(checked_add(checked_mul(top_k, expert), router), shared);
  const std::int64_t router_macs = checked_mul(tokens, d, experts);
  // The shared MLP's gate and up, then its down: on every token.
  const std::int64_t gate_up_macs =
      checked_add(checked_mul(routed, 2, d, hidden), checked_mul(tokens, 2, d, shared_hidden));
  const std::int64_t down_macs = checked_add(
      checked_add(checked_mul(routed, d, hidden), checked_mul(tokens, d, shared_hidden)),
      shared_gate ? checked_mul(tokens, d) : 0);
  c.macs = checked_add(router_macs, checked_add(gate_up_macs, down_macs));
  // Softmax over the router logits (5 per expert), then per token-expert pair SiLU (5) and the
  // gating multiply (1) per hidden unit, and the routing weight's scale and the sum (2) per
  // output feature; the shared MLP's SiLU and multiply, and its sum.
  c.other_flops = checked_add(
      checked_add(checked_mul(tokens, experts, 5),
                  checked_mul(routed, checked_add(checked_mul(6, hidden), checked_mul(2, d)))),
      checked_add(
          shared_hidden > 0
              ? checked_mul(tokens, checked_add(checked_add(checked_mul(6, shared_hidden), d),
                                                shared_gate ? formulas::kSigmoidFlops + d : 0))
              : 0,
          expert_bias ? checked_mul(routed, checked_add(checked_mul(2, hidden), d)) : 0));
  // The experts a batch touches: at most one per token-expert pair (balanced routing).
  c.weight_elements_read =
      checked_add(checked_add(router, checked_mul(std::min(experts, routed), expert)), shared);
  // Router logits, and per pair (and per token for the shared MLP) the gate and up outputs and
  // their product: written once, read once, and kept for backward.
  const std::int64_t intermediates =
      checked_add(checked_add(checked_mul(tokens, experts), checked_mul(routed, 3, hidden)),
                  checked_mul(tokens, 3, shared_hidden));
  c.output_elements = checked_add(element_count(in), intermediates);
  c.input_elements = checked_add(element_count(in), intermediates);
  c.saved_elements = intermediates;
  // Weight gradients always; the router's and the gate/up input gradients only if the input
  // needs one; the down projection's input gradient always (it leads to the gate/up weights).
  const std::int64_t input_side = checked_add(router_macs, gate_up_macs);
  c.backward_macs = checked_add(checked_mul(input_side, ctx.any_input_needs_grad() ? 2 : 1),
                                checked_mul(down_macs, 2));
  c.backward_other_flops = checked_mul(c.other_flops, 2);
  // Gate, up and down per expert (with their biases), the router (and its bias), the shared
  // MLP's three and its gate.
  result.weight_tensors =
      checked_add(checked_mul(experts, expert_bias ? 6 : 3),
                  (router_bias ? 2 : 1) + (shared_hidden > 0 ? 3 : 0) + (shared_gate ? 1 : 0));
  result.output = in;
  return result;
}

// ---------------------------------------------------------------------------------------------
// The table

constexpr int kAny = -1;

constexpr std::array kOps = {
    OpKind{"conv1d", 1, 1, infer_conv1d, OpClass::kMatrix, Fusion::kNever},
    OpKind{"conv2d", 1, 1, infer_conv2d, OpClass::kMatrix, Fusion::kNever},
    OpKind{"conv_transpose2d", 1, 1, infer_conv_transpose2d, OpClass::kMatrix, Fusion::kNever},
    OpKind{"linear", 1, 1, infer_linear, OpClass::kMatrix, Fusion::kNever},
    OpKind{"matmul", 2, 2, infer_matmul, OpClass::kMatrix, Fusion::kNever},
    OpKind{"embedding", 1, 1, infer_embedding, OpClass::kDataMovement, Fusion::kNever},
    OpKind{"attention", 1, 2, infer_attention, OpClass::kAttention, Fusion::kNever},
    OpKind{"mla_attention", 1, 1, infer_mla_attention, OpClass::kAttention, Fusion::kNever},
    OpKind{"layernorm", 1, 1, infer_layernorm, OpClass::kNormalization, Fusion::kAlways},
    OpKind{"rmsnorm", 1, 1, infer_rmsnorm, OpClass::kNormalization, Fusion::kAlways},
    OpKind{"batchnorm", 1, 1, infer_batchnorm, OpClass::kNormalization, Fusion::kInferenceOnly},
    OpKind{"groupnorm", 1, 1, infer_groupnorm, OpClass::kNormalization, Fusion::kNever},
    OpKind{"relu", 1, 1, infer_unary<formulas::kReluFlops>, OpClass::kElementwise, Fusion::kAlways},
    OpKind{"gelu", 1, 1, infer_unary<formulas::kGeluFlops>, OpClass::kElementwise, Fusion::kAlways},
    // GELU's tanh form as Python operators (Hugging Face's NewGELUActivation, "gelu_new"): the
    // same FLOPs; eager runtimes launch each operator apart (data/runtimes.json).
    OpKind{"gelu_new", 1, 1, infer_unary<formulas::kGeluFlops>, OpClass::kElementwise,
           Fusion::kAlways},
    OpKind{"silu", 1, 1, infer_unary<formulas::kSiluFlops>, OpClass::kElementwise, Fusion::kAlways},
    OpKind{"sigmoid", 1, 1, infer_unary<formulas::kSigmoidFlops>, OpClass::kElementwise,
           Fusion::kAlways},
    OpKind{"tanh", 1, 1, infer_unary<formulas::kTanhFlops>, OpClass::kElementwise, Fusion::kAlways},
    OpKind{"softmax", 1, 1, infer_softmax, OpClass::kNormalization, Fusion::kAlways},
    OpKind{"add", 2, kAny, infer_binary, OpClass::kElementwise, Fusion::kAlways},
    OpKind{"mul", 2, kAny, infer_binary, OpClass::kElementwise, Fusion::kAlways},
    OpKind{"concat", 1, kAny, infer_concat, OpClass::kDataMovement, Fusion::kNever},
    OpKind{"maxpool2d", 1, 1, infer_maxpool2d, OpClass::kPooling, Fusion::kNever},
    OpKind{"avgpool2d", 1, 1, infer_avgpool2d, OpClass::kPooling, Fusion::kNever},
    OpKind{"adaptive_avgpool2d", 1, 1, infer_adaptive_avgpool2d, OpClass::kPooling, Fusion::kNever},
    OpKind{"global_avgpool", 1, 1, infer_global_avgpool, OpClass::kPooling, Fusion::kNever},
    OpKind{"flatten", 1, 1, infer_flatten, OpClass::kView, Fusion::kNever},
    OpKind{"reshape", 1, 1, infer_reshape, OpClass::kView, Fusion::kNever},
    OpKind{"transpose", 1, 1, infer_transpose, OpClass::kView, Fusion::kNever},
    OpKind{"permute", 1, 1, infer_permute, OpClass::kView, Fusion::kNever},
    OpKind{"select", 1, 1, infer_select, OpClass::kView, Fusion::kNever},
    OpKind{"slice", 1, 1, infer_slice, OpClass::kView, Fusion::kNever},
    OpKind{"dropout", 1, 1, infer_identity, OpClass::kView, Fusion::kNever},
    OpKind{"identity", 1, 1, infer_identity, OpClass::kView, Fusion::kNever},
    OpKind{"upsample", 1, 1, infer_upsample, OpClass::kDataMovement, Fusion::kNever},
    OpKind{"class_token", 1, 1, infer_class_token, OpClass::kDataMovement, Fusion::kNever},
    OpKind{"position_embedding", 1, 1, infer_position_embedding, OpClass::kElementwise,
           Fusion::kAlways},
    OpKind{"moe", 1, 1, infer_moe, OpClass::kMatrix, Fusion::kNever},
};

}  // namespace

const OpKind* find_op(std::string_view name) {
  for (const OpKind& kind : kOps) {
    if (kind.name == name) return &kind;
  }
  return nullptr;
}

std::vector<std::string_view> op_names() {
  std::vector<std::string_view> names;
  names.reserve(kOps.size());
  for (const OpKind& kind : kOps)
    names.push_back(kind.name);
  return names;
}

}  // namespace capcalc

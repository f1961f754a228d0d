// onnxruntime's fused operators (com.microsoft), as its transformer optimizer and
// onnxruntime-genai write them: their output shapes, which ONNX cannot infer, and the counts of
// those that are not elementwise (attention, the embeddings' lookup and norm). Their rows are in
// onnx_rules.cpp's table.

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "checked.hpp"
#include "count_formulas.hpp"
#include "import/onnx_importer.hpp"
#include "import/onnx_rules.hpp"

namespace capcalc::onnx_import {

namespace {

// The sizes of a fused attention, from its inputs' shapes. Keys are the past and the new ones.
struct AttentionSizes {
  std::int64_t batch = 0, queries = 0, keys = 0, past = 0;
  std::int64_t heads = 0, kv_heads = 0, head_dim = 0, v_head_dim = 0;
  std::int64_t projection_macs = 0;  // Attention's packed Q, K, V projection.
  std::int64_t bias_elements = 0;    // Elements the biases are added to.
  std::int64_t rotary_elements = 0;  // GroupQueryAttention's do_rotary: Q and K rotated.
  bool causal = false;
  std::int64_t window = 0;
};

// The shape of input `slot`, [] when absent.
const Shape& input_shape(const onnx::NodeProto& node, const std::vector<Shape>& shapes, int slot) {
  static const Shape kNone;
  return slot >= 0 && static_cast<std::size_t>(slot) < shapes.size() && has_input(node, slot)
             ? shapes[static_cast<std::size_t>(slot)]
             : kNone;
}

// Attention packs the Q, K and V projections (x [B, S, D] times weights [D, Dq + Dk + Dv],
// qkv_hidden_sizes or three equal parts) and may read a past [2, B, N, P, H].
bool packed_attention_sizes(const onnx::NodeProto& node, const std::vector<Shape>& shapes,
                            AttentionSizes& a) {
  const Shape& q = input_shape(node, shapes, 0);
  const Shape& w = input_shape(node, shapes, 1);
  if (q.size() != 3 || w.size() != 2 || w[0] != q[2]) return false;
  std::vector<std::int64_t> sizes = attribute_ints(node, "qkv_hidden_sizes");
  if (sizes.empty()) sizes.assign(3, w[1] / 3);
  if (sizes.size() != 3 || sizes[0] + sizes[1] + sizes[2] != w[1] || sizes[0] != sizes[1] ||
      sizes[0] % a.heads != 0 || sizes[2] % a.heads != 0) {
    return false;
  }
  a.kv_heads = a.heads;
  a.head_dim = sizes[0] / a.heads;
  a.v_head_dim = sizes[2] / a.heads;
  a.projection_macs = checked_mul(a.batch, a.queries, q[2], w[1]);
  if (has_input(node, 2)) a.bias_elements = checked_mul(a.batch, a.queries, w[1]);
  if (const Shape& past = input_shape(node, shapes, 4); past.size() == 5) a.past = past[3];
  a.causal = attribute_int(node, "unidirectional", 0) != 0;
  a.keys = checked_add(a.past, a.queries);
  return true;
}

// MultiHeadAttention takes Q [B, S, Dq] and K, V [B, L, Dk] (or [B, N, L, H]), or Q packed
// [B, S, N, 3, H], and a past_key [B, N, P, H].
bool multi_head_sizes(const onnx::NodeProto& node, const std::vector<Shape>& shapes,
                      AttentionSizes& a) {
  const Shape& q = input_shape(node, shapes, 0);
  const Shape& k = input_shape(node, shapes, 1);
  const Shape& v = input_shape(node, shapes, 2);
  a.kv_heads = a.heads;
  if (q.size() == 5) {  // Packed [B, S, N, 3, H].
    if (q[2] != a.heads || q[3] != 3) return false;
    a.head_dim = a.v_head_dim = q[4];
    a.keys = a.queries;
  } else if (q.size() == 3 && q[2] % a.heads == 0 && (k.size() == 3 || k.size() == 4) &&
             v.size() == k.size()) {
    a.head_dim = q[2] / a.heads;
    a.keys = k.size() == 3 ? k[1] : k[2];
    a.v_head_dim = v.size() == 3 ? v[2] / a.heads : v[3];
  } else {
    return false;
  }
  if (has_input(node, 3)) {
    a.bias_elements =
        checked_mul(a.batch, checked_add(checked_mul(a.queries, a.heads, a.head_dim),
                                         checked_mul(a.keys, a.heads, a.head_dim + a.v_head_dim)));
  }
  if (const Shape& past = input_shape(node, shapes, 6); past.size() == 4) a.past = past[2];
  a.keys = checked_add(a.keys, a.past);
  a.causal = attribute_int(node, "unidirectional", 0) != 0;
  return true;
}

// GroupQueryAttention takes Q [B, S, N·H] and K, V [B, S, kvN·H] (or all three packed into Q)
// and a past_key [B, kvN, P, H]: causal, K and V heads shared by groups of query heads.
bool group_query_sizes(const onnx::NodeProto& node, const std::vector<Shape>& shapes,
                       AttentionSizes& a) {
  const Shape& q = input_shape(node, shapes, 0);
  a.kv_heads = attribute_int(node, "kv_num_heads", 0);
  if (q.size() != 3 || a.kv_heads <= 0 || a.heads % a.kv_heads != 0) return false;
  const std::int64_t width = has_input(node, 1) ? a.heads : a.heads + 2 * a.kv_heads;
  if (q[2] % width != 0) return false;
  a.head_dim = a.v_head_dim = q[2] / width;
  if (const Shape& past = input_shape(node, shapes, 3); past.size() == 4) a.past = past[2];
  a.keys = checked_add(a.past, a.queries);
  a.causal = true;
  if (attribute_int(node, "do_rotary", 0) != 0) {
    a.rotary_elements = checked_mul(a.batch, a.queries, a.heads + a.kv_heads, a.head_dim);
  }
  const std::int64_t window = attribute_int(node, "local_window_size", -1);
  a.window = window > 0 ? window : 0;
  return true;
}

// The three fused attentions: how each reads its sizes, the attributes that set its heads, and
// the shapes of its present (cached) K and V.
struct AttentionForm {
  std::string_view op_type;
  bool (*sizes)(const onnx::NodeProto&, const std::vector<Shape>&, AttentionSizes&);
  std::string_view head_attributes;
  bool packed_present;  // One present [2, B, N, T, H] rather than present_key and present_value.
};

constexpr AttentionForm kAttentionForms[] = {
    {"Attention", packed_attention_sizes, "num_heads", true},
    {"MultiHeadAttention", multi_head_sizes, "num_heads", false},
    {"GroupQueryAttention", group_query_sizes, "num_heads, kv_num_heads", false},
};

const AttentionForm& attention_form(const onnx::NodeProto& node) {
  for (const AttentionForm& form : kAttentionForms) {
    if (form.op_type == node.op_type()) return form;
  }
  return kAttentionForms[0];  // Unreachable: only these rows count with these functions.
}

// Empty when a shape does not fit.
std::optional<AttentionSizes> attention_sizes(const onnx::NodeProto& node,
                                              const std::vector<Shape>& shapes) {
  AttentionSizes a;
  a.heads = attribute_int(node, "num_heads", 0);
  const Shape& q = input_shape(node, shapes, 0);
  if (a.heads <= 0 || q.size() < 3) return std::nullopt;
  a.batch = q[0];
  a.queries = q[1];
  if (!attention_form(node).sizes(node, shapes, a)) return std::nullopt;
  return a;
}

// The inputs' shapes, [] where not known.
std::vector<Shape> known_or_empty(const KnownInputs& in) {
  std::vector<Shape> shapes;
  for (const std::optional<Shape>& shape : in)
    shapes.push_back(shape.value_or(Shape{}));
  return shapes;
}

// An output vector as long as the node's outputs; `set` fills the ones the node has.
struct Outputs {
  std::vector<std::optional<Shape>> shapes;
  explicit Outputs(const onnx::NodeProto& node)
      : shapes(static_cast<std::size_t>(node.output_size())) {}
  void set(std::size_t i, Shape shape) {
    if (i < shapes.size()) shapes[i] = std::move(shape);
  }
};

}  // namespace

void check_attention_inputs(const NodeInputs& in) {
  if (attention_sizes(in.node, in.shapes)) return;
  std::vector<std::string> given;
  for (std::size_t slot = 0; slot < in.shapes.size() && slot < 4; ++slot)
    given.push_back(shape_to_string(in.shapes[slot]));
  in.fail(
      fmt::format("node \"{}\" ({}): its inputs {} and attributes ({}) do not fit the "
                  "operator's shapes",
                  in.name, qualified_op(in.node), fmt::join(given, ", "),
                  attention_form(in.node).head_attributes));
}

// Counted like the native attention's products (docs/model-format.md): QKᵀ and AV per head over
// the keys, the scale and softmax on every score (6 FLOPs), Attention's packed projection,
// the biases and GroupQueryAttention's rotary embeddings; the output projection is a separate
// MatMul in these graphs. A past makes the pairs exact (the new queries over the cached keys);
// causal self-attention caches its K and V per token.
CountResult count_attention(const OnnxRule&, const NodeInputs& in, const Shape& out) {
  check_attention_inputs(in);
  const AttentionSizes a = *attention_sizes(in.node, in.shapes);
  const CausalCounting counting = a.past > 0 ? CausalCounting::kHalf : in.counting.causal;
  const std::int64_t pairs =
      formulas::attention_pairs(a.queries, a.keys, a.causal, a.window, counting);
  const std::int64_t scores = checked_mul(a.batch, a.heads, pairs);
  const std::int64_t masked = checked_mul(
      a.batch, a.heads,
      formulas::masked_attention_pairs(a.queries, a.keys, a.causal, a.window, 0, counting));
  CountResult result;
  LayerCounts& c = result.counts;
  c.score_macs = checked_mul(scores, a.head_dim + a.v_head_dim);
  formulas::mark_masked_scores(c, masked, a.head_dim + a.v_head_dim);
  c.macs = checked_add(a.projection_macs, c.score_macs);
  // Rotary embeddings inside GroupQueryAttention: x·cos + rotate(x)·sin, 3 per element.
  c.other_flops =
      checked_add(checked_add(checked_mul(scores, formulas::kScoreFlops), a.bias_elements),
                  checked_mul(a.rotary_elements, 3));
  // Q, K, V and the output written and read once; the scores stay on chip.
  c.input_elements = in.activation_elements;
  c.output_elements = element_count(out);
  c.saved_elements =
      checked_mul(a.batch, checked_add(checked_mul(a.queries, a.heads, a.head_dim + a.v_head_dim),
                                       checked_mul(a.keys, a.kv_heads, a.head_dim + a.v_head_dim)));
  c.attention_kv_per_token = checked_mul(a.kv_heads, a.head_dim + a.v_head_dim);
  if (a.causal) {
    c.kv_cache_per_token = checked_mul(a.kv_heads, a.head_dim + a.v_head_dim);
    c.kv_cache_window = a.window;
    const std::int64_t read = a.window > 0 ? std::min(a.past, a.window) : a.past;
    c.kv_cache_read_elements = checked_mul(a.batch, read, c.kv_cache_per_token);
  }
  c.backward_macs = checked_add(checked_mul(a.projection_macs, 2), checked_mul(c.score_macs, 2));
  c.backward_other_flops = checked_mul(c.other_flops, 2);
  c.weight_elements_read = in.constant_elements;
  return result;
}

// EmbedLayerNormalization (BERT's embeddings and LayerNorm): reads one row of each table per
// token (word, position, and segment when given), adds them and normalises: 1 or 2 adds and
// LayerNorm's 8 FLOPs per element.
CountResult count_embed_layer_norm(const OnnxRule&, const NodeInputs& in, const Shape& out) {
  const std::int64_t out_elements = element_count(out);
  const std::int64_t tables = has_input(in.node, 1) && has_input(in.node, 4) ? 3 : 2;
  CountResult r;
  LayerCounts& c = r.counts;
  c.input_elements = in.activation_elements;
  c.output_elements = out_elements;
  c.weight_elements_read =
      checked_add(checked_mul(tables, out_elements), element_count(in.shapes.at(5)) * 2);
  c.other_flops = checked_mul(out_elements, tables - 1 + formulas::kLayerNormFlops);
  c.backward_other_flops = checked_mul(c.other_flops, 2);
  return r;
}

// Output [B, S, N·Hv]; Attention's present [2, B, N, T, H], the others' present_key and
// present_value [B, kvN, T, H].
std::vector<std::optional<Shape>> attention_output_shapes(const onnx::NodeProto& node,
                                                          const KnownInputs& in) {
  Outputs out(node);
  const std::optional<AttentionSizes> a = attention_sizes(node, known_or_empty(in));
  if (!a) return out.shapes;
  out.set(0, {a->batch, a->queries, checked_mul(a->heads, a->v_head_dim)});
  if (attention_form(node).packed_present) {
    out.set(1, {2, a->batch, a->heads, a->keys, a->head_dim});
  } else {
    out.set(1, {a->batch, a->kv_heads, a->keys, a->head_dim});
    out.set(2, {a->batch, a->kv_heads, a->keys, a->v_head_dim});
  }
  return out.shapes;
}

// Output and the skip sum: the input's shape; mean and inverse deviation: reduced on the last
// axis.
std::vector<std::optional<Shape>> skip_norm_output_shapes(const onnx::NodeProto& node,
                                                          const KnownInputs& in) {
  Outputs out(node);
  if (in.empty() || !in[0] || in[0]->empty()) return out.shapes;
  Shape reduced = *in[0];
  reduced.back() = 1;
  out.set(0, *in[0]);
  out.set(1, reduced);
  out.set(2, reduced);
  out.set(3, *in[0]);
  return out.shapes;
}

// Ids [B, S] and a word embedding [V, D]: output [B, S, D], mask index [B], and the embedding
// sum [B, S, D].
std::vector<std::optional<Shape>> embed_layer_norm_output_shapes(const onnx::NodeProto& node,
                                                                 const KnownInputs& in) {
  Outputs out(node);
  const std::vector<Shape> shapes = known_or_empty(in);
  if (shapes.size() < 3 || shapes[0].size() != 2 || shapes[2].size() != 2) return out.shapes;
  out.set(0, {shapes[0][0], shapes[0][1], shapes[2][1]});
  out.set(1, {shapes[0][0]});
  out.set(2, {shapes[0][0], shapes[0][1], shapes[2][1]});
  return out.shapes;
}

}  // namespace capcalc::onnx_import

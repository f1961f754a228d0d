#include "import/hf_emit.hpp"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace capcalc::hf {
namespace {

using Json = nlohmann::json;

Json layer(std::string_view name, std::string_view op) {
  return Json{{"name", std::string(name)}, {"op", std::string(op)}};
}

Json with_input(Json entry, std::string_view input) {
  entry["input"] = input;
  return entry;
}

Json with_inputs(Json entry, std::vector<std::string> inputs) {
  entry["inputs"] = std::move(inputs);
  return entry;
}

Json linear(std::string_view name, std::int64_t out, bool bias) {
  Json entry = layer(name, "linear");
  entry["out_features"] = out;
  entry["bias"] = bias;
  return entry;
}

bool has_chunks(const Spec& spec) {
  return std::any_of(spec.per_layer.chunks.begin(), spec.per_layer.chunks.end(),
                     [](std::int64_t c) { return c > 0; });
}

Json attention(std::string_view name, const Spec& spec, bool causal, bool l2_qk_norm = false,
               bool rotary = false) {
  Json entry = layer(name, "attention");
  entry["heads"] = spec.attention.heads;
  entry["kv_heads"] = spec.attention.kv_heads;
  entry["head_dim"] = spec.attention.head_dim;
  entry["causal"] = causal;
  if (causal) entry["window"] = "window";
  if (causal && has_chunks(spec)) entry["chunk"] = "chunk";
  if (spec.attention.qk_norm) entry["qk_norm"] = true;
  if (l2_qk_norm) {
    entry["qk_norm"] = true;
    entry["qk_norm_affine"] = false;
  }
  if (spec.attention.sinks) entry["sinks"] = true;
  if (rotary) entry["rotary"] = true;
  if (spec.attention.qkv_bias == spec.attention.out_bias) {
    entry["bias"] = spec.attention.qkv_bias;
  } else {
    entry["qkv_bias"] = spec.attention.qkv_bias;
    entry["out_bias"] = spec.attention.out_bias;
  }
  return entry;
}

Json embedding(std::string_view name, std::int64_t rows, std::int64_t dim) {
  Json entry = layer(name, "embedding");
  entry["num_embeddings"] = rows;
  entry["embedding_dim"] = dim;
  return entry;
}

Json lm_head(std::string_view name, const Spec& spec, std::string_view embedding_name) {
  Json entry = linear(name, spec.vocab, false);
  if (spec.tied) entry["tied_to"] = embedding_name;
  return entry;
}

bool l2_qk_norm_at(const Spec& spec, std::size_t i) {
  return i < spec.per_layer.l2_qk_norm.size() && spec.per_layer.l2_qk_norm[i];
}

// A decoder layer's block: "decoder_layer", "dense_" before it for a MoE model's dense
// layers, "_qk_norm" after it for Llama 4's L2-normalised layers.
std::string block_name(std::string_view block, bool dense, bool l2_qk_norm) {
  return fmt::format("{}{}{}", dense ? "dense_" : "", block, l2_qk_norm ? "_qk_norm" : "");
}

// The decoder layers as block calls: one repeated call when every layer has the
// same window, chunk and block, else one call per layer ("layers.0", "layers.1", ...)
// with its own (block_name's).
void add_layer_calls(Json& layers, std::string_view name, std::string_view block,
                     const Spec& spec) {
  const auto kind = [&](std::size_t i) {
    const bool dense = i < spec.per_layer.dense_mlp.size() && spec.per_layer.dense_mlp[i];
    const std::int64_t chunk = i < spec.per_layer.chunks.size() ? spec.per_layer.chunks[i] : 0;
    return std::tuple(spec.per_layer.windows[i], chunk,
                      block_name(block, dense, l2_qk_norm_at(spec, i)));
  };
  const auto args = [&](std::size_t i) {
    Json values = Json::object();
    if (spec.per_layer.windows[i] > 0) values["window"] = spec.per_layer.windows[i];
    if (i < spec.per_layer.chunks.size() && spec.per_layer.chunks[i] > 0)
      values["chunk"] = spec.per_layer.chunks[i];
    return values;
  };
  bool uniform = true;
  for (std::size_t i = 1; i < spec.per_layer.windows.size(); ++i)
    uniform = uniform && kind(i) == kind(0);
  if (uniform) {
    Json call{{"name", name}, {"block", std::get<2>(kind(0))}, {"repeat", spec.layers}};
    if (Json values = args(0); !values.empty()) call["args"] = std::move(values);
    layers.push_back(std::move(call));
    return;
  }
  for (std::size_t i = 0; i < spec.per_layer.windows.size(); ++i) {
    Json call{{"name", fmt::format("{}.{}", name, i)}, {"block", std::get<2>(kind(i))}};
    if (Json values = args(i); !values.empty()) call["args"] = std::move(values);
    layers.push_back(std::move(call));
  }
}

Json mla_attention(std::string_view name, const Spec& spec) {
  Json entry = layer(name, "mla_attention");
  entry["heads"] = spec.attention.heads;
  if (spec.latent.q_lora_rank > 0) entry["q_lora_rank"] = spec.latent.q_lora_rank;
  entry["kv_lora_rank"] = spec.latent.kv_lora_rank;
  entry["qk_nope_head_dim"] = spec.latent.qk_nope_head_dim;
  entry["qk_rope_head_dim"] = spec.latent.qk_rope_head_dim;
  entry["v_head_dim"] = spec.latent.v_head_dim;
  entry["causal"] = true;
  entry["window"] = "window";
  return entry;
}

// One decoder layer; `sparse` false gives the dense MLP of a MoE model's leading layers,
// `l2_qk_norm` Llama 4's normalised queries and keys.
Json decoder_block(const Spec& spec, bool sparse = true, bool l2_qk_norm = false) {
  Json body = Json::array();
  body.push_back(layer("input_layernorm", "rmsnorm"));
  body.push_back(spec.latent.kv_lora_rank > 0
                     ? mla_attention("self_attn", spec)
                     : attention("self_attn", spec, true, l2_qk_norm, true));
  // Gemma 2 and 3 normalise the attention's and the MLP's outputs too ("sandwich" norms):
  // post_attention_layernorm is then the attention's output norm, pre_feedforward_layernorm
  // the MLP's input norm.
  std::string attn_out = "self_attn";
  if (spec.sandwich_norms) {
    body.push_back(layer("post_attention_layernorm", "rmsnorm"));
    attn_out = "post_attention_layernorm";
  }
  body.push_back(with_inputs(layer("attn_add", "add"), {attn_out, "x"}));
  const std::string mlp_norm =
      spec.sandwich_norms ? "pre_feedforward_layernorm" : "post_attention_layernorm";
  body.push_back(layer(mlp_norm, "rmsnorm"));
  const std::string mlp = spec.mlp.name + ".";
  std::string mlp_out = mlp + "down_proj";
  if (spec.moe.experts > 0 && sparse) {
    // MixtralSparseMoeBlock (Qwen3MoeSparseMoeBlock): router "gate" and SwiGLU experts w1 (gate),
    // w3 (up), w2 (down); DeepseekV3MoE adds shared_experts, one SwiGLU MLP.
    Json moe = layer(spec.moe.name, "moe");
    moe["experts"] = spec.moe.experts;
    moe["experts_per_token"] = spec.moe.experts_per_token;
    moe["hidden"] = spec.moe.expert_intermediate;
    moe["kind"] = "swiglu";
    if (spec.moe.shared_intermediate > 0) moe["shared_hidden"] = spec.moe.shared_intermediate;
    if (spec.moe.router_bias) moe["router_bias"] = true;
    if (spec.moe.groups > 1 && spec.moe.groups_per_token > 0 &&
        spec.moe.groups_per_token < spec.moe.groups) {
      moe["groups"] = spec.moe.groups;
      moe["groups_per_token"] = spec.moe.groups_per_token;
    }
    if (spec.moe.expert_bias) moe["expert_bias"] = true;
    if (spec.moe.shared_gate) moe["shared_gate"] = true;
    body.push_back(std::move(moe));
    mlp_out = spec.moe.name;
  } else {
    // down(act(gate(x)) * up(x)): SwiGLU (silu) or GeGLU (gelu).
    body.push_back(linear(mlp + "gate_proj", spec.mlp.intermediate, spec.mlp.bias));
    body.push_back(layer(mlp + "act", spec.mlp.activation));
    body.push_back(
        with_input(linear(mlp + "up_proj", spec.mlp.intermediate, spec.mlp.bias), mlp_norm));
    body.push_back(with_inputs(layer(mlp + "gated", "mul"), {mlp + "act", mlp + "up_proj"}));
    body.push_back(linear(mlp + "down_proj", spec.hidden, spec.mlp.bias));
  }
  if (spec.sandwich_norms) {
    body.push_back(with_input(layer("post_feedforward_layernorm", "rmsnorm"), mlp_out));
    mlp_out = "post_feedforward_layernorm";
  }
  body.push_back(with_inputs(layer("mlp_add", "add"), {mlp_out, "attn_add"}));
  Json args{{"window", 0}};
  if (has_chunks(spec)) args["chunk"] = 0;
  return Json{{"args", std::move(args)}, {"layers", std::move(body)}};
}

void emit_decoder(const Spec& spec, Json& model) {
  // The blocks the layers use: sparse or dense, with or without L2-normalised queries and keys.
  model["blocks"] = Json::object();
  for (std::size_t i = 0; i < static_cast<std::size_t>(spec.layers); ++i) {
    const bool dense = i < spec.per_layer.dense_mlp.size() && spec.per_layer.dense_mlp[i];
    const bool l2 = l2_qk_norm_at(spec, i);
    const std::string name = block_name("decoder_layer", dense, l2);
    if (!model["blocks"].contains(name)) model["blocks"][name] = decoder_block(spec, !dense, l2);
  }
  Json layers = Json::array();
  layers.push_back(embedding("embed_tokens", spec.vocab, spec.hidden));
  add_layer_calls(layers, "layers", "decoder_layer", spec);
  layers.push_back(layer("norm", "rmsnorm"));
  layers.push_back(lm_head("lm_head", spec, "embed_tokens"));
  model["layers"] = std::move(layers);
}

void emit_gpt2(const Spec& spec, Json& model) {
  Json body = Json::array();
  body.push_back(layer("ln_1", "layernorm"));
  body.push_back(attention("attn", spec, true));
  body.push_back(with_inputs(layer("attn_add", "add"), {"attn", "x"}));
  body.push_back(layer("ln_2", "layernorm"));
  body.push_back(linear("mlp.c_fc", spec.mlp.intermediate, true));
  body.push_back(layer("mlp.act", spec.mlp.activation));
  body.push_back(linear("mlp.c_proj", spec.hidden, true));
  body.push_back(with_inputs(layer("mlp_add", "add"), {"mlp.c_proj", "attn_add"}));
  model["blocks"] = Json{{"block", {{"args", {{"window", 0}}}, {"layers", std::move(body)}}}};
  Json layers = Json::array();
  layers.push_back(embedding("wte", spec.vocab, spec.hidden));
  Json positions = layer("wpe", "position_embedding");
  positions["positions"] = spec.max_positions;
  layers.push_back(std::move(positions));
  add_layer_calls(layers, "h", "block", spec);
  layers.push_back(layer("ln_f", "layernorm"));
  layers.push_back(lm_head("lm_head", spec, "wte"));
  model["layers"] = std::move(layers);
}

void emit_neox(const Spec& spec, Json& model) {
  // GPTNeoXLayer: x + attn(ln1(x)) + mlp(ln2(x)) with use_parallel_residual,
  // else sequential.
  Json body = Json::array();
  body.push_back(layer("input_layernorm", "layernorm"));
  body.push_back(attention("attention", spec, true, false, true));
  std::string mlp_input = "x";
  if (!spec.parallel_residual) {
    body.push_back(with_inputs(layer("attn_add", "add"), {"attention", "x"}));
    mlp_input = "attn_add";
  }
  body.push_back(with_input(layer("post_attention_layernorm", "layernorm"), mlp_input));
  body.push_back(linear("mlp.dense_h_to_4h", spec.mlp.intermediate, true));
  body.push_back(layer("mlp.act", spec.mlp.activation));
  body.push_back(linear("mlp.dense_4h_to_h", spec.hidden, true));
  if (spec.parallel_residual) {
    body.push_back(with_inputs(layer("residual", "add"), {"attention", "mlp.dense_4h_to_h", "x"}));
  } else {
    body.push_back(with_inputs(layer("mlp_add", "add"), {"mlp.dense_4h_to_h", "attn_add"}));
  }
  model["blocks"] =
      Json{{"gpt_neox_layer", {{"args", {{"window", 0}}}, {"layers", std::move(body)}}}};
  Json layers = Json::array();
  layers.push_back(embedding("embed_in", spec.vocab, spec.hidden));
  add_layer_calls(layers, "layers", "gpt_neox_layer", spec);
  layers.push_back(layer("final_layer_norm", "layernorm"));
  layers.push_back(lm_head("embed_out", spec, "embed_in"));
  model["layers"] = std::move(layers);
}

void emit_bert(const Spec& spec, Json& model) {
  Json body = Json::array();
  body.push_back(attention("attention", spec, false));
  body.push_back(with_inputs(layer("attention_add", "add"), {"attention", "x"}));
  body.push_back(layer("attention_layernorm", "layernorm"));
  body.push_back(linear("intermediate", spec.mlp.intermediate, true));
  body.push_back(layer("act", spec.mlp.activation));
  body.push_back(linear("output", spec.hidden, true));
  body.push_back(with_inputs(layer("output_add", "add"), {"output", "attention_layernorm"}));
  body.push_back(layer("output_layernorm", "layernorm"));
  model["blocks"] = Json{{"encoder_layer", {{"layers", std::move(body)}}}};
  model["inputs"].push_back(Json{{"name", "token_type_ids"}, {"shape", {"batch", "seq"}}});
  Json layers = Json::array();
  layers.push_back(
      with_input(embedding("embeddings.word_embeddings", spec.vocab, spec.hidden), "input_ids"));
  Json positions = layer("embeddings.position_embeddings", "position_embedding");
  positions["positions"] = spec.max_positions;
  layers.push_back(std::move(positions));
  layers.push_back(
      with_input(embedding("embeddings.token_type_embeddings", spec.type_vocab, spec.hidden),
                 "token_type_ids"));
  layers.push_back(
      with_inputs(layer("embeddings.add", "add"),
                  {"embeddings.position_embeddings", "embeddings.token_type_embeddings"}));
  layers.push_back(layer("embeddings.layernorm", "layernorm"));
  layers.push_back(
      Json{{"name", "encoder.layer"}, {"block", "encoder_layer"}, {"repeat", spec.layers}});
  Json first = layer("pooler.first_token", "select");
  first["axis"] = 1;
  first["index"] = 0;
  layers.push_back(std::move(first));
  layers.push_back(linear("pooler.dense", spec.hidden, true));
  layers.push_back(layer("pooler.tanh", "tanh"));
  model["layers"] = std::move(layers);
  model["outputs"] = {fmt::format("encoder.layer.{}", spec.layers - 1), "pooler.tanh"};
}

// A pre-LN vision encoder layer (SigLIP's, Llama 4's): LayerNorm, attention with biases,
// residual, LayerNorm, MLP fc1 / activation / fc2 with biases, residual.
Json vision_encoder_block(const VisionSpec& v, std::string_view norm1, std::string_view norm2) {
  Json body = Json::array();
  body.push_back(layer(norm1, "layernorm"));
  Json attention = layer("self_attn", "attention");
  attention["heads"] = v.heads;
  attention["causal"] = false;
  attention["bias"] = true;
  body.push_back(std::move(attention));
  body.push_back(with_inputs(layer("attn_add", "add"), {"self_attn", "x"}));
  body.push_back(layer(norm2, "layernorm"));
  body.push_back(linear("mlp.fc1", v.intermediate, true));
  body.push_back(layer("mlp.act", v.activation));
  body.push_back(linear("mlp.fc2", v.hidden, true));
  body.push_back(with_inputs(layer("mlp_add", "add"), {"mlp.fc2", "attn_add"}));
  return Json{{"layers", std::move(body)}};
}

// The image encoder comes after the decoder: its own input (`images` images of the batch,
// read at prefill only, optional: a text-only prompt has none) and its own output, the image
// tokens in the decoder's width. Gemma 3 and Llama 4 scatter them into the embedded sequence at
// its image-token positions, which `seq` counts.
void add_image_input(const VisionSpec& v, Json& model) {
  model["dims"]["images"] = 1;
  model["inputs"].push_back(Json{{"name", "pixel_values"},
                                 {"shape", {"batch * images", v.channels, v.image, v.image}},
                                 {"prefill_only", true},
                                 {"optional", true}});
}

// The patches as tokens: a conv2d of kernel and stride `patch` (`name`), then flatten and
// transpose (`prefix` + "flatten", "transpose") to [images, side², hidden]. Returns the
// transpose, which a projector may reuse to go back.
Json patch_embedding(Json& layers, const std::string& name, const std::string& prefix,
                     const VisionSpec& v, bool bias) {
  Json patches = with_input(layer(name, "conv2d"), "pixel_values");
  patches["in_channels"] = v.channels;
  patches["out_channels"] = v.hidden;
  patches["kernel"] = v.patch;
  patches["stride"] = v.patch;
  patches["bias"] = bias;
  layers.push_back(std::move(patches));
  Json flat = layer(prefix + "flatten", "flatten");
  flat["start_dim"] = 2;
  layers.push_back(std::move(flat));  // [images, hidden, side²]
  Json to_tokens = layer(prefix + "transpose", "transpose");
  to_tokens["dim0"] = 1;
  to_tokens["dim1"] = 2;
  layers.push_back(to_tokens);  // [images, side², hidden]
  return to_tokens;
}

// Llama4VisionModel and Llama4MultiModalProjector: per 336 x 336 tile, the patches (a linear
// map of each unfolded patch, a conv without bias), a class token, learned positions,
// layernorm_pre, the encoder, layernorm_post; the class token dropped, the patches
// pixel-shuffled, the adapter's fc1 / GELU / fc2 / GELU without biases, and linear_1 to the
// decoder's width.
void emit_llama4_vision(const Spec& spec, Json& model) {
  const VisionSpec& v = *spec.vision;
  const std::int64_t side = v.image / v.patch;
  add_image_input(v, model);
  model["blocks"]["vision_encoder_layer"] =
      vision_encoder_block(v, "input_layernorm", "post_attention_layernorm");
  const std::string tower = "vision_model.";
  Json& layers = model["layers"];
  patch_embedding(layers, tower + "patch_embedding", tower + "patch_embedding.", v, false);
  Json cls = layer(tower + "class_embedding", "class_token");
  cls["tokens"] = 1;
  layers.push_back(std::move(cls));
  Json positions = layer(tower + "positional_embedding_vlm", "position_embedding");
  positions["positions"] = side * side + 1;
  layers.push_back(std::move(positions));
  layers.push_back(layer(tower + "layernorm_pre", "layernorm"));
  layers.push_back(Json{
      {"name", tower + "model.layers"}, {"block", "vision_encoder_layer"}, {"repeat", v.layers}});
  layers.push_back(layer(tower + "layernorm_post", "layernorm"));
  Json patches_only = layer(tower + "drop_class_token", "slice");
  patches_only["axis"] = 1;
  patches_only["end"] = -1;
  layers.push_back(std::move(patches_only));
  const std::string adapter = tower + "vision_adapter.";
  Json shuffle = layer(adapter + "pixel_shuffle", "reshape");
  shuffle["shape"] = {-1, v.tokens, v.shuffled};
  layers.push_back(std::move(shuffle));
  layers.push_back(linear(adapter + "mlp.fc1", v.adapter_hidden, false));
  layers.push_back(layer(adapter + "mlp.act1", "gelu"));
  layers.push_back(linear(adapter + "mlp.fc2", v.adapter_out, false));
  layers.push_back(layer(adapter + "mlp.act2", "gelu"));
  layers.push_back(linear("multi_modal_projector.linear_1", spec.hidden, v.projector_bias));
  model["outputs"] = {"lm_head", "multi_modal_projector.linear_1"};
}

void emit_siglip_vision(const Spec& spec, Json& model) {
  const VisionSpec& v = *spec.vision;
  const std::int64_t side = v.image / v.patch;
  add_image_input(v, model);
  model["blocks"]["siglip_encoder_layer"] = vision_encoder_block(v, "layer_norm1", "layer_norm2");

  const std::string tower = "vision_tower.vision_model.";
  Json& layers = model["layers"];
  const Json to_tokens =
      patch_embedding(layers, tower + "embeddings.patch_embedding", tower + "embeddings.", v, true);
  Json positions = layer(tower + "embeddings.position_embedding", "position_embedding");
  positions["positions"] = side * side;
  layers.push_back(std::move(positions));
  layers.push_back(Json{
      {"name", tower + "encoder.layers"}, {"block", "siglip_encoder_layer"}, {"repeat", v.layers}});
  layers.push_back(layer(tower + "post_layernorm", "layernorm"));
  // Gemma3MultiModalProjector: back to a side x side grid, average-pooled to pooled x pooled.
  const std::string projector = "multi_modal_projector.";
  Json to_channels = to_tokens;
  to_channels["name"] = projector + "transpose";
  layers.push_back(std::move(to_channels));
  Json grid = layer(projector + "grid", "reshape");
  grid["shape"] = {-1, v.hidden, side, side};
  layers.push_back(std::move(grid));
  Json pool = layer(projector + "avg_pool", "avgpool2d");
  pool["kernel"] = side / v.pooled;
  layers.push_back(std::move(pool));
  Json pooled_flat = layer(projector + "flatten", "flatten");
  pooled_flat["start_dim"] = 2;
  layers.push_back(std::move(pooled_flat));
  Json back = to_tokens;
  back["name"] = projector + "tokens";
  layers.push_back(std::move(back));  // [images, tokens, hidden]
  layers.push_back(layer(projector + "mm_soft_emb_norm", "rmsnorm"));
  layers.push_back(linear(projector + "mm_input_projection", spec.hidden, false));
  model["outputs"] = {"lm_head", projector + "mm_input_projection"};
}

}  // namespace

void emit_layers(const Spec& spec, Json& model) {
  switch (spec.family) {
    case Family::kDecoder:
      emit_decoder(spec, model);
      break;
    case Family::kGpt2:
      emit_gpt2(spec, model);
      break;
    case Family::kNeox:
      emit_neox(spec, model);
      break;
    case Family::kBert:
      emit_bert(spec, model);
      break;
  }
  if (spec.vision) {
    if (spec.vision->kind == VisionKind::kLlama4) {
      emit_llama4_vision(spec, model);
    } else {
      emit_siglip_vision(spec, model);
    }
  }
}

}  // namespace capcalc::hf

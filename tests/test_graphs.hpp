// Small models that several prediction tests derive their figures from by hand.
#pragma once

#include <string>

#include "capcalc/graph.hpp"
#include "capcalc/model.hpp"

namespace capcalc::test {

/// One MoE layer (Mixtral's block): d = 1024, 8 experts of hidden 512 (3 x 1024 x 512 =
/// 1,572,864 weights each), 2 a token, a router of 1024 x 8; batch 2 x seq 256 = 512 tokens.
inline Graph one_moe_layer() {
  return parse_model(R"({"format": "capcalc-model/1", "name": "moe",
    "dims": {"batch": 2, "seq": 256},
    "inputs": [{"name": "x", "shape": ["batch", "seq", 1024]}],
    "layers": [{"name": "moe", "op": "moe", "experts": 8, "experts_per_token": 2,
                "hidden": 512}]})",
                     "moe.json");
}

/// An attention layer (16 heads of 64) before one_moe_layer()'s block: batch 2 x seq 256 = 512
/// tokens of d = 1024 through both.
inline Graph attention_moe_block() {
  return parse_model(R"({"format": "capcalc-model/1", "name": "block",
    "dims": {"batch": 2, "seq": 256},
    "inputs": [{"name": "x", "shape": ["batch", "seq", 1024]}],
    "layers": [{"name": "attn", "op": "attention", "heads": 16},
               {"name": "moe", "op": "moe", "experts": 8, "experts_per_token": 2,
                "hidden": 512}]})",
                     "block.json");
}

/// `repeat` blocks of two linears (1,000 -> 4,000 -> 1,000, with biases) on 16 rows.
inline Graph mlp_blocks(int repeat) {
  return parse_model(R"({"format": "capcalc-model/1", "name": "ckpt",
    "dims": {"batch": 16},
    "inputs": [{"name": "x", "shape": ["batch", 1000]}],
    "blocks": {"mlp": {"layers": [
      {"name": "up", "op": "linear", "out_features": 4000},
      {"name": "down", "op": "linear", "out_features": 1000}]}},
    "layers": [{"name": "b", "block": "mlp", "repeat": )" +
                         std::to_string(repeat) + "}]}",
                     "ckpt.json");
}

}  // namespace capcalc::test

// The limits on what capcalc reads and builds, in one place, so that no input can exhaust the
// stack, the memory or the user's patience; past one, the input is a capcalc::Error naming the
// place and the limit. docs/cli.md ("Input limits") lists them for users. Each is far above what
// real models need: Llama 3 405B expands to 1,263 layers, the generated benchmark chains
// to 100,000.
#pragma once

#include <cstdint>

namespace capcalc {

// Input files (src/input_file.hpp reads them): anything that is not a regular file is refused.
inline constexpr std::int64_t kMaxJsonFileBytes = std::int64_t{64} << 20;       ///< 64 MiB.
inline constexpr std::int64_t kMaxOnnxTextFileBytes = std::int64_t{256} << 20;  ///< 256 MiB.
/// 2 GiB - 1: protobuf's own limit for one message. Larger models keep their weights as
/// external data, which capcalc does not read.
inline constexpr std::int64_t kMaxOnnxFileBytes = (std::int64_t{2} << 30) - 1;

/// Nesting of JSON arrays and objects, ONNX text brackets and protobuf messages (text or
/// binary). Their readers, nlohmann's copy and dump, and protobuf's are recursive.
inline constexpr int kMaxNestingDepth = 256;
/// Parentheses and signs in one expression of a model file (a level of parentheses counts 2).
inline constexpr int kMaxExpressionDepth = 128;
/// Block calls inside block calls (native models).
inline constexpr int kMaxBlockDepth = 32;
/// Block argument defaults that refer to one another ("b": "a * 2", "c": "b + 1", ...): each
/// link evaluates an expression inside the last.
inline constexpr int kMaxDefaultChain = 32;
/// ONNX subgraphs (If branches, Loop and Scan bodies) inside one another.
inline constexpr int kMaxSubgraphDepth = 64;
/// ONNX local functions calling one another.
inline constexpr int kMaxFunctionDepth = 64;

/// Dims of one ONNX input. ONNX sets no limit; PyTorch's kernels take at most 25.
inline constexpr int kMaxTensorRank = 32;

/// Layers of a model once blocks and repeats are expanded (native models, Hugging Face
/// configs, ONNX loops unrolled). At the limit `report` and `layers --format json` take about
/// 2 s on this project's 2-core machine (4x that at 1,000,000 layers, the limit until
/// 2026-12-06, past the hostile corpus's 10 s under load).
inline constexpr std::int64_t kMaxLayers = 250'000;
/// Decoder or encoder layers of a Hugging Face config (num_hidden_layers): each expands to 10
/// to 30 layers, and the check is made at the config's key.
inline constexpr std::int64_t kMaxHfLayers = 10'000;
/// ONNX nodes once local functions are inlined and loops unrolled, counting both branches of
/// an If whose condition is not known (2,000,000 until 2026-12-06: a model near that took 9 s
/// to `report` on this project's 2-core machine).
inline constexpr std::int64_t kMaxExpandedNodes = 500'000;
/// Iterations of one ONNX Loop or Scan that are unrolled; a longer one stays an unknown
/// operator (counted as zero, with a warning).
inline constexpr std::int64_t kMaxLoopIterations = 4096;

/// Requests of a serving trace (serve --trace), as many as --requests draws: the simulation's
/// time grows with them.
inline constexpr std::int64_t kMaxTraceRequests = 1'000'000;

/// Tokens of one request's prompt or output (serve's --prompt-tokens and --output-tokens, a
/// mix's or a trace's lengths, a distribution's parameters and its draws): ten times the longest
/// context models are trained for, so that no real workload meets it.
inline constexpr std::int64_t kMaxRequestTokens = 100'000'000;

/// Multi-token-prediction modules appended to a model (--mtp-layers, `mtp_layers`): each is one
/// more decoder layer; DeepSeek-V3 trains one.
inline constexpr std::int64_t kMaxMtpLayers = 64;

}  // namespace capcalc

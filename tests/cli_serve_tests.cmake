# CLI tests of `capcalc serve` (issue 23): a run, a search and a sweep print what they found;
# bad flags are one capcalc line with exit 2 (capcalc_usage_error from cli_usage_tests.cmake).
set(llama data/models/llama2_7b.json)

capcalc_cli_ok(serve_llm "TTFT.*TPOT.*ITL.*E2E.*KV cache.*SLO +met.*per million output tokens"
               serve ${llama} --gpu h100 --rate 2/s --prompt-tokens 500 --output-tokens 50
               --requests 100 --slo ttft_p99=500ms,tpot_p99=50ms)
capcalc_cli_ok(serve_trace "trace tests/cli/serve_trace.jsonl \\(3 requests\\).*served +3 requests"
               serve ${llama} --gpu h100 --trace tests/cli/serve_trace.jsonl)
capcalc_cli_ok(serve_dynamic "dynamic batching up to 32.*latency"
               serve data/models/resnet50.json --gpu t4 --rate 100/s --max-batch 32
               --preferred-batch 8,16,32 --max-queue-delay 2ms --requests 500)
capcalc_cli_ok(serve_find_rate "max rate +[0-9.]+ requests/s meets the SLO"
               serve ${llama} --gpu h100 --prompt-tokens 500 --output-tokens 50 --requests 300
               --find max-rate --slo ttft_p99=200ms)
capcalc_cli_ok(serve_find_replicas "replicas +[0-9]+ meets? the SLO at 40/s"
               serve ${llama} --gpu h100 --rate 40/s --prompt-tokens 500 --output-tokens 50
               --requests 300 --find replicas --slo ttft_p99=200ms)
# Floats to round-trip, never an exponent ({:.6g} wrote 0.000358407 and 6.69317e+10 alike).
capcalc_cli_ok(serve_csv_exact "\n[0-9]+\\.[0-9][0-9][0-9][0-9][0-9][0-9][0-9]+,1,200,([0-9.]+,)+0,(true|false),[0-9.]+,[0-9.]+,false,0,0\n"
               serve ${llama} --gpu h100 --sweep rate=1..2/s --prompt-tokens 200
               --output-tokens 20 --requests 200 --format csv)
capcalc_cli_ok(serve_sweep_csv "^offered_rate_per_s,replicas.*\n[0-9.]+,1,200,"
               serve ${llama} --gpu h100 --sweep rate=1..16/s --prompt-tokens 200
               --output-tokens 20 --requests 200 --format csv)

capcalc_usage_error(serve_rate_unit "--rate: 20 has no unit: write 20/s or 20/min"
                    serve ${llama} --gpu h100 --rate 20 --prompt-tokens 100)
capcalc_usage_error(serve_slo_unit "--slo ttft_p99: 500 has no unit: write 500ms or 500s"
                    serve ${llama} --gpu h100 --rate 2/s --prompt-tokens 100 --slo ttft_p99=500)
# SLO names take any case, as other named values do, and a typo gets a "did you mean".
capcalc_cli_ok(serve_slo_case "SLO +met"
               serve ${llama} --gpu h100 --rate 2/s --prompt-tokens 100 --output-tokens 20
               --requests 50 --slo TTFT_P99=500ms)
capcalc_usage_error(serve_slo_metric_typo "--slo: unknown metric \"ttf\"; did you mean \"ttft\"?"
                    serve ${llama} --gpu h100 --rate 2/s --prompt-tokens 100 --slo ttf_p99=500ms)
capcalc_usage_error(serve_slo_zero "--slo ttft_p99: a limit of 0ms never holds: give one above zero"
                    serve ${llama} --gpu h100 --rate 2/s --prompt-tokens 100 --slo ttft_p99=0ms)
# Flags the run would ignore are errors: what --validate and --mix take from their file, what
# a trace fixes, and a queue delay with no batch to wait for.
capcalc_usage_error(serve_validate_no_run_flags "--validate runs the file's cases: no --rate"
                    serve --validate data/validation/serving.json --rate 2/s)
capcalc_usage_error(serve_mix_no_run_flags "--mix runs the file's workloads: no --tensor-parallel"
                    serve --mix tests/cli/serve_mix.json --tp 2)
capcalc_usage_error(serve_trace_requests "--trace gives the arrivals and lengths: not with --requests"
                    serve ${llama} --gpu h100 --trace tests/cli/serve_trace.jsonl --requests 5)
capcalc_usage_error(serve_trace_arrival_cv
                    "--trace gives the arrivals and lengths: not with --arrival-cv"
                    serve ${llama} --gpu h100 --trace tests/cli/serve_trace.jsonl --arrival-cv 2)
capcalc_usage_error(serve_queue_delay_without_batch
                    "--max-queue-delay holds requests to batch them: add --max-batch 2 or more"
                    serve data/models/resnet50.json --gpu t4 --rate 100/s --max-queue-delay 2ms)
capcalc_usage_error(serve_find_needs_slo "--find max-rate needs --slo"
                    serve ${llama} --gpu h100 --prompt-tokens 100 --find max-rate)
capcalc_usage_error(serve_needs_rate
                    "serve needs --rate (e.g. --rate 20/s), --trace, --sweep or --find max-rate"
                    serve ${llama} --gpu h100 --prompt-tokens 100)
capcalc_usage_error(serve_batch "--batch: serve forms its own batches (see --max-batch)"
                    serve ${llama} --gpu h100 --rate 1/s --prompt-tokens 100 --batch 8)
capcalc_usage_error(serve_llm_batcher
                    "--max-batch, --preferred-batch and --max-queue-delay set Triton's dynamic batcher: an LLM (--prompt-tokens) is served by continuous batching"
                    serve ${llama} --gpu h100 --rate 1/s --prompt-tokens 100 --max-batch 8)
capcalc_usage_error(serve_bad_length
                    "--prompt-tokens: expected N, uniform:LOW..HIGH, normal:MEAN,SD or lognormal:MEDIAN,SIGMA, got \"zipf:2\""
                    serve ${llama} --gpu h100 --rate 1/s --prompt-tokens zipf:2)
capcalc_usage_error(serve_sweep_unit "--sweep: 1..64 has no unit: write 1..64/s or 1..64/min"
                    serve ${llama} --gpu h100 --prompt-tokens 100 --sweep rate=1..64)
capcalc_usage_error(serve_trace_line "tests/cli/serve_bad_trace.jsonl:2:/output_tokens: expected a positive integer, got 0"
                    serve ${llama} --gpu h100 --trace tests/cli/serve_bad_trace.jsonl)
capcalc_usage_error(serve_no_fit "a request of 100 prompt + 200000 output tokens does not fit in the KV cache (6,904 blocks of 16 tokens)"
                    serve ${llama} --gpu h100 --rate 1/s --prompt-tokens 100 --output-tokens 200000)
# SGLang's static fraction holds the weights and the cache only: on a T4 (16 GB, below 20 GiB)
# round((15,258.8 - 4,064) / 15,258.8, 3) = 0.734 of 16 GB is 11.7 GB, under Llama-3-8B's fp16
# weights, and no activations are named.
capcalc_usage_error(serve_sglang_no_room
                    "no room for a KV cache on NVIDIA T4: 73 % of 16.0 GB holds the weights (16.1 GB), nothing else"
                    serve data/models/llama3_8b.json --gpu t4 --precision fp16 --rate 2/s
                    --prompt-tokens 500 --output-tokens 50 --runtime sglang)
# Each runtime's serving defaults (data/runtimes.json) reach the scheduler. TensorRT-LLM's LLM
# API: 8,192 tokens, 2,048 sequences, 32-token blocks in 0.9 of the memory Llama-3-8B's weights
# and an 8,192-token step's activations leave on the H100 (the rules are derived by hand in
# tests/runtime_test.cpp and tests/serve_test.cpp); vLLM's 70 GiB tier does not apply to an
# A100 80GB (2,048 and 256).
capcalc_cli_ok(serve_runtime_tensorrt_llm
               "NVIDIA TensorRT-LLM: budget 8,192 tokens, 2,048 sequences, 13,554 blocks of 32 tokens \\(56.9 GB of KV cache\\), prefill not chunked, blocks reserved to the end \\(no preemption\\)"
               serve data/models/llama3_8b.json --gpu h100 --rate 2/s --prompt-tokens 500
               --output-tokens 50 --requests 100 --runtime tensorrt-llm)
# SGLang's tiers on the H100 (80 GB, 74.5 GiB, the 60-160 GiB tier): an 8,192-token budget,
# 2,048 sequences, 1-token pages, and round((76,293.9 - 13,904) / 76,293.9, 3) = 0.818 of the
# memory for the weights and the cache: 0.818 x 80e9 - 16.06e9 (Llama-3-8B's weights) = 49.4 GB,
# 376,735 tokens of 131,072 bytes (tests/runtime_test.cpp derives the fraction).
capcalc_cli_ok(serve_runtime_sglang
               "SGLang: budget 8,192 tokens, 2,048 sequences, 376,735 blocks of 1 token \\(49.4 GB of KV cache\\)"
               serve data/models/llama3_8b.json --gpu h100 --rate 2/s --prompt-tokens 500
               --output-tokens 50 --requests 100 --runtime sglang)
capcalc_cli_ok(serve_runtime_vllm_a100
               "vLLM \\(CUDA graphs, torch.compile\\): budget 2,048 tokens, 256 sequences, 6,958 blocks of 16 tokens"
               serve ${llama} --gpu a100-80gb --rate 2/s --prompt-tokens 500 --output-tokens 50
               --requests 100)
capcalc_cli_ok(serve_speculative "3 draft tokens accepted at 0.7 \\(2.53 tokens per step\\)"
               serve ${llama} --gpu h100 --rate 2/s --prompt-tokens 500 --output-tokens 50
               --requests 100 --speculative-tokens 3 --acceptance-rate 0.7 --prefix-hit-rate 0.5)
capcalc_usage_error(serve_speculative_needs_rate
                    "--speculative-tokens needs --acceptance-rate (the chance each draft token is accepted)"
                    serve ${llama} --gpu h100 --rate 1/s --prompt-tokens 100 --speculative-tokens 3)
capcalc_usage_error(serve_rate_range "--rate must be between 1e-6/s and 1e9/s (got 1e-07/s)"
                    serve ${llama} --gpu h100 --rate 1e-7/s --prompt-tokens 100)

# --sweep -o curve.svg writes well-formed SVG (xmllint, where installed) and prints the table.
if(XMLLINT)
  add_test(NAME cli.serve_sweep_svg
           COMMAND bash -c "set -e; '$<TARGET_FILE:capcalc_cli>' serve ${llama} --gpu h100 --sweep rate=1..16/s --prompt-tokens 200 --output-tokens 20 --requests 200 --slo ttft_p99=500ms -o '${CMAKE_CURRENT_BINARY_DIR}/serve_curve.svg' | grep -q 'TTFT P99'; '${XMLLINT}' --noout '${CMAKE_CURRENT_BINARY_DIR}/serve_curve.svg'; grep -q 'knee' '${CMAKE_CURRENT_BINARY_DIR}/serve_curve.svg'"
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endif()

# The published serving benchmarks (data/validation/serving.json): a gate just above what the
# simulator measures (median 7.6 %, worst 3.19x, 34 of 39 within 2x, held out 7 at 4.7 %, since
# the serving runtimes' FlashAttention-style kernels skip causally masked tiles and fp8
# activations stay 16-bit between layers, 2026-12-07; 9.2 %, 3.17x and 5.7 % since
# a step's prompt chunks attend within their own requests, 2026-12-07: TensorRT-LLM's 2048/128
# runs -43 % and -28 % -> -6 % and -9 %, MI300X 70B 2048/2048 2.97x -> 3.17x; 9.7 % and 2.97x
# since seven held-out Llama 3.3 70B rows of a newer TensorRT-LLM page were added, 2026-12-07;
# 11.4 % and 27 of 32 since the TensorRT-LLM cases run with trtllm-bench's own batch limits,
# 2026-12-07; 14.3 % since a prefill computes
# its last token's logits only, 2026-12-06; 15.1 % and 2.96x since MI300X's sustained matrix
# clock, 2026-12-06; 3.75x and 25 before it; 11.9 % when the set was added; docs/serving.md),
# so that a change that makes it worse fails.
add_test(NAME cli.serve_validate_gate
         COMMAND capcalc_cli serve --validate data/validation/serving.json
                 --max-median-error 0.077 --max-worst-factor 3.20 --min-within-2x 34
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.serve_validate_gate PROPERTIES
  PASS_REGULAR_EXPRESSION "39 cases: median \\|error\\| 7.6 %, worst 3.19x, 34 within 2x\nheld out \\(7\\): median \\|error\\| 4.7 %")
# Each gate fails, exit 1, when the figure passes its limit (the gates are validate's:
# src/cli/gates.cpp).
add_test(NAME cli.serve_validate_gates_fail
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 "-DARGS=serve;--validate;data/validation/serving.json;--max-median-error;0.01;--max-worst-factor;1.01;--min-within-2x;1000"
                 -DEXPECT_CODE=1
                 "-DSTDERR_REGEX=serve --validate: median \\|error\\| [0-9.]+ % exceeds the limit 1.0 %\ncapcalc: serve --validate: worst error [0-9.]+x exceeds the limit 1.01x\ncapcalc: serve --validate: [0-9]+ of [0-9]+ cases within 2x, below the limit 1000"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
# MLPerf's llama2-70b Offline and Server results (data/validation/serving_pending.json) are not
# gated: their mean prompt length is an assumption (docs/serving.md). Every case must still run,
# the Server ones at --find max-rate's rate for MLPerf's limits.
add_test(NAME cli.serve_validate_pending
         COMMAND capcalc_cli serve --validate data/validation/serving_pending.json
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.serve_validate_pending PROPERTIES
  PASS_REGULAR_EXPRESSION "server +output_tokens_per_s.*8 cases: median \\|error\\| [0-9.]+ %.*held out \\(8\\)")
capcalc_usage_error(serve_validate_with_model "--validate runs the file's cases: no MODEL or --gpu"
                    serve ${llama} --validate data/validation/serving.json)
capcalc_usage_error(serve_gate_without_validate
                    "--max-median-error, --max-worst-factor and --min-within-2x gate --validate"
                    serve ${llama} --gpu h100 --rate 1/s --prompt-tokens 100 --max-median-error 0.2)
capcalc_usage_error(serve_needs_model "serve needs a MODEL (or --validate FILE)"
                    serve --gpu h100 --rate 1/s --prompt-tokens 100)
capcalc_usage_error(serve_draft_with_cost "--draft times the draft model itself: not with --draft-cost"
                    serve ${llama} --gpu h100 --rate 1/s --prompt-tokens 100 --speculative-tokens 3
                    --acceptance-rate 0.7 --draft tinyllama --draft-cost 0.1)
# A short run names the condition it misses: too few requests (200 of 1,000), or arrivals
# spanning too few latencies (1,000 requests at 200/s against minutes of queue).
capcalc_cli_ok(serve_short_run_requests "short run    200 requests, under the 1,000 that tell a steady state from a growing queue: try --requests 1,000"
               serve data/models/llama3_8b.json --gpu h100 --rate 5/s --prompt-tokens 512 --output-tokens 128 --requests 200)
capcalc_cli_ok(serve_short_run_span "short run    the arrivals span 0.12 mean E2E latencies, under the 10 that tell"
               serve data/models/llama3_8b.json --gpu h100 --rate 200/s --prompt-tokens 512 --output-tokens 512 --requests 1000)
capcalc_usage_error(serve_moe_imbalance_dense
                    "data/models/llama2_7b.json: --moe-imbalance: the model has no \"moe\" layer"
                    serve ${llama} --gpu h100 --rate 1/s --prompt-tokens 100 --moe-imbalance 1.3)
capcalc_cli_ok(serve_draft_model "4 draft tokens from llama2_7b accepted at 0.7"
               serve data/models/llama2_70b.json --gpu h100 --tp 4 --rate 2/s --prompt-tokens 500
               --output-tokens 50 --requests 50 --speculative-tokens 4 --acceptance-rate 0.7
               --draft data/models/llama2_7b.json)
capcalc_cli_ok(serve_moe_imbalance "TTFT"
               serve data/models/mixtral_8x7b_hf.json --gpu h100 --tp 2 --rate 2/s
               --prompt-tokens 500 --output-tokens 50 --requests 50 --moe-imbalance 1.3)
# Expert parallelism as vLLM runs it without data parallelism: Mixtral's 8 experts whole, 2 on
# each of the replica's 4 devices, the moe outputs all-reduced (predict: "expert parallelism
# over a replica's tensor-parallel devices all-reduces" derives the exchange).
capcalc_cli_ok(serve_expert_parallel "x4 \\(tensor-parallel, experts whole over them: expert-parallel\\), 1 replica.*TTFT"
               serve mixtral_8x7b_hf --gpu h100 --tp 4 --ep 4 --rate 2/s
               --prompt-tokens 500 --output-tokens 50 --requests 50)
capcalc_usage_error(serve_expert_parallel_not_tp
                    "--expert-parallel 2 spreads a replica's experts over its devices: it must be a multiple of --tensor-parallel (4), the devices of one data-parallel attention rank"
                    serve mixtral_8x7b_hf --gpu h100 --tp 4 --ep 2 --rate 1/s --prompt-tokens 100)
# Data-parallel attention (--ep 8 over ranks of --tp 2): each rank's KV cache is what 90 % of
# the 80 GB leave beside the weights per device, 8.79 GB (the 1.54 G parameters outside the
# experts halved, the 29.0 G of the experts an eighth each, at 2 bytes; config.json: 48 layers
# x 128 experts x 3 x 2,048 x 768 expert parameters of 30.5 G in all), and the activations:
# 62.9 GB, where tensor parallelism alone over the rank's 2 devices (30.5 GB of weights each)
# leaves 41.1 GB.
capcalc_cli_ok(serve_attention_ranks
               "x8 \\(data-parallel attention: 4 ranks of 2 tensor-parallel; experts whole over the 8 devices: expert-parallel, all-gather dispatch\\), 1 replica.*\\(62[.]9 GB of KV cache\\), each of 4 ranks; requests dealt to the least loaded \\(4 x waiting \\+ running\\).*sequences per rank's step.*of each rank's [0-9,]+ blocks mean"
               serve qwen3_30b_a3b_hf --gpu h100 --tp 2 --ep 8 --rate 4/s --prompt-tokens 500
               --output-tokens 50 --requests 50)
capcalc_cli_ok(serve_attention_ranks_sglang
               "x4 \\(data-parallel attention: 4 ranks; experts whole over the 4 devices: expert-parallel, all-gather dispatch\\).*each of 4 ranks; requests dealt round robin"
               serve qwen3_30b_a3b_hf --gpu h100 --tp 1 --ep 4 --runtime sglang --rate 4/s
               --prompt-tokens 500 --output-tokens 50 --requests 50)
# DeepEP sends a DeepSeek-V3 token to the devices holding any of its 8 experts, at most the 4
# of its 4 expert groups (config.json: n_routed_experts 256, n_group 8, topk_group 4; a group's
# 32 experts on one device of the 8), where the all-gather
# brings every rank's tokens to every device: the same requests on 8 ranks take 38.5 ms a token
# against 40.0 ms (TPOT).
capcalc_cli_ok(serve_attention_ranks_deepep
               "expert-parallel, DeepEP dispatch\\), 1 replica.*TPOT +38[.]5 ms"
               serve deepseek_v3_hf --gpu h200 --precision fp8 --tp 1 --ep 8 --moe-dispatcher deepep
               --rate 8/s --prompt-tokens 1000 --output-tokens 1000 --requests 1000)
capcalc_cli_ok(serve_attention_ranks_allgather
               "expert-parallel, all-gather dispatch\\), 1 replica.*TPOT +40[.]0 ms"
               serve deepseek_v3_hf --gpu h200 --precision fp8 --tp 1 --ep 8
               --rate 8/s --prompt-tokens 1000 --output-tokens 1000 --requests 1000)
capcalc_usage_error(serve_moe_dispatcher_without_ranks
                    "--moe-dispatcher sets how data-parallel attention ranks exchange tokens: add --expert-parallel above --tensor-parallel"
                    serve qwen3_30b_a3b_hf --gpu h100 --tp 4 --ep 4 --moe-dispatcher deepep
                    --rate 1/s --prompt-tokens 100)
capcalc_usage_error(serve_attention_ranks_disaggregated
                    "disaggregated serving with data-parallel attention (--expert-parallel above --tensor-parallel) is not modelled"
                    serve qwen3_30b_a3b_hf --gpu h100 --tp 1 --ep 4 --rate 1/s --prompt-tokens 100
                    --disaggregate 1:1)
capcalc_usage_error(serve_attention_ranks_not_llm
                    "--expert-parallel above --tensor-parallel runs data-parallel attention ranks of an LLM: add --prompt-tokens"
                    serve resnet50 --gpu h100 --ep 2 --rate 1/s)
capcalc_usage_error(serve_expert_parallel_dense
                    "data/models/llama2_7b.json: --expert-parallel: the model has no \"moe\" layer"
                    serve ${llama} --gpu h100 --tp 2 --ep 2 --rate 1/s --prompt-tokens 100)
capcalc_schema_test(serve_validate - data/schema/serve-validate-output.schema.json
                    serve --validate tests/cli/serve_validation_small.json --format json)

# Prefill/decode disaggregation: the pools, their link and the split search.
capcalc_cli_ok(serve_disaggregated
               "KV cache sent from prefill to decode replicas over NVLink 4, 131 kB a token per device.*pools +1 prefill \\+ 3 decode replicas, busy [0-9]+ % and [0-9]+ %; KV transfer over NVLink 4: mean 765 µs"
               serve llama3_8b --gpu h100 --rate 8/s --prompt-tokens 2000 --output-tokens 200
               --requests 200 --disaggregate 1:3)
capcalc_cli_ok(serve_find_split
               "split +[123]:[123] meets the SLO up to [0-9.]+ req/s, [0-9.]+x the colocated replicas' [0-9.]+ req/s.*colocated x4.*1:3.*2:2.*3:1"
               serve llama3_8b --gpu h100 --prompt-tokens 2000 --output-tokens 200
               --requests 200 --replicas 4 --find split --slo ttft_p99=300ms,tpot_p99=20ms)
capcalc_usage_error(serve_disaggregate_form
                    "--disaggregate: expected PREFILL:DECODE replicas, each a whole number from 1 to 9999999 (e.g. 1:3), got \"0:3\""
                    serve ${llama} --gpu h100 --rate 1/s --prompt-tokens 100 --disaggregate 0:3)
capcalc_usage_error(serve_disaggregate_replicas
                    "--disaggregate PREFILL:DECODE sets the replicas: drop --replicas"
                    serve ${llama} --gpu h100 --rate 1/s --prompt-tokens 100 --disaggregate 1:3
                    --replicas 4)
capcalc_usage_error(serve_disaggregate_llm "--disaggregate splits LLM serving: add --prompt-tokens"
                    serve data/models/resnet50.json --gpu t4 --rate 1/s --disaggregate 1:1)
capcalc_usage_error(serve_find_split_replicas
                    "--find split divides --replicas N (2 or more) into prefill and decode pools"
                    serve ${llama} --gpu h100 --prompt-tokens 100 --find split --slo ttft_p99=1s)

# serve --mix: a fleet of an LLM and a CNN, each on the cheapest device meeting its SLO. The
# candidates line shows what each cost, so the choice can be checked by reading it: ResNet-50 on
# one L4 ($0.799/h) beats one A10 ($0.860/h) and two T4s ($1.18/h).
capcalc_cli_ok(serve_mix
               "chat +10/s +NVIDIA H100 SXM5 80GB +1 +1 .*vision +400/s +NVIDIA L4 +1 +1 .*total +\\$2,408 per month \\(\\$3.30/h over 730 h a month\\).*vision: t4: 2 replicas, \\$1.18/h; l4: 1 replica, \\$0.799/h; a10: 1 replica, \\$0.860/h"
               serve --mix tests/cli/serve_mix.json)
capcalc_usage_error(serve_mix_bad_key
                    "tests/cli/serve_mix_bad_key.json:/workloads/0/replica: unknown key \"replica\" in a mix workload"
                    serve --mix tests/cli/serve_mix_bad_key.json)
capcalc_usage_error(serve_mix_model "--mix runs the file's workloads: no MODEL or --gpu"
                    serve data/models/resnet50.json --mix tests/cli/serve_mix.json)
capcalc_usage_error(serve_mix_csv "--format csv: serve --mix writes table or json"
                    serve --mix tests/cli/serve_mix.json --format csv)
capcalc_cli_ok(serve_find_split_csv "^offered_rate_per_s,.*,prefill_replicas,decode_replicas\n[0-9.e+]+,3,[0-9]+,.*,0,0\n[0-9.e+]+,3,[0-9]+,.*,1,2\n[0-9.e+]+,3,[0-9]+,.*,2,1\n$"
               serve llama2_7b --gpu h100 --prompt-tokens 500 --output-tokens 50 --requests 200
               --replicas 3 --find split --slo ttft_p99=500ms --format csv)

# CLI tests of the command line itself (issue 20): every usage error is one capcalc line with
# exit 2, named values take any case, limits need their units, a flag the run would ignore is
# an error, and numbers are checked. Uses capcalc_cli_ok/capcalc_cli_error from
# cli_tests.cmake, which is included first.

# capcalc_usage_error(name message args...): stderr is exactly "capcalc: error: MESSAGE\n"
# (MESSAGE literal, not a regex), the exit code 2 and stdout empty.
function(capcalc_usage_error name message)
  string(REGEX REPLACE "([][+.*()^$?|\\\\])" "\\\\\\1" escaped "${message}")
  capcalc_cli_error(${name} "^capcalc: error: ${escaped}\n$" ${ARGN})
endfunction()

set(resnet data/models/resnet50.json)
set(llama data/models/llama2_7b.json)

# What CLI11 rejects, in capcalc's words: an unknown option, with a "did you mean" from the
# options of the subcommand being parsed, for every subcommand.
capcalc_usage_error(usage_unknown_option "unknown option --bacth; did you mean --batch?"
                    estimate ${resnet} --gpu A100 --bacth 8)
capcalc_usage_error(usage_unknown_option_layers "unknown option --fromat; did you mean --format?"
                    layers ${resnet} --fromat csv)
capcalc_usage_error(usage_unknown_option_hw_list "unknown option --tpye; did you mean --type?"
                    hw list --tpye gpu)
capcalc_usage_error(usage_unknown_option_hw_show "unknown option --fromat; did you mean --format?"
                    hw show a100 --fromat json)
capcalc_usage_error(usage_unknown_option_runtimes_list
                    "unknown option --runtime-fille; did you mean --runtime-file?"
                    runtimes list --runtime-fille x.json)
capcalc_usage_error(usage_unknown_option_runtimes_show "unknown option --fromat; did you mean --format?"
                    runtimes show vllm --fromat json)
capcalc_usage_error(usage_unknown_option_calibrate "unknown option --ouput; did you mean --output?"
                    calibrate tests/cli/records.json --ouput x.json)
capcalc_usage_error(usage_unknown_option_probe "unknown option --secnds; did you mean --seconds?"
                    probe --secnds 1)
capcalc_usage_error(usage_unknown_option_validate
                    "unknown option --max-median-eror; did you mean --max-median-error?"
                    validate --max-median-eror 0.1)
capcalc_usage_error(usage_unknown_option_compare "unknown option --sotr; did you mean --sort?"
                    compare ${resnet} --hw T4 --sotr cost)
capcalc_usage_error(usage_unknown_option_check "unknown option --max-latncy; did you mean --max-latency?"
                    check ${resnet} --hw A100 --max-latncy 20ms)
capcalc_usage_error(usage_unknown_option_roofline "unknown option --lable; did you mean --label?"
                    roofline ${resnet} --gpu A100 --lable 3)
capcalc_usage_error(usage_unknown_option_report "unknown option --ouptut; did you mean --output?"
                    report ${resnet} --gpu A100 --ouptut x.html)
capcalc_usage_error(usage_unknown_option_equals "unknown option --bacth; did you mean --batch?"
                    layers ${resnet} --bacth=8)
capcalc_usage_error(usage_unknown_short_option "unknown option -x" layers ${resnet} -x)
# Commands: unknown (with a "did you mean"), missing, and the nested ones of hw and runtimes.
capcalc_usage_error(usage_unknown_command "unknown command \"estimat\"; did you mean \"estimate\"?"
                    estimat m.json)
capcalc_usage_error(usage_unknown_hw_command "unknown hw command \"lst\"; did you mean \"list\"?"
                    hw lst)
capcalc_usage_error(usage_unknown_runtimes_command
                    "unknown runtimes command \"shw\"; did you mean \"show\"?"
                    runtimes shw vllm)
capcalc_usage_error(usage_missing_hw_command "hw needs a command: list or show (see capcalc hw --help)"
                    hw)
# A mistyped command is named before the options that follow it, which are unknown only
# because the command is (this said "unknown option --gpu").
capcalc_usage_error(usage_unknown_command_case "unknown command \"Estimate\"; did you mean \"estimate\"?"
                    Estimate ${resnet} --gpu A100 --batch 8)
# No close name: say what there is ("help" is a new user's first guess).
capcalc_usage_error(usage_unknown_command_far
                    "unknown command \"help\"; capcalc has estimate, layers, hw, runtimes, calibrate, probe, validate, compare, check, roofline, report, serve, plan, scale or models (see capcalc --help)"
                    help)
capcalc_usage_error(usage_unknown_models_command_far
                    "unknown models command \"show\"; models has list (see capcalc models --help)"
                    models show resnet50)
capcalc_usage_error(usage_unknown_hw_command_case "unknown hw command \"List\"; did you mean \"list\"?"
                    hw List --type gpu)
# RequiredError: a missing argument or required option.
capcalc_usage_error(usage_missing_model "estimate: missing MODEL (see capcalc estimate --help)"
                    estimate --gpu A100)
capcalc_usage_error(usage_missing_device "roofline: missing --gpu (see capcalc roofline --help)"
                    roofline ${resnet})
capcalc_usage_error(usage_missing_hw_show_device "hw show: missing DEVICE (see capcalc hw show --help)"
                    hw show)
capcalc_usage_error(usage_missing_records "calibrate: missing RECORDS (see capcalc calibrate --help)"
                    calibrate)
# ExtrasError: an argument too many.
capcalc_usage_error(usage_extra_argument "estimate: unexpected argument \"b.json\""
                    estimate a.json b.json --gpu A100)
capcalc_usage_error(usage_extra_argument_validate "validate: unexpected argument \"extra\""
                    validate extra)
# ArgumentMismatch: no value, or one value given twice.
capcalc_usage_error(usage_no_value "--batch needs a value" estimate ${resnet} --gpu A100 --batch)
capcalc_usage_error(usage_given_twice "--gpu given 2 times (A100, H100): give it once"
                    report ${resnet} --gpu A100 --hw H100)
# ExcludesError and ConversionError.
capcalc_usage_error(usage_excludes "give --profile or --runtime, not both"
                    compare ${resnet} --hw T4 --runtime vllm --profile eager)
capcalc_usage_error(usage_flag_value "--checkpointing is a flag: it takes no value"
                    estimate ${resnet} --gpu A100 --checkpointing=maybe)
# --help and --version still print on stdout and exit 0.
capcalc_cli_ok(usage_help "^Predict time, throughput and memory on a device\nUsage: .*estimate \\[OPTIONS\\] model"
               estimate --help)
capcalc_cli_ok(usage_help_nested "One row per device\nUsage: .*list \\[OPTIONS\\]" hw list --help)
capcalc_cli_ok(usage_help_despite_missing "Usage: " check --help)

# Named values take any case; the code receives the canonical lower-case name.
capcalc_cli_ok(case_estimate "\"mode\": \"training\",.*\"precision\": \"fp16\",.*\"optimizer\": \"sgd\""
               estimate ${resnet} --gpu A100 --precision FP16 --mode Training --optimizer SGD --format JSON)
capcalc_cli_ok(case_profile "workload +inference, fp32, batch 1, eager profile\n"
               estimate ${resnet} --gpu A100 --profile Eager)
capcalc_cli_ok(case_hw_list "^id,name,type,.*\nt4,NVIDIA T4,gpu," hw list --type GPU --format CSV)
capcalc_cli_ok(case_compare "^\\*\\*resnet50 .*: 2 devices, by cost\\*\\*\n\n\\| device \\| prec \\|.*\n\\| t4 \\| fp16 \\|.*\n\\| t4 \\| bf16 \\|"
               compare ${resnet} --hw T4,A100 --sort Cost --format Markdown --precision FP16,Bf16)
capcalc_cli_ok(case_check "^\\{\n  \"schema_version\": 1,"
               check ${resnet} --hw A100 --max-latency 1s --mode Inference --format JSON)
# --format names come from src/cli/formats.cpp; a document with fewer formats says which.
capcalc_usage_error(format_unknown
                    "--format must be one of table, json, junit or markdown (got \"tabel\"); did you mean \"table\"?"
                    check --budget tests/cli/budget_pass.json --format tabel)
# serve --validate has no CSV: it printed the table for --format csv until issue 22.
capcalc_usage_error(format_serve_validate_csv "--format csv: serve --validate writes table or json"
                    serve --validate data/validation/serving.json --format csv)
capcalc_usage_error(case_unknown_value
                    "--mode must be one of inference or training (got \"trainig\"); did you mean \"training\"?"
                    estimate ${resnet} --gpu A100 --mode trainig)

# A limit without a unit is an error that shows the fix; counts may stay bare.
capcalc_usage_error(limit_memory_no_unit "--max-memory: 16 has no unit: write 16GB or 16GiB"
                    check ${resnet} --hw A100 --max-memory 16)
capcalc_usage_error(limit_latency_no_unit "--max-latency: 20 has no unit: write 20ms or 20s"
                    check ${resnet} --hw A100 --max-latency 20)
capcalc_usage_error(limit_ttft_no_unit "--max-ttft: 0.5 has no unit: write 0.5ms or 0.5s"
                    check ${llama} --hw A100 --prompt-tokens 128 --max-ttft 0.5)
capcalc_usage_error(limit_cost_no_unit "--max-cost: 500 has no unit: write 500USD or $500"
                    check ${resnet} --hw A100 --max-cost 500)
capcalc_usage_error(limit_throughput_no_unit "--min-throughput: 1000 has no unit: write 1000/s or 1000/min"
                    check ${resnet} --hw A100 --min-throughput 1000)
# A language model's bare rate is ambiguous by its seq; tokens need a seq; serving counts
# generated tokens; an item split from its number by the shell, or misspelt, is named.
capcalc_usage_error(limit_throughput_bare_llm
                    "--min-throughput \"100/s\": a sample of llama2_7b is a sequence of 4,096 tokens; write 100 tokens/s or 100 sequences/s"
                    check ${llama} --hw A100 --min-throughput 100/s)
capcalc_usage_error(limit_throughput_tokens_no_seq
                    "--min-throughput \"100 tokens/s\": resnet50 has no sequence dimension, so it counts no tokens; write 100/s or 100 samples/s"
                    check ${resnet} --hw A100 --min-throughput "100 tokens/s")
capcalc_usage_error(limit_throughput_serving_sequences
                    "--min-throughput \"2 sequences/s\": serving (--prompt-tokens) counts generated tokens, not sequences; write the limit in tokens/s"
                    check ${llama} --hw A100 --prompt-tokens 512 --min-throughput "2 sequences/s")
capcalc_usage_error(limit_throughput_unquoted
                    "check: unexpected argument \"tokens/s\": a rate that names what it counts is one argument, quoted (\"3k tokens/s\") or without the space (3ktokens/s)"
                    check ${llama} --hw A100 --min-throughput 3k tokens/s)
capcalc_usage_error(limit_latency_unquoted
                    "check: unexpected argument \"ms\": a number and its unit are one argument, without the space or quoted (e.g. 20ms or \"20 ms\")"
                    check ${resnet} --hw A100 --max-latency 20 ms)
# Units are case-sensitive (Gb would be gigabits, m milli): the one meant is named.
capcalc_usage_error(limit_memory_unit_case
                    "--max-memory: invalid size \"16gb\": units are case-sensitive; did you mean \"16GB\"?"
                    check ${resnet} --hw A100 --max-memory 16gb)
capcalc_usage_error(limit_latency_unit_case
                    "--max-latency: invalid duration \"20MS\": units are case-sensitive; did you mean \"20ms\"?"
                    check ${resnet} --hw A100 --max-latency 20MS)
capcalc_usage_error(limit_rate_unit_case
                    "--min-throughput: invalid rate \"100/S\": units are case-sensitive; did you mean \"100/s\"?"
                    check ${resnet} --hw A100 --min-throughput 100/S)
capcalc_usage_error(limit_throughput_unknown_item
                    "--min-throughput: invalid rate \"100 tokns/s\": unknown item \"tokns\"; did you mean \"tokens\"?"
                    check ${llama} --hw A100 --min-throughput "100 tokns/s")
capcalc_usage_error(limit_budget_bare_rate
                    "tests/cli/budget_bare_rate.json:/budgets/0/limits/min_throughput: \"100/s\": a sample of llama2_7b is a sequence of 4,096 tokens; write 100 tokens/s or 100 sequences/s"
                    check --budget tests/cli/budget_bare_rate.json)
capcalc_usage_error(limit_train_time_no_unit "--max-train-time: 3 has no unit: write 3h or 3d"
                    check ${resnet} --hw A100 --mode training --dataset-size 1M --max-train-time 3)
# A limit of zero is no gate: a maximum of 0 never holds, a minimum of 0 always does.
capcalc_usage_error(limit_zero_latency "--max-latency: a limit of 0ms never holds: give one above zero"
                    check ${resnet} --hw A100 --max-latency 0ms)
capcalc_usage_error(limit_zero_memory "--max-memory: a limit of 0GB never holds: give one above zero"
                    check ${resnet} --hw A100 --max-memory 0GB)
capcalc_usage_error(limit_zero_params "--max-params: a limit of 0 never holds: give one above zero"
                    check ${resnet} --hw A100 --max-params 0)
capcalc_usage_error(limit_zero_throughput
                    "--min-throughput: a minimum of 0/s always holds: give one above zero"
                    check ${resnet} --hw A100 --min-throughput 0/s)
capcalc_cli_ok(limit_count_bare "parameters 25.6 M within max 100000000"
               check ${resnet} --hw A100 --max-params 100000000)
capcalc_usage_error(limit_budget_no_unit
                    "tests/cli/budget_bare_memory.json:/budgets/0/limits/max_memory: 16 has no unit: write 16GB or 16GiB"
                    check --budget tests/cli/budget_bare_memory.json)

# A flag the run would ignore is an error.
capcalc_usage_error(ignored_input_shape
                    "data/models/resnet50.json: input shapes (--input-shape x=...) are for ONNX models; set this model's dimensions with --set NAME=VALUE"
                    estimate ${resnet} --gpu A100 --input-shape x=1x3x224x224)
capcalc_usage_error(ignored_strict
                    "data/models/resnet50.json: --strict is for ONNX models: a capcalc JSON model or Hugging Face config with an unknown operator is always an error"
                    estimate ${resnet} --gpu A100 --strict)
capcalc_usage_error(ignored_strict_layers
                    "data/models/llama2_7b.json: --strict is for ONNX models: a capcalc JSON model or Hugging Face config with an unknown operator is always an error"
                    layers ${llama} --strict)
# --causal half halves causal attention's pairs: a model without causal attention (an image
# model, an encoder) would ignore it.
capcalc_usage_error(ignored_causal_half
                    "data/models/resnet50.json: --causal half counts causal attention's pairs: the model has no causal attention layer"
                    estimate ${resnet} --gpu A100 --causal half)
capcalc_usage_error(ignored_causal_half_compare
                    "data/models/bert_base.json: --causal half counts causal attention's pairs: the model has no causal attention layer"
                    compare data/models/bert_base.json --hw A100 --causal Half)
capcalc_cli_ok(causal_half_decoder "\"macs\": [0-9]+," layers ${llama} --causal half --format json)
capcalc_usage_error(ignored_hardware_file_layers
                    "--hardware-file is read for --gpu's per-layer times: add --gpu DEVICE"
                    layers ${resnet} --hardware-file tests/cli/records.json)
capcalc_usage_error(ignored_sequence_parallel
                    "--sequence-parallel splits the norms of a tensor-parallel group: add --tensor-parallel 2 or more"
                    estimate ${llama} --gpu A100 --sequence-parallel on)
capcalc_usage_error(ignored_sequence_parallel_report
                    "--sequence-parallel splits the norms of a tensor-parallel group: add --tensor-parallel 2 or more"
                    report ${llama} --gpu A100 --mode training --sequence-parallel ON)
capcalc_usage_error(ignored_optimizer "--optimizer is for training: add --mode training"
                    estimate ${resnet} --gpu A100 --optimizer sgd)
capcalc_usage_error(ignored_optimizer_compare "--optimizer is for training: add --mode training"
                    compare ${resnet} --hw T4 --optimizer adamw)
capcalc_usage_error(ignored_kv_precision
                    "--kv-precision sets the KV cache's storage: add --prompt-tokens (LLM serving)"
                    estimate ${llama} --gpu A100 --kv-precision fp8)
capcalc_usage_error(ignored_kv_precision_compare
                    "--kv-precision sets the KV cache's storage: add --prompt-tokens (LLM serving)"
                    compare ${llama} --hw A100 --kv-precision fp8)
# roofline and report keep a KV cache only when serving (--prompt-tokens), as estimate does.
capcalc_usage_error(ignored_kv_precision_roofline
                    "--kv-precision sets the KV cache's storage: add --prompt-tokens (LLM serving)"
                    roofline ${llama} --gpu A100 --kv-precision fp8)
capcalc_usage_error(ignored_output_tokens
                    "--output-tokens needs --prompt-tokens (the prompt's length in tokens)"
                    estimate ${llama} --gpu A100 --output-tokens 64)
capcalc_usage_error(ignored_output_tokens_compare
                    "--output-tokens needs --prompt-tokens (the prompt's length in tokens)"
                    compare ${llama} --hw A100 --output-tokens 64)
capcalc_usage_error(ignored_output_tokens_check
                    "--output-tokens needs --prompt-tokens (the prompt's length in tokens)"
                    check ${llama} --hw A100 --output-tokens 64 --max-latency 1s)
# estimate and compare read a training run the same way (compare.hpp's run_samples).
capcalc_usage_error(ignored_epochs_with_tokens "--epochs needs --dataset-size, not --tokens"
                    estimate data/models/gpt2.json --gpu A100 --mode training --tokens 1e9 --epochs 2)
capcalc_usage_error(ignored_epochs_with_tokens_compare "--epochs needs --dataset-size, not --tokens"
                    compare data/models/gpt2.json --hw A100 --mode training --tokens 1e9 --epochs 2)
# Without --mode training too: the run's shape is checked first (workload_from), by every
# command alike (compare used to answer with the mode instead).
capcalc_usage_error(epochs_with_tokens_inference "--epochs needs --dataset-size, not --tokens"
                    estimate data/models/gpt2.json --gpu A100 --tokens 1e9 --epochs 2)
capcalc_usage_error(epochs_with_tokens_inference_compare "--epochs needs --dataset-size, not --tokens"
                    compare data/models/gpt2.json --hw A100 --tokens 1e9 --epochs 2)
capcalc_usage_error(epochs_with_tokens_inference_check "--epochs needs --dataset-size, not --tokens"
                    check data/models/gpt2.json --hw A100 --tokens 1e9 --epochs 2 --must-fit)
capcalc_usage_error(ignored_price_without_run
                    "--price-per-hour prices a training run: add --dataset-size or --tokens"
                    estimate ${resnet} --gpu A100 --price-per-hour 2)
add_test(NAME cli.ignored_top_in_json
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 "-DARGS=estimate;${resnet};--gpu;A100;--format;json;--top;3" -DEXPECT_CODE=0
                 "-DSTDOUT_REGEX=^\\{\n" "-DSTDERR_REGEX=^warning: --top is for the table: JSON lists every layer\n$"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})

# nan, inf and negative values are rejected wherever a count, size, time or threshold is read.
capcalc_usage_error(number_batch_zero "--batch must be a whole number ≥ 1 (got 0)"
                    estimate ${resnet} --gpu A100 --batch 0)
capcalc_usage_error(number_batch_fraction "--batch must be a whole number ≥ 1 (got 1.5)"
                    layers ${resnet} --batch 1.5)
capcalc_usage_error(number_batch_list "--batch must be a whole number ≥ 1 (got 0)"
                    compare ${resnet} --hw T4 --batch 1,0)
capcalc_cli_ok(number_batch_decimal "\"batch\": 10," layers ${resnet} --batch 010 --format json)
capcalc_usage_error(number_median_nan "--max-median-error must be a number ≥ 0 (got nan)"
                    validate --max-median-error nan)
capcalc_usage_error(number_worst_below_one "--max-worst-factor must be a number ≥ 1 (got 0.5)"
                    validate --max-worst-factor 0.5)
capcalc_usage_error(number_price_inf "--price-per-hour must be a number > 0 (got inf)"
                    compare ${resnet} --hw T4 --price-per-hour inf)
capcalc_usage_error(number_dataset_negative "--dataset-size must be a count > 0 (e.g. 2e12, 2T, 1.5M) (got -1)"
                    estimate ${resnet} --gpu A100 --mode training --dataset-size -1)
capcalc_usage_error(number_epochs_nan "--epochs must be a number > 0 (got nan)"
                    check ${resnet} --hw A100 --mode training --dataset-size 1000 --epochs nan --max-train-time 1d)
capcalc_usage_error(number_tokens_hex "--tokens must be a count > 0 (e.g. 2e12, 2T, 1.5M) (got 0x10)"
                    estimate data/models/gpt2.json --gpu A100 --mode training --tokens 0x10)
capcalc_usage_error(number_tokens_suffix "--tokens must be a count > 0 (e.g. 2e12, 2T, 1.5M) (got 2X)"
                    estimate data/models/gpt2.json --gpu A100 --mode training --tokens 2X)
capcalc_usage_error(number_top_negative "--top must be a whole number ≥ 0 (got -1)"
                    estimate ${resnet} --gpu A100 --top -1)
capcalc_usage_error(number_label_negative "--label must be a whole number ≥ 0 (got -2)"
                    roofline ${resnet} --gpu A100 --label -2)
capcalc_usage_error(number_zero_stage "--zero must be a whole number from 0 to 3 (got 4)"
                    estimate ${resnet} --gpu A100 --mode training --zero 4)
capcalc_usage_error(number_threads "--threads must be a whole number from 1 to 1024 (got 0)"
                    probe --threads 0)
capcalc_usage_error(number_prompt_tokens "--prompt-tokens must be a whole number ≥ 1 (got -5)"
                    estimate ${llama} --gpu A100 --prompt-tokens -5)

capcalc_usage_error(check_kv_precision_needs_prompt
                    "--kv-precision sets the KV cache's storage: add --prompt-tokens (LLM serving)"
                    check llama2_7b --hw H100 --max-memory 80GB --kv-precision fp8)
capcalc_usage_error(usage_sequence_parallel_value
                    "--sequence-parallel must be one of on or off (got \"maybe\")"
                    estimate ${resnet} --gpu h100 --sequence-parallel maybe)

# Expert parallelism divides the devices that hold the same weights and every moe layer's
# experts; it and the load imbalance need a moe layer.
capcalc_usage_error(usage_expert_parallel_replicas
                    "--expert-parallel 4 does not divide the 6 devices that hold the same weights (6 data-parallel replicas x context-parallel 1)"
                    estimate mixtral_8x7b_hf --gpu H100 --batch 1 --mode training --tp 2 --devices 12 --ep 4)
capcalc_usage_error(usage_expert_parallel_experts
                    "--expert-parallel 3 does not divide the 8 experts of \"layers.0.block_sparse_moe\""
                    estimate mixtral_8x7b_hf --gpu H100 --batch 1 --ep 3 --devices 3)
capcalc_usage_error(usage_expert_parallel_dense "--expert-parallel: the model has no \"moe\" layer"
                    estimate ${llama} --gpu H100 --ep 2 --devices 2)
capcalc_usage_error(usage_moe_imbalance_dense "--moe-imbalance: the model has no \"moe\" layer"
                    estimate ${llama} --gpu H100 --moe-imbalance 1.3)
capcalc_usage_error(usage_moe_imbalance_range "--moe-imbalance must be a number from 1 to 1000 (got 0.5)"
                    estimate mixtral_8x7b_hf --gpu H100 --moe-imbalance 0.5)

# int4 on a device without int4 math: check and compare say how to ask for int4 weights, as
# estimate does (cli.int4_without_int4_math); their note read "no int4 (has ...)" and stopped.
capcalc_usage_error(int4_without_int4_math_check
                    "NVIDIA H100 SXM5 80GB has no int4 (has fp64, fp32, tf32, fp16, bf16, fp8, int8); for int4 weights with bf16 math: --weight-precision int4 --precision bf16"
                    check data/models/resnet50.json --hw H100 --precision int4 --must-fit)
capcalc_cli_ok(int4_without_int4_math_compare
               "\n  h100-sxm: no int4 \\(has fp64, fp32, tf32, fp16, bf16, fp8, int8\\); for int4 weights with bf16 math: --weight-precision int4 --precision bf16\n"
               compare data/models/resnet50.json --hw H100,T4 --precision int4)

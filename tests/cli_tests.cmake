# CLI golden tests: what a user sees, exit code included. Bad input must give a located
# one-line message on stderr, exit code 2 and nothing on stdout.

# capcalc_cli_ok(name stdout_regex args...)
function(capcalc_cli_ok name stdout_regex)
  add_test(NAME cli.${name}
           COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli> "-DARGS=${ARGN}"
                   -DEXPECT_CODE=0 "-DSTDOUT_REGEX=${stdout_regex}"
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endfunction()

# capcalc_cli_error(name stderr_regex args...): exit 2, message on stderr, stdout empty.
function(capcalc_cli_error name stderr_regex)
  add_test(NAME cli.${name}
           COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli> "-DARGS=${ARGN}"
                   -DEXPECT_CODE=2 "-DSTDERR_REGEX=${stderr_regex}" -DSTDOUT_EMPTY=ON
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endfunction()

set(cases tests/cli)

# The README's main job and its acceptance figures.
capcalc_cli_ok(main_job "resnet50 on NVIDIA A100 80GB SXM4.*parameters   25,557,032.*latency.*fits"
               estimate data/models/resnet50.json --gpu A100)
capcalc_cli_ok(estimate_json "\"params\": 25557032,.*\"macs\": 4089184256,.*\"latency_s\":.*\"fits\": true"
               estimate data/models/resnet50.json --gpu A100 --format json)
# GPT-2's vocabulary (50,257) misses the tensor cores' multiple of 8 in bf16: named, padded to 64.
capcalc_cli_ok(estimate_alignment "alignment    lm_head: 50,257 output features not a multiple of 8 \\(bf16 tensor cores; [0-9.]+ % of the MACs\\): pad to 50,304"
               estimate data/models/gpt2_hf.json --gpu h100 --precision bf16)
# The CPU's figures (vector fp32 only, DDR5 bandwidth) and what they predict.
# Intel publishes no FLOPS for the i9: its peak is derived, and flagged as an estimate.
capcalc_cli_ok(estimate_cpu "resnet18 on Intel Core i9-13900K.*compute +fp32 dense 2.48 TFLOP/s vector\n  ESTIMATE +the fp32 vector peak is an estimate, in no vendor document \\('capcalc hw show i9-13900k' says how it was made\\)\n +memory +128 GB at 89.6 GB/s.*latency +4.31 ms per batch of 1.*throughput +232 samples/s"
               estimate data/models/resnet18.json --gpu i9-13900k)
# Apple GPUs run fp16 (at the fp32 rate: Apple publishes no fp16 figure, so it is flagged).
capcalc_cli_ok(estimate_apple_fp16 "compute +fp16 dense 27.2 TFLOP/s vector\n  ESTIMATE +the fp16 vector peak is an estimate, in no vendor document \\('capcalc hw show m2-ultra' says how it was made\\)\n  memory"
               estimate data/models/resnet18.json --gpu m2-ultra --precision fp16)
capcalc_cli_ok(hw_show_estimate "ESTIMATE +the fp32 vector peak is an unsourced estimate.*  sources\n +https://www.apple.com/.*  corroboration \\(secondary copies"
               hw show m3-max)
capcalc_cli_ok(estimate_tpu "on Google Cloud TPU v4.*bf16"
               estimate data/models/bert_base.json --hw "TPU v4" --precision bf16)
capcalc_cli_ok(estimate_training "training, bf16, batch 32.*step time.*optimizer.*gradients"
               estimate data/models/resnet50.json --device h100 --mode training --precision bf16 --batch 32)
capcalc_cli_ok(estimate_set_dim "\"dims\": {\n *\"batch\": 1,\n *\"seq\": 512"
               estimate data/models/gpt2.json --gpu A100 --set seq=1024 --set seq=512 --format json)
capcalc_cli_ok(layers_table "layer1.0.conv2 +conv2d +\\[1, 64, 56, 56\\].*total: 25,557,032 params"
               layers data/models/resnet50.json)
capcalc_cli_ok(layers_csv "^name,op,output_shape,params,macs,flops,bytes,time_s,bound\nconv1,conv2d,1x64x112x112,9408,118013952,"
               layers data/models/resnet50.json --format csv --gpu A100)
capcalc_cli_ok(version "capcalc [0-9]+\\.[0-9]+\\.[0-9]+" --version)
capcalc_cli_error(version_extra_argument "^capcalc: error: --version takes no arguments \\(got \"extra\"\\)\n$" --version extra)

# Bad input, one class each.
capcalc_cli_error(missing_file "^capcalc: error: tests/cli/no_such.json: cannot open file\n$"
                  estimate ${cases}/no_such.json --gpu A100)
capcalc_cli_error(syntax_error "^capcalc: error: tests/cli/syntax_error.json:4:3: syntax error while parsing object key - unexpected"
                  estimate ${cases}/syntax_error.json --gpu A100)
capcalc_cli_error(bad_value "tests/cli/bad_kernel.json:/layers/0/kernel: layer \"c1\": expected a positive integer, got -1\n$"
                  layers ${cases}/bad_kernel.json)
capcalc_cli_error(wrong_type "tests/cli/wrong_type.json:/layers/0/out_channels: expected an integer or an expression string, got an array"
                  layers ${cases}/wrong_type.json)
capcalc_cli_error(unknown_op "tests/cli/unknown_op.json:/layers/1/op: layer \"act\": unknown operator \"reul\"; did you mean \"relu\"\\?"
                  layers ${cases}/unknown_op.json)
capcalc_cli_error(unknown_attribute "unknown attribute \"kernal\" for conv2d; did you mean \"kernel\"\\?"
                  layers ${cases}/unknown_attribute.json)
capcalc_cli_error(shape_mismatch "tests/cli/shape_mismatch.json:/layers/2: layer \"sum\": shapes \\[1, 8, 32, 32\\] and \\[1, 16, 32, 32\\] do not broadcast"
                  layers ${cases}/shape_mismatch.json)
capcalc_cli_error(unknown_device "unknown device \"h100-sm\"; did you mean \"h100-sxm\"\\?"
                  estimate data/models/resnet50.json --gpu h100-sm)
capcalc_cli_error(unknown_dim "the model has no dimension \"sq\" to set; did you mean \"seq\"\\?"
                  estimate data/models/gpt2.json --gpu A100 --set sq=4096)
capcalc_cli_error(bad_set "--set expects NAME=VALUE, got \"seq\""
                  layers data/models/gpt2.json --set seq)
capcalc_cli_error(unsupported_precision "has no tf32 peak in the hardware table"
                  estimate data/models/resnet50.json --gpu V100 --precision tf32)
capcalc_cli_error(bad_precision_flag "^capcalc: error: --precision must be one of fp64, fp32, tf32, fp16, bf16, fp8, int8 or int4 \\(got \"fp33\"\\); did you mean \"fp32\"\\?\n$"
                  estimate data/models/resnet50.json --gpu A100 --precision fp33)
capcalc_cli_error(no_subcommand "^capcalc: error: capcalc needs a command: estimate, layers, hw, runtimes, calibrate, probe, validate, compare, check, roofline, report, serve, plan, scale or models \\(see capcalc --help\\)\n$")
capcalc_cli_error(overflow "layer \"huge\": a count does not fit in a 64-bit integer"
                  layers ${cases}/overflow.json)
capcalc_cli_error(bad_hardware_file "tests/cli/bad_hardware.json:/devices/0/memory_gb: expected a positive number, got -80"
                  estimate data/models/tiny_cnn.json --gpu bad --hardware ${cases}/bad_hardware.json)
capcalc_cli_error(not_json_at_all "tests/cli/binary.json:1:1: syntax error"
                  layers ${cases}/binary.json)

# Issue 3: training runs, hardware listing, user hardware files.
capcalc_cli_ok(training_run "step time.*throughput.*Training run \\(115 M samples\\).*time .*device-time +[0-9]+\\.?[0-9]* device-hours\n +cost +\\$[0-9.]+ at \\$1.99/h.*energy +[0-9.]+ kWh at 400 W"
               estimate data/models/resnet50.json --mode training --dataset-size 1281167 --epochs 90 --gpu A100-80GB --batch 256 --precision bf16)
capcalc_cli_ok(training_run_json "\"training\": {\n *\"samples\": 115305030\\.0,\n *\"steps\": 450411\\.0,.*\"device_hours\":.*\"cost_usd\":.*\"energy_kwh\":"
               estimate data/models/resnet50.json --mode training --dataset-size 1281167 --epochs 90 --gpu A100-80GB --batch 256 --format json)
# One number style: grouped thousands and the unit (issue 20 §4); CSV integers exact, other
# numbers in their shortest round-trip form.
# The heaviest pipeline stage sets the pace: Llama 3 70B's last of 4 stages holds 20 blocks
# and the 128,256-word output layer.
capcalc_cli_ok(pipeline_heaviest_stage "pipeline +4 stages, 1F1B: [^\n]*\n +the heaviest, stage 4 of 4 \\(the last: output layer and loss\\), 1\\.03x the mean"
               estimate data/models/llama3_70b.json --gpu H100 --mode training --precision bf16 --devices 32 --tp 8 --pp 4 --micro-batches 16)
# Interleaved, the stages that "to fit" offers divide the micro-batches (the schedule's rule):
# --pp 16 for 64, not 9 (it once failed with the schedule's error about 9 stages).
capcalc_cli_ok(fit_interleaved_stages "--pp 16[^\n]*\n?[^\n]*\\(256 devices\\)"
               estimate data/models/gpt3_175b.json --set seq=2048 --batch 1 --gpu H100 --mode training --precision fp8 --devices 128 --tp 4 --pp 8 --virtual-stages 6 --micro-batches 64)
# gpt-oss-120b's experts in 4 bits (MXFP4 in its checkpoint), attention and embeddings in bf16:
# 63.4 GB, one 80 GB GPU (all weights at int4: 60.2 GB; all at bf16: 234 GB, 4 GPUs).
capcalc_cli_ok(expert_weight_precision "weights +63.4 GB: the routed experts' 59.1 GB at int4, the rest at bf16\n.*memory +63.5 GB of 80.0 GB: fits"
               estimate data/models/gpt_oss_120b_hf.json --gpu H100 --prompt-tokens 1024 --output-tokens 256 --expert-weight-precision int4)
# Its config's quantization_config (MXFP4) says how the checkpoint stores the experts: the
# fit advice offers that beside the split.
capcalc_cli_ok(expert_weight_storage_fit "to fit +does not fit: 234 GB of weights; needs at least 4 x NVIDIA H100 SXM5 80GB: try --tp\n? +4; or keep the routed experts as its checkpoint stores them: try\n? +--expert-weight-precision int4"
               estimate data/models/gpt_oss_120b_hf.json --gpu H100 --prompt-tokens 1024 --output-tokens 256)
capcalc_cli_error(expert_weight_precision_dense "^capcalc: error: --expert-weight-precision: the model has no \"moe\" layer\n$"
                  estimate data/models/llama3_8b.json --gpu H100 --expert-weight-precision int4)
capcalc_cli_ok(training_run_grouped "device-time +6,135,413 device-hours\n +cost +\\$15,338,532 at \\$2.50/h.*energy +4,294,789 kWh at 700 W"
               estimate data/models/llama3_70b.json --gpu H100 --mode training --precision bf16 --tokens 15e12 --devices 1024 --tp 8 --pp 4 --micro-batches 16)
capcalc_cli_ok(compare_csv_exact "resnet50,h100-sxm,NVIDIA H100 SXM5 80GB,gpu,1,fp32,training,true,,0\\.0[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]+,[0-9.]+,[0-9.]+,559151648,80000000000,true,1,host,2.5,per_run,"
               compare data/models/resnet50.json --hw H100 --format csv --mode training --batch 1
               --dataset-size 1281167 --epochs 90)
# At batch 1 every layer sits at the floor: the heaviest by FLOPs come first, not the first ten.
capcalc_cli_ok(heaviest_layers_tie "Heaviest layers[^\n]*\n[^\n]*\n[^\n]*\n  conv1 +conv2d +\\[1, 64, 112, 112\\] +0.236 +60.0 µs[^\n]*\n  layer1.0.conv2 +conv2d +\\[1, 64, 56, 56\\] +0.231"
               estimate data/models/resnet50.json --gpu A100)
capcalc_cli_ok(training_tokens "Training run \\(488 k samples\\)"
               estimate data/models/gpt2.json --mode training --tokens 500e6 --gpu h100 --precision bf16 --batch 8)
# Issue 4: the 6N + attention cross-check, printed beside the count; within 1 % for a dense
# decoder (Kaplan et al. 2020, Table 1), the leftovers (norms, softmax) only add.
capcalc_cli_ok(explain_6nd "check +[0-9.]+ G FLOPs per token counted.*6N = [0-9.]+ G: N = [0-9.]+ G weights used per token \\(params: 6.74 G\\)\n +attention = 6 x \\(QK \\+ AV\\) MACs per token = [0-9.]+ G\n +6N \\+ attention = [0-9.]+ G; the count is \\+0\\.[0-9] % from it"
               estimate data/models/llama2_7b_hf.json --gpu H100 --mode training --precision bf16 --explain)
# Under a FlashAttention-style runtime the explanation says what it leaves out: Llama 3 8B at
# 8,192 tokens counts (8,192^2 - 8,192 x 8,193 / 2) / 8,192^2 = 50 % of its pairs masked; FP8
# training adds Transformer Engine's quantize passes (data/runtimes.json, megatron-core).
capcalc_cli_ok(explain_attention_kernels "  attention    50 % of the attention products counted are causally masked: its\n +FlashAttention-style kernels skip them\; the backward recomputes QKᵀ\n  fp8          quantize passes of 4 B per element"
               estimate data/models/llama3_8b.json --set seq=8192 --batch 1 --gpu h100-sxm --devices 8 --precision fp8 --mode training --runtime megatron-core --explain)
capcalc_cli_ok(explain_serving "prefill +the 1,000 prompt tokens of each sequence through every layer.*on the last token only.*decode step +one token per sequence over a KV cache of 1,099 tokens, the mean context\n +of the 199 steps after the first token"
               estimate data/models/llama3_8b.json --gpu H100 --prompt-tokens 1000 --output-tokens 200 --explain)
capcalc_cli_ok(explain "How these figures were computed.*matrix rate +312 TFLOP/s bf16 matrix peak"
               estimate data/models/resnet50.json --gpu A100 --precision bf16 --explain)
# Compiled: 118 of eager's 174 kernels fuse into their neighbours; the 56 left at the 7 µs
# floor (392 µs) decide the latency.
capcalc_cli_ok(compiled_profile "compiled profile.*latency +393 µs per batch of 1.*kernels +56 launched per pass.*fused +118 layers"
               estimate data/models/resnet50.json --gpu A100 --precision fp16 --profile compiled)
capcalc_cli_ok(sparsity_unsupported "2:4 requested, but this device has no 2:4 support: no speedup"
               estimate data/models/resnet50.json --gpu V100 --precision fp16 --sparsity 2:4)
# A100 has 2:4 on its tensor cores but none at fp32 (no fp32 matrix peak): it said the device
# has no 2:4 support.
capcalc_cli_ok(sparsity_no_matrix_precision
               "2:4 requested, but it runs on matrix units and this device has none at fp32: no speedup"
               estimate data/models/resnet50.json --gpu A100 --sparsity 2:4)
capcalc_cli_ok(sparsity_unstructured "unstructured: no speedup on dense hardware"
               estimate data/models/resnet50.json --gpu A100 --precision fp16 --sparsity unstructured)
capcalc_cli_ok(hw_list "t4 +gpu +16 +320.*h100-sxm +gpu +80 +3,350 +67 +989.4.*[0-9]+ devices"
               hw list --type gpu)
# A column shows only the precision it names: the T4 and V100 have fp16 and no bf16.
capcalc_cli_ok(hw_list_bf16_column "id +type +GB +GB/s +fp32 +fp16 +bf16 +fp8 +int8 +W\n.*t4 +gpu +16 +320 +8.1 +65 +- +- +130 +70\nv100-sxm2-16gb +gpu +16 +900 +15.7 +125 +- +- +- +300"
               hw list --type gpu)
capcalc_cli_error(int4_without_int4_math "V100 SXM2 16GB has no int4 peak in the hardware table \\(it has: fp64, fp32, fp16\\); for int4 weights with fp16 math: --weight-precision int4 --precision fp16"
                  estimate data/models/llama2_7b_hf.json --gpu V100 --precision int4)
capcalc_cli_ok(hw_list_csv "^id,name,type,vendor,memory_gb,memory_bandwidth_gb_per_s,fp64_vector_tflops"
               hw list --format csv)
capcalc_cli_ok(hw_list_json "\"schema_version\": 1,.*\"devices\": \\[.*\"id\": \"i9-13900k\""
               hw list --type cpu --format json)
capcalc_cli_ok(hw_show "NVIDIA A100 80GB SXM4 \\(a100-sxm4-80gb\\).*bf16 +39 +312.*sources"
               hw show a100)
# AMD's sustained matrix clocks (hardware.json): shown by `hw show`, and an estimate says the
# matrix work runs at that fraction of the peak.
capcalc_cli_ok(hw_show_sustained_clock "compute      304 CUs at 2.10 GHz; matrix work sustained at 1115 MHz fp16, 1207 MHz bf16, 1230 MHz fp8"
               hw show mi300x)
capcalc_cli_ok(estimate_sustained_clock "  clock        matrix work at 1230 MHz of 2100 \\(the vendor's sustained figure\\): 58.6 % of the matrix peak"
               estimate data/models/llama3_8b.json --gpu mi300x --precision fp8)
capcalc_cli_ok(hw_show_allreduce "all-reduce   20.0 [^ ]+ latency \\(8.00 [^ ]+ compiled\\), 77 % of 450 GB/s per direction"
               hw show h100)
capcalc_cli_ok(hw_show_compute_units "cache +50.0 MB\n  compute +132 SMs at 1.83 GHz\n"
               hw show h100-sxm)
capcalc_cli_ok(hw_show_compute_units_json "\"compute_units\": 114,\n *\"compute_unit_name\": \"SM\",\n *\"boost_clock_hz\": 1620000000"
               hw show h100-pcie --format json)
# Google's TPU v4 page: 275 TFLOP/s bf16 and int8, 32 GiB of HBM at 1,200 GB/s.
capcalc_cli_ok(hw_show_json "\"id\": \"tpu-v4\",.*\"bf16\": {\n *\"matrix_flops_per_s\": 275000000000000\\.0\n *},\n *\"int8\": {\n *\"matrix_flops_per_s\": 275000000000000\\.0.*\"memory_bytes\": 34360000000\\.0,\n *\"memory_bandwidth_bytes_per_s\": 1200000000000\\.0,"
               hw show "TPU v4" --format json)
capcalc_cli_ok(hardware_file_override "My A100.*matrix 50 %"
               estimate data/models/tiny_cnn.json --gpu A100 --hardware-file tests/cli/my_hardware.json)
capcalc_cli_ok(hardware_file_new "\"id\": \"my-box\""
               hw show my-box --format json --hardware-file tests/cli/my_hardware.json)
capcalc_cli_error(hw_unknown "unknown device \"a1000\"; did you mean" hw show a1000)
capcalc_cli_error(tokens_without_seq "--tokens needs a model with a \"seq\" dimension"
                  estimate data/models/resnet50.json --gpu A100 --mode training --tokens 1e9)
capcalc_cli_error(run_without_training "add --mode training"
                  estimate data/models/resnet50.json --gpu A100 --dataset-size 1000)
capcalc_cli_error(hardware_file_missing "tests/cli/nope.json: cannot open file"
                  hw list --hardware-file tests/cli/nope.json)

# The validation set: every case predicted with the global parameters. Every figure the README
# states is pinned, and gated just above (or, for counts, at) what is measured: a change that
# makes predictions worse fails here.
# The published set: 79 cases held out of every fit.
capcalc_cli_ok(validate "168 cases: median \\|error\\| 14.6 %, worst 3.82x, 163 within 2x\n79 held out \\(never used to set a parameter\\): median \\|error\\| 15.0 %"
               validate --max-median-error 0.147 --max-worst-factor 3.83
               --max-held-out-median-error 0.151 --min-within-2x 163)
# The measured set (data/validation/measured_h200.json): zoo models run with PyTorch on a lent
# H200 by bench/device/measure.py; each case names its runtime, whose host cost per kernel was
# chosen on the set, so all are in-sample. Pinned, and gated just above the figures.
capcalc_cli_ok(validate_measured_h200 "44 cases: median \\|error\\| 14.7 %, worst 2.03x, 43 within 2x"
               validate --measurements data/validation/measured_h200.json
               --max-median-error 0.148 --max-worst-factor 2.04 --min-within-2x 43)
# Each gate fails, exit 1, when the figure passes its limit.
add_test(NAME cli.validate_gate_fails
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 "-DARGS=validate;--max-median-error;0.01" -DEXPECT_CODE=1
                 "-DSTDERR_REGEX=median \\|error\\| 14.6 % exceeds the limit 1.0 %"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
add_test(NAME cli.validate_worst_gate_fails
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 "-DARGS=validate;--max-worst-factor;3.8" -DEXPECT_CODE=1
                 "-DSTDERR_REGEX=worst error 3.82x exceeds the limit 3.80x"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
add_test(NAME cli.validate_held_out_gate_fails
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 "-DARGS=validate;--max-held-out-median-error;0.14" -DEXPECT_CODE=1
                 "-DSTDERR_REGEX=held-out median \\|error\\| 15.0 % exceeds the limit 14.0 %"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
add_test(NAME cli.validate_within_2x_gate_fails
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 "-DARGS=validate;--min-within-2x;164" -DEXPECT_CODE=1
                 "-DSTDERR_REGEX=163 of 168 cases within 2x, below the limit 164"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
capcalc_cli_error(validate_held_out_gate_without_cases "--max-held-out-median-error: none of these cases is held out"
                  validate --measurements data/validation/measured_h200.json
                  --max-held-out-median-error 0.5)
capcalc_cli_error(validate_bad_file "tests/cli/bad_measurements.json:/cases/0/metric: unknown metric \"througput_per_s\"; did you mean \"throughput_per_s\"\\?"
                  validate --measurements tests/cli/bad_measurements.json)
capcalc_cli_error(validate_bad_tensor_parallel "tests/cli/bad_measurements_tp.json:/cases/0/tensor_parallel: \"devices\" 6 is not a multiple of \"tensor_parallel\" 4"
                  validate --measurements tests/cli/bad_measurements_tp.json)

# capcalc probe: this machine as a hardware-table entry. Each run takes about 0.3 s.
# A user's record needs no source; one that is all per-kernel floor moves the floor alone.
add_test(NAME cli.calibrate_floor_only
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 "-DARGS=calibrate;tests/cli/records_batch1.json" -DEXPECT_CODE=0
                 "-DSTDERR_REGEX=^warning: a100-sxm4-80gb: (9[0-9]|100) % of its predicted time is the per-kernel floor in every record \\(1 record\\): only the floor was fitted, the efficiencies kept"
                 "-DSTDOUT_REGEX=a100-sxm4-80gb +1 +[0-9.]+x +0.550 +0.900 +0.700"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
# A record names its model as the commands do: "resnet50" is the zoo's resnet50.json (it said
# "data/models/resnet50: cannot open file").
capcalc_cli_ok(calibrate_zoo_name "a100-sxm4-80gb +1 +[0-9.]+x"
               calibrate tests/cli/records_zoo_name.json)
# Records that name a runtime are predicted with it, as validate predicts them.
add_test(NAME cli.calibrate_runtime_records
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 "-DARGS=calibrate;tests/cli/records_runtime.json" -DEXPECT_CODE=0
                 "-DSTDOUT_REGEX=a100-sxm4-80gb +2 +"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
capcalc_cli_ok(probe_json "^\\{\n  \"schema_version\": 1,.*\"aliases\": \\[\n +\"local\"\n +\\],\n +\"type\": \"cpu\",.*\"fp32\": \\{\n +\"vector\": [0-9.e-]+\n.*\"memory_bandwidth_gb_per_s\": [0-9.e+-]+,.*\"vector_efficiency\": 1\\.0"
               probe --seconds 0.3)
capcalc_cli_ok(probe_table "^probe-[a-z0-9-]+: .* \\(probed\\), [0-9]+ threads\n  fp32 .*FLOP/s.*  fp64 .*FLOP/s.*  memory .*B/s +triad"
               probe --seconds 0.3 --format table)
capcalc_cli_error(probe_bad_seconds "^capcalc: error: --seconds must be a number from 0.01 to 600 \\(got 0\\)\n$"
                  probe --seconds 0)
capcalc_cli_error(probe_unwritable "^capcalc: error: tests/cli/no_such_dir/probe.json: cannot write file\n$"
                  probe -o tests/cli/no_such_dir/probe.json)
add_test(NAME cli.probe_round_trip
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 -DOUT=${CMAKE_CURRENT_BINARY_DIR}/probe_round_trip.json
                 -DMODEL=data/models/tiny_cnn.json
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/probe_round_trip.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})

# calibrate: fit a device to records, write a hardware file, use it.
add_test(NAME cli.calibrate_round_trip
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 -DRECORDS=${CMAKE_CURRENT_SOURCE_DIR}/cli/records.json
                 -DOUT=${CMAKE_CURRENT_BINARY_DIR}/calibrated.json
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/calibrate_round_trip.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
capcalc_cli_error(calibrate_unknown_device "unknown device \"a1000\"; did you mean"
                  calibrate tests/cli/records_bad_device.json)

# compare: one row per device; JSON and CSV carry the same rows.
# Rows by cost per 1M samples; devices without a price come after the priced ones.
capcalc_cli_ok(compare_gpus_by_cost "resnet50 \\(25.6 M params\\), inference, fp32, batch 1: [0-9]+ devices, by cost\ndevice +latency +samples/s +memory +of GB +fits +bound +\\$/1M +kWh\n-+.*\nt4 .*\\$[0-9.]+ .*\nb200 .*\\$[0-9.]+ +[0-9.]+\nm2-ultra .* +- +-\nm3-max .* +- +-\n"
               compare data/models/resnet50.json --type gpu --sort cost)
# A device without the precision is shown, marked, not dropped.
capcalc_cli_ok(compare_unsupported "\na10g +-  +- .*\n.*  a10g: no fp64 \\(has fp32"
               compare data/models/resnet50.json --type gpu --sort cost --precision fp64)
capcalc_cli_ok(compare_csv "^model,device,device_name,type,batch,precision,mode,supported,note,latency_s,throughput_per_s,run_time_s,memory_bytes,device_memory_bytes,fits,devices_to_fit,bound,price_per_device_hour_usd,cost_basis,cost_usd,energy_kwh,ttft_s,fit_flags\nresnet50,"
               compare data/models/resnet50.json --type gpu --sort cost --format csv)
capcalc_cli_ok(compare_json "^\\{\n  \"schema_version\": 1,.*\"cost_basis\": \"per_million_samples\",.*\"rows\": \\[.*\"device\": \"mi325x\",.*\"supported\": false,\n *\"note\": \"no fp64"
               compare data/models/resnet50.json --type gpu --sort cost --format json --precision fp64)
capcalc_cli_ok(compare_sweep "\nbatch +prec +latency.*\nt4 \\(16 GB\\)\n +1 +fp16 .*\n +1 +bf16 +- .*\n +8 +fp16 .*\na100-sxm4-80gb \\(80 GB\\)\n +1 +fp16 .*t4: no bf16 \\(has"
               compare data/models/resnet50.json --hw T4,A100 --batch 1,8 --precision fp16,bf16 --sort table)
capcalc_cli_ok(compare_training_run "training, bf16, batch 256, run of 115 M samples: 2 devices.*step +samples/s +run +memory.*\\$/run"
               compare data/models/resnet50.json --hw A100,H100 --mode training --precision bf16 --batch 256 --dataset-size 1281167 --epochs 90)
capcalc_cli_ok(compare_no_fit "no \\([0-9]+ with --[a-z]+"
               compare data/models/llama2_7b.json --hw T4,H100 --mode training --precision fp16)
capcalc_cli_ok(compare_markdown "^\\*\\*resnet50.*\\*\\*\n\n\\| device \\| latency \\|.*\n\\| --- \\| ---: \\|"
               compare data/models/resnet50.json --hw T4,A100 --format markdown)
capcalc_cli_error(compare_no_devices "give exactly one of --hw LIST, --type TYPE or --all"
                  compare data/models/resnet50.json)
capcalc_cli_error(compare_unknown_device "unknown device \"a1000\"; did you mean"
                  compare data/models/resnet50.json --hw T4,a1000)
capcalc_cli_error(compare_run_without_training "add --mode training"
                  compare data/models/resnet50.json --hw T4 --dataset-size 1000)

# check: budget gates. 0 every budget holds, 1 one is exceeded, 2 bad input.
capcalc_cli_ok(check_flags_pass "ok +resnet50 on a100-sxm4-80gb \\(inference, fp32, batch 1\\): latency .* within max 20ms.*all 7 budgets hold"
               check data/models/resnet50.json --hw A100 --max-latency 20ms --min-throughput 10/s --max-memory 16GiB --max-cost 500USD --max-params 100M --max-macs 5G --must-fit)
add_test(NAME cli.check_flags_fail
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 "-DARGS=check;data/models/resnet50.json;--hw;A100,T4;--max-latency;1us;--max-params;100M" -DEXPECT_CODE=1
                 "-DSTDOUT_REGEX=FAIL  resnet50 on a100-sxm4-80gb \\(inference, fp32, batch 1\\): latency .* exceeds max 1us by .*\\(.*%\\).*ok +resnet50 on t4.*parameters 25.6 M within max 100M.*2 of 4 budgets exceeded"
                 "-DSTDERR_REGEX=capcalc: check: resnet50 on t4: latency .* exceeds max 1us"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
# A bound of 1e-320 has no share to give: the amount alone, not "(inf %)" (a bound of 0 is a
# usage error: a limit of 0 never holds).
add_test(NAME cli.check_flags_fail_zero_bound
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 "-DARGS=check;data/models/resnet50.json;--hw;A100;--max-latency;1e-320s" -DEXPECT_CODE=1
                 "-DSTDOUT_REGEX=latency [0-9.]+ ms exceeds max 1e-320s by [0-9.]+ ms\n1 of 1 budget exceeded\n"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
capcalc_cli_ok(check_budget_pass "all 18 budgets hold"
               check --budget tests/cli/budget_pass.json)
add_test(NAME cli.check_budget_fail
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 "-DARGS=check;--budget;tests/cli/budget_fail.json" -DEXPECT_CODE=1
                 "-DSTDOUT_REGEX=FAIL  resnet50-10ms on t4.*FAIL  resnet50-10ms on a100-sxm4-80gb.*2 of 4 budgets exceeded"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
# Colour: only on a terminal (ctest's pipe is not one), forced by CLICOLOR_FORCE, and never
# with NO_COLOR set, whatever else asks for it.
add_test(NAME cli.check_color_forced
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 "-DARGS=check;--budget;tests/cli/budget_fail.json" -DEXPECT_CODE=1
                 "-DENV_VARS=CLICOLOR_FORCE=1" -DEXPECT_COLOR=ON "-DSTDOUT_REGEX=FAIL.*resnet50-10ms on t4"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
add_test(NAME cli.check_no_color_wins
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 "-DARGS=check;--budget;tests/cli/budget_fail.json" -DEXPECT_CODE=1
                 "-DENV_VARS=CLICOLOR_FORCE=1;NO_COLOR=1" "-DSTDOUT_REGEX=FAIL  resnet50-10ms on t4"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
add_test(NAME cli.check_junit_fail
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 "-DARGS=check;--budget;tests/cli/budget_fail.json;--format;junit" -DEXPECT_CODE=1
                 "-DSTDOUT_REGEX=^<\\?xml version=\"1.0\" encoding=\"UTF-8\"\\?>\n<testsuites name=\"capcalc check\" tests=\"4\" failures=\"2\">.*<failure message=\"latency"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
capcalc_cli_ok(check_markdown "^\\*\\*capcalc check: all 18 budgets hold\\*\\*\n\n\\| \\| budget \\|"
               check --budget tests/cli/budget_pass.json --format markdown)
capcalc_cli_ok(check_json "^\\{\n  \"schema_version\": 1,\n  \"passed\": true,"
               check --budget tests/cli/budget_pass.json --format json)
capcalc_cli_error(check_bad_limit "--max-latency: invalid duration \"20 parsecs\": expected a number and a unit"
                  check data/models/resnet50.json --hw A100 --max-latency "20 parsecs")
capcalc_cli_error(check_no_limits "no limits: give --max-latency"
                  check data/models/resnet50.json --hw A100)
capcalc_cli_error(check_no_input "give a MODEL with limit flags, or --budget FILE" check)
capcalc_cli_error(check_train_time_without_run "--max-train-time needs a training run: --mode training with --dataset-size or --tokens"
                  check data/models/resnet50.json --hw A100 --max-train-time 3d)
capcalc_cli_error(check_budget_bad_key "tests/cli/budget_bad_key.json:/budgets/0/limits/max_latncy: unknown key \"max_latncy\"; did you mean \"max_latency\"\\?"
                  check --budget tests/cli/budget_bad_key.json)
capcalc_cli_error(check_budget_bad_device "tests/cli/budget_bad_device.json:/budgets/0/devices/1: unknown device \"a1000\""
                  check --budget tests/cli/budget_bad_device.json)
capcalc_cli_error(check_budget_missing "tests/cli/budget_nope.json: cannot open file"
                  check --budget tests/cli/budget_nope.json)
# A language model's throughput names what it counts: tokens/s is sequences/s x seq (4,096
# for llama2_7b), the same figure as 2.55 sequences/s; a budget file takes the same text.
capcalc_cli_ok(check_llm_tokens "^ok    llama2_7b on a100-sxm4-80gb \\(inference, fp16, batch 1, seq 4,096\\): throughput 10.4 k tokens/s within min 3k tokens/s \\(margin 7.43 k tokens/s, 247.7 %\\)\n1 budget holds\n$"
               check llama2_7b --gpu A100 --precision fp16 --min-throughput "3k tokens/s")
capcalc_cli_ok(check_llm_sequences "throughput 2.55 sequences/s within min 120sequences/min \\(margin 0.55 sequences/s, 27.3 %\\)"
               check llama2_7b --gpu A100 --precision fp16 --min-throughput 120sequences/min)
# LLM serving without --precision takes bf16, as serve does, and fp16 on a device without a
# bf16 peak (T4); compare then shows each row's precision.
capcalc_cli_ok(serving_default_precision "workload +inference, bf16, batch 1, prompt 100"
               estimate llama2_7b --gpu H100 --prompt-tokens 100)
capcalc_cli_ok(serving_default_precision_fp16 "workload +inference, fp16, batch 1, prompt 100"
               estimate llama2_7b --gpu T4 --prompt-tokens 100)
capcalc_cli_ok(serving_default_precision_compare "h100-sxm \\(80 GB\\)\nbf16 .*t4 \\(16 GB\\)\nfp16 "
               compare llama2_7b --gpu t4,h100 --prompt-tokens 100)
capcalc_cli_ok(serving_default_precision_serve "llama2_7b on NVIDIA T4, 1 replica, fp16"
               serve llama2_7b --gpu T4 --rate 1/s --prompt-tokens 100 --requests 10)
capcalc_cli_ok(check_serving_tokens "serving 512 prompt \\+ 128 generated tokens\\): throughput 46.7 generated tokens/s within min 10 tokens/s \\(margin 36.7 generated tokens/s, 366.7 %\\)"
               check llama2_7b --gpu A100 --prompt-tokens 512 --min-throughput "10 tokens/s")
capcalc_cli_ok(check_budget_tokens "ok    llama-tokens on a100-sxm4-80gb \\(inference, fp16, batch 1, seq 4,096\\): throughput 10.4 k tokens/s within min 3k tokens/s.*ok    llama-sequences .*: throughput 2.55 sequences/s within min 2 sequences/s.*ok    resnet50-images .*: throughput 766 images/s within min 700 images/s.*all 3 budgets hold"
               check --budget tests/cli/budget_tokens.json)
# check's table is --format table, as in every other command (src/cli/formats.cpp); "text",
# its name until issue 22, is still accepted, in any case, and prints the same bytes.
capcalc_cli_ok(check_format_table "^ok    .*all 18 budgets hold\n$"
               check --budget tests/cli/budget_pass.json --format table)
add_test(NAME cli.check_format_text_alias
         COMMAND sh -c "\"$1\" check --budget tests/cli/budget_pass.json --format Text > \"$2.text\" && \"$1\" check --budget tests/cli/budget_pass.json > \"$2.table\" && cmp \"$2.text\" \"$2.table\""
                 sh $<TARGET_FILE:capcalc_cli> ${CMAKE_CURRENT_BINARY_DIR}/check_format_alias
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
capcalc_cli_ok(check_format_help "--format TEXT:\\{table,json,junit,markdown\\}=table" check --help)
# probe's default stays json: its stdout is a hardware-table entry (capcalc probe > local.json).
capcalc_cli_ok(probe_format_help "--format TEXT:\\{json,table\\}=json" probe --help)
# JUnit output is well-formed XML (xmllint from libxml2-utils).
find_program(XMLLINT xmllint)
if(XMLLINT)
  add_test(NAME cli.check_junit_xmllint
           COMMAND sh -c "\"$1\" check --budget tests/cli/budget_fail.json --format junit -o \"$2\"; test $? -eq 1 && \"$3\" --noout \"$2\""
                   sh $<TARGET_FILE:capcalc_cli> ${CMAKE_CURRENT_BINARY_DIR}/check_junit.xml ${XMLLINT}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endif()

# LLM serving: prefill, TTFT, decode and the KV cache.
capcalc_cli_ok(serving "LLM serving \\(1 sequence x 512 prompt \\+ 128 generated tokens\\).*prefill .*TTFT .*decode step .*tokens/s per sequence.*KV cache +524 kB per token"
               estimate data/models/llama2_7b.json --gpu A100-80GB --prompt-tokens 512 --output-tokens 128 --precision fp16)
capcalc_cli_ok(serving_json "\"llm\": {\n *\"prompt_tokens\": 512,\n *\"output_tokens\": 128,\n *\"prefill_s\":.*\"ttft_s\":.*\"decode_step_s\":.*\"decode_tokens_per_s\":.*\"kv_cache_bytes_per_token\": 524288\\.0"
               estimate data/models/llama2_7b.json --gpu A100-80GB --prompt-tokens 512 --output-tokens 128 --precision fp16 --format json)
# Tensor parallelism: Llama-2-70B at fp16 (138 GB) split over 4 H100s; its GQA cache is
# 80 layers x 8 KV heads x 128 x (K, V) x 2 B = 327,680 B per token, 81,920 B per device.
capcalc_cli_ok(serving_tensor_parallel "8 devices \\(tensor-parallel 4\\).*weights +138 GB at fp16, 34.5 GB per device.*memory +34.[0-9] GB of 80.0 GB: fits.*tokens/s in total.*KV cache +81.9 kB per token.*split over 4 devices.*2 data-parallel replicas of 4 devices"
               estimate data/models/llama2_70b.json --gpu H100 --prompt-tokens 512 --output-tokens 128 --precision fp16 --tp 4 --devices 8 --explain)
capcalc_cli_ok(serving_tensor_parallel_json "\"devices\": 4,.*\"tensor_parallel\": 4,.*\"kv_cache_bytes_per_token\": 81920\\.0"
               estimate data/models/llama2_70b.json --gpu H100 --prompt-tokens 512 --precision fp16 --tensor-parallel 4 --format json)
# Data parallelism: GPT-2 (124 M weights, 249 MB of bf16 gradients) over 8 RTX 4090s on PCIe
# 4.0 (32 GB/s per direction): the all-reduce outlasts the backward pass it overlaps.
capcalc_cli_ok(training_data_parallel_pcie "grad sync +[1-9][0-9.]* (ms|µs) exposed of [0-9.]+ ms \\(249 MB of gradients over PCIe 4.0 x16\\).*devices +8 data-parallel replicas of 1 device; per step one all-reduce"
               estimate data/models/gpt2.json --gpu rtx-4090 --mode training --batch 1 --devices 8 --precision bf16 --explain)
# 64 A100s are 8 DGX nodes: the all-reduce runs in two levels, NVLink inside each node and
# InfiniBand between them, hidden behind ResNet-50's backward.
capcalc_cli_ok(training_data_parallel_json "\"data_parallel\": \\{[^}]*\"exposed_s\": 0\\.0,[^}]*\"link\": \"NVLink 3 \\+ InfiniBand HDR[^}]*\"modelled\": true"
               estimate data/models/resnet50.json --gpu a100-80gb --mode training --devices 64 --precision fp16 --batch 32 --format json)
# --explain writes the level across the 8 nodes as NCCL's ring: 2(8-1) network steps of 14 us.
capcalc_cli_ok(training_data_parallel_network_steps "8 devices a node x 8 nodes, in two levels:.*\\+ 20.0 µs \\+ 2\\(8-1\\) x 14.0 µs \\+ 2\\(8-1\\)/8 x G/8 / \\(77 % of 25.0 GB/s per direction\\)"
               estimate data/models/resnet50.json --gpu a100-80gb --mode training --devices 64 --precision fp16 --batch 32 --explain)
capcalc_cli_ok(hw_show_network_step "all-reduce +20.0 µs latency \\(8.00 µs compiled\\), 77 % of 450 GB/s per direction; 14.0 µs per network step across nodes"
               hw show h100-sxm)
capcalc_cli_ok(hw_show_link_domain "intra-node +NVLink 4, 900 GB/s \\(bidirectional\\), joins 8 devices"
               hw show h100-sxm)
# DeepSeek-V3 from its config.json: 671 B weights, and its latent KV cache (61 layers x 576
# elements at fp8) kept whole on each of 8 tensor-parallel H200s.
capcalc_cli_ok(serving_deepseek_v3_latent_cache "parameters +671,026,419,200.*KV cache +35.1 kB per token"
               estimate data/models/deepseek_v3_hf.json --gpu h200 --tp 8 --devices 8 --prompt-tokens 1024 --output-tokens 256 --precision fp8)
# gpt-oss-120b with 4-bit weights fits one 80 GB H100; the weights line says their precision.
capcalc_cli_ok(serving_gpt_oss_int4_fits "parameters +116,829,156,672.*weights +60.2 GB at int4.*memory +[0-9.]+ GB of 80.0 GB: fits"
               estimate data/models/gpt_oss_120b_hf.json --gpu h100 --precision bf16 --weight-precision int4 --prompt-tokens 1024 --output-tokens 256)
# Interleaved pipeline: Llama 3 70B over 8 DGX H100s, TP 8 x PP 4 x 4 chunks; the bubble is
# 1/4 of the other three stages' times (the last holds the output layer) and the stage sends
# cross InfiniBand.
capcalc_cli_ok(training_interleaved_pipeline "pipeline 4 x 16 micro-batches, 4 virtual stages.*pipeline +4 stages x 4 chunks, interleaved 1F1B: [0-9.]+ ms of bubble \\(1/4 of the other 3 stages' times.*stage sends .* per send over InfiniBand NDR"
               estimate data/models/llama3_70b.json --gpu h100 --mode training --precision bf16 --tp 8 --pp 4 --micro-batches 16 --virtual-stages 4 --devices 64 --checkpointing)
capcalc_cli_ok(training_interleaved_pipeline_json "\"virtual_stages\": 4.*\"pipeline_sends\": \\{[^}]*\"link\": \"InfiniBand[^}]*\"modelled\": true"
               estimate data/models/llama3_70b.json --gpu h100 --mode training --precision bf16 --tp 8 --pp 4 --micro-batches 16 --virtual-stages 4 --devices 64 --format json)
capcalc_cli_error(interleaved_micro_batches "the interleaved schedule needs micro-batches \\(6\\) to be a multiple of the pipeline stages \\(4\\)"
               estimate data/models/llama3_70b.json --gpu h100 --mode training --tp 8 --pp 4 --micro-batches 6 --virtual-stages 4)
# compare for LLM serving: TTFT, request time, generated tokens/s and cost per 1M tokens; a
# 48 GB L40S cannot hold half of Llama 3 70B in bf16.
capcalc_cli_ok(compare_serving "serving 1,024 prompt \\+ 256 generated tokens a sequence.*TTFT +request +tokens/s .*\\$/1M tok.*l40s .* no \\(at least 2\\).*per 1M generated[ \n]tokens"
               compare data/models/llama3_70b.json --gpu h100,l40s --tp 2 --precision bf16 --prompt-tokens 1024 --output-tokens 256)
capcalc_cli_ok(compare_serving_json "\"cost_basis\": \"per_million_tokens\",.*\"serving\": \\{[^}]*\"prompt_tokens\": 1024,[^}]*\"output_tokens\": 256.*\"ttft_s\": [0-9]"
               compare data/models/llama3_70b.json --gpu h100 --tp 2 --precision fp8 --prompt-tokens 1024 --output-tokens 256 --format json)
capcalc_cli_error(compare_serving_training "--prompt-tokens and --output-tokens describe serving: use --mode inference"
               compare data/models/llama3_70b.json --gpu h100 --mode training --prompt-tokens 1024)
capcalc_cli_error(compare_serving_no_seq "resnet50.json: --prompt-tokens needs a model with a \"seq\" dimension"
               compare data/models/resnet50.json --gpu h100 --prompt-tokens 1024)
# check for LLM serving: a TTFT gate fails on an L40S pair and passes on H100s (exit 1).
add_test(NAME cli.check_serving_ttft
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 "-DARGS=check;data/models/llama3_70b.json;--gpu;h100,l40s;--tp;2;--precision;fp8;--prompt-tokens;1024;--output-tokens;256;--max-ttft;200ms" -DEXPECT_CODE=1
                 "-DSTDOUT_REGEX=FAIL +llama3_70b on l40s .*serving 1,024 prompt \\+ 256 generated tokens.*time to first token [0-9.]+ ms exceeds max 200ms.*ok +llama3_70b on h100-sxm .*time to first token"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
capcalc_cli_error(check_ttft_needs_serving "--max-ttft needs LLM serving: --prompt-tokens"
               check data/models/llama3_70b.json --gpu h100 --max-ttft 200ms)
# The report's hints name settings by key; the CLI shows its flags (report_input()).
capcalc_cli_ok(hint_names_flag "a larger --batch \\(up to [0-9,]+ fits\\) spreads them out"
               estimate data/models/resnet50.json --gpu h100 --batch 1)
capcalc_cli_ok(price_names_flag "cost +\\$[0-9.]+ at \\$2.00/h \\(--price-per-hour\\)"
               estimate data/models/resnet50.json --gpu h100 --mode training --dataset-size 100000
               --price-per-hour 2)
# ZeRO-1 over 8 replicas of TP 8: Llama 3 70B's bf16 training state fits 80 GB H100s.
capcalc_cli_ok(training_zero_tensor_parallel "64 devices \\(tensor-parallel 8, sequence-parallel\\), ZeRO-1.*memory +[0-9.]+ GB of 80.0 GB: fits.*ZeRO-1 +optimizer state and its update sharded over 8 devices holding the same weights"
               estimate data/models/llama3_70b.json --gpu H100 --mode training --precision bf16 --tp 8 --devices 64 --zero 1 --explain)
# ZeRO with context parallelism shards over the replicas x CP devices that hold the same weights.
capcalc_cli_ok(training_zero_context_parallel_explain "ZeRO-1 +optimizer state and its update sharded over 8 devices holding the same weights \\(4 replicas x CP 2\\)"
               estimate llama3_70b --gpu H100 --mode training --precision bf16 --devices 64 --tp 8
               --cp 2 --zero 1 --set seq=32768 --batch 8 --explain)
# Sequence parallelism (on by default in training): reduce-scatter + all-gather pairs; off, the
# norms and residual adds run whole on every device and keep their activations whole. The
# figures here and in training_context_parallel are capcalc's own, pinned against drift; each
# rule behind them is derived by hand in predict_test.cpp ("tensor parallelism all-reduces...",
# "without sequence parallelism...", "context parallelism splits the tokens...").
capcalc_cli_ok(training_sequence_parallel_pairs "\\(tensor-parallel 8, sequence-parallel\\).*all-reduce +[0-9.]+ ms: 320 reduce-scatter \\+ all-gather pairs of 42.9 GB in all over NVLink 4.*memory +77.2 GB of 80.0 GB: fits"
               estimate data/models/llama3_70b.json --gpu H100 --mode training --precision bf16 --tp 8 --devices 64 --zero 1)
capcalc_cli_ok(training_sequence_parallel_off "\\(tensor-parallel 8\\), ZeRO-1.*all-reduce +[0-9.]+ ms: 320 all-reduces of 42.9 GB in all over NVLink 4.*memory +115 GB of 80.0 GB: DOES NOT FIT"
               estimate data/models/llama3_70b.json --gpu H100 --mode training --precision bf16 --tp 8 --devices 64 --zero 1 --sequence-parallel off)
# Context parallelism: 1/4 of each 32k-token sequence a device; the ring's K and V sends cross
# the network (the node's 8 GPUs hold one tensor-parallel group); Llama 3 70B then fits.
capcalc_cli_ok(training_context_parallel "64 devices \\(tensor-parallel 8, sequence-parallel\\) \\(context-parallel 4\\), ZeRO-1.*ring +[0-9.]+ [mµ]?s exposed of [0-9.]+ ms of K and V sends round 4 devices over InfiniBand.*memory +77.2 GB of 80.0 GB: fits"
               estimate llama3_70b --gpu H100 --mode training --precision bf16 --tp 8 --cp 4 --devices 64 --zero 1 --batch 1 --set seq=32768)
capcalc_cli_error(training_context_parallel_inference "^capcalc: error: context parallelism splits training sequences: add --mode training\n$"
                  estimate llama3_70b --gpu H100 --cp 2)
# Expert parallelism: Mixtral 8x7B's 8 experts over 8 devices, TP 2 (1/16 of the experts'
# weights, gradients and Adam state a device); E x T = 16 spans two 8-GPU nodes, so the
# all-to-alls cross the network. 110 GB without EP, 30.9 GB with. Rules derived by hand in
# predict_test.cpp ("expert parallelism splits the experts ...").
capcalc_cli_ok(training_expert_parallel "64 devices \\(tensor-parallel 2, sequence-parallel\\) \\(expert-parallel 8\\), ZeRO-1.*all-to-all +[0-9.]+ ms: 128 all-to-alls of 1.88 GB sent in all among 8 devices over NVLink 4 \\+ InfiniBand.*memory +31.4 GB of 80.0 GB: fits"
               estimate mixtral_8x7b_hf --gpu H100 --mode training --precision bf16 --batch 1 --tp 2 --devices 64 --zero 1 --ep 8)
capcalc_cli_ok(training_expert_parallel_without "64 devices \\(tensor-parallel 2, sequence-parallel\\), ZeRO-1.*memory +110 GB of 80.0 GB: DOES NOT FIT"
               estimate mixtral_8x7b_hf --gpu H100 --mode training --precision bf16 --batch 1 --tp 2 --devices 64 --zero 1)
capcalc_cli_ok(training_expert_parallel_json "\"expert_parallel\": 8,\n *\"moe_imbalance\": 1.2,.*\"expert_parallel\": \\{\n *\"degree\": 8,\n *\"dispatcher\": \"alltoall\",\n *\"collective\": \"all-to-all\",\n *\"alltoall_s\": [0-9.]+,\n *\"alltoalls\": 128,\n *\"bytes\": [0-9.]+,\n *\"link\": \"NVLink 4 \\+ InfiniBand"
               estimate mixtral_8x7b_hf --gpu H100 --mode training --precision bf16 --batch 1 --tp 2 --devices 64 --zero 1 --ep 8 --moe-imbalance 1.2 --format json)
capcalc_cli_ok(training_expert_parallel_explain "expert par\\.  each device holds 1/8 of every moe layer's routed experts, with their\n +gradients and state \\(reduced and ZeRO-sharded over the 4 devices that hold"
               estimate mixtral_8x7b_hf --gpu H100 --mode training --precision bf16 --batch 1 --tp 2 --devices 64 --zero 1 --ep 8 --explain)
# Whole experts (--etp 1, Megatron-Core's expert_tensor_parallel_size=1): each device holds one
# of Mixtral's 8 experts whole (42.7 GB), the 8 expert-parallel devices are neighbours on one
# node's NVLink, and the moe layers' reduce-scatter + all-gather pairs go (64 instead of 128).
# Rules derived by hand in predict_test.cpp ("whole experts fold the expert grid ...").
capcalc_cli_ok(training_whole_experts "\\(expert-parallel 8, whole experts\\), ZeRO-1.*all-reduce +[0-9.]+ ms: 64 reduce-scatter \\+ all-gather pairs.*all-to-all +[0-9.]+ ms: 128 all-to-alls of 1.88 GB sent in all among 8 devices over NVLink 4\n.*memory +42.7 GB of 80.0 GB: fits"
               estimate mixtral_8x7b_hf --gpu H100 --mode training --precision bf16 --batch 1 --tp 2 --devices 64 --zero 1 --ep 8 --etp 1)
capcalc_cli_ok(training_whole_experts_json "\"expert_parallel\": 8,\n *\"expert_tensor_parallel\": 1,"
               estimate mixtral_8x7b_hf --gpu H100 --mode training --precision bf16 --batch 1 --tp 2 --devices 64 --zero 1 --ep 8 --etp 1 --format json)
# Serving a MoE over expert parallelism: the prefill and the decode step each include their
# token exchanges, 2 a moe layer (32 x 2), and the summary lists them beside the all-reduces.
capcalc_cli_ok(llm_expert_parallel_alltoalls "prefill a2a +[0-9.]+ ms: 64 all-to-alls of 7.34 GB sent in all among 8 devices over NVLink 4\n +decode a2a +[0-9.]+ ms: 64 all-to-alls of 7.34 MB"
               estimate mixtral_8x7b_hf --gpu H100 --devices 8 --tp 8 --etp 1 --ep 8 --batch 64 --prompt-tokens 1000 --output-tokens 200)
capcalc_cli_ok(llm_expert_parallel_alltoalls_json "\"decode_step_communication_s\": [0-9.e-]+,\n *\"prefill_alltoall_s\": [0-9.e-]+,\n *\"decode_step_alltoall_s\": [0-9.e-]+,"
               estimate mixtral_8x7b_hf --gpu H100 --devices 8 --tp 8 --etp 1 --ep 8 --batch 64 --prompt-tokens 1000 --output-tokens 200 --format json)
capcalc_schema_test(llm_expert_parallel_alltoalls - data/schema/estimate-output.schema.json
                    estimate mixtral_8x7b_hf --gpu H100 --devices 8 --tp 8 --etp 1 --ep 8 --batch 64 --prompt-tokens 1000 --output-tokens 200 --format json)
# DeepEP's dispatch (--moe-dispatcher deepep): the same 8 experts of Mixtral, 2 a token, over
# 8 devices 2 apart, 2 nodes of 4. The all-to-all sends a token's 2 x 7/8 = 1.75 copies (1.88
# GB in all); DeepEP sends one copy to the other node unless both experts are in this one
# (1 - C(4,2)/C(8,2) = 22/28) and forwards both nodes' tokens to its 3 node mates (2 x 3 x 1/4):
# 1.88 GB x (1.5 + 22/28) / 1.75 = 2.45 GB, less of it over the network. Rules derived by hand in
# predict_test.cpp ("DeepEP sends a token once for each device and node holding its experts").
capcalc_cli_ok(training_moe_dispatcher "\\(expert-parallel 8, DeepEP dispatch\\), ZeRO-1.*all-to-all +[0-9.]+ ms: 128 all-to-alls of 2.45 GB sent in all among 8 devices"
               estimate mixtral_8x7b_hf --gpu H100 --mode training --precision bf16 --batch 1 --tp 2 --devices 64 --zero 1 --ep 8 --moe-dispatcher deepep)
capcalc_cli_ok(training_moe_dispatcher_json "\"moe_imbalance\": 1.2,\n *\"moe_dispatcher\": \"hybridep\","
               estimate mixtral_8x7b_hf --gpu H100 --mode training --precision bf16 --batch 1 --tp 2 --devices 64 --zero 1 --ep 8 --moe-imbalance 1.2 --moe-dispatcher HybridEP --format json)
capcalc_cli_ok(training_moe_dispatcher_explain "DeepEP instead sends a token once to each device holding any of its\n +experts, and across nodes once to each such node"
               estimate mixtral_8x7b_hf --gpu H100 --mode training --precision bf16 --batch 1 --tp 2 --devices 64 --ep 8 --moe-dispatcher deepep --explain)
capcalc_cli_error(moe_dispatcher_without_expert_parallel "^capcalc: error: --moe-dispatcher sends tokens to experts on other devices: add --expert-parallel above 1\n$"
                  estimate mixtral_8x7b_hf --gpu H100 --mode training --batch 1 --moe-dispatcher deepep)
# The all-gather dispatcher (Megatron-Core's default, vLLM's): over a replica's 4
# tensor-parallel devices, experts whole, the moe layers' exchange is one all-reduce each (the
# 32 of them, beside the attention's 32); rules derived by hand in dispatcher_test.cpp.
capcalc_cli_ok(llm_allgather_dispatcher "\\(expert-parallel 4, whole experts, all-gather dispatch\\).*all-reduce +[0-9.]+ ms: 32 all-reduces.*EP comm +[0-9.]+ ms: 32 all-reduces of [0-9.]+ GB sent in all among 4 devices over NVLink 4.*prefill EP +[0-9.]+ ms: 32 all-reduces.*decode EP +[0-9.]+ µs: 32 all-reduces"
               estimate mixtral_8x7b_hf --gpu H100 --tp 4 --ep 4 --etp 1 --moe-dispatcher allgather --batch 8 --prompt-tokens 1000 --output-tokens 200)
capcalc_cli_ok(training_allgather_dispatcher_explain "the all-gather dispatcher instead gathers every token of the 16 devices"
               estimate mixtral_8x7b_hf --gpu H100 --mode training --precision bf16 --batch 1 --tp 2 --devices 64 --ep 8 --moe-dispatcher allgather --explain)
capcalc_cli_error(moe_dispatcher_unknown "--moe-dispatcher must be one of alltoall, deepep, hybridep or allgather \\(got \"deep\"\\); did you mean \"deepep\"\\?"
                  estimate mixtral_8x7b_hf --gpu H100 --ep 8 --devices 8 --moe-dispatcher deep)
# Selective recomputation (--recompute): DeepSeek-V3's H100 recipe recomputes MLA's
# up-projections and the three dense MLPs (Megatron-Bridge's recompute_modules): at its 4,096
# tokens the layout fits only so.
set(ds_h100_recipe deepseek_v3_hf --gpu H100 --mode training --precision bf16 --batch 1 --devices 1024
    --tp 2 --pp 8 --ep 64 --etp 1 --micro-batches 64 --virtual-stages 4 --zero 1 --set seq=4096)
capcalc_cli_ok(training_without_recompute "memory +[0-9.]+ GB of 80.0 GB: DOES NOT FIT"
               estimate ${ds_h100_recipe})
capcalc_cli_ok(training_recompute "recompute +[0-9.]+ ms \\(selective: mlp, mla_up_proj, their forward again\\).*memory +[0-9.]+ GB of 80.0 GB: fits"
               estimate ${ds_h100_recipe} --recompute MLA-up-proj,mlp)
capcalc_cli_ok(training_recompute_json "\"checkpointing\": false,\n *\"recompute\": \\[\n *\"mlp\",\n *\"mla_up_proj\"\n *\\],"
               estimate ${ds_h100_recipe} --recompute mla_up_proj,mlp,core_attn --format json)
# Its shared experts too (one of 2,048 hidden units in each of DeepSeek-V3's moe layers): 67.5 GB.
capcalc_cli_ok(training_recompute_shared "recompute +[0-9.]+ ms \\(selective: mlp, mla_up_proj, shared_experts, their forward again\\).*memory +67.5 GB of 80.0 GB: fits"
               estimate ${ds_h100_recipe} --recompute mla_up_proj,mlp,shared-experts)
capcalc_cli_error(recompute_no_shared_expert "^capcalc: error: --recompute shared_experts: the model has no shared expert \\(a \"moe\" layer's shared_hidden\\) to recompute\n$"
                  estimate mixtral_8x7b_hf --gpu H100 --mode training --batch 1 --recompute shared_experts)
capcalc_cli_ok(training_recompute_explain "what selective recomputation \\(moe_act\\) makes again"
               estimate ${ds_h100_recipe} --recompute moe_act --explain)
capcalc_cli_error(recompute_dense "^capcalc: error: --recompute moe_act: the model has no \"moe\" layer to recompute\n$"
                  estimate llama3_8b --gpu H100 --mode training --batch 1 --recompute moe_act)
capcalc_cli_error(recompute_inference "^capcalc: error: --recompute is for training: add --mode training\n$"
                  estimate llama3_8b --gpu H100 --recompute mlp)
capcalc_cli_error(recompute_with_checkpointing "^capcalc: error: --recompute selects modules to recompute, --checkpointing recomputes every block: give one of them\n$"
                  estimate llama3_8b --gpu H100 --mode training --batch 1 --recompute mlp --checkpointing)
capcalc_cli_error(recompute_unknown "--recompute must be one of core_attn, layernorm, mlp, moe_act, mla_up_proj, moe or shared_experts \\(got \"moe_acts\"\\); did you mean \"moe_act\"\\?"
                  estimate llama3_8b --gpu H100 --mode training --recompute moe-acts)
capcalc_cli_ok(check_budget_recompute "^ok +deepseek-v3-h100-recipe on h100-sxm \\(training, bf16, batch 1, seq 4,096,.*: memory [0-9.]+ GB fits in 80.0 GB"
               check --budget tests/cli/budget_recompute.json)
capcalc_cli_ok(plan_recompute_explain "Row 2: 16 H100 \\(TP 2, PP 2, DP 4, V 24, ZeRO-3, mb 8 x 16, selective\\).*\n    recompute \\(selective\\)    +[0-9.]+ ms +[0-9.]+ %"
               plan qwen3_30b_a3b_hf --gpu H100 --max-devices 16 --tokens 1e9 --global-batch 512-samples --recompute layernorm,moe_act --explain 2)
# Partial checkpointing (--checkpoint-layers): where a layout fits only by recomputing, the
# planner recomputes the fewest blocks that fit. Qwen3-30B-A3B's 48 blocks at micro-batch 8 on
# 16 H100s, ZeRO-3: 30 of them; its time is estimate's for the same flags.
capcalc_cli_ok(plan_checkpoint_layers "1  H100 +16  TP 1, PP 1, DP 16, ZeRO-3, mb 8 x 4, ckpt 30 blocks +3.65 s"
               plan qwen3_30b_a3b_hf --gpu H100 --max-devices 16 --tokens 1e9 --global-batch 512-samples --recompute layernorm,moe_act --top 1)
capcalc_cli_ok(plan_checkpoint_layers_estimate "step time +3.65 s per step of 8 x 4 micro-batches.*memory +[0-9.]+ GB of 80.0 GB: fits"
               estimate qwen3_30b_a3b_hf --gpu H100 --mode training --precision bf16 --batch 8 --devices 16 --zero 3 --micro-batches 4 --checkpointing --checkpoint-layers 30)
capcalc_cli_ok(plan_recompute "TP [0-9]+, PP [0-9]+.*selective.*\"selective\" layouts recompute layernorm, moe_act in backward"
               plan qwen3_30b_a3b_hf --gpu H100 --max-devices 16 --tokens 1e9 --global-batch 512-samples --recompute layernorm,moe_act --top 40)

# Checkpointing of the first N blocks of each pipeline chunk (Megatron-Core's recompute_method
# block): Llama 3 8B's 32 blocks over 2 stages, 8 of each stage's 16.
capcalc_cli_ok(training_checkpoint_layers "recompute +[0-9.]+ ms \\(activation checkpointing of the first 8 blocks of each pipeline chunk: the forward again\\)"
               estimate llama3_8b --gpu H100 --mode training --precision bf16 --batch 1 --devices 2 --pp 2 --checkpointing --checkpoint-layers 8)
# Four of 32 blocks keep most activations: checkpointing 25 is the fewest that fits (78.2 GB of
# 80; 24 need 83.4 GB), offered to a workload that checkpoints 4 and to one that checkpoints none.
capcalc_cli_ok(training_checkpoint_layers_to_fit "to fit +does not fit: .*fits with any of:\n +--checkpoint-layers 25 \\(8 devices\\)"
               estimate llama3_8b --gpu H100 --mode training --precision bf16 --batch 4 --devices 8 --zero 3 --set seq=8192 --checkpointing --checkpoint-layers 4)
capcalc_cli_ok(training_checkpointing_to_fit "to fit +does not fit: .*fits with any of:\n +--checkpointing --checkpoint-layers 25 \\(8 devices\\)"
               estimate llama3_8b --gpu H100 --mode training --precision bf16 --batch 4 --devices 8 --zero 3 --set seq=8192)
capcalc_cli_error(checkpoint_layers_alone "^capcalc: error: --checkpoint-layers picks the blocks --checkpointing recomputes: turn on --checkpointing\n$"
                  estimate llama3_8b --gpu H100 --mode training --batch 1 --checkpoint-layers 8)

# Multi-token prediction (--mtp-layers): DeepSeek-V3's module, one MoE decoder layer (11.51 G)
# and its 2d -> d projection (2 x 7,168^2 = 103 M), the head shared; counted by hand in hf_test.cpp.
capcalc_cli_ok(training_mtp "parameters   682,636,487,424 \\(683 G\\), 38.2 G active per token\n  MTP          1 multi-token-prediction module of 11.6 G parameters, trained beside the model"
               estimate deepseek_v3_hf --gpu B200 --mode training --precision fp8 --batch 1 --devices 256 --pp 16 --ep 8 --micro-batches 16 --mtp-layers 1)
capcalc_cli_error(mtp_inference "^capcalc: error: --mtp-layers: multi-token-prediction modules train beside the model: add --mode training\n$"
                  estimate deepseek_v3_hf --gpu H100 --mtp-layers 1)
capcalc_cli_error(mtp_native "resnet50.json: --mtp-layers builds its modules from a Hugging Face decoder config"
                  estimate resnet50 --gpu H100 --mode training --mtp-layers 1)
capcalc_cli_error(mtp_range "--mtp-layers must be a whole number from 1 to 64 \\(got 0\\)"
                  estimate deepseek_v3_hf --gpu H100 --mode training --mtp-layers 0)
# A budget trains DeepSeek-V3 with its MTP module: 671.03 G + 11.61 G parameters (hf_test.cpp).
capcalc_cli_ok(check_budget_mtp "parameters 683 G within max 683G \\(margin 364 M, 0.1 %\\).*all 2 budgets hold"
               check --budget tests/cli/budget_mtp.json)
capcalc_cli_error(check_budget_mtp_flag "^capcalc: error: --mtp-layers goes with a MODEL; a budget file says \"mtp_layers\"\n$"
                  check --budget tests/cli/budget_mtp.json --mtp-layers 1)
capcalc_cli_ok(compare_mtp "deepseek_v3_hf.*683 G"
               compare deepseek_v3_hf --gpu B200,H200 --mode training --precision fp8 --batch 1 --devices 256 --pp 16 --ep 8 --micro-batches 16 --mtp-layers 1)
capcalc_cli_error(check_budget_mtp_inference "^capcalc: error: tests/cli/budget_mtp_inference.json:/budgets/0/mtp_layers: multi-token-prediction modules train beside the model: add \"mode\" training\n$"
                  check --budget tests/cli/budget_mtp_inference.json)
capcalc_cli_error(expert_tensor_parallel_degree "--expert-tensor-parallel must be 1 \\(whole experts\\) or the --tensor-parallel 2, got 3"
                  estimate mixtral_8x7b_hf --gpu H100 --mode training --tp 2 --devices 64 --ep 8 --etp 3)
capcalc_cli_ok(training_zero_json "\"tensor_parallel\": 8,\n *\"pipeline_parallel\": 1,\n *\"micro_batches\": 1,\n *\"virtual_stages\": 1,\n *\"zero_stage\": 3"
               estimate data/models/llama3_70b.json --gpu H100 --mode training --precision bf16 --tp 8 --devices 64 --zero 3 --format json)
capcalc_cli_error(zero_inference "ZeRO shards training state: add --mode training"
                  estimate data/models/llama3_70b.json --gpu H100 --zero 3)
# LoRA (docs/performance-model.md): MLPerf Training v4.0's Llama 2 70B LoRA layout, the
# attention's adapters 80 x 16 x (8,192 + 8,192 + 2 x (8,192 + 1,024) + 8,192 + 8,192) = 65.5 M.
capcalc_cli_ok(training_lora "LoRA         rank 16 on attention's projections: 65.5 M trainable parameters \\(0.1 % of the model's\\), frozen weights take no gradient\n.*gradients 32.8 MB\n +\\+ optimizer 197 MB"
               estimate llama2_70b --gpu H100 --mode training -p fp8 --set seq=8192 --batch 1 --tp 4 --devices 8 --micro-batches 4 --lora-rank 16 --lora-targets attention)
capcalc_cli_ok(training_lora_json "\"lora_rank\": 16,\n *\"lora_targets\": \"attention\",\n *\"lora_params\": 65536000"
               estimate llama2_70b --gpu H100 --mode training -p fp8 --set seq=8192 --batch 1 --tp 4 --devices 8 --micro-batches 4 --lora-rank 16 --lora-targets attention --format json)
capcalc_cli_error(lora_inference "^capcalc: error: LoRA adapters are trained: add --mode training\n$"
                  estimate llama2_7b --gpu H100 --lora-rank 16)
# An ONNX export computes attention as MatMuls: no attention layer for the "attention" target.
capcalc_cli_error(lora_attention_none "^capcalc: error: --lora-targets attention: the model has no attention layer to adapt \\(an export that computes attention as MatMuls has none\\): use --lora-targets all-linear\n$"
                  estimate tests/exports/bert_base.onnx --gpu H100 --mode training --batch 1 --set sequence=128 --lora-rank 8 --lora-targets attention)
capcalc_cli_error(lora_targets_without_rank "^capcalc: error: --lora-targets places LoRA's adapters: add --lora-rank\n$"
                  estimate llama2_7b --gpu H100 --mode training --lora-targets attention)
capcalc_cli_ok(compare_tensor_parallel "llama2_70b \\(69.0 G params\\), inference, fp16, batch 1, seq [0-9,]+, 4 of each \\(tensor-parallel 2\\): 2 devices.*h100-sxm .* 69.4 GB +80 +yes"
               compare data/models/llama2_70b.json --hw H100,A100-80GB --precision fp16 --tp 2 --devices 4)
capcalc_cli_ok(estimate_tp_allreduce "all-reduce   [0-9.]+ ms: 160 all-reduces of [0-9.]+ GB in all over NVLink 4"
               estimate data/models/llama2_70b.json --gpu H100 --tp 4 --devices 4 --precision fp16)
# Two all-reduces per layer (after attention, after the MLP) x 80 layers, each of the block's
# output: 4096 tokens x 8192 x 2 bytes.
math(EXPR llama2_70b_allreduce_bytes "2 * 80 * 4096 * 8192 * 2")
capcalc_cli_ok(estimate_tp_allreduce_json "\"communication_s\": 0\\.0[0-9]+,\n *\"allreduces\": 160,\n *\"allreduce_bytes\": ${llama2_70b_allreduce_bytes}"
               estimate data/models/llama2_70b.json --gpu H100 --tp 4 --devices 4 --precision fp16 --format json)
capcalc_cli_ok(training_pipeline "step time +[0-9.]+ s per step of 1 x 16 micro-batches \\([^)]*\\)\n +pipeline +4 stages, 1F1B: [0-9.]+ ms of bubble \\(the other 3 stages' times, [0-9.]+ % of the step\\)"
               estimate data/models/llama2_70b.json --gpu H100 --mode training --precision bf16 --tp 8 --pp 4 --micro-batches 16 --devices 64)
capcalc_cli_ok(compare_pipeline "training, bf16, batch 1, seq [0-9,]+, 32 of each \\(tensor-parallel 8\\) \\(pipeline 4 x 16 micro-batches\\)"
               compare data/models/llama2_70b.json --gpu H100 --gpu A100 --mode training --precision bf16 --tp 8 --pp 4 --micro-batches 16)
capcalc_cli_error(pipeline_uneven "--devices 6 is not a multiple of --tensor-parallel 1 x --pipeline-parallel 4 \\(4\\)"
                  estimate data/models/llama2_70b.json --gpu H100 --mode training --pp 4 --devices 6)
capcalc_cli_error(pipeline_inference "pipeline stages and micro-batches are for training: add --mode training"
                  estimate data/models/llama2_70b.json --gpu H100 --pp 2)
capcalc_cli_error(tensor_parallel_uneven "--devices 6 is not a multiple of --tensor-parallel 4"
                  estimate data/models/llama2_70b.json --gpu H100 --tp 4 --devices 6)
capcalc_cli_error(serving_no_seq "--prompt-tokens needs a model with a \"seq\" dimension"
                  estimate data/models/resnet50.json --gpu A100 --prompt-tokens 10)

# ONNX models written as text (ONNX's textual syntax), hand-written in tests/cli.
if(CAPCALC_WITH_ONNX)
  capcalc_cli_ok(onnx_text_layers "Conv_0 +conv2d +\\[8, 16, 32, 32\\].*total: 618 params, 3,540,224 MACs"
                 layers ${cases}/small_cnn.onnxtxt --batch 8)
  capcalc_cli_error(onnx_text_syntax "^capcalc: error: tests/cli/bad_syntax.onnxtxt:4:1: ONNX text: Expected character \\) not found"
                    layers ${cases}/bad_syntax.onnxtxt)
  # As ONNX 1.16+ prints an export (quoted names, weights declared without values), .onnxtext;
  # ONNX models default to the compiled profile.
  capcalc_cli_ok(onnx_text_exported "total: 9,610 params, 37,888 MACs"
                 layers ${cases}/exported_mlp.onnxtext --batch 4)
  capcalc_cli_ok(onnx_text_compiled_default "workload +inference, fp32, batch 4, compiled profile"
                 estimate ${cases}/exported_mlp.onnxtext --batch 4 --gpu A100)
endif()

# Optional inputs: a text-only prompt to Gemma 3, and the errors.
capcalc_cli_ok(omit_input "parameters   4,300,079,472.*TTFT"
               estimate data/models/gemma3_4b_hf.json --gpu H100 --prompt-tokens 128 --output-tokens 8 --omit-input pixel_values)
capcalc_cli_error(omit_input_required "gemma3_4b_hf.json:/inputs/0: input \"input_ids\" is not optional"
                  estimate data/models/gemma3_4b_hf.json --gpu H100 --omit-input input_ids)

# Runtimes: the table, one runtime, and --runtime on an estimate (ResNet-50 at batch 1 under
# PyTorch eager: 174 kernels, one per layer that is not a view, x 25 us of host cost = 4.35 ms).
capcalc_cli_ok(runtimes_list "pytorch-eager +PyTorch eager +eager +gpu, cpu, accelerator +attention 6, rotary \\+10, cache_update \\+2, autocast_weight_casts \\+1, gelu_new 8, rmsnorm 8\n.*torch-compile +torch.compile \\(default mode, Inductor\\) +inductor +gpu, cpu +matrix 2\n.*\n23 runtimes"
               runtimes list)
capcalc_cli_ok(runtimes_show "vLLM \\(CUDA graphs, torch.compile\\) \\(vllm\\)\n  profile      compiled \\(elementwise layers fused\\)\n  devices      gpu\n  kernels      one per layer"
               runtimes show VLLM)
# Megatron-Core's attention kernels skip causally masked tiles; its FP8 training quantizes each
# weighted product's input and output gradient at 4 B per element (data/runtimes.json).
capcalc_cli_ok(runtimes_show_attention "  attention    FlashAttention-style: causally masked tiles skipped, QKᵀ recomputed in backward\n  fp8 training 4 B per element quantized: each weighted product's input and output gradient\n"
               runtimes show megatron-core)
# A serving runtime shows the defaults `capcalc serve` takes from it, its tiers and scheduler.
capcalc_cli_ok(runtimes_show_serving "  serving      budget 2,048 tokens, 2,048 sequences, memory less 4,064 MiB for weights and KV cache,\n               1-token blocks, prefill chunked, SGLang's scheduler\n               from 20 GiB: budget 4,096 tokens, memory less 7,280 MiB\n"
               runtimes show sglang)
capcalc_cli_ok(runtimes_json "\"id\": \"pytorch-eager\",\n *\"name\": \"PyTorch eager\",.*\"kernels\": \\{\n *\"attention\": 6\\.0,\n *\"rotary\": 10\\.0,\n *\"cache_update\": 2\\.0,\n *\"autocast_weight_casts\": 1\\.0,\n *\"gelu_new\": 8\\.0,\n *\"rmsnorm\": 8\\.0\n"
               runtimes list --format json)
capcalc_cli_ok(estimate_runtime "workload     inference, fp32, batch 1, PyTorch eager \\(eager profile\\)\n.*latency      4\\.35 ms per batch of 1 \\([0-9.]+-[0-9.]+ ms: 80 % of [0-9]+ measured cases of eager/host/gpu\\)\n.*kernels      174 launched per pass"
               estimate data/models/resnet50.json --gpu h200 --runtime pytorch-eager)
capcalc_cli_error(runtime_unknown "capcalc: error: unknown runtime \"vlm\"; did you mean \"vllm\"\\?"
                  estimate data/models/resnet50.json --gpu h200 --runtime vlm)
capcalc_cli_error(runtime_wrong_device "vLLM \\(CUDA graphs, torch.compile\\) does not run on a tpu \\(Google Cloud TPU v4\\); it runs on: gpu"
                  estimate data/models/resnet50.json --gpu tpu-v4 --runtime vllm)

# Prediction ranges: data/ranges.json is what `validate --write-ranges` makes of both validation
# sets now (a change to the model that moves the residuals must regenerate it), and estimates
# print each time and rate with the range of its class.
add_test(NAME cli.ranges_up_to_date
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 -DOUT=${CMAKE_CURRENT_BINARY_DIR}/ranges.json
                 -DEXPECTED=${PROJECT_SOURCE_DIR}/data/ranges.json
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/ranges_up_to_date.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
# A budget file's workload keys are estimate's flags: the same figures, to the last digit.
add_test(NAME cli.budget_matches_flags
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/budget_matches_flags.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
capcalc_cli_ok(estimate_range "latency      10\\.4 ms per batch of 1 \\([0-9.]+-[0-9.]+ ms: 80 % of [0-9]+ measured cases of eager/host/gpu\\)\n  throughput   95\\.8 samples/s \\([0-9.]+-[0-9.]+ samples/s\\)"
               estimate data/models/resnet50.json --gpu A100)
capcalc_cli_ok(estimate_range_unvalidated "latency      3\\.13 ms per batch of 1 \\([0-9.]+-[0-9.]+ ms: no validated case of eager/compute/cpu: the range of all 212 cases\\)"
               estimate data/models/resnet50.json --gpu epyc-9654)

# --runtime in compare and check, and "runtime" in budget files: the row or result names it, a
# device it does not run on says so, an unknown one is blamed on its key.
capcalc_cli_ok(compare_runtime "resnet50 \\(25\\.6 M params\\), inference, fp32, batch 1, vLLM \\(CUDA graphs, torch\\.compile\\): 2 devices, by time\n.*h100-sxm +393 µs.*\n  epyc-9654: vLLM \\(CUDA graphs, torch\\.compile\\) does not run on a cpu"
               compare data/models/resnet50.json --hw h100,epyc-9654 --runtime vllm)
capcalc_cli_ok(check_budget_runtime "ok +llama-vllm on h100-sxm \\(inference, bf16, batch 1, vLLM \\(CUDA graphs, torch\\.compile\\), serving 512 prompt \\+ 64 generated tokens\\): time to first token 13\\.4 ms within max 200ms"
               check --budget tests/cli/budget_runtime.json)
capcalc_cli_error(check_budget_bad_runtime "budget_bad_runtime\\.json:/budgets/0/runtime: unknown runtime \"tensort\"; did you mean \"tensorrt\"\\?"
                  check --budget tests/cli/budget_bad_runtime.json)
capcalc_cli_error(check_runtime_wrong_device "vLLM \\(CUDA graphs, torch\\.compile\\) does not run on AMD EPYC 9654, a cpu"
                  check data/models/resnet50.json --hw epyc-9654 --runtime vllm --max-latency 10ms)
capcalc_cli_ok(estimate_default_profile "workload     inference, fp32, batch 1, eager profile \\(gpu default\\)\n"
               estimate data/models/resnet50.json --gpu A100)
capcalc_cli_ok(explain_runtime "  runtime      PyTorch eager: 174 kernels per pass, from its kernels per layer\n               \\(`capcalc runtimes show pytorch-eager`\\)\n               the floor is its host cost per kernel\n"
               estimate data/models/resnet50.json --gpu h200 --runtime eager --explain)

# check takes every workload flag estimate takes: checkpointing and SGD (no optimizer state)
# bring ResNet-50's training memory at batch 256 under 20 GB (14.7 GB: 38.9 GB - 24.0 GB of
# activations recomputed - 0.2 GB of Adam's moments), which the default misses.
capcalc_cli_ok(check_workload_flags "memory 14.7 GB within max 20GB"
               check resnet50 --hw A100 --mode training --batch 256 --max-memory 20GB
               --checkpointing --optimizer sgd)
add_test(NAME cli.check_workload_flags_default
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 "-DARGS=check;resnet50;--hw;A100;--mode;training;--batch;256;--max-memory;20GB" -DEXPECT_CODE=1
                 "-DSTDOUT_REGEX=FAIL  resnet50 on a100-sxm4-80gb \\(training, fp32, batch 256\\): memory 38.9 GB exceeds max 20GB"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
capcalc_cli_ok(check_kv_precision "memory 25.1 GB within max 80GB"
               check llama2_7b --hw H100 --max-memory 80GB --prompt-tokens 1000
               --output-tokens 100 --batch 32 --kv-precision fp8)

# The input pipeline (--input-rate, issue 19 §4): a step that consumes its samples faster than
# the pipeline delivers them waits for them, and says so (the rule is predict_test's). ResNet-50
# at batch 256 on an A100 takes 38.4 ms; at 3,000 samples/s its 256 samples take 85.3 ms.
capcalc_cli_ok(estimate_input_rate "workload +inference, fp16, batch 256, eager profile \\(gpu default\\), input 3,000 samples/s a replica\n.*latency +85\\.3 ms per batch of 256 \\(the input rate's, at either end of the model's range\\)\n +throughput +3\\.00 k samples/s\n +input +3,000 samples/s a replica: 85\\.3 ms for the batch's samples\n +46\\.9 ms waiting beyond its own 38\\.4 ms: input-bound\n.*input +55\\.0 % of the time \\(waiting for samples\\)"
               estimate data/models/resnet50.json --gpu a100 --batch 256 --precision fp16 --input-rate 3000/s)
capcalc_cli_ok(estimate_input_rate_within "input +7,000 samples/s a replica: 36\\.6 ms for the batch's samples\n +within its own 38\\.4 ms: not input-bound"
               estimate data/models/resnet50.json --gpu a100 --batch 256 --precision fp16 --input-rate 7000/s)
capcalc_cli_ok(compare_input_rate "batch 256, input 3,000 samples/s a replica: 2 devices, by time\n.*a100-sxm4-80gb +85\\.3 ms +3\\.00 k .* input .*\nt4 +218 ms +1\\.18 k .* memory"
               compare data/models/resnet50.json --hw a100,t4 --batch 256 --precision fp16 --input-rate 3000/s)
capcalc_schema_test(estimate_input_rate - data/schema/estimate-output.schema.json
                    estimate data/models/resnet50.json --gpu a100 --batch 256 --precision fp16 --input-rate 3000/s --format json)
capcalc_schema_test(compare_input_rate - data/schema/compare-output.schema.json
                    compare data/models/resnet50.json --hw a100,t4 --batch 256 --precision fp16 --input-rate 3000/s --format json)
capcalc_cli_error(input_rate_serving "^capcalc: error: --input-rate paces a model fed whole samples \\(images, sequences\\): not with --prompt-tokens \\(LLM serving\\)\n$"
                  estimate data/models/llama3_8b.json --gpu h100 --prompt-tokens 100 --input-rate 3/s)
add_test(NAME cli.check_budget_input_rate
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 "-DARGS=check;--budget;tests/cli/budget_input_rate.json" -DEXPECT_CODE=1
                 "-DSTDOUT_REGEX=FAIL  rn50-loader on a100-sxm4-80gb \\(inference, fp16, batch 256, input 3,000 samples/s a replica\\): throughput 3\\.00 k/s is below min 4000/s"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})

# --fp8-recipe: Qwen3-30B-A3B (48 moe layers of 128 experts) on 8 H100s with expert parallelism
# 8 holds 16 experts a device; tensorwise current scaling quantizes 2 tensors forward and 2
# backward per expert with 3 kernels each: 48 x 16 x 12 = 9,216 kernels a step more than
# delayed scaling's 5,481 (data/runtimes.json, megatron-core's fp8_expert_quantize).
capcalc_cli_ok(estimate_fp8_recipe_delayed "workload +training, fp8 \\(delayed\\), batch 1.*kernels +5,481 launched per step"
               estimate qwen3_30b_a3b_hf --gpu H100 --mode training --precision fp8 --runtime megatron-core --batch 1 --set seq=4096 --devices 8 --ep 8)
capcalc_cli_ok(estimate_fp8_recipe_tensorwise "workload +training, fp8 \\(tensorwise\\), batch 1.*kernels +14,697 launched per step"
               estimate qwen3_30b_a3b_hf --gpu H100 --mode training --precision fp8 --fp8-recipe tensorwise --runtime megatron-core --batch 1 --set seq=4096 --devices 8 --ep 8)
capcalc_cli_error(estimate_fp8_recipe_not_fp8 "^capcalc: error: --fp8-recipe scales FP8 tensors: not with --precision bf16\n$"
                  estimate qwen3_30b_a3b_hf --gpu H100 --precision bf16 --fp8-recipe mxfp8)
# A budget file takes the recipe by key: the same step with delayed scaling (449 ms) holds
# 600 ms, with tensorwise scaling's 9,216 more kernels at the 60 us eager floor (864 ms) not.
add_test(NAME cli.check_budget_fp8_recipe
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 "-DARGS=check;--budget;tests/cli/budget_fp8_recipe.json" -DEXPECT_CODE=1
                 "-DSTDOUT_REGEX=FAIL  qwen3-tensorwise on h100-sxm \\(training, fp8 \\(tensorwise\\), batch 1.*step time 864 ms exceeds max 600ms.*ok    qwen3-delayed on h100-sxm \\(training, fp8 \\(delayed\\).*step time 449 ms within max 600ms"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
# plan --runtime: every layout under Megatron-Core with tensorwise FP8 scaling (Qwen3-30B-A3B on
# up to 16 H100s, the published case's global batch): its best at 196k tokens/s, 10.7 s a step.
capcalc_cli_ok(plan_runtime "1  H100 fp8     16  TP 1, PP 1, EP 8, DP 16, ZeRO-3, mb [48] x [48](, ckpt [0-9]+ blocks)? +10.7 s.*Notes:\n  every layout runs under Megatron-Core.*\n  fp8 layouts scale FP8 tensors tensorwise"
               plan qwen3_30b_a3b_hf --gpu h100 --tokens 1T --set seq=4096 --global-batch 512-samples --precision fp8 --runtime megatron-core --fp8-recipe tensorwise --max-devices 16 --top 1)
capcalc_cli_error(plan_fp8_recipe_without_fp8 "^capcalc: error: --fp8-recipe scales FP8 tensors: add fp8 to --precision\n$"
                  plan qwen3_30b_a3b_hf --gpu h100 --tokens 1T --set seq=4096 --fp8-recipe tensorwise)
# compare --fp8-recipe scales the fp8 rows only: Qwen3-30B-A3B on 8 B200s and 8 H100s with
# expert parallelism 8, tensorwise fp8 (738 ms and 864 ms a step, as estimate gives them) beside
# bf16, which has no recipe (322 ms on the B200).
capcalc_cli_ok(compare_fp8_recipe "training, fp8 rows tensorwise, batch 1.*b200 \\(180 GB\\)\nfp8 +738 ms.*\nbf16 +322 ms.*h100-sxm \\(80 GB\\)\nfp8 +864 ms"
               compare qwen3_30b_a3b_hf --gpu h100,b200 --mode training --precision fp8,bf16 --fp8-recipe tensorwise --runtime megatron-core --batch 1 --set seq=4096 --devices 8 --ep 8)
capcalc_cli_error(compare_fp8_recipe_without_fp8 "^capcalc: error: --fp8-recipe scales FP8 tensors: add fp8 to --precision\n$"
                  compare qwen3_30b_a3b_hf --gpu h100 --precision bf16 --fp8-recipe mxfp8)

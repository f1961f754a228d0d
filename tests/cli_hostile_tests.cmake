# Issue 21: inputs that crashed, hung or exhausted memory. Each is exit code 2 with a located
# message (capcalc_cli_error checks both, that stdout is empty, and that nothing crashed);
# the TIMEOUT catches a hang. Small inputs are in tests/hostile/, big ones and FIFOs are made
# by the fixture below.
set(hostile tests/hostile)
set(made ${CMAKE_CURRENT_BINARY_DIR}/hostile)
add_test(NAME cli.hostile_files
         COMMAND ${CMAKE_COMMAND} -DDIR=${made} -P ${CMAKE_CURRENT_SOURCE_DIR}/hostile/generate.cmake)
set_tests_properties(cli.hostile_files PROPERTIES FIXTURES_SETUP hostile_files)

# capcalc_cli_hostile(name stderr_regex args...): exit code 2, nothing on stdout, one line on
# stderr that matches (the location in it), nothing crashed; with the fixture and a timeout.
function(capcalc_cli_hostile name stderr_regex)
  add_test(NAME cli.${name}
           COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli> "-DARGS=${ARGN}"
                   -DEXPECT_CODE=2 "-DSTDERR_REGEX=${stderr_regex}" -DSTDOUT_EMPTY=ON
                   -DSTDERR_ONE_LINE=ON -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(cli.${name} PROPERTIES FIXTURES_REQUIRED hostile_files TIMEOUT 60)
endfunction()

# Files that are not files: refused at once, never read.
capcalc_cli_hostile(fifo_model "^capcalc: error: [^\n]*/fifo.json: not a regular file \\(a FIFO\\)\n$"
                    estimate ${made}/fifo.json --gpu a100)
capcalc_cli_hostile(fifo_onnx "/fifo.onnx: not a regular file \\(a FIFO\\)" layers ${made}/fifo.onnx)
capcalc_cli_hostile(fifo_textproto "/fifo.pbtxt: not a regular file \\(a FIFO\\)"
                    layers ${made}/fifo.pbtxt)
capcalc_cli_hostile(dev_zero_model "^capcalc: error: /dev/zero: not a regular file \\(a character device\\)\n$"
                    estimate /dev/zero --gpu a100)
capcalc_cli_hostile(dev_zero_hardware "/dev/zero: not a regular file"
                    estimate data/models/tiny_cnn.json --gpu a100 --hardware /dev/zero)
capcalc_cli_hostile(fifo_hardware_file "/fifo.json: not a regular file \\(a FIFO\\)"
                    estimate data/models/tiny_cnn.json --gpu a100 --hardware-file ${made}/fifo.json)
capcalc_cli_hostile(dev_zero_runtime_file "/dev/zero: not a regular file"
                    estimate data/models/tiny_cnn.json --gpu a100 --runtime pytorch-eager
                    --runtime-file /dev/zero)
capcalc_cli_hostile(dev_zero_budget "/dev/zero: not a regular file" check --budget /dev/zero)
capcalc_cli_hostile(dev_zero_budget_model "^capcalc: error: tests/hostile/budget_dev_zero.json:/budgets/0/model: /dev/zero: not a regular file"
                    check --budget ${hostile}/budget_dev_zero.json)
capcalc_cli_hostile(dev_zero_measurements "/dev/zero: not a regular file"
                    validate --measurements /dev/zero)
capcalc_cli_hostile(directory_model "tests/hostile: not a regular file \\(a directory\\)"
                    layers ${hostile})
capcalc_cli_hostile(big_json "/big.json: the file is 68,157,440 bytes: larger than 64 MiB, the limit for JSON files"
                    layers ${made}/big.json)

# Nesting: refused at the bracket or message past the limit.
capcalc_cli_hostile(deep_json "/deep.json:1:257: arrays and objects nest more than 256 deep \\(the limit\\)"
                    layers ${made}/deep.json)
capcalc_cli_hostile(deep_json_value "/deep_dims.json:1:[0-9]+: arrays and objects nest more than 256 deep"
                    layers ${made}/deep_dims.json)
capcalc_cli_hostile(deep_textproto "/deep.textproto:2:[0-9]+: protobuf text format: Message is too deep"
                    layers ${made}/deep.textproto)
capcalc_cli_hostile(deep_onnx_text "/deep.onnxtxt:3:[0-9]+: ONNX text: brackets nest more than 256 deep"
                    layers ${made}/deep.onnxtxt)
capcalc_cli_hostile(deep_expression "expression_deep.json:/layers/0/out_features: bad expression \"\\(+\\.\\.\\.\": nested too deeply at column 65"
                    layers ${hostile}/expression_deep.json)

# ONNX control flow: nested Ifs in linear time, Loops that stay unknown estimated; subgraphs
# nested past the limit and loops unrolled inside loops past the node limit are errors.
capcalc_cli_hostile(deep_if "if_nested_65.onnxtxt:/graph/node/0(/attribute/0/g/node/0)+: node \"[^\"]*\" \\(If\\): subgraphs nest more than 64 deep \\(the limit\\)"
                    layers ${hostile}/if_nested_65.onnxtxt)
capcalc_cli_ok(if_nested_40 "nested_if on NVIDIA A100" estimate ${hostile}/if_nested_40.onnxtxt --gpu a100)
set_tests_properties(cli.if_nested_40 PROPERTIES TIMEOUT 30)
foreach(file loop_unknown_trips loop_over_limit)
  capcalc_cli_ok(${file} "Loop_0 +loop" estimate ${hostile}/${file}.onnxtxt --gpu a100)
  capcalc_cli_ok(${file}_training "\"name\": \"Loop_0\""
                 estimate ${hostile}/${file}.onnxtxt --gpu a100 --mode training --format json)
endforeach()
capcalc_cli_hostile(loop_in_loop "loop_in_loop.onnxtxt:/graph/node/0: the model expands to more than 500,000 nodes \\(the limit\\)"
                    layers ${hostile}/loop_in_loop.onnxtxt)

# Expansion past the documented limits: named where it happens, before any memory is spent.
set(layer_limit "the model expands to more than 250,000 layers \\(the limit\\)")
capcalc_cli_hostile(repeat_huge "repeat_huge.json:/layers/1/repeat: ${layer_limit}"
                    estimate ${hostile}/repeat_huge.json --gpu a100)
capcalc_cli_hostile(repeat_expression "repeat_expression.json:/layers/0/repeat: ${layer_limit}"
                    layers ${hostile}/repeat_expression.json)
capcalc_cli_hostile(repeat_nested "repeat_nested.json:/layers/1/repeat: ${layer_limit}"
                    layers ${hostile}/repeat_nested.json)
capcalc_cli_hostile(blocks_doubling "blocks_doubling.json:/layers/1: ${layer_limit}"
                    layers ${hostile}/blocks_doubling.json)
capcalc_cli_hostile(hf_layers_huge "hf_layers_huge.json:/num_hidden_layers: 1,000,000,000,000 layers is more than 10,000 \\(the limit for a Hugging Face config\\)"
                    estimate ${hostile}/hf_layers_huge.json --gpu a100)

# Counts past 64 bits: the flag or key that scaled them, never "internal error".
set(overflow "a count does not fit in a 64-bit integer")
capcalc_cli_hostile(overflow_batch_total "^capcalc: error: --batch 1073741824: ${overflow}\n$"
                    estimate data/models/resnet50.json --gpu A100 --batch 1073741824 --mode training)
capcalc_cli_hostile(overflow_batch_layer "resnet50.json:/layers/0: layer \"conv1\": ${overflow} \\(with batch = 1099511627776\\)"
                    estimate data/models/resnet50.json --gpu A100 --batch 1099511627776 --mode training)
capcalc_cli_hostile(overflow_compare "--batch 1073741824: ${overflow}"
                    compare data/models/resnet50.json --hw A100,T4 --batch 1073741824)
capcalc_cli_hostile(overflow_roofline "--batch 1073741824: ${overflow}"
                    roofline data/models/resnet50.json --gpu A100 --batch 1073741824)
capcalc_cli_hostile(overflow_set "--set seq=4294967296: ${overflow}|layer \"[^\"]*\": ${overflow} \\(with seq = 4294967296\\)"
                    estimate data/models/llama2_7b.json --gpu A100 --set seq=4294967296)
capcalc_cli_hostile(overflow_budget "budget_overflow.json:/budgets/0: ${overflow} \\(with batch = 1073741824\\)"
                    check --budget ${hostile}/budget_overflow.json)
capcalc_cli_hostile(overflow_parallel "^capcalc: error: --tensor-parallel 4294967296 x --pipeline-parallel 4294967296: ${overflow}\n$"
                    estimate data/models/llama2_7b_hf.json --gpu h100 --mode training
                    --tensor-parallel 4294967296 --pipeline-parallel 4294967296)
# Figures past 64 bits in doubles are shown, not converted with undefined behaviour (these
# abort under the sanitizers otherwise).
capcalc_cli_ok(huge_training_run "steps +[0-9.]+ E of 1 x 1 device"
               estimate data/models/llama2_7b_hf.json --gpu h100 --mode training
               --dataset-size 1e15 --epochs 1e6)
capcalc_cli_ok(huge_micro_batches "kernels +[0-9.]+ E launched per step"
               estimate data/models/llama2_7b_hf.json --gpu h100 --mode training --pp 2
               --micro-batches 9223372036854775807)

# ---------------------------------------------------------------------------------------------
# Issue 21 §2 and §3: input that was accepted but wrong, and errors that must point at the
# right place. Files in tests/hostile/json/ and tests/hostile/onnx/; each test names the class.
set(hj tests/hostile/json)
set(ho tests/hostile/onnx)
set(rn50 data/models/resnet50.json)

# Duplicate keys, in every kind of JSON file: the second one's line and column, and the object.
capcalc_cli_hostile(dup_model_layers "^capcalc: error: ${hj}/dup_layers.json:3:2: duplicate key \"layers\" in the object at /\n$"
                    layers ${hj}/dup_layers.json)
capcalc_cli_hostile(dup_model_dim "dup_dim.json:2:34: duplicate key \"batch\" in the object at /dims"
                    layers ${hj}/dup_dim.json)
capcalc_cli_hostile(dup_model_attribute "dup_attribute.json:3:63: duplicate key \"out_features\" in the object at /layers/1"
                    estimate ${hj}/dup_attribute.json --gpu a100)
capcalc_cli_hostile(dup_escaped_key "dup_escaped.json:2:49: duplicate key \"out_features\" in the object at /layers/0"
                    layers ${hj}/dup_escaped.json)
capcalc_cli_hostile(dup_budget_limit "budget_dup_limit.json:3:72: duplicate key \"max_latency\" in the object at /budgets/0/limits"
                    check --budget ${hj}/budget_dup_limit.json)
capcalc_cli_hostile(dup_hardware_key "hardware_dup.json:4:48: duplicate key \"memory_gb\" in the object at /devices/0"
                    estimate ${rn50} --gpu a100 --hardware-file ${hj}/hardware_dup.json)
capcalc_cli_hostile(dup_measurement_key "measurements_dup.json:4:28: duplicate key \"value\" in the object at /cases/0"
                    validate --measurements ${hj}/measurements_dup.json --models data/models)
capcalc_cli_hostile(dup_runtime_key "runtime_dup.json:1:23: duplicate key \"schema_version\" in the object at /"
                    estimate ${rn50} --gpu a100 --runtime pytorch-eager --runtime-file ${hj}/runtime_dup.json)
capcalc_cli_hostile(dup_hf_key "hf_dup.json:2:54: duplicate key \"num_hidden_layers\" in the object at /"
                    layers ${hj}/hf_dup.json)

# Free text and other keys nobody read still have the schema's type.
capcalc_cli_hostile(comment_object "comment_object.json:/comment: expected a string, got an object"
                    layers ${hj}/comment_object.json)
capcalc_cli_hostile(comment_layer_number "comment_layer_number.json:/layers/0/comment: expected a string, got a number"
                    layers ${hj}/comment_layer_number.json)
capcalc_cli_hostile(input_dtype_number "input_dtype_number.json:/inputs/0/dtype: expected a string, got a number"
                    layers ${hj}/input_dtype_number.json)
capcalc_cli_hostile(hardware_schema_number "hardware_schema_number.json:/\\$schema: expected a string, got a number"
                    estimate ${rn50} --gpu a100 --hardware-file ${hj}/hardware_schema_number.json)
capcalc_cli_hostile(hardware_comment_number "hardware_comment_number.json:/devices/0/comment: expected a string, got a number"
                    estimate ${rn50} --gpu a100 --hardware-file ${hj}/hardware_comment_number.json)
capcalc_cli_hostile(budget_schema_number "budget_schema_number.json:/\\$schema: expected a string, got a number"
                    check --budget ${hj}/budget_schema_number.json)
capcalc_cli_hostile(measurement_notes_object "measurements_notes_number.json:/cases/0/notes: expected a string, got an object"
                    validate --measurements ${hj}/measurements_notes_number.json --models data/models)
capcalc_cli_hostile(measurement_root_comment "measurements_root_comment.json:/comment: expected a string, got an array"
                    validate --measurements ${hj}/measurements_root_comment.json --models data/models)

# Invalid ONNX graphs: errors naming the node (or the input or initializer).
capcalc_cli_hostile(onnx_conv_channels "conv_channels.onnxtxt:/graph/node/0: node \"Conv_0\" \\(Conv\\): the input has 3 channels, but the weight takes 5 per group x 1 group\n$"
                    layers ${ho}/conv_channels.onnxtxt)
capcalc_cli_hostile(onnx_conv_group "conv_group.onnxtxt:/graph/node/0: node \"Conv_0\" \\(Conv\\): 6 output channels do not split into 4 groups"
                    layers ${ho}/conv_group.onnxtxt)
capcalc_cli_hostile(onnx_conv_group_channels "conv_group_channels.onnxtxt:/graph/node/1: node \"Conv_1\" \\(Conv\\): the input has 8 channels, but the weight takes 3 per group x 2 groups"
                    estimate ${ho}/conv_group_channels.onnxtxt --gpu a100)
capcalc_cli_hostile(onnx_reshape_count "reshape_count.onnxtxt:/graph/node/0: node \"Reshape_0\" \\(Reshape\\): reshapes \\[2, 16\\] \\(32 elements\\) to \\[7, 7, 7\\] \\(343 elements\\)"
                    layers ${ho}/reshape_count.onnxtxt)
capcalc_cli_hostile(onnx_reshape_infer "reshape_infer.onnxtxt:/graph/node/1: node \"Reshape_1\" \\(Reshape\\)"
                    layers ${ho}/reshape_infer.onnxtxt)
capcalc_cli_hostile(onnx_gemm_k "gemm_k.onnxtxt:/graph/node/0: node \"Gemm_0\" \\(Gemm\\): A gives K = 16 but B takes K = 15"
                    layers ${ho}/gemm_k.onnxtxt)
capcalc_cli_hostile(onnx_gemm_k_trans "gemm_k_trans.onnxtxt:/graph/node/0: node \"Gemm_0\" \\(Gemm\\): A gives K = 16 but B takes K = 15 \\(A \\[4, 16\\], B \\[8, 15\\], transB\\)"
                    layers ${ho}/gemm_k_trans.onnxtxt)
capcalc_cli_hostile(onnx_matmul_k "matmul_k.onnxtxt:/graph/node/1: node \"MatMul_1\" \\(MatMul\\): \\[2, 4, 16\\] x \\[15, 8\\]: the inner dimensions 16 and 15 differ"
                    layers ${ho}/matmul_k.onnxtxt)
capcalc_cli_hostile(onnx_written_twice "written_twice.onnxtxt:/graph/node/1: node \"Sigmoid_1\" \\(Sigmoid\\) writes \"h\", already written at /graph/node/0"
                    layers ${ho}/written_twice.onnxtxt)
capcalc_cli_hostile(onnx_writes_input "writes_input.onnxtxt:/graph/node/0: node \"Relu_0\" \\(Relu\\) writes \"x\", already written at /graph/input/0"
                    layers ${ho}/writes_input.onnxtxt)
capcalc_cli_hostile(onnx_input_twice "input_twice.onnxtxt:/graph/input/1: input \"x\" is declared twice \\(first at /graph/input/0\\)"
                    layers ${ho}/input_twice.onnxtxt)
capcalc_cli_hostile(onnx_initializer_type_0 "init_type0.textproto:/graph/initializer/0: initializer \"w\": data_type 0 is not an ONNX element type"
                    layers ${ho}/init_type0.textproto)
capcalc_cli_hostile(onnx_empty_op_type "empty_op.textproto:/graph/node/1: node \"nameless\" has no op_type"
                    layers ${ho}/empty_op.textproto)
foreach(file if_shapes if_rank if_declared)
  capcalc_cli_hostile(onnx_${file} "${file}.onnxtxt:/graph/node/0: node \"If_0\" \\(If\\): its condition is not known at import and its branches give \"y\" different shapes"
                      layers ${ho}/${file}.onnxtxt)
endforeach()
# Newer than this build: a warning that says so, and the model is still read.
capcalc_cli_ok(onnx_opset_newer "Relu_0" layers ${ho}/opset_new.onnxtxt)
capcalc_cli_ok(onnx_ir_newer "Relu_0" layers ${ho}/ir_new.onnxtxt)
foreach(case "opset_new|opset 99 is newer than this build's ONNX knows" "ir_new|IR version 99 is newer than this build's ONNX knows")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 file)
  list(GET parts 1 text)
  add_test(NAME cli.onnx_${file}_warns
           COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                   "-DARGS=layers;${ho}/${file}.onnxtxt" -DEXPECT_CODE=0
                   "-DSTDERR_REGEX=^warning: ${ho}/${file}.onnxtxt: ${text}" -DSTDERR_ONE_LINE=ON
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endforeach()

# ONNX inputs are blamed on /graph/input/N.
capcalc_cli_hostile(onnx_input_huge_dim "input_huge_dim.onnxtxt:/graph/input/0: input \"x\": shape \\[4611686018427387904, 16\\] has more elements than a 64-bit count of bytes holds"
                    layers ${ho}/input_huge_dim.onnxtxt)
capcalc_cli_hostile(onnx_input_100_dims "input_100_dims.onnxtxt:/graph/input/0: input \"x\" has 100 dims, more than 32 \\(the limit\\)"
                    layers ${ho}/input_100_dims.onnxtxt)
capcalc_cli_hostile(onnx_input_string "input_string.onnxtxt:/graph/input/1: input \"s\" holds strings"
                    layers ${ho}/input_string.onnxtxt)
capcalc_cli_hostile(onnx_input_unknown_type "input_unknown_type.textproto:/graph/input/0: input \"x\": element type 99 is not an ONNX element type"
                    layers ${ho}/input_unknown_type.textproto)
# --strict names the first unknown node.
capcalc_cli_hostile(onnx_strict_first_node "^capcalc: error: ${ho}/strict_unknown.onnxtxt:/graph/node/2: unknown operator com.example.FrobnicateV2 \\(strict mode; 2 nodes"
                    layers ${ho}/strict_unknown.onnxtxt --strict)

# Hardware files: a name of another device, figures the schema forbids or physics rules out.
capcalc_cli_hostile(hardware_alias_builtin "hardware_alias_builtin.json:/devices/0/aliases/0: the name \"H100\" is already used by device \"h100-sxm\" of [^\n]*hardware.json; to replace that device, give this entry the id \"h100-sxm\""
                    estimate ${rn50} --gpu h100 --hardware-file ${hj}/hardware_alias_builtin.json)
capcalc_cli_hostile(hardware_id_alias_builtin "hardware_id_alias_builtin.json:/devices/0/id: the name \"h100\" is already used by device \"h100-sxm\""
                    estimate ${rn50} --gpu a100 --hardware-file ${hj}/hardware_id_alias_builtin.json)
capcalc_cli_ok(hardware_alias_replaces "resnet50 on My H100 \\(h100-sxm\\)"
               estimate ${rn50} --gpu H100 --precision fp16 --hardware-file ${hj}/hardware_alias_replaces.json)
capcalc_cli_hostile(hardware_empty_name "hardware_empty_name.json:/devices/0/name: must not be empty"
                    estimate ${rn50} --gpu a100 --hardware-file ${hj}/hardware_empty_name.json)
capcalc_cli_hostile(hardware_empty_alias "hardware_empty_alias.json:/devices/0/aliases/0: must not be empty"
                    estimate ${rn50} --gpu a100 --hardware-file ${hj}/hardware_empty_alias.json)
capcalc_cli_hostile(hardware_empty_vendor "hardware_empty_vendor.json:/devices/0/vendor: must not be empty"
                    estimate ${rn50} --gpu a100 --hardware-file ${hj}/hardware_empty_vendor.json)
capcalc_cli_hostile(hardware_bad_date "hardware_bad_date.json:/devices/0/price_per_hour_usd/date: expected a date YYYY-MM-DD or YYYY-MM, got \"2026-13-45\""
                    estimate ${rn50} --gpu a100 --hardware-file ${hj}/hardware_bad_date.json)
capcalc_cli_hostile(hardware_bad_updated "hardware_bad_updated.json:/updated: expected a date YYYY-MM-DD, got \"yesterday\""
                    estimate ${rn50} --gpu a100 --hardware-file ${hj}/hardware_bad_updated.json)
capcalc_cli_hostile(hardware_peak_huge "hardware_peak_huge.json:/devices/0/dense_peak_tflops/fp16/matrix: dense_peak_tflops = 1e\\+308 is outside physical sense"
                    estimate ${rn50} --gpu a100 --hardware-file ${hj}/hardware_peak_huge.json)
capcalc_cli_hostile(hardware_bandwidth_tiny "hardware_bandwidth_tiny.json:/devices/0/memory_bandwidth_gb_per_s: memory_bandwidth_gb_per_s = 1e-320 is outside physical sense"
                    estimate ${rn50} --gpu a100 --hardware-file ${hj}/hardware_bandwidth_tiny.json)
capcalc_cli_hostile(hardware_tdp_huge "hardware_tdp_huge.json:/devices/0/tdp_w: tdp_w = 1e\\+300 is outside physical sense"
                    estimate ${rn50} --gpu a100 --hardware-file ${hj}/hardware_tdp_huge.json)

# Measurements: values the schema or physics rule out, an empty list, unknown devices named in
# the file and case, for validate and calibrate alike.
set(validate_args --models data/models --measurements)
capcalc_cli_hostile(measurement_per_half "meas_per_half.json:/cases/0/per: expected \"total\" or \"device\", got \"half\""
                    validate ${validate_args} ${hj}/meas_per_half.json)
capcalc_cli_hostile(measurement_tiny "meas_tiny.json:/cases/0/value: 1e-320 is outside the range of a measurement"
                    validate ${validate_args} ${hj}/meas_tiny.json)
capcalc_cli_hostile(measurement_huge "meas_huge.json:/cases/0/value: 1e\\+300 is outside the range of a measurement"
                    validate ${validate_args} ${hj}/meas_huge.json)
capcalc_cli_hostile(measurement_empty "^capcalc: error: ${hj}/meas_empty.json:/cases: no cases"
                    validate ${validate_args} ${hj}/meas_empty.json)
capcalc_cli_hostile(measurement_unknown_device "meas_unknown_device_3.json:/cases/3/device: unknown device \"z100\"; did you mean \"V100\"\\?"
                    validate ${validate_args} ${hj}/meas_unknown_device_3.json)
capcalc_cli_hostile(calibrate_unknown_device_case "meas_unknown_device_3.json:/cases/3/device: unknown device \"z100\"; did you mean \"V100\"\\?"
                    calibrate --models data/models ${hj}/meas_unknown_device_3.json -o ${made}/never.json)
capcalc_cli_hostile(measurement_unknown_runtime "meas_unknown_runtime.json:/cases/0/runtime: unknown runtime \"vllm-0\"; did you mean \"vllm\"\\?"
                    validate ${validate_args} ${hj}/meas_unknown_runtime.json)
capcalc_cli_hostile(measurement_runtime_other_profile "meas_runtime_other_profile.json:/cases/0/runtime: runtime \"tensorrt\" runs the compiled profile, not the case's eager"
                    validate ${validate_args} ${hj}/meas_runtime_other_profile.json)
capcalc_cli_hostile(validate_negative_gate "--max-median-error must be a number ≥ 0 \\(got -1\\)"
                    validate --max-median-error -1)
capcalc_cli_hostile(validate_worst_factor_below_1 "--max-worst-factor must be a number ≥ 1 \\(got 0.5\\)"
                    validate --max-worst-factor 0.5)

# Numbers past sense: a training run's figures, HF layer kinds, a repeat's index, empty names.
set(llama data/models/llama2_7b_hf.json)
capcalc_cli_hostile(dataset_size_nan "--dataset-size must be a count > 0 \\(e.g. 2e12, 2T, 1.5M\\) \\(got nan\\)"
                    estimate ${llama} --gpu h100 --mode training --dataset-size nan)
capcalc_cli_hostile(epochs_huge "--epochs must be a number at most 1000000 \\(the limit\\) \\(got 1e308\\)"
                    estimate ${llama} --gpu h100 --mode training --dataset-size 1e6 --epochs 1e308)
capcalc_cli_hostile(tokens_huge "--tokens must be a count at most 1e\\+18 \\(the limit\\)"
                    compare ${llama} --hw h100,a100 --mode training --tokens 1e300)
capcalc_cli_hostile(price_huge "--price-per-hour must be a number at most 1000000 \\(the limit\\)"
                    estimate ${llama} --gpu h100 --mode training --tokens 1e12 --price-per-hour 1e308)
capcalc_cli_hostile(top_negative "--top must be a whole number ≥ 0 \\(got -1\\)"
                    estimate ${llama} --gpu h100 --top -1)
capcalc_cli_hostile(hf_layer_types_short "hf_layer_types_short.json:/layer_types: expected 4 entries \\(num_hidden_layers\\), got 3"
                    layers ${hj}/hf_layer_types_short.json)
capcalc_cli_hostile(hf_layer_types_unknown "hf_layer_types_unknown.json:/layer_types/3: unknown layer type \"fool_attention\"; did you mean \"full_attention\"\\?"
                    layers ${hj}/hf_layer_types_unknown.json)
capcalc_cli_hostile(hf_layer_types_number "hf_layer_types_number.json:/layer_types/3: expected a string, got a number"
                    layers ${hj}/hf_layer_types_number.json)
capcalc_cli_hostile(first_index_overflow "first_index_overflow.json:/layers/0/first_index: first_index 9223372036854775807 \\+ repeat 2 does not fit in a 64-bit integer"
                    layers ${hj}/first_index_overflow.json)
capcalc_cli_hostile(input_empty_name "input_empty_name.json:/inputs/0/name: a name must not be empty"
                    layers ${hj}/input_empty_name.json)

# Budgets: what the budget got wrong is blamed on its own key, in its own words (keys, not flags).
capcalc_cli_hostile(budget_set_unknown_dim "budget_set_unknown_dim.json:/budgets/0/set/sequence: the model has no dimension \"sequence\" to set"
                    check --budget ${hj}/budget_set_unknown_dim.json)
capcalc_cli_hostile(budget_missing_model "budget_missing_model.json:/budgets/0/model: [^\n]*/no_such_model.json: cannot open file"
                    check --budget ${hj}/budget_missing_model.json)
capcalc_cli_hostile(budget_model_directory "budget_model_directory.json:/budgets/0/model: [^\n]*: not a regular file \\(a directory\\)"
                    check --budget ${hj}/budget_model_directory.json)
capcalc_cli_hostile(budget_tokens_no_seq "budget_tokens_no_seq.json:/budgets/0/tokens: \"tokens\" needs a model with a \"seq\" dimension"
                    check --budget ${hj}/budget_tokens_no_seq.json)
capcalc_cli_hostile(budget_train_time_no_run "budget_train_time_no_run.json:/budgets/0/limits/max_train_time: max_train_time needs a training run: \"mode\": \"training\" with \"dataset_size\" or \"tokens\"\n$"
                    check --budget ${hj}/budget_train_time_no_run.json)
capcalc_cli_hostile(budget_ttft_no_prompt "budget_ttft_no_prompt.json:/budgets/0/limits/max_ttft: max_ttft needs LLM serving: give \"prompt_tokens\""
                    check --budget ${hj}/budget_ttft_no_prompt.json)
capcalc_cli_hostile(budget_tokens_and_size "budget_tokens_and_size.json:/budgets/0/dataset_size: give \"tokens\" or \"dataset_size\", not both"
                    check --budget ${hj}/budget_tokens_and_size.json)
capcalc_cli_hostile(budget_epochs_alone "budget_epochs_alone.json:/budgets/0/epochs: \"epochs\" needs \"dataset_size\""
                    check --budget ${hj}/budget_epochs_alone.json)

# Files that are not text, or not files: a NUL byte has its line and column; a directory says so.
capcalc_cli_hostile(nul_in_json_string "nul_in_string.json:2:12: a NUL byte in JSON \\(a binary file\\?\\)"
                    layers ${hj}/nul_in_string.json)
capcalc_cli_hostile(nul_in_json "nul_between.json:2:3: a NUL byte in JSON"
                    layers ${hj}/nul_between.json)
capcalc_cli_hostile(nul_in_onnx_text "nul.onnxtxt:4:10: a NUL byte in ONNX text"
                    layers ${ho}/nul.onnxtxt)
capcalc_cli_hostile(nul_in_textproto "nul.textproto:2:32: a NUL byte in protobuf text"
                    layers ${ho}/nul.textproto)
capcalc_cli_hostile(directory_hardware "tests/hostile: not a regular file \\(a directory\\)"
                    estimate ${rn50} --gpu a100 --hardware-file ${hostile})
capcalc_cli_hostile(directory_budget "tests/hostile: not a regular file \\(a directory\\)"
                    check --budget ${hostile})
capcalc_cli_hostile(directory_measurements "tests/hostile: not a regular file \\(a directory\\)"
                    validate --measurements ${hostile})
capcalc_cli_hostile(hardware_overhead_huge "hardware_overhead_huge.json:/devices/0/performance/eager_overhead_us: 1e\\+300 µs is outside physical sense"
                    estimate ${rn50} --gpu a100 --hardware-file ${hj}/hardware_overhead_huge.json)
capcalc_cli_hostile(hardware_sparsity_huge "hardware_sparsity_huge.json:/devices/0/sparsity_2_4_speedup: a speedup is at most 2"
                    estimate ${rn50} --gpu a100 --hardware-file ${hj}/hardware_sparsity_huge.json)
capcalc_cli_hostile(measurement_tokens_huge "meas_tokens_huge.json:/cases/0/tokens: 1e\\+300 is more than 1e\\+18 \\(the limit\\)"
                    validate ${validate_args} ${hj}/meas_tokens_huge.json)

# A runtime file given without --runtime is read all the same (it was never opened: /dev/zero,
# a FIFO or a broken file passed with exit code 0).
capcalc_cli_hostile(runtime_file_alone_estimate "^capcalc: error: /dev/zero: not a regular file \\(a character device\\)\n$"
                    estimate ${rn50} --gpu a100 --runtime-file /dev/zero)
capcalc_cli_hostile(runtime_file_alone_compare "^capcalc: error: [^\n]*/fifo.json: not a regular file \\(a FIFO\\)\n$"
                    compare ${rn50} --hw a100,t4 --runtime-file ${made}/fifo.json)
capcalc_cli_hostile(runtime_file_alone_check "^capcalc: error: /dev/zero: not a regular file"
                    check ${rn50} --gpu a100 --max-latency 1s --runtime-file /dev/zero)

# Outputs (-o) that are not regular files: written in place, never renamed over (as root, the
# rename replaced /dev/full with a regular file and exited 0); a directory is named as one.
capcalc_cli_hostile(output_dev_full "^capcalc: error: /dev/full: cannot write file\n$"
                    roofline ${rn50} --gpu a100 -o /dev/full)
capcalc_cli_hostile(output_directory "^capcalc: error: [^\n]*/hostile: is a directory, not a file to write\n$"
                    report ${rn50} --gpu a100 -o ${made})
capcalc_cli_hostile(output_fifo_no_reader "^capcalc: error: [^\n]*/out.fifo: a FIFO that no process reads\n$"
                    roofline ${rn50} --gpu a100 -o ${made}/out.fifo)
# An output that cannot be written fails before the work whose result it would hold (calibrate's
# fit took 27 s on the H200 set, then reported the folder): checked before the inputs are read.
capcalc_cli_hostile(output_folder_missing_calibrate "^capcalc: error: [^\n]*/no_such_folder/x.json: cannot write file\n$"
                    calibrate /dev/null -o ${made}/no_such_folder/x.json)
capcalc_cli_hostile(output_folder_missing_ranges "^capcalc: error: [^\n]*/no_such_folder/r.json: cannot write file\n$"
                    validate --measurements /dev/null --write-ranges ${made}/no_such_folder/r.json)
capcalc_cli_hostile(output_folder_missing_serve "^capcalc: error: [^\n]*/no_such_folder/s.txt: cannot write file\n$"
                    serve --validate /dev/null -o ${made}/no_such_folder/s.txt)

# ---------------------------------------------------------------------------------------------
# Issue 21 §4: the generated corpus (tests/hostile/corpus.py writes tests/hostile/corpus/ and
# holds each case's command line and expected location), one test per input kind: exit code 2,
# empty stdout, one stderr line with the location, 10 s and 4 GiB per run (no address-space
# limit under AddressSanitizer, which reserves far more).
if(Python3_EXECUTABLE)
  set(corpus_py ${CMAKE_CURRENT_SOURCE_DIR}/hostile/corpus.py)
  add_test(NAME hostile.corpus_up_to_date COMMAND ${Python3_EXECUTABLE} ${corpus_py} check)
  set(corpus_flags)
  if(CAPCALC_SANITIZE OR CAPCALC_FUZZ)
    set(corpus_flags --no-memory-limit)
  endif()
  foreach(kind model onnx onnxtxt textproto hf hardware runtime budget measurements trace mix serving zoo
               flags)
    if(NOT CAPCALC_WITH_ONNX AND kind MATCHES "onnx|textproto")
      continue()
    endif()
    add_test(NAME hostile.corpus_${kind}
             COMMAND ${Python3_EXECUTABLE} ${corpus_py} run --cli $<TARGET_FILE:capcalc_cli>
                     --kind ${kind} ${corpus_flags})
    set_tests_properties(hostile.corpus_${kind} PROPERTIES TIMEOUT 600)
  endforeach()
endif()

# Issue 21: inputs that crashed, hung or exhausted memory. Each is exit code 2 with a located
# message (capcalc_cli_error checks both, that stdout is empty, and that nothing crashed);
# the TIMEOUT catches a hang. Small inputs are in tests/hostile/, big ones and FIFOs are made
# by the fixture below.
set(hostile tests/hostile)
set(made ${CMAKE_CURRENT_BINARY_DIR}/hostile)
add_test(NAME cli.hostile_files
         COMMAND ${CMAKE_COMMAND} -DDIR=${made} -P ${CMAKE_CURRENT_SOURCE_DIR}/hostile/generate.cmake)
set_tests_properties(cli.hostile_files PROPERTIES FIXTURES_SETUP hostile_files)

# capcalc_cli_hostile(name stderr_regex args...): capcalc_cli_error with the fixture and a
# timeout.
function(capcalc_cli_hostile name stderr_regex)
  capcalc_cli_error(${name} "${stderr_regex}" ${ARGN})
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
capcalc_cli_hostile(dev_zero_budget_model "^capcalc: error: /dev/zero: not a regular file"
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
capcalc_cli_hostile(loop_in_loop "loop_in_loop.onnxtxt:/graph/node/0: the model expands to more than 2,000,000 nodes \\(the limit\\)"
                    layers ${hostile}/loop_in_loop.onnxtxt)

# Expansion past the documented limits: named where it happens, before any memory is spent.
set(layer_limit "the model expands to more than 1,000,000 layers \\(the limit\\)")
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
capcalc_cli_ok(huge_training_run "steps +inf of 1 x 1 device"
               estimate data/models/llama2_7b_hf.json --gpu h100 --mode training
               --dataset-size 1e308 --epochs 1e308)
capcalc_cli_ok(huge_micro_batches "kernels +[0-9.]+ E launched per step"
               estimate data/models/llama2_7b_hf.json --gpu h100 --mode training --pp 2
               --micro-batches 9223372036854775807)

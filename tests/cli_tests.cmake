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
capcalc_cli_ok(estimate_cpu "on Intel Core i9-13900K"
               estimate data/models/resnet18.json --gpu i9-13900k)
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
capcalc_cli_error(bad_precision_flag "--precision: fp33 not in"
                  estimate data/models/resnet50.json --gpu A100 --precision fp33)
capcalc_cli_error(no_subcommand "A subcommand is required")
capcalc_cli_error(overflow "layer \"huge\": a count does not fit in a 64-bit integer"
                  layers ${cases}/overflow.json)
capcalc_cli_error(bad_hardware_file "tests/cli/bad_hardware.json:/devices/0/memory_gb: expected a positive number, got -80"
                  estimate data/models/tiny_cnn.json --gpu bad --hardware ${cases}/bad_hardware.json)
capcalc_cli_error(not_json_at_all "tests/cli/binary.json:1:1: syntax error"
                  layers ${cases}/binary.json)

# Issue 3: training runs, hardware listing, user hardware files.
capcalc_cli_ok(training_run "step time.*throughput.*Training run \\(115 M samples\\).*time .*device-hours .*cost +\\$[0-9]+ at \\$1.99/h.*energy +[0-9.]+ kWh at 400 W"
               estimate data/models/resnet50.json --mode training --dataset-size 1281167 --epochs 90 --gpu A100-80GB --batch 256 --precision bf16)
capcalc_cli_ok(training_run_json "\"training\": {\n *\"samples\": 115305030\\.0,\n *\"steps\": 450411\\.0,.*\"device_hours\":.*\"cost_usd\":.*\"energy_kwh\":"
               estimate data/models/resnet50.json --mode training --dataset-size 1281167 --epochs 90 --gpu A100-80GB --batch 256 --format json)
capcalc_cli_ok(training_tokens "Training run \\(488 k samples\\)"
               estimate data/models/gpt2.json --mode training --tokens 500e6 --gpu h100 --precision bf16 --batch 8)
capcalc_cli_ok(explain "How these figures were computed.*matrix rate +312 TFLOP/s bf16 matrix peak"
               estimate data/models/resnet50.json --gpu A100 --precision bf16 --explain)
capcalc_cli_ok(compiled_profile "compiled profile.*fused"
               estimate data/models/resnet50.json --gpu A100 --precision fp16 --profile compiled)
capcalc_cli_ok(sparsity_unsupported "2:4 requested, but this device has no 2:4 support: no speedup"
               estimate data/models/resnet50.json --gpu V100 --precision fp16 --sparsity 2:4)
capcalc_cli_ok(sparsity_unstructured "unstructured: no speedup on dense hardware"
               estimate data/models/resnet50.json --gpu A100 --precision fp16 --sparsity unstructured)
capcalc_cli_ok(hw_list "t4 +gpu +16 +320.*h100-sxm +gpu +80 +3350 +67 +989.4.*[0-9]+ devices"
               hw list --type gpu)
capcalc_cli_ok(hw_list_csv "^id,name,type,vendor,memory_gb,memory_bandwidth_gb_per_s,fp64_vector_tflops"
               hw list --format csv)
capcalc_cli_ok(hw_list_json "\"schema_version\": 1,.*\"devices\": \\[.*\"id\": \"i9-13900k\""
               hw list --type cpu --format json)
capcalc_cli_ok(hw_show "NVIDIA A100 80GB SXM4 \\(a100-sxm4-80gb\\).*bf16 +39 +312.*sources"
               hw show a100)
capcalc_cli_ok(hw_show_json "\"id\": \"tpu-v4\""
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

# The validation set: every case predicted with the global parameters. The limits come from
# the measured figures (median 16.0 %, worst 4.15x at the time of writing) with a margin:
# a change that makes predictions clearly worse fails here.
capcalc_cli_ok(validate "76 cases: median \\|error\\| [0-9.]+ %, worst [0-9.]+x"
               validate --max-median-error 0.20 --max-worst-factor 5)
add_test(NAME cli.validate_gate_fails
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 "-DARGS=validate;--max-median-error;0.01" -DEXPECT_CODE=1
                 "-DSTDERR_REGEX=median \\|error\\| .* exceeds the limit 1.0 %"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
capcalc_cli_error(validate_bad_file "tests/cli/bad_measurements.json:/cases/0/metric: unknown metric \"througput_per_s\"; did you mean \"throughput_per_s\"\\?"
                  validate --measurements tests/cli/bad_measurements.json)

# calibrate: fit a device to records, write a hardware file, use it.
add_test(NAME cli.calibrate_round_trip
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 -DRECORDS=${CMAKE_CURRENT_SOURCE_DIR}/cli/records.json
                 -DOUT=${CMAKE_CURRENT_BINARY_DIR}/calibrated.json
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/calibrate_round_trip.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
capcalc_cli_error(calibrate_unknown_device "unknown device \"a1000\"; did you mean"
                  calibrate tests/cli/records_bad_device.json)

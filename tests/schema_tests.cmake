# Schemas enforced (issue 25): every data file and every JSON output of every command against its
# published schema in data/schema, with a real validator (Python's jsonschema; Debian:
# python3-jsonschema). Skipped, not failed, where python3 or that module is missing.

set(schema_dir ${CMAKE_CURRENT_BINARY_DIR}/schema_tests)
set(validate_py ${CMAKE_CURRENT_SOURCE_DIR}/validate_schema.py)
set(walker_py ${CMAKE_CURRENT_SOURCE_DIR}/check_data_schemas.py)

# capcalc_output_schema_test(name schema exit_code args...): runs capcalc with args, expects
# exit_code, and validates what it printed against schema. An argument @OUT@ is replaced by a
# file of the test's own; then that file (what the command wrote there) is validated instead.
# Arguments travel as a list, so one may hold spaces ("TPU v4").
function(capcalc_output_schema_test name schema exit_code)
  if(NOT Python3_Interpreter_FOUND)
    add_test(NAME schema.${name} COMMAND ${CMAKE_COMMAND} -E echo "SKIPPED: python3 not found")
  else()
    set(out ${schema_dir}/${name}.json)
    set(args ${ARGN})
    set(stdout_to ${out})
    if("@OUT@" IN_LIST args)
      list(TRANSFORM args REPLACE "^@OUT@$" "${out}")
      set(stdout_to /dev/null)
    endif()
    add_test(NAME schema.${name}
             COMMAND bash -c "mkdir -p '${schema_dir}' && rm -f '${out}' || exit 1
\"$0\" \"$@\" > '${stdout_to}'; code=$?
if [ $code -ne ${exit_code} ]; then echo \"capcalc $*: exit status $code, expected ${exit_code}\"; exit 1; fi
exec '${Python3_EXECUTABLE}' '${validate_py}' '${out}' '${PROJECT_SOURCE_DIR}/${schema}'"
                     $<TARGET_FILE:capcalc_cli> ${args}
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  endif()
  set_tests_properties(schema.${name} PROPERTIES SKIP_REGULAR_EXPRESSION "SKIPPED:")
endfunction()

# --- Data files -------------------------------------------------------------------------------
# Every *.json and *.jsonl under data/ and tests/ is mapped to a schema by the rules in
# check_data_schemas.py, or exempted there with its reason; an unmapped file fails.
if(Python3_Interpreter_FOUND)
  add_test(NAME schema.data_files COMMAND ${Python3_EXECUTABLE} ${walker_py} ${PROJECT_SOURCE_DIR})
  set_tests_properties(schema.data_files PROPERTIES SKIP_REGULAR_EXPRESSION "SKIPPED:")
  # The walker itself: a new JSON file nobody mapped fails (jsonschema or not), and a model file
  # that breaks its schema is reported at its JSON pointer.
  set(fake ${schema_dir}/fake_root)
  add_test(NAME schema.data_files_unmapped_fails
           COMMAND bash -c "rm -rf '${fake}' && mkdir -p '${fake}/data/new' '${fake}/tests' &&
echo '{}' > '${fake}/data/new/table.json' &&
'${Python3_EXECUTABLE}' '${walker_py}' '${fake}'; echo \"exit status $?\"")
  set_tests_properties(schema.data_files_unmapped_fails PROPERTIES PASS_REGULAR_EXPRESSION
    "data/new/table.json: no rule gives this file a schema; add one to RULES.*\nexit status 1\n")
  set(broken ${schema_dir}/broken_root)
  add_test(NAME schema.data_files_violation_fails
           COMMAND bash -c "rm -rf '${broken}' && mkdir -p '${broken}/data/models' '${broken}/tests' &&
cp -r '${PROJECT_SOURCE_DIR}/data/schema' '${broken}/data/' &&
echo '{\"format\": \"capcalc-model/1\", \"name\": \"x\", \"inputs\": [], \"layers\": []}' > '${broken}/data/models/broken.json' &&
'${Python3_EXECUTABLE}' '${walker_py}' '${broken}'; echo \"exit status $?\"")
  set_tests_properties(schema.data_files_violation_fails PROPERTIES
    PASS_REGULAR_EXPRESSION "data/models/broken.json:/inputs: .*\nexit status 1\n"
    SKIP_REGULAR_EXPRESSION "SKIPPED:")
endif()

# --- Command outputs ----------------------------------------------------------------------------
set(models data/models)

# estimate, across modes (the serving and runtime ones are in tests/CMakeLists.txt).
capcalc_output_schema_test(estimate_inference data/schema/estimate-output.schema.json 0
  estimate ${models}/resnet50.json --gpu A100 --format json)
capcalc_output_schema_test(estimate_tpu data/schema/estimate-output.schema.json 0
  estimate ${models}/bert_base.json --hw "TPU v4" --precision bf16 --format json)
capcalc_output_schema_test(estimate_training_3d data/schema/estimate-output.schema.json 0
  estimate ${models}/gpt3_175b.json --gpu h100 --mode training --precision bf16 --batch 1
  --devices 64 --tp 8 --pp 4 --micro-batches 16 --virtual-stages 2 --zero 1 --checkpointing
  --tokens 1e9 --price-per-hour 2 --format json)
capcalc_output_schema_test(estimate_training_context_parallel data/schema/estimate-output.schema.json 0
  estimate ${models}/llama3_70b.json --gpu h100 --mode training --precision bf16 --batch 1
  --set seq=32768 --devices 64 --tp 8 --cp 4 --zero 1 --sequence-parallel on --format json)
capcalc_output_schema_test(estimate_training_expert_parallel data/schema/estimate-output.schema.json 0
  estimate ${models}/mixtral_8x7b_hf.json --gpu h100 --mode training --precision bf16 --batch 1
  --devices 64 --tp 2 --ep 8 --zero 1 --moe-imbalance 1.2 --format json)
capcalc_output_schema_test(estimate_training_moe_dispatcher_mtp data/schema/estimate-output.schema.json 0
  estimate ${models}/deepseek_v3_hf.json --gpu b200 --mode training --precision fp8 --batch 1
  --devices 256 --pp 16 --ep 8 --micro-batches 16 --moe-dispatcher hybridep --mtp-layers 1
  --format json)
capcalc_output_schema_test(estimate_serving_allgather_dispatcher data/schema/estimate-output.schema.json 0
  estimate ${models}/mixtral_8x7b_hf.json --gpu h100 --tp 4 --ep 4 --etp 1 --moe-dispatcher allgather
  --batch 8 --prompt-tokens 1000 --output-tokens 200 --format json)
capcalc_output_schema_test(estimate_training_recompute data/schema/estimate-output.schema.json 0
  estimate ${models}/deepseek_v3_hf.json --gpu h100 --mode training --precision bf16 --batch 1
  --devices 1024 --tp 2 --pp 8 --ep 64 --etp 1 --micro-batches 64 --virtual-stages 4 --zero 1
  --recompute mla_up_proj,mlp --format json)
capcalc_output_schema_test(estimate_training_checkpoint_layers data/schema/estimate-output.schema.json 0
  estimate ${models}/llama3_8b.json --gpu h100 --mode training --precision bf16 --batch 1
  --devices 2 --pp 2 --checkpointing --checkpoint-layers 8 --format json)
capcalc_output_schema_test(estimate_training_lora data/schema/estimate-output.schema.json 0
  estimate ${models}/llama2_70b.json --gpu h100 --mode training --precision fp8 --batch 1
  --set seq=8192 --devices 8 --tp 4 --micro-batches 4 --lora-rank 16 --lora-targets attention
  --format json)
capcalc_output_schema_test(estimate_training_zero3 data/schema/estimate-output.schema.json 0
  estimate ${models}/resnet50.json --gpu a100 --mode training --batch 64 --devices 8 --zero 3
  --optimizer sgd --dataset-size 1281167 --epochs 2 --sparsity 2:4 --precision fp16 --format json)
capcalc_output_schema_test(estimate_serving_int4 data/schema/estimate-output.schema.json 0
  estimate ${models}/llama2_7b_hf.json --gpu h100 --precision bf16 --weight-precision int4
  --kv-precision fp8 --prompt-tokens 512 --output-tokens 128 --batch 8 --tp 2 --format json)
capcalc_output_schema_test(estimate_moe_serving data/schema/estimate-output.schema.json 0
  estimate ${models}/mixtral_8x7b_hf.json --gpu h100 --precision bf16 --prompt-tokens 256
  --output-tokens 64 --batch 4 --tp 4 --runtime vllm --format json)
capcalc_output_schema_test(estimate_moe data/schema/estimate-output.schema.json 0
  estimate ${models}/qwen3_30b_a3b_hf.json --gpu h200 --precision fp8 --batch 2 --set seq=1024
  --format json)

# compare: a sweep over every device, a training run, LLM serving.
capcalc_output_schema_test(compare_sweep data/schema/compare-output.schema.json 0
  compare ${models}/resnet50.json --all --batch 1,32 --precision fp32,bf16 --format json)
capcalc_output_schema_test(compare_training data/schema/compare-output.schema.json 0
  compare ${models}/resnet50.json --gpu a100,h100,t4 --mode training --batch 64
  --dataset-size 1e6 --devices 8 --tp 2 --sort cost --format json)
capcalc_output_schema_test(compare_serving data/schema/compare-output.schema.json 0
  compare ${models}/llama2_7b_hf.json --gpu a100,h100,h200 --precision bf16 --prompt-tokens 256
  --output-tokens 32 --runtime vllm --format json)

# layers: counts alone, and with per-layer times.
capcalc_output_schema_test(layers data/schema/layers-output.schema.json 0
  layers ${models}/resnet18.json --format json)
capcalc_output_schema_test(layers_device data/schema/layers-output.schema.json 0
  layers ${models}/llama2_7b.json --gpu h100 --precision bf16 --format json)

# check: all limits passing, some failing (exit 1), a figure unknown (no price: value null).
capcalc_output_schema_test(check_pass data/schema/check-output.schema.json 0
  check --budget tests/cli/budget_pass.json --format json)
capcalc_output_schema_test(check_fail data/schema/check-output.schema.json 1
  check --budget tests/cli/budget_fail.json --format json)
capcalc_output_schema_test(check_flags data/schema/check-output.schema.json 1
  check ${models}/llama2_7b_hf.json --gpu h100,m3-max --precision fp16 --prompt-tokens 128
  --output-tokens 16 --must-fit --max-ttft 1s --max-cost 1USD --max-params 10G --format json)

# validate: the published set, and the measured set with its runtimes.
capcalc_output_schema_test(validate data/schema/validate-output.schema.json 0
  validate --format json)
capcalc_output_schema_test(validate_measured data/schema/validate-output.schema.json 0
  validate --measurements data/validation/measured_h200.json --format json)
# --write-ranges writes a ranges table (the shipped one is checked by cli.ranges_up_to_date).
capcalc_output_schema_test(validate_write_ranges data/schema/ranges.schema.json 0
  validate --write-ranges @OUT@)

# hw and runtimes: every device and runtime of the tables, and one of each shown.
capcalc_output_schema_test(hw_list data/schema/hw-list-output.schema.json 0 hw list --format json)
# A user's table names no version or date: null, not "".
capcalc_output_schema_test(hw_list_user_table data/schema/hw-list-output.schema.json 0
  hw list --hardware tests/cli/my_hardware.json --format json)
capcalc_output_schema_test(hw_show data/schema/hw-show-output.schema.json 0
  hw show h100 --format json)
capcalc_output_schema_test(hw_show_mesh data/schema/hw-show-output.schema.json 0
  hw show mi300x --format json)
# Corroboration and flagged (unsourced) peaks: Apple publishes no M3 Max TFLOPS.
capcalc_output_schema_test(hw_show_estimate data/schema/hw-show-output.schema.json 0
  hw show m3-max --format json)
capcalc_output_schema_test(estimate_flagged_peak data/schema/estimate-output.schema.json 0
  estimate data/models/resnet18.json --gpu m2-ultra --precision fp16 --format json)
# A device with a sustained matrix clock (MI300X, AMD's measurement) carries it in the JSON.
capcalc_output_schema_test(estimate_sustained_clock data/schema/estimate-output.schema.json 0
  estimate data/models/resnet50.json --gpu mi300x --precision fp8 --format json)
capcalc_output_schema_test(hw_show_sustained_clock data/schema/hw-show-output.schema.json 0
  hw show mi325x --format json)
capcalc_output_schema_test(runtimes_list data/schema/runtimes-list-output.schema.json 0
  runtimes list --format json)
capcalc_output_schema_test(runtimes_show data/schema/runtimes-show-output.schema.json 0
  runtimes show pytorch-eager --format json)
capcalc_output_schema_test(runtimes_show_serving data/schema/runtimes-show-output.schema.json 0
  runtimes show sglang --format json)
capcalc_output_schema_test(runtimes_show_attention data/schema/runtimes-show-output.schema.json 0
  runtimes show megatron-core --format json)

# probe and calibrate write hardware tables: the hardware schema, as --hardware-file reads them.
capcalc_output_schema_test(probe data/schema/hardware.schema.json 0
  probe --seconds 0.3 --threads 1)
capcalc_output_schema_test(calibrate data/schema/hardware.schema.json 0
  calibrate tests/cli/records.json -o @OUT@)

if(CAPCALC_WITH_ONNX)
  capcalc_output_schema_test(estimate_onnx data/schema/estimate-output.schema.json 0
    estimate tests/exports/resnet50.onnx --gpu t4 --precision fp16 --format json)
  capcalc_output_schema_test(estimate_onnx_text data/schema/estimate-output.schema.json 0
    estimate tests/cli/small_cnn.onnxtxt --gpu i9-13900k --format json)
  # An operator capcalc does not know: model.unknown_ops (op type -> nodes).
  capcalc_output_schema_test(estimate_onnx_unknown_op data/schema/estimate-output.schema.json 0
    estimate tests/cli/unknown_onnx_op.onnxtxt --gpu a100 --format json)
  capcalc_output_schema_test(layers_onnx_unknown_op data/schema/layers-output.schema.json 0
    layers tests/cli/unknown_onnx_op.onnxtxt --format json)
endif()

# The model schema's operator enum against the operator table (src/ops.cpp), both ways.
target_sources(capcalc_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/schema_test.cpp)

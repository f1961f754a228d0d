# Answers that say what to do (issue 20 §3): a workload that does not fit says how it would,
# --tp must split the attention heads, compare ranks what fits first and says what the rest
# need, and training without --batch says which batch it took.

capcalc_cli_ok(advice.inference_tp
               "DOES NOT FIT.*to fit       does not fit: 138 GB of weights; needs at least 2 x NVIDIA H100[^:]*: try --tp 2\n"
               estimate data/models/llama2_70b.json --gpu h100 --precision fp16)
# The text wraps; JSON carries the same message on one line.
capcalc_cli_ok(advice.replicas_do_not_split
               "\"message\": \"does not fit: 138 GB of weights; replicas \\(--devices\\) each hold the whole model and do not split it; needs at least 2 x NVIDIA H100 SXM5 80GB per replica: try --tp 2 --devices 8\""
               estimate data/models/llama2_70b.json --gpu h100 --precision fp16 --devices 4 --format json)
capcalc_cli_ok(advice.training
               "\"message\": \"does not fit: 108 GB of weights, gradients and optimizer state; fits with any of: --devices 2 --zero 3 \\(2 devices\\), --tp 2 \\(2 devices\\), --pp 2 \\(2 devices\\)\""
               estimate data/models/llama2_7b.json --gpu a100 --mode training --precision bf16 --batch 1 --format json)
capcalc_cli_ok(advice.json "\"to_fit\": {\n *\"message\": \"does not fit: 138 GB of weights; needs at least 2 x [^\"]*: try --tp 2\""
               estimate data/models/llama2_70b.json --gpu h100 --precision fp16 --format json)
capcalc_schema_test(estimate_to_fit - data/schema/estimate-output.schema.json
                    estimate data/models/llama2_70b.json --gpu h100 --precision fp16 --format json)
capcalc_cli_error(advice.tp_heads
                  "^capcalc: error: --tensor-parallel 3 does not divide the 32 attention heads of \"layers.0.self_attn\"\n$"
                  estimate data/models/llama2_7b.json --gpu h100 --tp 3)
capcalc_cli_error(advice.tp_kv_heads  # Qwen2-7B: 28 heads, 4 KV heads
                  "^capcalc: error: --tensor-parallel 14 and the 4 KV heads of \"layers.0.self_attn\" do not divide each other"
                  estimate data/models/qwen2_7b_hf.json --gpu h100 --tp 14 --precision fp16)
# 138 GB of fp16 weights: the 80 GB H100 does not fit, MI300X (192 GB) does; by time the H100
# would come first, by memory last: fit-first either way.
foreach(key time throughput cost memory energy table)
  capcalc_cli_ok(advice.compare_fit_first_${key}
                 "\nmi300x[^\n]* yes [^\n]*\nh100-sxm[^\n]* no \\(2 with --tp 2\\)"
                 compare data/models/llama2_70b.json --hw h100,mi300x --precision fp16 --sort ${key})
endforeach()
capcalc_cli_ok(advice.compare_csv_flags "\nllama2_70b,h100-sxm,[^\n]*,false,2,[a-z]+,[^\n]*,--tp 2\n"
               compare data/models/llama2_70b.json --hw h100 --precision fp16 --format csv)

# Training without --batch: the zoo's typical batch, cited, or the file's with a warning.
capcalc_cli_ok(advice.typical_batch
               "workload     training, fp32, batch 256 \\(no --batch: resnet50's typical training batch\\).*\n  batch from   He et al. 2015"
               estimate resnet50 --gpu a100 --mode training)
# GPT-2's typical 8 x 1,024 tokens; a --set of the sequence still wins.
capcalc_cli_ok(advice.typical_batch_seq "\"seq\": 512.*\"batch\": 8,\n *\"batch_note\": \"no --batch: gpt2's typical training batch\""
               estimate gpt2 --gpu a100 --mode training --set seq=512 --format json)
add_test(NAME cli.advice.no_batch_warns
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 "-DARGS=estimate;data/models/mobilenet_v2.json;--gpu;a100;--mode;training"
                 -DEXPECT_CODE=0 "-DSTDOUT_REGEX=batch 1 \\(no --batch: the model file's\\)"
                 "-DSTDERR_REGEX=^warning: training without --batch: batch 1, the model file's; give --batch N\n$"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
# compare and check train at the same batch, and say so on stderr (their header or line
# shows the batch; it was 1, the file's, without a word).
add_test(NAME cli.advice.typical_batch_compare
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 "-DARGS=compare;resnet50;--hw;a100,t4;--mode;training" -DEXPECT_CODE=0
                 "-DSTDOUT_REGEX=^resnet50 \\(25.6 M params\\), training, fp32, batch 256: 2 devices"
                 "-DSTDERR_REGEX=^warning: training without --batch: batch 256, resnet50's typical training batch; give --batch N\n$"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
add_test(NAME cli.advice.no_batch_warns_check
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 "-DARGS=check;data/models/mobilenet_v2.json;--hw;a100;--mode;training;--must-fit"
                 -DEXPECT_CODE=0 "-DSTDOUT_REGEX=\\(training, fp32, batch 1\\)"
                 "-DSTDERR_REGEX=^warning: training without --batch: batch 1, the model file's; give --batch N\n$"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
add_test(NAME cli.advice.batch_given_is_silent_compare
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli>
                 "-DARGS=compare;resnet50;--hw;a100;--mode;training;--batch;32" -DEXPECT_CODE=0
                 "-DSTDOUT_REGEX=training, fp32, batch 32: 1 device" "-DSTDERR_REGEX=^$"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
capcalc_cli_ok(advice.batch_given_is_silent "workload     training, fp32, batch 32, "
               estimate resnet50 --gpu a100 --mode training --batch 32)

# A budget file's workload keys and estimate's flags are one workload (WorkloadSpec): the
# figures `check --budget tests/cli/budget_workload.json` gates are those `estimate` prints for
# the same settings as flags, to the last digit.
#   -DCLI=<binary>
function(capcalc_run out_var)
  execute_process(COMMAND ${CLI} ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "capcalc ${ARGN}: exit ${code}\n${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

function(expect_equal what budget flags)
  if(NOT budget STREQUAL flags)
    message(FATAL_ERROR "${what}: the budget's ${budget}, the flags' ${flags}")
  endif()
  message(STATUS "${what}: ${budget} both ways")
endfunction()

capcalc_run(check check --budget tests/cli/budget_workload.json --format json)
string(JSON training_step GET "${check}" results 0 value)
string(JSON training_memory GET "${check}" results 1 value)
string(JSON serving_memory GET "${check}" results 2 value)

capcalc_run(training estimate data/models/gpt2.json --gpu h100 --batch 8 --mode training
            --precision bf16 --optimizer sgd --sparsity 2:4 --checkpointing
            --weight-precision bf16 --devices 2 --tp 2 --format json)
string(JSON memory GET "${training}" estimate memory_bytes)
string(JSON step GET "${training}" estimate latency_s)
expect_equal("training memory" "${training_memory}" "${memory}")
expect_equal("training step" "${training_step}" "${step}")

capcalc_run(serving estimate data/models/gpt2.json --gpu h100 --batch 8 --precision fp16
            --kv-precision fp8 --prompt-tokens 512 --output-tokens 64 --format json)
string(JSON memory GET "${serving}" estimate llm memory_bytes)
expect_equal("serving memory" "${serving_memory}" "${memory}")

# CLI tests of the command line itself (issue 20). Uses capcalc_cli_ok/capcalc_cli_error from
# cli_tests.cmake, which is included first.

# capcalc_usage_error(name message args...): stderr is exactly "capcalc: error: MESSAGE\n"
# (MESSAGE literal, not a regex), the exit code 2 and stdout empty.
function(capcalc_usage_error name message)
  string(REGEX REPLACE "([][+.*()^$?|\\\\])" "\\\\\\1" escaped "${message}")
  capcalc_cli_error(${name} "^capcalc: error: ${escaped}\n$" ${ARGN})
endfunction()

set(resnet data/models/resnet50.json)
set(llama data/models/llama2_7b.json)

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
capcalc_cli_ok(limit_count_bare "parameters 25.6 M within max 100000000"
               check ${resnet} --hw A100 --max-params 100000000)
capcalc_usage_error(limit_budget_no_unit
                    "tests/cli/budget_bare_memory.json:/budgets/0/limits/max_memory: 16 has no unit: write 16GB or 16GiB"
                    check --budget tests/cli/budget_bare_memory.json)

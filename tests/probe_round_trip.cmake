# `capcalc probe -o FILE`, then `capcalc estimate` on the probed device from that file: the
# probe's JSON must be a hardware table --hardware-file accepts, found by its alias "local".
#   -DCLI=<binary> -DOUT=<file in the build tree> -DMODEL=<model file>
file(REMOVE "${OUT}")
execute_process(COMMAND ${CLI} probe --seconds 0.3 -o ${OUT}
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(CONCAT report "command: capcalc probe --seconds 0.3 -o ${OUT}\nexit code: ${code}\n"
                     "stdout:\n${out}\nstderr:\n${err}")
if(NOT code STREQUAL "0" OR NOT out STREQUAL "" OR NOT EXISTS "${OUT}")
  message(FATAL_ERROR "expected exit code 0, nothing on stdout and the file written\n${report}")
endif()
# The summary, after any "warning: ... varied" lines of a busy machine.
string(CONCAT summary "^(warning: [^\n]+ varied [^\n]+\n)*capcalc: wrote [^\n]*: probe-[a-z0-9-]+: fp32 [0-9.]+ [kMGT]?FLOP/s, "
                     "fp64 [0-9.]+ [kMGT]?FLOP/s, memory [0-9.]+ [kMGT]?B/s")
if(NOT err MATCHES "${summary}")
  message(FATAL_ERROR "stderr is not the one-line summary\n${report}")
endif()
file(READ "${OUT}" json)
string(JSON id GET "${json}" devices 0 id)
string(JSON type GET "${json}" devices 0 type)
if(NOT id MATCHES "^probe-[a-z0-9-]+$" OR NOT type STREQUAL "cpu")
  message(FATAL_ERROR "unexpected device id \"${id}\" or type \"${type}\" in ${OUT}")
endif()

execute_process(COMMAND ${CLI} estimate ${MODEL} --gpu local --hardware-file ${OUT}
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(CONCAT report "command: capcalc estimate ${MODEL} --gpu local --hardware-file ${OUT}\n"
                     "exit code: ${code}\nstdout:\n${out}\nstderr:\n${err}")
if(NOT code STREQUAL "0")
  message(FATAL_ERROR "expected exit code 0\n${report}")
endif()
if(NOT out MATCHES " on [^\n]* \\(probed\\) \\(${id}\\)\n.*latency")
  message(FATAL_ERROR "estimate does not name the probed device ${id}\n${report}")
endif()

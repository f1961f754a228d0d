# Runs the capcalc CLI once and checks what a user would see.
#   -DCLI=<binary> -DARGS=<;-list> -DEXPECT_CODE=<n>
#   [-DSTDOUT_REGEX=..] [-DSTDERR_REGEX=..] [-DSTDOUT_EMPTY=ON] [-DSTDERR_ONE_LINE=ON]
#   [-DENV_VARS=NAME=VALUE;..] [-DEXPECT_COLOR=ON]
# The colour variables of the caller's environment are cleared first: output here is a pipe,
# so it must carry no ANSI escapes unless EXPECT_COLOR says the test forced them.
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=NO_COLOR --unset=CLICOLOR_FORCE ${ENV_VARS}
                        ${CLI} ${ARGS}
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(report "command: capcalc ${ARGS}\nexit code: ${code}\nstdout:\n${out}\nstderr:\n${err}")
if(NOT code STREQUAL EXPECT_CODE)
  message(FATAL_ERROR "expected exit code ${EXPECT_CODE}\n${report}")
endif()
if(DEFINED STDOUT_REGEX AND NOT out MATCHES "${STDOUT_REGEX}")
  message(FATAL_ERROR "stdout does not match '${STDOUT_REGEX}'\n${report}")
endif()
if(DEFINED STDERR_REGEX AND NOT err MATCHES "${STDERR_REGEX}")
  message(FATAL_ERROR "stderr does not match '${STDERR_REGEX}'\n${report}")
endif()
if(STDOUT_EMPTY AND NOT out STREQUAL "")
  message(FATAL_ERROR "stdout should be empty on an error\n${report}")
endif()
if(STDERR_ONE_LINE AND NOT err MATCHES "^[^\n]+\n$")
  message(FATAL_ERROR "stderr should be exactly one line\n${report}")
endif()
string(ASCII 27 escape)
if(EXPECT_COLOR AND NOT out MATCHES "${escape}\\[")
  message(FATAL_ERROR "expected ANSI colour on stdout\n${report}")
elseif(NOT EXPECT_COLOR AND (out MATCHES "${escape}" OR err MATCHES "${escape}"))
  message(FATAL_ERROR "ANSI escapes in output that is not a terminal\n${report}")
endif()
foreach(bad "terminate called" "Segmentation fault" "AddressSanitizer" "runtime error:" "json.exception")
  if(out MATCHES "${bad}" OR err MATCHES "${bad}")
    message(FATAL_ERROR "output contains '${bad}'\n${report}")
  endif()
endforeach()

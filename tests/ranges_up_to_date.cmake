# data/ranges.json must be what `capcalc validate --write-ranges` derives from the two
# validation sets today.  -DCLI=<binary> -DOUT=<file> -DEXPECTED=data/ranges.json
execute_process(COMMAND ${CLI} validate --measurements data/validation/measurements.json
                        --measurements data/validation/measured_h200.json --write-ranges ${OUT}
                RESULT_VARIABLE code OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "validate --write-ranges exited ${code}: ${err}")
endif()
file(READ ${OUT} made)
file(READ ${EXPECTED} shipped)
if(NOT made STREQUAL shipped)
  message(FATAL_ERROR "data/ranges.json is out of date: regenerate it with\n"
                      "  capcalc validate --measurements data/validation/measurements.json "
                      "--measurements data/validation/measured_h200.json --write-ranges data/ranges.json")
endif()

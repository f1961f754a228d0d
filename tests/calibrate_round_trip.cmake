# capcalc calibrate RECORDS -o OUT, then an estimate with --hardware-file OUT must reproduce
# the record (ResNet-50 training at batch 256 on the A100: 2,000 samples/s).
execute_process(COMMAND ${CLI} calibrate ${RECORDS} -o ${OUT}
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT code EQUAL 0 OR NOT out MATCHES "a100-sxm4-80gb +2 .*after.*wrote")
  message(FATAL_ERROR "calibrate failed (${code}):\n${out}\n${err}")
endif()
if(NOT out MATCHES "fit error: median \\|error\\| [0-9.]+ % before, 0\\.[0-9] % after")
  message(FATAL_ERROR "the fit does not reproduce the records:\n${out}")
endif()
execute_process(COMMAND ${CLI} estimate data/models/resnet50.json --gpu A100 --batch 256
                        --mode training --precision fp16 --format json --hardware-file ${OUT}
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX MATCH "\"throughput_per_s\": ([0-9.]+)" found "${out}")
if(NOT code EQUAL 0 OR NOT found)
  message(FATAL_ERROR "estimate with the calibrated file failed (${code}):\n${err}")
endif()
if(CMAKE_MATCH_1 LESS 1980 OR CMAKE_MATCH_1 GREATER 2020)
  message(FATAL_ERROR "calibrated throughput ${CMAKE_MATCH_1} is not 2000 +- 1 %")
endif()

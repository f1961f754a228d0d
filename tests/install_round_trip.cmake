# `cmake --install` into a fresh prefix, then use it as a user would: the installed binary,
# run from another directory with no CAPCALC_DATA_DIR, finds the installed data relative to
# itself; a consumer project builds against the installed package (find_package(capcalc)).
#   -DBUILD_DIR=<capcalc build> -DWORK_DIR=<scratch> -DCONSUMER_DIR=<tests/consumer>
#   -DGENERATOR=<cmake generator> -DCXX=<compiler> -DSOURCE_DIR=<repository>
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(run)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=CAPCALC_DATA_DIR
                          --unset=CAPCALC_HARDWARE_PATH ${ARGN}
                  WORKING_DIRECTORY ${WORK_DIR}
                  RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "failed (exit ${code}): ${ARGN}\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(path bin/capcalc include/capcalc/graph.hpp include/capcalc/predict.hpp
             share/capcalc/hardware.json share/capcalc/models/resnet50.json
             share/capcalc/schema/estimate-output.schema.json
             share/capcalc/validation/measurements.json share/man/man1/capcalc.1
             share/bash-completion/completions/capcalc)
  if(NOT EXISTS ${prefix}/${path})
    message(FATAL_ERROR "not installed: ${path}")
  endif()
endforeach()
file(GLOB_RECURSE config ${prefix}/*/capcalcConfig.cmake)
if(NOT config)
  message(FATAL_ERROR "no capcalcConfig.cmake under ${prefix}")
endif()

# The installed binary reads the installed table, not the source tree's.
run(${prefix}/bin/capcalc --version)
if(NOT out MATCHES "capcalc [0-9]+\\.[0-9]+\\.[0-9]+\nhardware table [0-9.]+ \\(updated [0-9-]+, [0-9]+ devices\\): ${prefix}/bin/../share/capcalc/hardware.json")
  message(FATAL_ERROR "--version does not name the installed table:\n${out}")
endif()
run(${prefix}/bin/capcalc estimate ${prefix}/share/capcalc/models/resnet50.json --gpu A100
    --format json)
if(NOT out MATCHES "\"params\": 25557032,")
  message(FATAL_ERROR "installed capcalc estimate:\n${out}")
endif()

# Zoo models by name, from a directory with no data/ (issue 20 §2).
run(${prefix}/bin/capcalc estimate resnet50 --gpu A100)
if(NOT out MATCHES "^resnet50 on NVIDIA A100 80GB SXM4.*parameters   25,557,032")
  message(FATAL_ERROR "installed capcalc estimate resnet50:\n${out}")
endif()
run(${prefix}/bin/capcalc models list --format csv)
if(NOT out MATCHES "\nresnet50,ResNet,25557032,4089184256,")
  message(FATAL_ERROR "installed capcalc models list:\n${out}")
endif()
# The docs' commands, with the installed binary.
run(bash ${SOURCE_DIR}/tests/doc_commands.sh ${SOURCE_DIR} ${prefix}/bin ${WORK_DIR}/doc_commands)

# fmt is a private dependency: the exported target needs it at link time only (a static
# library), never as a usage requirement (include paths, FMT_ definitions) of capcalc's headers.
file(GLOB_RECURSE targets_file ${prefix}/*/capcalcTargets.cmake)
file(READ "${targets_file}" targets)
string(REGEX MATCH "INTERFACE_LINK_LIBRARIES \"[^\"]*\"" link_libraries "${targets}")
string(REPLACE "\$<LINK_ONLY:fmt::fmt>" "" public_link_libraries "${link_libraries}")
if(public_link_libraries MATCHES "fmt::")
  message(FATAL_ERROR "capcalc exports fmt as a usage requirement: ${link_libraries}")
endif()

# A consumer project.
run(${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/consumer -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
run(${WORK_DIR}/consumer/consumer ${prefix}/share/capcalc/models/resnet50.json
    ${prefix}/share/capcalc/hardware.json A100)
# torchvision's ResNet-50: 25,557,032 parameters; 4,089,184,256 MACs at 224x224.
if(NOT out STREQUAL "params 25557032 macs 4089184256 fits yes\n")
  message(FATAL_ERROR "consumer printed: ${out}")
endif()
message(STATUS "installed to ${prefix}; the binary and a consumer project use it")

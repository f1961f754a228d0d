# `cpack -G DEB` builds a Debian package holding the binary, the data, the man page and the
# bash completion under /usr.   -DBUILD_DIR=<capcalc build> -DWORK_DIR=<scratch>
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
execute_process(COMMAND cpack -G DEB -B ${WORK_DIR} --config ${BUILD_DIR}/CPackConfig.cmake
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "cpack failed (exit ${code}):\n${out}\n${err}")
endif()
file(GLOB debs ${WORK_DIR}/*.deb)
list(LENGTH debs count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "expected one .deb in ${WORK_DIR}, found: ${debs}")
endif()
execute_process(COMMAND dpkg-deb --contents ${debs} RESULT_VARIABLE code OUTPUT_VARIABLE contents)
execute_process(COMMAND dpkg-deb --field ${debs} Package Version Depends OUTPUT_VARIABLE fields)
foreach(path ./usr/bin/capcalc ./usr/share/capcalc/hardware.json
             ./usr/share/capcalc/models/resnet50.json ./usr/share/man/man1/capcalc.1
             ./usr/share/bash-completion/completions/capcalc ./usr/include/capcalc/graph.hpp)
  string(FIND "${contents}" "${path}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${debs} lacks ${path}:\n${contents}")
  endif()
endforeach()
if(NOT fields MATCHES "Package: capcalc\nVersion: [0-9.]+\nDepends: .*libfmt9")
  message(FATAL_ERROR "unexpected control fields:\n${fields}")
endif()
message(STATUS "${debs}\n${fields}")

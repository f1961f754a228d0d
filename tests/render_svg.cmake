# Writes a roofline SVG and an HTML report with -o, then checks them with the tools that read
# them: rsvg-convert renders the SVG to a non-empty PNG; xmllint parses the SVG as XML and the
# HTML as HTML. A tool that is not installed is skipped (RSVG_CONVERT/XMLLINT empty or
# *-NOTFOUND); the CMake configure step warned about it.
#   -DCLI=<capcalc> -DOUT=<directory> [-DRSVG_CONVERT=<path>] [-DXMLLINT=<path>]
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "failed (exit ${code}): ${ARGN}\nstdout:\n${out}\nstderr:\n${err}")
  endif()
  if(NOT "${err}" STREQUAL "")
    message(FATAL_ERROR "wrote to stderr: ${ARGN}\n${err}")
  endif()
endfunction()

run(${CLI} roofline data/models/resnet50.json --gpu A100 -o ${OUT}/roofline.svg)
run(${CLI} report data/models/resnet50.json --gpu A100 -o ${OUT}/report.html)
foreach(file roofline.svg report.html)
  file(SIZE ${OUT}/${file} size)
  if(size EQUAL 0)
    message(FATAL_ERROR "${OUT}/${file} is empty")
  endif()
  if(EXISTS ${OUT}/${file}.tmp)
    message(FATAL_ERROR "${OUT}/${file}.tmp was left behind")
  endif()
endforeach()

if(RSVG_CONVERT)
  run(${RSVG_CONVERT} -o ${OUT}/roofline.png ${OUT}/roofline.svg)
  file(SIZE ${OUT}/roofline.png size)
  if(size EQUAL 0)
    message(FATAL_ERROR "rsvg-convert wrote an empty ${OUT}/roofline.png")
  endif()
  message(STATUS "rendered ${OUT}/roofline.png (${size} bytes)")
else()
  message(STATUS "rsvg-convert not found: SVG rendering not checked")
endif()

if(XMLLINT)
  run(${XMLLINT} --noout ${OUT}/roofline.svg)
  # libxml2's HTML parser knows HTML 4 only: it calls HTML5 and inline SVG elements ("Tag svg
  # invalid") unknown, which is fine. Any other message (bad entity, mismatched tag) fails.
  execute_process(COMMAND ${XMLLINT} --html --noout ${OUT}/report.html
                  RESULT_VARIABLE code ERROR_VARIABLE err)
  string(REGEX REPLACE "[^\n]*HTML parser error : Tag [a-zA-Z]+ invalid\n[^\n]*\n[^\n]*\n" ""
         remaining "${err}")
  if(NOT code EQUAL 0 OR remaining MATCHES "error")
    message(FATAL_ERROR "xmllint --html: ${OUT}/report.html is not well-formed:\n${remaining}")
  endif()
else()
  message(STATUS "xmllint not found: XML and HTML not checked")
endif()

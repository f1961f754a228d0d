# Warnings for capcalc's own code, linked PRIVATE so consumers never inherit them.
add_library(capcalc_warnings INTERFACE)
target_compile_options(capcalc_warnings INTERFACE
  $<$<CXX_COMPILER_ID:MSVC>:/W4 $<$<BOOL:${CAPCALC_WARNINGS_AS_ERRORS}>:/WX>>
  $<$<NOT:$<CXX_COMPILER_ID:MSVC>>:
    -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion
    -Wnon-virtual-dtor -Wold-style-cast -Woverloaded-virtual
    $<$<BOOL:${CAPCALC_WARNINGS_AS_ERRORS}>:-Werror>>
)

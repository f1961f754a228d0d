# CLI tests of `roofline` and `report` (issue 5, part 3). Uses capcalc_cli_ok/capcalc_cli_error
# from cli_tests.cmake, which is included first.

capcalc_cli_ok(roofline_stdout "^<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\".*Roofline: resnet50 on NVIDIA A100 80GB SXM4.*attained \\(TFLOP/s\\).*</svg>\n$"
               roofline data/models/resnet50.json --gpu A100)
capcalc_cli_ok(roofline_labels "fp16, batch 8, training.*>layer1\\.N\\.conv2 x3<"
               roofline data/models/resnet50.json --gpu A100 --precision fp16 --mode training --batch 8 --label 50)
capcalc_cli_ok(report_stdout "^<!DOCTYPE html>.*<h2>Summary</h2>.*<svg width=.*<h2>Memory</h2>.*<h2>Layers</h2>.*</html>\n$"
               report data/models/resnet50.json --gpu A100)
# The HTML summary names GPT-2's lm_head as the text report does (50,257 outputs in bf16).
# The pipeline's heaviest stage, as the text report names it.
capcalc_cli_ok(report_pipeline_heaviest_stage "<tr><th>pipeline</th><td>4 stages, 1F1B: [^<]*</td></tr>\n?<tr><th></th><td>the heaviest, stage 4 of 4 \\(the last: output layer and loss\\), 1\\.03x the mean</td></tr>"
               report data/models/llama3_70b.json --gpu H100 --mode training --precision bf16 --devices 32 --tp 8 --pp 4 --micro-batches 16)
capcalc_cli_ok(report_alignment "<tr><th>alignment</th><td>lm_head: 50,257 output features not a multiple of 8 \\(bf16 tensor cores; [0-9.]+ % of the MACs\\): pad to 50,304 \\(slower kernels, timed at 12.0 % of the dense matrix peak\\)</td></tr>"
               report data/models/gpt2_hf.json --gpu h100 --precision bf16)
capcalc_cli_error(roofline_unwritable "^capcalc: error: /nonexistent/dir/x\\.svg: cannot write file\n$"
                  roofline data/models/resnet50.json --gpu A100 -o /nonexistent/dir/x.svg)
capcalc_cli_error(report_unwritable "^capcalc: error: /nonexistent/dir/x\\.html: cannot write file\n$"
                  report data/models/resnet50.json --gpu A100 -o /nonexistent/dir/x.html)
capcalc_cli_error(roofline_unknown_device "unknown device \"h100-sm\"; did you mean \"h100-sxm\"\\?"
                  roofline data/models/resnet50.json --gpu h100-sm)
capcalc_cli_error(roofline_unsupported_precision "has no tf32 peak in the hardware table"
                  roofline data/models/resnet50.json --gpu V100 --precision tf32)
capcalc_cli_error(report_checkpointing_needs_training "--checkpointing is for training"
                  report data/models/resnet50.json --gpu A100 --checkpointing)

# Files written with -o: render the SVG to PNG where rsvg-convert exists (librsvg2-bin), and
# check both documents with xmllint (libxml2-utils) where it exists.
find_program(RSVG_CONVERT rsvg-convert)
find_program(XMLLINT xmllint)
if(NOT RSVG_CONVERT)
  message(WARNING "rsvg-convert not found (apt install librsvg2-bin): the roofline render test "
                  "(cli.roofline_render) is skipped")
endif()
set(viz_out ${CMAKE_CURRENT_BINARY_DIR}/viz)
add_test(NAME cli.roofline_render
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli> -DOUT=${viz_out}
                 -DRSVG_CONVERT=${RSVG_CONVERT} -DXMLLINT=${XMLLINT}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/render_svg.cmake
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})

# The HTML report in headless Chromium (Debian: chromium, installed by .ci/run through the
# README's Quick start): rendered to a PNG that must not be blank, must show the roofline, with
# no console message. Skipped (exit 77) where Chromium or python3 is missing.
find_program(CHROMIUM NAMES chromium chromium-browser google-chrome)
if(NOT CHROMIUM)
  message(WARNING "chromium not found (apt install chromium): the browser test "
                  "(cli.report_browser) is skipped")
endif()
if(Python3_EXECUTABLE)
  add_test(NAME cli.report_browser
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/browser_render.py
                   "${CHROMIUM}" $<TARGET_FILE:capcalc_cli> ${CMAKE_CURRENT_BINARY_DIR}/browser
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(cli.report_browser PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()

# Models by name (issue 20 §2): a bare name that is not a file is a zoo model, from any
# directory; `capcalc models list` shows the zoo. Run from the build directory, where no
# data/models/ is at hand.

# capcalc_zoo_test(name expect_code regex args...): stdout must match (exit 0) or stderr (exit 2,
# stdout empty).
function(capcalc_zoo_test name code regex)
  if(code EQUAL 0)
    set(check "-DSTDOUT_REGEX=${regex}")
  else()
    set(check "-DSTDERR_REGEX=${regex}" -DSTDOUT_EMPTY=ON)
  endif()
  add_test(NAME cli.zoo.${name}
           COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:capcalc_cli> "-DARGS=${ARGN}"
                   -DEXPECT_CODE=${code} ${check} -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake
           WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
endfunction()

capcalc_zoo_test(by_name 0 "^resnet50 on NVIDIA A100 80GB SXM4.*parameters   25,557,032"
                 estimate resnet50 --gpu A100)
capcalc_zoo_test(by_name_any_case 0 "\"params\": 124439808,"
                 estimate GPT2 --gpu h100 --format json)
capcalc_zoo_test(by_file_name 0 "^vgg16: 40 layers" layers vgg16.json --gpu a100)
capcalc_zoo_test(unknown_name 2
                 "^capcalc: error: resnet5: no such file, and no model of that name in the zoo; did you mean \"resnet50\"\\? \\(capcalc models list\\)\n$"
                 estimate resnet5 --gpu A100)
# A name with a path is a path: no zoo lookup, the loader's own message.
capcalc_zoo_test(path_not_looked_up 2 "^capcalc: error: ./resnet50: cannot open file\n$"
                 estimate ./resnet50 --gpu A100)
capcalc_zoo_test(list_table 0
                 "\nresnet50 +ResNet +25.6 M +4.09 G +size 224 +256 +https://pytorch.org/vision/"
                 models list)
# A mixture of experts shows what each token uses beside its total, and counts read grouped
# ("seq 2,048", "8 x 1,024" where they said "seq 2048").
capcalc_zoo_test(list_moe_active_grouped 0
                 "\ngpt2 +GPT-2 +124 M +146 G +seq 1,024 +8 x 1,024 +https://.*\nmixtral_8x7b_hf +Mistral +46.7 G \\(12.9 G active\\) +27.2 T +seq 2,048 +https://"
                 models list)
capcalc_zoo_test(list_csv 0
                 "^name,family,params,macs,dims,training_batch,source\n.*\ngpt2,GPT-2,124439808,[0-9]+,batch=1 seq=1024,batch=8 seq=1024,https://huggingface.co/openai-community/gpt2\n"
                 models list --format csv)
capcalc_zoo_test(list_json 0 "\"name\": \"llama2_7b_hf\",\n *\"family\": \"Llama\""
                 models list --format json)
capcalc_schema_test(models_list - data/schema/models-output.schema.json models list --format json)
capcalc_schema_test(zoo data/zoo.json data/schema/zoo.schema.json)

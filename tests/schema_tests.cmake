# Schemas enforced (issue 25): every data file and every JSON output of every command against its
# published schema in data/schema, with a real validator (Python's jsonschema; Debian:
# python3-jsonschema). Skipped, not failed, where python3 or that module is missing.

set(schema_dir ${CMAKE_CURRENT_BINARY_DIR}/schema_tests)
set(validate_py ${CMAKE_CURRENT_SOURCE_DIR}/validate_schema.py)
set(walker_py ${CMAKE_CURRENT_SOURCE_DIR}/check_data_schemas.py)

# --- Data files -------------------------------------------------------------------------------
# Every *.json and *.jsonl under data/ and tests/ is mapped to a schema by the rules in
# check_data_schemas.py, or exempted there with its reason; an unmapped file fails.
if(Python3_Interpreter_FOUND)
  add_test(NAME schema.data_files COMMAND ${Python3_EXECUTABLE} ${walker_py} ${PROJECT_SOURCE_DIR})
  set_tests_properties(schema.data_files PROPERTIES SKIP_REGULAR_EXPRESSION "SKIPPED:")
  # The walker itself: a new JSON file nobody mapped fails (jsonschema or not), and a model file
  # that breaks its schema is reported at its JSON pointer.
  set(fake ${schema_dir}/fake_root)
  add_test(NAME schema.data_files_unmapped_fails
           COMMAND bash -c "rm -rf '${fake}' && mkdir -p '${fake}/data/new' '${fake}/tests' &&
echo '{}' > '${fake}/data/new/table.json' &&
'${Python3_EXECUTABLE}' '${walker_py}' '${fake}'; echo \"exit status $?\"")
  set_tests_properties(schema.data_files_unmapped_fails PROPERTIES PASS_REGULAR_EXPRESSION
    "data/new/table.json: no rule gives this file a schema; add one to RULES.*\nexit status 1\n")
  set(broken ${schema_dir}/broken_root)
  add_test(NAME schema.data_files_violation_fails
           COMMAND bash -c "rm -rf '${broken}' && mkdir -p '${broken}/data/models' '${broken}/tests' &&
cp -r '${PROJECT_SOURCE_DIR}/data/schema' '${broken}/data/' &&
echo '{\"format\": \"capcalc-model/1\", \"name\": \"x\", \"inputs\": [], \"layers\": []}' > '${broken}/data/models/broken.json' &&
'${Python3_EXECUTABLE}' '${walker_py}' '${broken}'; echo \"exit status $?\"")
  set_tests_properties(schema.data_files_violation_fails PROPERTIES
    PASS_REGULAR_EXPRESSION "data/models/broken.json:/inputs: .*\nexit status 1\n"
    SKIP_REGULAR_EXPRESSION "SKIPPED:")
endif()

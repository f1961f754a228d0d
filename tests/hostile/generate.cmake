# Makes the hostile inputs that are too big to commit, or not files at all, in DIR (the CLI
# tests' fixture cli.hostile_files): FIFOs with no writer, a sparse file past the JSON size
# limit, and nesting far past the depth limit in every text format.
#   cmake -DDIR=<directory> -P generate.cmake
file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}")

foreach(name fifo.json fifo.onnx fifo.pbtxt out.fifo)
  execute_process(COMMAND mkfifo "${DIR}/${name}" COMMAND_ERROR_IS_FATAL ANY)
endforeach()

# 65 MiB of zeros that take no disk space.
execute_process(COMMAND truncate -s 65M "${DIR}/big.json" COMMAND_ERROR_IS_FATAL ANY)

string(REPEAT "[" 100000 open)
string(REPEAT "]" 100000 close)
file(WRITE "${DIR}/deep.json" "${open}${close}\n")
# A million nested arrays as a value that a message quotes (this one ended in SIGSEGV).
string(REPEAT "${open}" 10 open)
string(REPEAT "${close}" 10 close)
file(WRITE "${DIR}/deep_dims.json"
     "{\"format\": \"capcalc-model/1\", \"name\": \"deep\", \"dims\": {\"batch\": ${open}${close}}}\n")

# 8,000 nested messages, unterminated (this one ended in SIGSEGV).
string(REPEAT "node { attribute { g { " 8000 messages)
file(WRITE "${DIR}/deep.textproto" "graph {\n${messages}\n")

string(REPEAT "(" 100000 parens)
file(WRITE "${DIR}/deep.onnxtxt"
     "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[2] x) => (float[2] y) {\n   y = Relu ${parens}\n")

# Makes the hostile inputs that are too big to commit, or not files at all, in DIR (the CLI
# tests' fixture cli.hostile_files): FIFOs with no writer and a sparse file past the JSON
# size limit.
#   cmake -DDIR=<directory> -P generate.cmake
file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}")

foreach(name fifo.json fifo.onnx fifo.pbtxt)
  execute_process(COMMAND mkfifo "${DIR}/${name}" COMMAND_ERROR_IS_FATAL ANY)
endforeach()

# 65 MiB of zeros that take no disk space.
execute_process(COMMAND truncate -s 65M "${DIR}/big.json" COMMAND_ERROR_IS_FATAL ANY)

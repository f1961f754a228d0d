#!/bin/bash
# Every command the docs show runs and exits 0 (issue 20 §2), so that a reader can paste it:
#  - in README.md and docs/*.md, each line starting with `capcalc ` in a ```sh, ```bash or
#    ```shell block (a line ending in '\' continues on the next), and each `$ capcalc ...` line
#    of any block, whose sample output (the lines after it, up to a line "..." or the block's
#    end) must appear in order, line for line, in what the command prints;
#  - each `capcalc ` line of the man page's EXAMPLES.
# Commands run in bash, in an empty scratch directory, with BIN_DIR first on the PATH and no
# CAPCALC_* variables: what a user gets from the build tree or an installed prefix, from any
# directory. So the docs' examples name zoo models, never paths of the source tree.
#   doc_commands.sh SOURCE_DIR BIN_DIR WORK_DIR
set -u
src=$1 bin=$2 work=$3
rm -rf "$work" && mkdir -p "$work/cmd" "$work/run" || exit 2
unset CAPCALC_DATA_DIR CAPCALC_HARDWARE_PATH NO_COLOR CLICOLOR_FORCE
export PATH="$bin:$PATH"
if [[ ! -x $bin/capcalc ]]; then
  echo "no capcalc in $bin" >&2
  exit 2
fi

shopt -s nullglob
# cmd/N holds a command, cmd/N.where its FILE:LINE, cmd/N.expect its sample output.
awk -v dir="$work/cmd" '
  function emit(text) {
    n++
    printf "%s\n", text > (dir "/" n); close(dir "/" n)
    printf "%s:%d\n", where_file, where_line > (dir "/" n ".where"); close(dir "/" n ".where")
  }
  FNR == 1 { inb = 0; pending = ""; man = FILENAME ~ /\.1$/; examples = 0; expect = "" }
  man {
    if ($0 ~ /^\.SH/) examples = ($0 ~ /^\.SH EXAMPLES/)
    else if (examples && $0 ~ /^capcalc /) {
      line = $0; gsub(/\\-/, "-", line); where_file = FILENAME; where_line = FNR; emit(line)
    }
    next
  }
  /^[ \t]*```/ {
    if (!inb) { inb = 1; lang = $0; sub(/^[ \t]*```/, "", lang); sub(/[ \t].*$/, "", lang) }
    else { inb = 0; if (expect != "") close(expect); expect = "" }
    next
  }
  !inb { next }
  expect != "" {
    if ($0 ~ /^[ \t]*\.\.\.[ \t]*$/) { close(expect); expect = "" } else print > expect
    next
  }
  /^\$ capcalc / {
    where_file = FILENAME; where_line = FNR; emit(substr($0, 3))
    expect = dir "/" n ".expect"; printf "" > expect
    next
  }
  (lang == "sh" || lang == "bash" || lang == "shell") && (pending != "" || /^capcalc /) {
    if (pending == "") { where_file = FILENAME; where_line = FNR }
    line = $0
    if (line ~ /\\$/) { sub(/\\$/, "", line); pending = pending line; next }
    emit(pending line); pending = ""
  }
' "$src/README.md" "$src"/docs/*.md "$src/packaging/capcalc.1"

count=0 failed=0
for file in "$work"/cmd/*.where; do
  n=$(basename "$file" .where)
  command=$(cat "$work/cmd/$n")
  where=$(cat "$file")
  count=$((count + 1))
  (cd "$work/run" && bash -c "$command") > "$work/$n.out" 2> "$work/$n.err" < /dev/null
  code=$?
  if [[ $code -ne 0 ]]; then
    echo "$where: exit $code: $command" >&2
    sed 's/^/    /' "$work/$n.err" >&2
    failed=$((failed + 1))
    continue
  fi
  if [[ -f $work/cmd/$n.expect ]]; then
    # Each sample line, in order, is a whole line of the output.
    mapfile -t expected < "$work/cmd/$n.expect"
    mapfile -t actual < "$work/$n.out"
    i=0
    for line in "${expected[@]}"; do
      while ((i < ${#actual[@]})) && [[ ${actual[i]} != "$line" ]]; do i=$((i + 1)); done
      if ((i == ${#actual[@]})); then
        echo "$where: the sample output has drifted: \"$line\" is not (in order) in what \`$command\` prints:" >&2
        sed 's/^/    /' "$work/$n.out" | head -20 >&2
        failed=$((failed + 1))
        break
      fi
      i=$((i + 1))
    done
  fi
done
if ((count < 5)); then
  echo "found only $count commands in the docs: has the extractor lost them?" >&2
  exit 1
fi
echo "$count commands from the docs run with $bin/capcalc; $failed failed"
((failed == 0))

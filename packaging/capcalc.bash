# bash completion for capcalc. Installed as share/bash-completion/completions/capcalc.
# Completes subcommands, each subcommand's flags, the values of enumerated flags (capcalc takes
# them in any case; they are offered in lower case), device ids from the hardware table
# (`capcalc hw list --format csv`) and file names for models.
# tests/completion_man.cmake checks that every flag of `capcalc SUB --help` is listed here.
# The values of enumerated flags (--precision, --mode, --optimizer, --format, ...) come from
# `capcalc SUB --help` itself, which lists them from the tables the CLI parses them with.

_capcalc_devices() {
  "${COMP_WORDS[0]}" hw list --format csv 2>/dev/null | tail -n +2 | cut -d, -f1
}

# The values of option $1 of a command: `capcalc COMMAND [SUB] --help` lists them as
# "-p,--precision TEXT:{fp64,fp32,...}" or "-f,--format TEXT:{table,json,csv}=table".
_capcalc_choices() {
  local option=$1
  shift
  "${COMP_WORDS[0]}" "$@" --help 2>/dev/null |
    sed -n "s/^ *\(-[a-zA-Z],\)\{0,1\}\(--[a-z0-9-]*,\)*${option}\(,--[a-z0-9-]*\)* [A-Z]*:{\([^}]*\)}.*/\4/p" |
    head -n 1 | tr ',' ' '
}

# Zoo model names (`capcalc models list`), offered beside files where a model is due.
_capcalc_models() {
  "${COMP_WORDS[0]}" models list --format csv 2>/dev/null | tail -n +2 | cut -d, -f1
}

_capcalc() {
  local cur prev words cword
  if declare -F _init_completion >/dev/null; then
    _init_completion -n = || return
  else
    cur="${COMP_WORDS[COMP_CWORD]}"
    prev="${COMP_WORDS[COMP_CWORD - 1]}"
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
  fi

  local commands="estimate layers hw runtimes models calibrate probe validate compare check roofline report serve plan scale"
  local model_flags="--batch --set --causal --input-shape --strict --omit-input --mtp-layers"
  local hw_flags="--hardware --hardware-file"
  local workload_flags="--gpu --hw --device --precision --mode --profile --runtime --runtime-file --optimizer --devices
    --tensor-parallel --tp --pipeline-parallel --pp --context-parallel --cp --expert-parallel --ep --expert-tensor-parallel --etp --moe-dispatcher --moe-imbalance --micro-batches --virtual-stages --zero
    --input-rate"
  local run_flags="--dataset-size --epochs --tokens --price-per-hour"

  # The subcommand: the first word that is not an option.
  local command="" sub="" i
  for ((i = 1; i < cword; i++)); do
    if [[ ${words[i]} != -* ]]; then
      if [[ -z $command ]]; then
        command=${words[i]}
      elif [[ ($command == hw || $command == runtimes || $command == models) && -z $sub ]]; then
        sub=${words[i]}
      fi
    fi
  done

  case "$prev" in
    -g | --gpu | --hw | --device)
      COMPREPLY=($(compgen -W "$(_capcalc_devices)" -- "$cur"))
      return ;;
    -p | --precision | --weight-precision | --expert-weight-precision | --kv-precision | -m | --mode | --profile | --optimizer | \
      --sparsity | --fp8-recipe | --moe-dispatcher | --recompute | --causal | --type | --objective | --pricing | --sort | --find | -f | --format | \
      --sequence-parallel | --lora-targets)
      [[ -n $command ]] && COMPREPLY=($(compgen -W "$(_capcalc_choices "$prev" $command $sub)" -- "$cur"))
      return ;;
    --runtime)
      COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" runtimes list --format json 2>/dev/null |
        sed -n 's/^ *"id": "\(.*\)",$/\1/p')" -- "$cur"))
      return ;;
    --trace) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --hardware | --hardware-file | --runtime-file | --budget | --measurements | --write-ranges | -o | --output)
      COMPREPLY=($(compgen -f -- "$cur"))
      return ;;
    --models)
      COMPREPLY=($(compgen -d -- "$cur"))
      return ;;
    -b | --batch | --set | --input-shape | --devices | --tensor-parallel | --tp | --pipeline-parallel | --pp | \
      --context-parallel | --cp | --expert-parallel | --ep | --expert-tensor-parallel | --etp | --checkpoint-layers | --micro-batches | --virtual-stages | --zero | --dataset-size | --epochs | --tokens | \
      --lora-rank | --price-per-hour | --top | --prompt-tokens | --output-tokens | --seconds | -s | \
      --threads | -j | --label | --max-* | --rate | --arrival-cv | --requests | --seed | --replicas | \
      --block-size | --gpu-memory-utilization | --preferred-batch | --slo | --sweep | \
      --prefix-hit-rate | --speculative-tokens | --acceptance-rate | --draft-cost | --moe-imbalance | \
      --input-rate | \
      --price | --discount | --interruptions | --restart | --checkpoint-every | --capex | --life | \
      --power-price | --pue)
      return ;;
  esac

  local flags=""
  case "$command" in
    "")
      COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
      return ;;
    estimate)
      flags="$model_flags $hw_flags $workload_flags $run_flags --sparsity --fp8-recipe --format --top
             --prompt-tokens --output-tokens --weight-precision --expert-weight-precision --kv-precision --checkpointing --checkpoint-layers --recompute
             --lora-rank --lora-targets --sequence-parallel --explain" ;;
    layers) flags="$model_flags $hw_flags --gpu --hw --device --precision --format" ;;
    hw)
      case "$sub" in
        "") COMPREPLY=($(compgen -W "list show --help" -- "$cur")); return ;;
        list) flags="$hw_flags --type --format" ;;
        show)
          if [[ $cur != -* ]]; then
            COMPREPLY=($(compgen -W "$(_capcalc_devices)" -- "$cur"))
            return
          fi
          flags="$hw_flags --format" ;;
      esac ;;
    runtimes)
      case "$sub" in
        "") COMPREPLY=($(compgen -W "list show --help" -- "$cur")); return ;;
        *) flags="--runtime-file --format" ;;
      esac ;;
    models)
      case "$sub" in
        "") COMPREPLY=($(compgen -W "list --help" -- "$cur")); return ;;
        *) flags="--format" ;;
      esac ;;
    calibrate) flags="$hw_flags --models --output" ;;
    probe) flags="--seconds --threads --output --format" ;;
    validate) flags="$hw_flags --measurements --models --format --max-median-error --max-worst-factor --max-held-out-median-error --min-within-2x --write-ranges" ;;
    compare)
      flags="--set --causal --mtp-layers $hw_flags --gpu --hw --device --type --all --sort --mode --precision
             --batch --profile --runtime --runtime-file --fp8-recipe --optimizer --devices --tensor-parallel --tp --pipeline-parallel --pp --context-parallel --cp --expert-parallel --ep --expert-tensor-parallel --etp --moe-dispatcher --moe-imbalance
             --micro-batches --virtual-stages --zero --input-rate $run_flags --format
             --prompt-tokens --output-tokens --weight-precision --expert-weight-precision --kv-precision" ;;
    check)
      flags="--budget --batch --set --mtp-layers $hw_flags --gpu --hw --device --precision --mode --profile --runtime --runtime-file
             --sparsity --fp8-recipe --optimizer --weight-precision --expert-weight-precision --checkpointing --checkpoint-layers --recompute --lora-rank --lora-targets
             --kv-precision --devices --tensor-parallel --tp --pipeline-parallel --pp --context-parallel --cp --expert-parallel --ep --expert-tensor-parallel --etp --moe-dispatcher --moe-imbalance --micro-batches --virtual-stages --zero --input-rate $run_flags
             --max-latency --min-throughput --max-memory --max-cost
             --max-train-time --max-params --max-macs --max-ttft --must-fit --prompt-tokens
             --output-tokens --format --output" ;;
    serve)
      flags="$model_flags $hw_flags --gpu --hw --device --precision --weight-precision --expert-weight-precision --kv-precision
             --runtime --runtime-file --tensor-parallel --tp --expert-parallel --ep --moe-dispatcher --replicas --rate --arrival-cv --trace
             --prompt-tokens --output-tokens --requests --seed --max-num-batched-tokens
             --max-num-seqs --block-size --gpu-memory-utilization --no-chunked-prefill --max-batch
             --prefix-hit-rate --speculative-tokens --acceptance-rate --draft-cost --draft
             --moe-imbalance --preferred-batch --max-queue-delay --slo --find --sweep
             --disaggregate --mix --price-per-hour --validate --max-median-error --max-worst-factor --min-within-2x
             --format --output" ;;
    plan)
      flags="--set --causal --mtp-layers $hw_flags --precision --optimizer --global-batch --memory-reserve --moe-imbalance --moe-dispatcher
             --runtime --runtime-file --fp8-recipe --recompute
             --lora-rank --lora-targets --micro-batch-sizes --dataset-size --epochs --tokens --gpu --hw --device --type --all
             --max-devices --deadline --budget --pricing --price --discount --interruptions
             --restart --checkpoint-every --capex --life --power-price --pue --objective --top
             --explain --format" ;;
    scale)
      flags="--set --causal --mtp-layers $hw_flags --precision --optimizer --global-batch --memory-reserve --moe-imbalance --moe-dispatcher
             --runtime --runtime-file --fp8-recipe --recompute
             --lora-rank --lora-targets --micro-batch-sizes --gpu --hw --device --devices --weak --format --output" ;;
    roofline | report)
      flags="$model_flags $hw_flags $workload_flags --sparsity --fp8-recipe --weight-precision --expert-weight-precision
             --checkpointing --checkpoint-layers --recompute --lora-rank --lora-targets --sequence-parallel --label --output
             --prompt-tokens --output-tokens
             --kv-precision" ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$flags --help" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
    case "$command" in
      estimate | layers | compare | check | roofline | report)
        COMPREPLY+=($(compgen -W "$(_capcalc_models)" -- "$cur")) ;;
    esac
  fi
}

complete -o filenames -F _capcalc capcalc

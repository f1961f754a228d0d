# CLI tests of `capcalc plan` and `capcalc scale` (issue 24): what they print, and every bad
# flag as one line with exit 2 and nothing on stdout. Uses capcalc_cli_ok, capcalc_cli_error
# and capcalc_usage_error from the files included before it.
set(llama8 data/models/llama3_8b.json)

capcalc_cli_ok(plan_table "Plan: llama3_8b.*global batch 512 samples.*\n *1  H100 .*TP [1248], PP"
               plan ${llama8} --gpu h100 --tokens 1e12 --max-devices 64)
# A run's size the way people say it: 2T tokens (SI suffixes k, M, G, T on --tokens and
# --dataset-size).
capcalc_cli_ok(plan_tokens_suffix "Plan: llama3_8b \\([0-9.]+ G parameters\\), 2.00 T tokens \\(244 M samples\\)"
               plan ${llama8} --gpu h100 --tokens 2T --max-devices 64)
capcalc_cli_ok(plan_pareto "Time/cost Pareto front"
               plan ${llama8} --gpu h100,b200 --tokens 1e12 --max-devices 64)
capcalc_cli_ok(plan_explain "Row 2: .*compute \\(forward \\+ backward\\).*pipeline bubble.*Memory per device"
               plan ${llama8} --gpu h100 --tokens 1e12 --max-devices 64 --explain 2)
capcalc_cli_ok(plan_csv "^rank,device,precision,devices,tensor_parallel"
               plan ${llama8} --gpu h100 --tokens 1e12 --max-devices 64 --format csv --top 3)
# Integers exactly, fractions to round-trip: {:.6g} wrote memory_bytes 4.98772e+10, time_s
# 1.8464e+06 and six digits of every figure.
# A mixture of experts' header shows the parameters each token uses beside the total.
capcalc_cli_ok(plan_moe_active
               "^Plan: mixtral_8x7b_hf \\(46.7 G parameters, 12.9 G active per token\\), 1.00 T tokens"
               plan data/models/mixtral_8x7b_hf.json --gpu h100 --tokens 1e12 --max-devices 16 --top 1)
capcalc_cli_ok(plan_csv_exact
               "\n1,h100-sxm,bf16,64,[0-9,]+,(true|false),[0-9]+,false,[0-9]+\\.[0-9][0-9][0-9][0-9][0-9][0-9][0-9]+,0\\.[0-9]+,[0-9.]+,[0-9]+\\.[0-9]+,[0-9.]+,[0-9.]+,[0-9.]+,[0-9]+,[0-9]+\n"
               plan ${llama8} --gpu h100 --tokens 1e12 --max-devices 64 --format csv --top 1)
capcalc_cli_ok(scale_csv_exact
               "\n8,1,1,1,8,[0-9]+\\.[0-9][0-9][0-9][0-9][0-9][0-9][0-9]+,1,1,0\\.[0-9]+,[0-9.]+,0,0\n"
               scale ${llama8} --gpu h100 --devices 8,16 --format csv)
capcalc_cli_ok(plan_markdown "\\| # \\| device \\| count \\|"
               plan ${llama8} --gpu h100 --tokens 1e12 --max-devices 64 --format markdown)
capcalc_cli_ok(plan_deadline_infeasible
               "no layout of ≤ 64 H100s meets 30 days: the fastest is [0-9]+ days on 64 H100s \\(TP [0-9]+, PP [0-9]+, DP [0-9]+.*\\); about [0-9,]+ would at perfect scaling"
               plan ${llama8} --gpu h100 --tokens 15e12 --max-devices 64 --deadline 30d)
capcalc_cli_ok(plan_global_batch_note "4M-tokens is 488.3 sequences of 8192: taken as 488"
               plan ${llama8} --gpu h100 --tokens 1e12 --max-devices 64 --global-batch 4M-tokens)
capcalc_cli_ok(scale_table "Scaling: llama3_8b on h100-sxm \\(strong scaling.*\n +8 +512  TP .*1.00x.*\n +64 +512  TP"
               scale ${llama8} --gpu h100 --devices 8..64)

capcalc_usage_error(plan_global_batch_no_unit
                    "--global-batch: 512 has no unit: write 512-tokens or 512-samples"
                    plan ${llama8} --gpu h100 --tokens 1e12 --global-batch 512)
capcalc_usage_error(plan_reserve_no_unit "--memory-reserve: 10 has no unit: write 10%"
                    plan ${llama8} --gpu h100 --tokens 1e12 --memory-reserve 10)
capcalc_usage_error(plan_deadline_no_unit "--deadline: 30 has no unit: write 30h or 30d"
                    plan ${llama8} --gpu h100 --tokens 1e12 --deadline 30)
capcalc_usage_error(plan_restart_no_unit "--restart: 15 has no unit: write 15min or 15h"
                    plan ${llama8} --gpu h100 --tokens 1e12 --pricing spot --discount 40%
                    --interruptions 1 --restart 15 --checkpoint-every 1h)
capcalc_usage_error(plan_no_devices "give exactly one of --gpu LIST, --type TYPE or --all"
                    plan ${llama8} --tokens 1e12)
capcalc_usage_error(plan_no_run "plan needs the run's size: add --tokens or --dataset-size"
                    plan ${llama8} --gpu h100)
capcalc_usage_error(plan_explain_json "--explain is for the table: add --format table"
                    plan ${llama8} --gpu h100 --tokens 1e12 --explain 1 --format json)
capcalc_usage_error(plan_max_devices_zero "--max-devices must be a whole number ≥ 1 (got 0)"
                    plan ${llama8} --gpu h100 --tokens 1e12 --max-devices 0)
capcalc_usage_error(plan_budget_no_unit "--budget: 2M has no unit: write 2MUSD or $2M"
                    plan ${llama8} --gpu h100 --tokens 1e12 --budget 2M)
capcalc_cli_error(plan_bad_objective "--objective must be one of.*time.*cost.*energy.*speed"
                    plan ${llama8} --gpu h100 --tokens 1e12 --objective speed)
capcalc_usage_error(scale_bad_range
                    "--devices \"8..x\": expected a range of whole numbers ≥ 1, e.g. 8..4096 (powers of two) or 8,16,64"
                    scale ${llama8} --gpu h100 --devices 8..x)
capcalc_usage_error(scale_backwards_range "--devices 64..8: the range runs from low to high"
                    scale ${llama8} --gpu h100 --devices 64..8)
capcalc_cli_error(plan_unknown_device "unknown device.*did you mean"
                  plan ${llama8} --gpu h10O --tokens 1e12)

# scale -o draws an SVG: well-formed XML with one point per device count (8, 16, 32, 64).
set(scaling_svg ${CMAKE_CURRENT_BINARY_DIR}/scaling.svg)
add_test(NAME cli.scale_svg
         COMMAND bash -c "set -e; rm -f '${scaling_svg}'; '$<TARGET_FILE:capcalc_cli>' scale ${llama8} --gpu h100 --devices 8..64 -o '${scaling_svg}' > /dev/null; python3 -c 'import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); n = len(d.getElementsByTagName(\"circle\")); sys.exit(0 if n == 4 else \"%d points\" % n)' '${scaling_svg}'"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
capcalc_usage_error(plan_global_batch_huge
                    "a global batch of 1,000,000,000,000 samples is beyond the 2,147,483,648 the search takes"
                    plan ${llama8} --gpu h100 --tokens 1e12 --global-batch 1T-samples)
capcalc_cli_ok(scale_weak "weak scaling.*\n +8 +512  TP .*1.00x.*\n +64 +4,096  TP"
               scale ${llama8} --gpu h100 --devices 8..64 --weak)
capcalc_schema_test(scale_weak - data/schema/scale-output.schema.json
                    scale ${llama8} --gpu h100 --devices 8..32 --weak --format json)

# --pricing (include/capcalc/pricing.hpp): each kind's line and its cost, and the flags each
# kind needs or refuses.
capcalc_cli_ok(plan_pricing_spot
               "Pricing: spot at \\$1.00 per device-hour; 0.01 interruptions per device-day.*\n.*Run: .* \\(with [0-9.]+ spot interruptions\\) x \\$1.00/h = "
               plan ${llama8} --gpu h100 --tokens 1e11 --max-devices 64 --pricing spot
               --price 1USD/h --interruptions 0.01 --restart 15min --checkpoint-every 1h --explain 1)
capcalc_cli_ok(plan_pricing_owned
               "Pricing: owned: \\$35,000 per device over 5 years, plus power at TDP x PUE 1.58.*Run: .* x \\$0.888/h = .*owned"
               plan ${llama8} --gpu h100 --tokens 1e11 --max-devices 64 --pricing owned
               --capex 35kUSD --explain 1)
capcalc_cli_ok(plan_pricing_never_finishes
               "every layout of ≤ 64 H100s that fits is interrupted faster than it recovers"
               plan ${llama8} --gpu h100 --tokens 1e11 --max-devices 64 --pricing spot
               --discount 50% --interruptions 100 --restart 1h --checkpoint-every 1h)
capcalc_usage_error(plan_pricing_reserved_no_rate
                    "--pricing reserved needs its rate: --price (per device-hour, e.g. $2.10/h) or --discount off the table's on-demand price (e.g. 40%)"
                    plan ${llama8} --gpu h100 --tokens 1e12 --pricing reserved)
capcalc_usage_error(plan_pricing_spot_incomplete
                    "--pricing spot needs --interruptions (per device-day), --restart (e.g. 15min) and --checkpoint-every (e.g. 1h)"
                    plan ${llama8} --gpu h100 --tokens 1e12 --pricing spot --discount 60%)
capcalc_usage_error(plan_pricing_owned_no_capex
                    "--pricing owned needs --capex: the purchase price per device, with its share of the server and network (e.g. $35k)"
                    plan ${llama8} --gpu h100 --tokens 1e12 --pricing owned)
capcalc_usage_error(plan_pricing_flag_of_other_kind "--capex is for --pricing owned, not on-demand"
                    plan ${llama8} --gpu h100 --tokens 1e12 --capex 3kUSD)
capcalc_usage_error(plan_pricing_price_unit "--price \"2\": expected USD/h, e.g. $2.10/h"
                    plan ${llama8} --gpu h100 --tokens 1e12 --pricing reserved --price 2)
capcalc_usage_error(plan_pricing_discount_whole "--discount 100%: must be below 100%"
                    plan ${llama8} --gpu h100 --tokens 1e12 --pricing spot --discount 100%)

# Expert parallelism is a search axis for MoE models (Mixtral 8x7B's 8 experts: E = 2, 4, 8);
# --explain gives the all-to-alls (rule derived by hand in predict_test.cpp).
capcalc_cli_ok(plan_expert_parallel "EP [248], DP .*Row 1: .*EP [248], .*expert token exchanges +[0-9.]+ ms +[0-9.]+ % +[0-9,]+ all-to-alls of [0-9.]+ GB sent over NVLink 4"
               plan mixtral_8x7b_hf --gpu h100 --tokens 1e12 --max-devices 1024 --top 1 --explain 1)
capcalc_schema_test(plan_expert_parallel - data/schema/plan-output.schema.json
                    plan mixtral_8x7b_hf --gpu h100 --tokens 1e12 --max-devices 1024 --top 20 --format json)
# --moe-imbalance applies to every layout's moe layers (the rule is predict_test's); a dense
# model refuses it, as estimate and serve do.
capcalc_cli_ok(plan_moe_imbalance "Notes:\n *MoE load imbalance 1.3: every layout's moe layers take 1.3 times"
               plan mixtral_8x7b_hf --gpu h100 --tokens 1e12 --max-devices 64 --top 1 --moe-imbalance 1.3)
capcalc_schema_test(plan_moe_imbalance - data/schema/plan-output.schema.json
                    plan mixtral_8x7b_hf --gpu h100 --tokens 1e12 --max-devices 64 --top 3 --moe-imbalance 1.3 --format json)
capcalc_cli_ok(plan_moe_imbalance_json "\"moe_imbalance\": 1.3"
               plan mixtral_8x7b_hf --gpu h100 --tokens 1e12 --max-devices 64 --top 1 --moe-imbalance 1.3 --format json)
capcalc_usage_error(plan_moe_imbalance_dense
                    "data/models/llama2_7b.json: --moe-imbalance: the model has no \"moe\" layer"
                    plan data/models/llama2_7b.json --gpu h100 --tokens 1e12 --moe-imbalance 1.3)
capcalc_cli_ok(scale_moe_imbalance "Note: MoE load imbalance 2:"
               scale mixtral_8x7b_hf --gpu h100 --devices 64 --moe-imbalance 2)
capcalc_schema_test(scale_expert_parallel - data/schema/scale-output.schema.json
                    scale mixtral_8x7b_hf --gpu h100 --devices 64,128 --format json)
# LoRA fine-tuning in every layout: the note says so, JSON's run carries the rank, and the
# search fits Llama 2 70B's frozen weights with adapters' state only.
capcalc_cli_ok(plan_lora "Notes:\n  LoRA rank 16 on every linear layer but the output: the model's weights frozen, every layout trains the adapters only"
               plan llama2_70b --gpu H100 --tokens 1e9 --lora-rank 16 --max-devices 8 --top 1)
capcalc_cli_ok(plan_lora_json "\"moe_imbalance\": 1.0,\n *\"moe_dispatcher\": \"alltoall\",\n *\"recompute\": \\[\\],\n *\"lora_rank\": 16"
               plan llama2_70b --gpu H100 --tokens 1e9 --lora-rank 16 --max-devices 8 --top 1 --format json)
capcalc_cli_error(plan_lora_targets_without_rank "^capcalc: error: --lora-targets places LoRA's adapters: add --lora-rank\n$"
                  plan llama2_70b --gpu H100 --tokens 1e9 --lora-targets attention)
# A deadline or a budget of zero is no ask (as check's limits of zero).
capcalc_cli_error(plan_deadline_zero "^capcalc: error: --deadline: a limit of 0d never holds: give one above zero\n$"
                  plan llama3_8b --gpu H100 --tokens 1e9 --deadline 0d)
capcalc_cli_error(plan_budget_zero "^capcalc: error: --budget: a limit of \\$0 never holds: give one above zero\n$"
                  plan llama3_8b --gpu H100 --tokens 1e9 --budget $0)
capcalc_cli_error(scale_several_devices "^capcalc: error: --gpu h100,a100: scale follows one device type \\(plan compares several: capcalc plan ... --gpu h100,a100\\)\n$"
                  scale llama3_8b --gpu h100,a100 --devices 8..64)

# Outputs that read right (issue 20 §4): a language model's context on the workload line and
# its rate in tokens/s, a mixture of experts' active parameters beside the total, one noun for
# one thing ("1 device", "1 budget holds"), digits grouped. Uses capcalc_cli_ok from
# cli_tests.cmake.
capcalc_cli_ok(words_llm_context "workload     inference, bf16, batch 1, seq 4,096, eager profile.*throughput   [0-9.]+ k tokens/s, [0-9.]+ sequences/s of 4,096 tokens \\([0-9.]+ k-[0-9.]+ k tokens/s\\)"
               estimate llama2_7b --gpu h100 --precision bf16 --top 0)
capcalc_cli_ok(words_serving_context "workload     inference, bf16, batch 2, prompt 2,048 \\+ 128 generated tokens, .*tokens/s, [0-9.]+ sequences/s of 2,048 tokens \\(the prefill\\).*LLM serving \\(2 sequences x 2,048 prompt \\+ 128 generated tokens\\)"
               estimate llama2_7b --gpu h100 --precision bf16 --batch 2 --prompt-tokens 2048 --output-tokens 128 --top 0)
capcalc_cli_ok(words_moe_active "parameters   46,702,792,704 \\(46.7 G\\), 12.9 G active per token\n"
               estimate mixtral_8x7b_hf --gpu h100 --precision bf16 --top 0)
# A dense model says nothing about active parameters; a CNN keeps samples/s.
capcalc_cli_ok(words_cnn_samples "parameters   25,557,032 \\(25.6 M\\)\n.*throughput   [0-9.]+ samples/s"
               estimate resnet50 --gpu A100 --top 0)
capcalc_cli_ok(words_compare_llm "^llama2_7b \\(6.74 G params\\), inference, bf16, batch 1, seq 4,096: 1 device, by time\ndevice +latency +tokens/s .*tokens/s: sequences/s x\n4,096 tokens\\. Cost and energy per 1M sequences"
               compare llama2_7b --hw h100 --precision bf16)
capcalc_cli_ok(words_compare_moe "^mixtral_8x7b_hf \\(46.7 G params, 12.9 G active per token\\), inference, bf16, batch 1, serving 2,048 prompt \\+ 128 generated tokens a sequence: 2 devices"
               compare mixtral_8x7b_hf --hw h100,b200 --precision bf16 --prompt-tokens 2048)
capcalc_cli_ok(words_check_one "ok    gpt2 on h100-sxm \\(inference, fp32, batch 1, seq 1,024\\): latency .*\n1 budget holds\n$"
               check gpt2 --gpu h100 --max-latency 1s)
capcalc_cli_ok(words_check_serving "\\(inference, bf16, batch 1, serving 2,048 prompt \\+ 128 generated tokens\\)"
               check llama2_7b --gpu h100 --max-latency 1000s --prompt-tokens 2048)

# report and roofline take estimate's serving flags and draw prefill and decode apart.
capcalc_cli_ok(roofline_serving "LLM serving: prefill of 512 prompt tokens \\(circles\\), decode step at 575 cached tokens \\(squares\\).*font-weight=\"bold\">prefill</text>.*font-weight=\"bold\">decode step</text>"
               roofline gpt2 --gpu h100 --precision bf16 --prompt-tokens 512 --output-tokens 128)
capcalc_cli_ok(report_serving "batch 1, serving 512 prompt \\+ 128 generated tokens.*<th>context</th><td>prompt 512 \\+ 128 generated tokens</td>.*<th>decode step</th><td>[0-9.]+ [mµ]s per token at 575 cached tokens.*<th>KV cache</th>.*decode step at 575 cached tokens \\(squares\\)"
               report gpt2 --gpu h100 --precision bf16 --prompt-tokens 512 --output-tokens 128)
capcalc_cli_error(roofline_output_tokens_alone "--output-tokens needs --prompt-tokens"
                  roofline gpt2 --gpu h100 --output-tokens 128)
capcalc_cli_error(report_kv_precision_alone "--kv-precision sets the KV cache's storage: add --prompt-tokens"
                  report gpt2 --gpu h100 --kv-precision fp8)
capcalc_cli_error(roofline_serving_cnn "--prompt-tokens needs a model with a \"seq\" dimension"
                  roofline resnet50 --gpu h100 --prompt-tokens 512)

# Singular where the count is 1 (issue 20 §4): plan's search line and deadline, serve's
# served line, a training run of one sample.
capcalc_cli_ok(words_plan_one_device
               "\nSearched 8 layouts on 1 device type \\(≤ 1 device each\\); 0 fit .*, within 1 day\\.\n"
               plan data/models/llama3_8b.json --gpu h100 --tokens 1e12 --max-devices 1 --deadline 1d)
capcalc_cli_ok(words_serve_one_request "\n  served       1 request in [0-9.]+ ms over 1 replica\n"
               serve data/models/resnet50.json --gpu t4 --rate 1/s --requests 1)
capcalc_cli_ok(words_training_one_sample "\nTraining run \\(1 sample\\)\n"
               estimate data/models/resnet50.json --gpu a100 --mode training --batch 1
               --dataset-size 1)
# The heaviest layers' GFLOPs grouped above 1,000 (it printed 2147.484).
capcalc_cli_ok(words_gflops_grouped "\n  lm_head +linear +\\[1, 4096, 32000\\] +2,147\\.484 "
               estimate data/models/llama2_70b.json --gpu H100)

#!/usr/bin/env python3
"""The golden corpus: CLI invocations whose output must not change by accident.

    python3 tools/golden_corpus.py cases  MEMFIT_BIN   # writes tests/golden/cases.json
    python3 tools/golden_corpus.py record MEMFIT_BIN   # writes tests/golden/out/<name>.json
    python3 tools/golden_corpus.py diff   MEMFIT_BIN   # lists what differs, field by field

`cases` asks the binary for its presets and GPUs (`--help`) and lists the invocations:
every model preset (training and inference), every convention, framework, ZeRO stage and
FSDP strategy, offload, recomputation, pipeline schedule, fine-tuning mode, inference
setting, serving engine and weight format, `timeline=1`, the solvers and `--explore`. `record` stores each one's stdout and
exit status byte for byte; `tests/golden.rs` replays them. A deliberate change to the
output is recorded again in its own commit whose message lists every difference `diff`
prints, with its reason.
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN = os.path.join(ROOT, "tests", "golden")


def help_lists(binary):
    text = subprocess.run([binary, "--help"], capture_output=True, text=True).stdout
    models, gpus, section = [], [], None
    for line in text.splitlines():
        if line.startswith("MODELS:"):
            section = models
            continue
        if line.startswith("GPUS:"):
            section = gpus
            continue
        if section is not None and line.startswith("  ") and line.strip():
            section.append(line.split()[0])
    return models, gpus


def cases(binary):
    models, gpus = help_lists(binary)
    out = []

    def q(name, query, *flags):
        out.append({"name": name, "args": [*flags, query]})

    # Every preset: the default training step and inference, plus ZeRO-3 on 8 GPUs.
    for m in models:
        q(f"preset-{m}-train", f"model={m}")
        q(f"preset-{m}-infer", f"model={m}&mode=infer&seq=2048&gen=256")
        q(f"preset-{m}-z3x8", f"model={m}&zero=3&gpus_per_node=8&seq=2048")
    # Every GPU (fits or not).
    for g in gpus:
        q(f"gpu-{g}", f"gpu={g}&model=llama-3-8b&zero=2&gpus_per_node=8")
    # Conventions across ZeRO stages and offload.
    for conv in ["memfit", "ds-doc", "ds-0.14", "ds-0.19", "megatron", "megatron-0.14",
                 "seed003", "seed002", "korthikanti"]:
        for z in range(4):
            q(f"conv-{conv}-z{z}", f"convention={conv}&zero={z}&gpus_per_node=8&nodes=2")
        q(f"conv-{conv}-offload", f"convention={conv}&zero=3&offload_opt=cpu&offload_param=cpu&gpus_per_node=4")
        q(f"conv-{conv}-tp", f"convention={conv}&model=llama-2-13b&tp=4&pp=2&sp=1&recompute=selective&gpus_per_node=8&microbatches=8&zero=1")
    # Frameworks x sharding x precision x recompute.
    for fw in ["deepspeed", "pytorch", "megatron"]:
        for z in range(4):
            for prec in ["bf16", "fp32", "bf16-pure", "fp16", "fp8"]:
                q(f"fw-{fw}-z{z}-{prec}", f"framework={fw}&zero={z}&precision={prec}&gpus_per_node=4&model=llama-3.2-1b&seq=2048")
        for rc in ["none", "selective", "full"]:
            q(f"fw-{fw}-rc-{rc}", f"framework={fw}&recompute={rc}&model=llama-3-8b&seq=8192&gpus_per_node=8&zero=1")
    for fsdp in ["full_shard", "shard_grad_op", "hybrid_shard"]:
        for prec in ["bf16", "fp32", "bf16-pure"]:
            q(f"fsdp-{fsdp}-{prec}", f"framework=pytorch&fsdp={fsdp}&precision={prec}&gpus_per_node=8&nodes=2&model=llama-3-8b&seq=4096")
        q(f"fsdp-{fsdp}-ckpt", f"framework=pytorch&fsdp={fsdp}&recompute=full&gpus_per_node=8&model=llama-3-70b&seq=8192&tp=2")
    # PyTorch's detailed paths: optimizers, Adam implementations, attention, tied models.
    for opt in ["adamw", "adam", "sgd", "sgd-momentum", "adam8bit", "adafactor", "lion"]:
        for impl in ["foreach", "fused", "forloop"]:
            q(f"pt-{opt}-{impl}", f"framework=pytorch&optimizer={opt}&adam_impl={impl}&model=gpt2&seq=1024&batch=4")
    for attn in ["flash", "sdpa", "eager"]:
        for prec in ["fp32", "bf16", "bf16-pure"]:
            for rc in ["none", "full"]:
                q(f"pt-{attn}-{prec}-{rc}", f"framework=pytorch&attn={attn}&precision={prec}&recompute={rc}&model=llama-2-7b&seq=2048")
        q(f"ds-{attn}-dropout", f"attn={attn}&dropout=1&model=gpt2-xl&seq=1024&batch=8")
    for m in ["gpt2", "llama-3.2-1b", "gemma-2-9b", "qwen3-4b", "t5-large", "phi-2"]:
        q(f"pt-tied-{m}", f"framework=pytorch&model={m}&seq=1024&batch=2&microbatches=1")
        q(f"pt-accum-{m}", f"framework=pytorch&model={m}&seq=1024&batch=2&microbatches=4")
    # Offload.
    for z in [1, 2, 3]:
        for off in ["cpu", "nvme"]:
            q(f"offload-z{z}-{off}", f"zero={z}&offload_opt={off}&offload_param={off}&pin_memory=1&gpus_per_node=8&nodes=2&model=llama-2-70b&zero_init=0")
    q("offload-buffer-factor", "zero=3&offload_opt=cpu&buffer_factor=2&gpus_per_node=8")
    # Grad accumulation dtypes and DeepSpeed buckets.
    for g in ["compute", "fp32", "both"]:
        q(f"gradacc-{g}", f"grad_acc_dtype={g}&zero=1&gpus_per_node=8")
    q("ds-buckets", "zero=2&reduce_bucket=200000000&allgather_bucket=100000000&overlap_comm=1&gpus_per_node=8")
    q("ds-prefetch", "zero=3&prefetch_bucket=10000000&max_live_params=300000000&gpus_per_node=8")
    # Pipelines.
    for sched in ["1f1b", "gpipe", "interleaved"]:
        for fw in ["deepspeed", "pytorch", "megatron"]:
            for m in [4, 8, 16]:
                q(f"pipe-{sched}-{fw}-m{m}", f"schedule={sched}&framework={fw}&pp=4&vpp=2&microbatches={m}&model=llama-3-70b&tp=8&gpus_per_node=8&nodes=4&seq=4096&zero=1&recompute=selective&sp=1")
    q("pipe-ckpt-layers", "pp=2&recompute=full&ckpt_layers=5&microbatches=4&model=llama-2-13b&gpus_per_node=8&tp=4")
    q("pipe-odd", "pp=3&microbatches=7&model=llama-2-7b&gpus_per_node=6&tp=2")
    # Context and expert parallelism.
    for cp in [2, 4]:
        q(f"cp{cp}", f"cp={cp}&seq=65536&model=llama-3-8b&gpus_per_node=8&zero=3&framework=pytorch&fsdp=full_shard&recompute=full")
    for ep in [1, 2, 8]:
        q(f"ep{ep}-mixtral", f"model=mixtral-8x7b&ep={ep}&gpus_per_node=8&nodes=2&zero=1&tp=2&sp=1")
        q(f"ep{ep}-qwen3moe", f"model=qwen3-30b-a3b&ep={ep}&gpus_per_node=8&framework=megatron&zero=1")
    q("deepseek-v3-train", "model=deepseek-v3&ep=64&tp=8&pp=16&gpus_per_node=8&nodes=128&framework=megatron&zero=1&microbatches=32&sp=1")
    # Fine-tuning.
    for ft in ["lora", "qlora"]:
        for tgt in ["qv", "attn", "mlp", "all"]:
            q(f"ft-{ft}-{tgt}", f"finetune={ft}&lora_targets={tgt}&lora_rank=64&model=llama-3-8b&seq=2048&batch=2")
        for fw in ["deepspeed", "pytorch"]:
            q(f"ft-{ft}-{fw}-ckpt", f"finetune={ft}&framework={fw}&recompute=full&model=llama-2-70b&seq=4096")
        q(f"ft-{ft}-dq0", f"finetune={ft}&double_quant=0&model=mistral-7b")
    # Inference.
    for wd in ["auto", "fp32", "bf16", "fp16", "fp8", "int8", "int4"]:
        q(f"inf-w-{wd}", f"mode=infer&weight_dtype={wd}&model=llama-3-70b&gpus_per_node=2&tp=2&seq=8192&gen=512&batch=4")
    for kd in ["auto", "fp8", "int8", "int4", "fp32"]:
        q(f"inf-kv-{kd}", f"mode=infer&kv_dtype={kd}&model=llama-3-8b&seq=32768&gen=1024&batch=8&quant_group=64")
    for lg in ["last", "all"]:
        for m in ["gpt2", "llama-3-8b", "gemma-2-9b", "mistral-7b", "deepseek-v3"]:
            q(f"inf-{lg}-{m}", f"mode=infer&logits={lg}&model={m}&seq=4096&gen=128&batch=2")
    q("inf-pp", "mode=infer&model=llama-3.1-405b&pp=4&tp=8&gpus_per_node=8&nodes=4&seq=8192")
    q("inf-gen0", "mode=infer&gen=0&seq=100000&model=qwen2.5-7b")
    q("inf-fp32", "mode=infer&precision=fp32&model=opt-1.3b")
    # Overrides of the architecture.
    q("arch-override", "model=llama-2-7b&layers=40&hidden=5120&heads=40&kv_heads=8&ffn=13824&vocab=64000&tied=1")
    q("arch-moe-override", "model=llama-2-7b&experts=16&top_k=2&moe_ffn=2048&shared_experts=1&first_dense=2")
    q("arch-window", "model=llama-3-8b&window=1024&local_layers=16&mode=infer&seq=32768")
    q("arch-norm-bias", "model=gpt2&norm=rmsnorm&bias=all&mlp=swiglu&positions=0")
    q("arch-headdim", "model=llama-3-8b&head_dim=256")
    q("explicit-params", "params=175000000000&largest_layer=600000000&zero=3&gpus_per_node=8&nodes=16")
    # Runtime overheads and units.
    q("overheads", "cuda_ctx=1024&nccl=512&frag=10&gpus_per_node=8&zero=1")
    q("overheads-zero", "cuda_ctx=0&nccl=0&frag=0")
    q("units-gb", "units=gb&zero=3&gpus_per_node=8")
    q("gpu-mem", "gpu_mem=40000&model=llama-3-8b&zero=3&gpus_per_node=4")
    q("explicit-dp", "dp=2&tp=2&gpus_per_node=8&model=llama-2-13b")
    # Timelines.
    for i, query in enumerate([
        "model=llama-2-7b",
        "model=llama-2-7b&zero=3&gpus_per_node=8",
        "framework=pytorch&model=llama-2-7b&precision=bf16&seq=2048",
        "framework=pytorch&model=gpt2&precision=fp32&optimizer=adamw&adam_impl=foreach&seq=1024&batch=4",
        "framework=pytorch&model=llama-2-7b&attn=eager&precision=bf16&optimizer=sgd&seq=4096",
        "framework=pytorch&model=llama-3.2-1b&recompute=full&precision=bf16",
        "framework=pytorch&fsdp=full_shard&gpus_per_node=8&model=llama-3-8b",
        "framework=pytorch&pp=4&schedule=gpipe&microbatches=6&gpus_per_node=4&model=llama-2-7b",
        "framework=pytorch&pp=2&microbatches=4&gpus_per_node=2&model=gpt2&recompute=full&ckpt_layers=3",
        "framework=megatron&pp=4&vpp=2&schedule=interleaved&microbatches=8&tp=2&gpus_per_node=8&model=llama-2-13b",
        "pp=8&microbatches=16&model=llama-3-70b&tp=8&gpus_per_node=8&nodes=8&zero=1",
        "convention=ds-0.19&zero=3&gpus_per_node=8",
        "convention=megatron&tp=4&gpus_per_node=8&sp=1&recompute=selective",
        "mode=infer&model=llama-3-8b&seq=8192&gen=512",
        "mode=infer&model=mistral-7b&seq=16384&gen=64&batch=4",
        "finetune=qlora&framework=pytorch&model=llama-2-7b&recompute=full",
        "framework=pytorch&model=qwen3-4b&microbatches=3&precision=bf16-pure",
        "framework=pytorch&model=gpt2&optimizer=sgd&precision=fp32&attn=eager",
    ]):
        q(f"timeline-{i:02}", query + "&timeline=1")
    # Solvers.
    for what in ["max_batch", "max_context", "min_gpus"]:
        for query in ["model=llama-2-7b", "model=llama-3-70b&zero=3&gpus_per_node=8",
                      "framework=pytorch&model=llama-3-8b&fsdp=full_shard&gpus_per_node=8",
                      "mode=infer&model=llama-3-70b&tp=4&gpus_per_node=4"]:
            q(f"solve-{what}-{len(out)}", f"{query}&solve={what}")
    # Bad input.
    q("bad-values", "params=-1&zero=9&name=<script>&tp=abc&seq=0&gpu=nope")
    q("bad-layout", "tp=3&pp=100&gpus_per_node=8&ep=3&vpp=3&schedule=interleaved")
    q("out-of-range", "hidden=1048576&layers=1024&seq=67108864&batch=1048576")
    # The explorer.
    for query in ["model=llama-3-70b&seq=8192&gpus_per_node=8&nodes=8",
                  "model=llama-3-8b&gpus_per_node=8&framework=pytorch",
                  "model=llama-2-7b&gpus_per_node=4",
                  "mode=infer&model=llama-3-70b&gpus_per_node=8",
                  "model=mixtral-8x7b&gpus_per_node=8&nodes=2&framework=megatron",
                  "model=llama-3-70b&gpus_per_node=8&nodes=4&solve=min_gpus"]:
        out.append({"name": f"explore-{len(out)}", "args": ["--explore", "--limit", "20", query]})
    out.append({"name": "explore-all", "args": ["--explore", "--limit", "0", "model=gpt2&gpus_per_node=2&seq=1024"]})
    # Imported configs.
    cfgdir = os.path.join(ROOT, "tests", "configs")
    for f in sorted(os.listdir(cfgdir))[::3]:
        out.append({"name": f"config-{f[:-5]}", "args": ["--config", f"tests/configs/{f}", "zero=3&gpus_per_node=8"]})
    # A serialized Scenario.
    out.append({"name": "json-scenario", "args": ["--json", '{"model":"llama-2-7b","arch":{"layers":null,"hidden":null,"heads":null,"kv_heads":null,"ffn":null,"vocab":null,"mlp":null,"norm":null,"tied":null,"bias":null,"experts":null,"top_k":null,"head_dim":null,"moe_ffn":null,"shared_experts":null,"first_dense":null,"positions":null,"window":null,"local_layers":null},"params":null,"largest_layer":null,"mode":"train","batch":1,"seq":4096,"gen":256,"gpus_per_node":8,"nodes":1,"dp":null,"tp":1,"pp":1,"cp":1,"zero":"Z3","offload_opt":"none","offload_param":"none","zero_init":true,"buffer_factor":1.5,"precision":"bf16","grad_acc":"Compute","optimizer":"Adamw","adam_impl":"Foreach","logits":"Last","fsdp":"None","finetune":"Full","lora_rank":16,"lora_targets":"All","double_quant":true,"weight_dtype":"Auto","quant_group":128,"kv_dtype":"Auto","sp":false,"recompute":"none","vpp":1,"microbatches":1,"ep":1,"pin_memory":false,"solve":"None","timeline":false,"attn":"Flash","dropout":false,"schedule":"OneFOneB","framework":"Pytorch","ckpt_layers":0,"cuda_ctx_mib":600,"nccl_mib":null,"frag_pct":5,"reduce_bucket":500000000,"allgather_bucket":500000000,"overlap_comm":false,"prefetch_bucket":50000000,"max_live_params":1000000000,"gpu":"h100-80","gpu_mem_mib":null,"convention":"Memfit","units":"gib"}']})
    out.append({"name": "json-bad", "args": ["--json", "{}"]})
    out.append({"name": "strict-warn", "args": ["--strict", "tp=abc"]})
    out.append({"name": "keys-markdown", "args": ["--keys-markdown"]})
    out.append({"name": "help", "args": ["--help"]})
    # Serving engines (mode=serve; last, so the numbered cases above keep their names): each engine, vLLM's eras, weight formats, cache types.
    for e in ["vllm", "sglang", "trtllm", "llamacpp"]:
        for m in ["llama-3-8b", "qwen3-30b-a3b", "deepseek-v2-lite", "gemma-2-9b"]:
            q(f"serve-{e}-{m}", f"mode=serve&engine={e}&model={m}&max_len=8192")
    for v in ["0.7.3", "0.8.5", "0.10.0", "0.13.0", "0.19.0", "0.20.2", "0.22.0"]:
        q(f"serve-vllm-{v}", f"mode=serve&engine_version={v}&model=llama-3-70b&gpus_per_node=4&tp=4&max_len=32768")
    for f in ["fp8", "w8a8", "w4a16", "nf4", "int8", "nvfp4", "int8_g", "int4_g"]:
        q(f"serve-quant-{f}", f"mode=serve&quant={f}&model=llama-3-70b&gpus_per_node=2&tp=2&max_len=16384")
    q("serve-quant-mxfp4", "mode=serve&quant=mxfp4&model=gpt-oss-120b&max_len=131072")
    for f in ["q4_0", "q8_0", "q2_k", "q3_k_m", "q4_k_s", "q4_k_m", "q5_k_m", "q6_k", "iq4_xs"]:
        q(f"serve-gguf-{f}", f"mode=serve&engine=llamacpp&quant={f}&model=qwen2.5-7b&max_len=32768&parallel=4&gpu=rtx4090")
    q("serve-gguf-kvq8", "mode=serve&engine=llamacpp&quant=q4_k_m&kv_dtype=q8_0&model=llama-3-8b&max_len=65536&gpu=rtx4090")
    q("serve-infer-quant", "mode=infer&quant=w4a16&model=llama-3-70b&seq=8192&gen=512")
    q("serve-refused", "mode=serve&model=llama-3-70b&gpus_per_node=2&tp=2&max_len=1000000")
    q("serve-timeline", "mode=serve&model=llama-3-8b&max_len=8192&timeline=1")
    q("serve-knobs", "mode=serve&model=qwen2.5-7b&gpu_util=0.8&max_seqs=64&max_batched_tokens=4096&block_size=32&kv_dtype=fp8&gpu=a100-80")
    out.append({"name": "serve-explore", "args": ["--explore", "--limit", "5", "mode=serve&model=llama-3-70b&quant=fp8&gpus_per_node=8&max_len=8192"]})
    # Expert parallelism named: serve.experts, the fewest-GPU layout "DP 8, EP 8", training's "DP 8 (EP 8)", inference's warning.
    q("serve-ep-min-gpus", "mode=serve&engine=vllm&engine_version=0.10.1&model=deepseek-v3&quant=fp8&gpu=h200&gpus_per_node=8&dp=8&ep=8&redundant_experts=32&solve=min_gpus")
    q("serve-ep-sglang", "mode=serve&engine=sglang&engine_version=0.5.3&model=deepseek-v3&quant=fp8&gpu=h200&gpus_per_node=8&tp=8&ep=4")
    out.append({"name": "train-ep-explore", "args": ["--explore", "--limit", "3", "model=mixtral-8x7b&gpus_per_node=8&ep=8"]})
    q("infer-ep-ignored", "mode=infer&model=deepseek-v2-lite&gpus_per_node=2&ep=2")
    # Keys of another mode: named once each, ignored.
    q("serve-training-keys-ignored", "mode=serve&model=llama-3-8b&gpus_per_node=2&tp=2&recompute=full&microbatches=4&batch=8&attn=eager")
    q("infer-serving-keys-ignored", "mode=infer&model=llama-3-8b&max_len=8192&max_seqs=64&engine=sglang&optimizer=sgd")
    q("serve-vllm-v0-batched-below-context", "mode=serve&model=llama-3-8b&engine_version=0.7.3&max_len=8192&max_batched_tokens=4096")
    q("serve-sglang-fraction-one", "mode=serve&engine=sglang&model=llama-3-8b&max_len=8192&gpu_util=1")
    q("serve-sglang-page-size", "mode=serve&engine=sglang&model=llama-3-8b&max_len=8192&block_size=64")
    q("serve-llamacpp-paged-keys-ignored", "mode=serve&engine=llamacpp&quant=q4_k_m&model=llama-3-8b&max_len=8192&gpu_util=0.5&max_seqs=64&block_size=32")
    q("serve-vllm-gemma3-27b-groups-vision", "mode=serve&engine_version=0.19.0&model=gemma-3-27b&gpu=h100-80&max_len=8192&gpu_util=0.95&max_batched_tokens=8192")
    q("serve-sglang-gemma3-4b-multimodal", "mode=serve&engine=sglang&engine_version=0.4.4&model=gemma-3-4b&gpu=h200&gpu_util=0.88&max_len=131072")
    q("serve-sglang-tp4-l4", "mode=serve&engine=sglang&engine_version=0.4.3&model=qwen2.5-32b&gpu=l4&gpus_per_node=4&tp=4&gpu_util=0.85&max_batched_tokens=2048")
    q("serve-vllm-llama4-scout-vision-rope", "mode=serve&engine_version=0.19.0&model=llama-4-scout&gpu=h100-80&gpus_per_node=4&tp=4&max_len=8192&gpu_util=0.95&max_batched_tokens=8192")
    q("serve-vllm-llama4-scout-default-context", "mode=serve&model=llama-4-scout&gpu=h100-80&gpus_per_node=8&tp=8")
    q("serve-vllm-mistral-small-31-w8a8-tp2", "mode=serve&engine_version=0.19.0&model=mistral-small-3.1-24b&quant=w8a8&gpu=h100-80&gpus_per_node=2&tp=2&max_len=8192&gpu_util=0.95")
    q("serve-sglang-mistral-small-31-default", "mode=serve&engine=sglang&model=mistral-small-3.1-24b&gpu=h100-80&max_len=8192")
    q("serve-vllm-qwen25-vl-7b-offline-0.8.2", "mode=serve&engine_version=0.8.2&model=qwen2.5-vl-7b&gpu=h100-80&max_batched_tokens=16384&max_seqs=1024")
    q("serve-sglang-qwen25-vl-7b-default", "mode=serve&engine=sglang&engine_version=0.5.3&model=qwen2.5-vl-7b&gpu=h100-80&max_len=8192")
    q("gemma3-4b-vllm-two-rotary-caches", "mode=serve&engine_version=0.19.0&model=gemma-3-4b&gpu=h100-80&max_len=8192&gpu_util=0.95")
    q("serve-vllm-qwen3-vl-8b", "mode=serve&engine_version=0.19.0&model=qwen3-vl-8b&gpu=h100-80&max_len=8192")
    q("serve-sglang-qwen3-next-state-cache", "mode=serve&engine=sglang&engine_version=0.5.9&model=qwen3-next-80b-a3b&gpu=h100-80&gpus_per_node=4&tp=4&max_len=32768")
    q("serve-sglang-nemotron-h-state-cache-0.5.3", "mode=serve&engine=sglang&engine_version=0.5.3&model=nemotron-h-8b&gpu=h100-80&max_len=32768")
    q("serve-vllm-context-key-llama32-1b-shape", "mode=serve&engine_version=0.19.0&layers=16&hidden=2048&heads=32&kv_heads=8&head_dim=64&ffn=8192&vocab=128256&tied=1&context=131072&gpu=rtx4090")
    q("serve-sglang-llama-3-8b-0.4.10-tiers", "mode=serve&engine=sglang&engine_version=0.4.10&model=llama-3-8b&gpu=h100-80&max_len=8192")
    q("serve-sglang-llama-3-8b-rtx4090-0.5.23", "mode=serve&engine=sglang&engine_version=0.5.23&model=llama-3-8b&gpu=rtx4090&max_len=8192")
    q("serve-sglang-deepseek-v3-dp-attention-0.5.3", "mode=serve&engine=sglang&engine_version=0.5.3&model=deepseek-v3&quant=fp8&gpu=h200&gpus_per_node=8&tp=1&dp=8&ep=8&max_len=32768")
    q("serve-sglang-qwen3-235b-fp8-4xh100-nvlink-start", "mode=serve&engine=sglang&engine_version=0.4.9&model=qwen3-235b-a22b&quant=fp8&gpu=h100-80&gpus_per_node=4&tp=4&gpu_util=0.93")
    q("serve-llamacpp-fp8-cache-refused", "mode=serve&engine=llamacpp&model=llama-3-8b&kv_dtype=fp8")
    q("serve-llamacpp-q8-cache-without-fa-b5000", "mode=serve&engine=llamacpp&engine_version=b5000&model=llama-3-8b&kv_dtype=q8_0")
    q("serve-ollama-0.13.5-llama-3-70b-l40s-defaults", "mode=serve&engine=llamacpp&engine_version=ollama-0.13.5&model=llama-3-70b&context=131072&quant=q4_k_m&gpu=l40s")
    q("serve-ollama-0.11.10-q8-cache-falls-back", "mode=serve&engine=llamacpp&engine_version=ollama-0.11.10&model=llama-3-8b&quant=q4_k_m&kv_dtype=q8_0&gpu=rtx4090")
    q("serve-sglang-dense-mxfp4-refused", "mode=serve&engine=sglang&model=llama-3-8b&quant=mxfp4")
    q("serve-sglang-graphs-disabled-0.5.16", "mode=serve&engine=sglang&engine_version=0.5.16&model=llama-3-8b&gpu=h100-80&max_len=8192&graph_bs=0")
    q("serve-min-gpus-refused-setting", "mode=serve&engine=llamacpp&model=llama-3-8b&kv_dtype=fp8&solve=min_gpus")
    q("serve-sglang-gpt-oss-120b-swa-pool", "mode=serve&engine=sglang&engine_version=0.5.10&model=gpt-oss-120b&quant=mxfp4&gpu=h100-80&max_len=8192")
    names = [c["name"] for c in out]
    assert len(names) == len(set(names)), "duplicate case names"
    return out


def run(binary, args):
    p = subprocess.run([binary, *args], capture_output=True, cwd=ROOT)
    return p.returncode, p.stdout.decode()


def main():
    what, binary = sys.argv[1], os.path.abspath(sys.argv[2])
    os.makedirs(os.path.join(GOLDEN, "out"), exist_ok=True)
    path = os.path.join(GOLDEN, "cases.json")
    if what == "cases":
        cs = cases(binary)
        with open(path, "w") as f:
            json.dump(cs, f, indent=0, ensure_ascii=False)
            f.write("\n")
        print(f"{len(cs)} cases")
        return
    cs = json.load(open(path))
    changed = 0
    for c in cs:
        code, text = run(binary, c["args"])
        file = os.path.join(GOLDEN, "out", c["name"] + ".json")
        stored = f"exit {code}\n{text}"
        if what == "record":
            with open(file, "w") as f:
                f.write(stored)
        elif what == "diff":
            old = open(file).read() if os.path.exists(file) else ""
            if old != stored:
                changed += 1
                print(f"== {c['name']}")
                for line in diff_fields(old, stored):
                    print("  " + line)
    if what == "diff":
        print(f"{changed} of {len(cs)} cases differ")


def diff_fields(old, new):
    """The JSON paths whose values differ, `path: old -> new` (values shortened)."""
    def parse(t):
        head, _, body = t.partition("\n")
        try:
            return {"exit": head, "json": json.loads(body)}
        except json.JSONDecodeError:
            return {"exit": head, "text": body}

    out = []

    def walk(a, b, p):
        if isinstance(a, dict) and isinstance(b, dict):
            for k in sorted(set(a) | set(b)):
                walk(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{p}.{k}")
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b)):
                walk(x, y, f"{p}[{i}]")
        elif a != b:
            sa, sb = json.dumps(a, ensure_ascii=False), json.dumps(b, ensure_ascii=False)
            out.append(f"{p}: {sa[:160]} -> {sb[:160]}")

    walk(parse(old), parse(new), "")
    return out


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Fixes which serving log lines are held out, before any model is compared with them.

Eligible: vLLM entries with a stated release, a model memfit has a preset of (same
shapes; Mistral Small 3.1/3.2 are left out: their checkpoints carry a vision tower the
text preset does not), a GPU in the catalogue, max_model_len stated, and a logged KV size. Held out:
every entry whose sha1(id) is 0 mod 3 (a third, by a rule that reads nothing else).
Writes tests/data/serve_split.json. Run once; the split is committed before modelling.
"""
import hashlib, json, sys

MODELS = {
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3-8b",
    "meta-llama/Meta-Llama-3.1-8B-Instruct": "llama-3-8b",
    "meta-llama/Meta-Llama-3-8B-Instruct": "llama-3-8b",
    "TechxGenus/Meta-Llama-3-70B-Instruct-AWQ": "llama-3-70b",
    "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16": "llama-3-8b",
    "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w8a8": "llama-3-8b",
    "Qwen/Qwen2.5-7B-Instruct": "qwen2.5-7b",
    "RedHatAI/Qwen2.5-7B-Instruct-fp8-dynamic": "qwen2.5-7b",
    "RedHatAI/Qwen2.5-7B-Instruct-quantized.w8a8": "qwen2.5-7b",
    "Qwen2-7B-Instruct": "qwen2.5-7b",
    "Qwen/Qwen2.5-72B-Instruct": "qwen2.5-72b",
    "moonshotai/Kimi-Dev-72B": "qwen2.5-72b",
    "Qwen/Qwen3-8B": "qwen3-8b",
    "Qwen/Qwen3-30B-A3B": "qwen3-30b-a3b",
    "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8": "qwen3-235b-a22b",
    "Qwen/Qwen1.5-MoE-A2.7B": "qwen1.5-moe-a2.7b",
    "google/gemma-2-27b-it": "gemma-2-27b",
    "google/gemma-2-9b-it": "gemma-2-9b",
    "google/gemma-7b": "gemma-7b",
    "microsoft/phi-2": "phi-2",
    "microsoft/phi-4": "phi-4",
    "mistralai/Mixtral-8x7B-Instruct-v0.1": "mixtral-8x7b",
    "deepseek-ai/DeepSeek-V2-Lite-Chat": "deepseek-v2-lite",
    "openai/gpt-oss-20b": "gpt-oss-20b",
    "gpt-oss-120b": "gpt-oss-120b",
    "openai/gpt-oss-120b": "gpt-oss-120b",
    "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic": "llama-3-70b",
    "RedHatAI/Llama-3.3-70B-Instruct-fp8-dynamic": "llama-3-70b",
    "redhatai/Llama-3.3-70B-Instruct-quantized.w4a16": "llama-3-70b",
    "redhatai/Llama-3.3-70B-Instruct-quantized.w8a8": "llama-3-70b",
    # Added 2026-11-28 with the third batch of logs (same shapes as the preset: Qwen2.5-Coder
    # and R1-Distill-Qwen have their base model's; the local paths are the named checkpoints).
    "Qwen/Qwen2.5-14B-Instruct": "qwen2.5-14b",
    "Qwen/Qwen2.5-Coder-14B-Instruct": "qwen2.5-14b",
    "Qwen/Qwen2.5-Coder-32B-Instruct-AWQ": "qwen2.5-32b",
    "/teamspace/studios/this_studio/elloraa/repos/DeepSeek-R1-Distill-Qwen-32B-FP8": "qwen2.5-32b",
    "Qwen/Qwen3-30B-A3B-Instruct-2507": "qwen3-30b-a3b",
    "cpatonn/Qwen3-30B-A3B-Thinking-2507-AWQ-4bit": "qwen3-30b-a3b",
    "/home/Competition2025/P12/shareP12/models/Qwen3-235B-A22B-FP8": "qwen3-235b-a22b",
    "microsoft/Phi-3-mini-4k-instruct": "phi-3-mini",
}

def gpu(name):
    n = (name or "").lower()
    if "h100" in n and "80" in n: return "h100-80"
    if "a100" in n and "80" in n: return "a100-80"
    if "a100" in n and "40" in n: return "a100-40"
    if "l40s" in n: return "l40s"
    if n.startswith("nvidia l4"): return "l4"
    if "h200" in n and "gh200" not in n: return "h200"
    # Added 2026-11-28 (the catalogue's other cards, named as nvidia-smi and ROCm name them).
    for name, gid in (("rtx 3090", "rtx3090"), ("rtx 4090", "rtx4090"), ("rtx 5090", "rtx5090"),
                      ("mi300x", "mi300x"), ("a10g", "a10g")):
        if name in n: return gid
    if n.startswith("nvidia a10") and not n.startswith("nvidia a100"): return "a10"
    return None

def eligible(e):
    if e["engine"] != "vllm": return False
    v = (e.get("engine_version") or "")
    if not v[:1].isdigit(): return False
    if MODELS.get(e["model"]) is None or gpu(e["gpu"]) is None: return False
    if not e.get("max_model_len"): return False
    lg = e["logged"]
    return any(k in lg for k in ("kv_cache_tokens", "gpu_blocks", "available_kv_cache_gib"))

def main(path):
    d = json.load(open(path))
    ids = sorted(e["id"] for e in d["entries"] if eligible(e))
    held = [i for i in ids if int(hashlib.sha1(i.encode()).hexdigest(), 16) % 3 == 0]
    cal = [i for i in ids if i not in held]
    out = {"rule": __doc__.strip().splitlines()[2:5], "models": MODELS,
           "held_out": held, "calibration": cal}
    json.dump(out, open("tests/data/serve_split.json", "w"), indent=1)
    print(len(ids), "eligible:", len(cal), "calibration,", len(held), "held out")

main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/serve_logs.json")

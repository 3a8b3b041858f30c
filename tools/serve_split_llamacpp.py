#!/usr/bin/env python3
"""Fixes which llama.cpp and Ollama start-up logs are held out, before any is compared.

Eligible: entries with a "settings" block (the fourth batch, added 2026-11-29), complete
settings, a release memfit can name (a llama.cpp build number or an Ollama release), no
adapter, a checkpoint with a preset of the same shapes and a GGUF layout memfit has.
Held out: every eligible entry whose sha1(id) is 0 mod 3 (the vLLM split's rule).
The entries before this batch are all calibration: the buffer model was built on them.
A fifth batch (one Ollama log on b9672, added 2026-11-29 later) had its figures read before
the rule was applied to it, and a term was found on it: SEEN_BEFORE_SPLIT keeps it in
calibration whatever its hash (the fourth batch's split is unchanged).
Each query states what the log prints was in effect (context, sequences, layers on the GPU,
flash attention where the log resolves it, the micro-batch where it is not 512), so the
comparison is of the buffers, not of the front end's defaults. Writes
tests/data/serve_split_llamacpp.json. Run once; the split is committed before modelling.
"""
import hashlib, json, sys

CHECKPOINTS = {
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3-8b",
    "meta-llama/Llama-3.1-70B-Instruct": "llama-3-70b",
    "meta-llama/Llama-2-7b-chat-hf": "llama-2-7b",
    "Qwen/Qwen2.5-14B-Instruct": "qwen2.5-14b",
    "Qwen/Qwen2.5-Coder-7B-Instruct": "qwen2.5-7b",
    "Qwen/Qwen2.5-Coder-32B-Instruct": "qwen2.5-32b",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B": "qwen2.5-32b",
    "Qwen/QwQ-32B": "qwen2.5-32b",
    "Qwen/Qwen3-Coder-30B-A3B-Instruct": "qwen3-30b-a3b",
    "google/codegemma-1.1-7b-it": "gemma-7b",
    # Mistral 7B v0.2 drops v0.1's 4,096-token window; the logs' contexts are below it.
    "mistralai/Mistral-7B-Instruct-v0.2": "mistral-7b",
    "mistralai/Mixtral-8x7B-Instruct-v0.1": "mixtral-8x7b",
    "openai/gpt-oss-20b": "gpt-oss-20b",
    "openai/gpt-oss-120b": "gpt-oss-120b",
    "microsoft/Phi-3-mini-4k-instruct": "phi-3-mini",
    "microsoft/phi-4": "phi-4",
    "google/gemma-2-9b-it": "gemma-2-9b",
    # A fine-tune of Llama 3.1 8B: the same shapes (print_info: 4096, 32 layers, 14336, 128256).
    "NousResearch/Hermes-3-Llama-3.1-8B": "llama-3-8b",
}
# Read before the rule reached them, and modelled on: calibration, whatever the hash says.
SEEN_BEFORE_SPLIT = {"raubo-ollama-rtx2060-hermes3-llama31-8b-q4_0-32k"}
GGUF = {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_k", "q3_k_s", "q3_k_m", "q3_k_l",
        "q4_k_s", "q4_k_m", "q5_k_s", "q5_k_m", "q6_k", "iq4_nl", "iq4_xs", "mxfp4"}

def gpu(name):
    """The catalogue card, or the memory the log prints (MiB) for one it does not hold."""
    n = name.lower()
    for key, gid in (("a100-pcie-40gb", "a100-40"), ("a100-sxm4-40gb", "a100-40"),
                     ("a100-sxm4-80gb", "a100-80"), ("v100-sxm2-32gb", "v100-32"),
                     ("rtx 3090", "rtx3090"), ("h100l-94c", "h100-nvl")):
        if key in n: return "gpu=" + gid
    for key, mib in (("tesla t4", 15360), ("rtx 4050 laptop", 6144), ("nvidia a40", 46068),
                     ("rtx 5080", 16303), ("rtx a4000", 16376), ("rtx a5000", 24564),
                     ("rtx 3080 ti", 12288), ("rtx 2060", 5738)):
        if key in n: return f"gpu_mem={mib}"
    return None

def eligible(e):
    s = e.get("settings")
    return bool(s and e.get("settings_complete") and s["release"] and not s["adapter"]
                and s["checkpoint"] in CHECKPOINTS and s["gguf"] in GGUF
                and s["cache_type"] == "f16" and gpu(e["gpu"]))

def query(e):
    s = e["settings"]
    q = ["mode=serve", "engine=llamacpp", "model=" + CHECKPOINTS[s["checkpoint"]],
         "quant=" + s["gguf"], "engine_version=" + s["release"], gpu(e["gpu"])]
    if s["front_end"] == "ollama":
        q += [f"max_len={s['n_ctx'] // s['parallel']}", "ctx_per=sequence"]
    else:
        q += [f"max_len={s['n_ctx']}", "ctx_per=total"]
    q += [f"parallel={s['parallel']}", f"ngl={s['ngl']}"]
    if s["flash_attn"]: q.append("flash_attn=" + s["flash_attn"])
    if s["n_ubatch"] and s["n_ubatch"] != 512: q.append(f"max_batched_tokens={s['n_ubatch']}")
    return "&".join(q)

def main(path):
    d = json.load(open(path))
    ids = sorted(e["id"] for e in d["entries"] if eligible(e))
    held = [i for i in ids if int(hashlib.sha1(i.encode()).hexdigest(), 16) % 3 == 0
            and i not in SEEN_BEFORE_SPLIT]
    cal = [i for i in ids if i not in held]
    queries = {e["id"]: query(e) for e in d["entries"] if e["id"] in ids}
    out = {"rule": __doc__.strip().splitlines()[2:10], "held_out": held, "calibration": cal,
           "queries": queries}
    json.dump(out, open("tests/data/serve_split_llamacpp.json", "w"), indent=1)
    print(len(ids), "eligible:", len(cal), "calibration,", len(held), "held out")

main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/serve_logs.json")

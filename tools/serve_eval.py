#!/usr/bin/env python3
"""Compares memfit's serving plans with the logged start-ups (tests/data/serve_logs.json).

usage: serve_eval.py <memfit binary> calibration|held_out|all [--markdown]
Prints, per entry, the logged and predicted weights, KV memory and KV tokens, and the
median and max |error| of the KV tokens. The test tests/serve_vllm.rs checks the same
numbers; this is the development view (run it on the calibration part only while modelling).
"""
import json, subprocess, sys, statistics

GPU = {"h100": "h100-80", "a100-80": "a100-80", "a100-40": "a100-40", "l4": "l4"}

def query(e, preset):
    from serve_split_rules import gpu  # noqa
def gpu_id(name):
    n = (name or "").lower()
    if "h100" in n and "80" in n: return "h100-80"
    if "a100" in n and "80" in n: return "a100-80"
    if "a100" in n and "40" in n: return "a100-40"
    if "l40s" in n: return "l40s"
    if n.startswith("nvidia l4"): return "l4"
    if "h200" in n and "gh200" not in n: return "h200"

def quant_of(e):
    m = (e["model"] or "").lower(); q = (e.get("quantization") or "").lower()
    if "gpt-oss" in m: return "mxfp4"
    if "w4a16" in m or "gptq" in q or "awq" in q: return "w4a16"
    if "w8a8" in m: return "w8a8"
    if "fp8" in m or q.startswith("fp8"): return "fp8"
    return None

def q_of(e, preset):
    tp, pp = e.get("tp") or 1, e.get("pp") or 1
    parts = ["mode=serve", "engine=vllm", f"model={preset}", f"gpu={gpu_id(e['gpu'])}",
             f"gpus_per_node={tp*pp}", f"tp={tp}", f"pp={pp}", f"max_len={e['max_model_len']}"]
    v = e.get("engine_version") or ""
    parts.append("engine_version=" + ".".join(v.split(".")[:3]))
    if e.get("gpu_memory_utilization"): parts.append(f"gpu_util={e['gpu_memory_utilization']}")
    for k, key in (("max_num_seqs", "max_seqs"), ("max_num_batched_tokens", "max_batched_tokens"), ("block_size", "block_size")):
        if e.get(k): parts.append(f"{key}={e[k]}")
    kv = (e.get("kv_cache_dtype") or "auto").lower()
    if kv.startswith("fp8"): parts.append("kv_dtype=fp8")
    dt = (e.get("dtype") or "").lower().removeprefix("torch.")
    if dt in ("float32", "fp32"): parts.append("precision=fp32")
    elif dt in ("float16", "fp16", "half"): parts.append("precision=fp16")
    q = quant_of(e)
    if q: parts.append(f"quant={q}")
    # Settings the log itself states: --enable-expert-parallel (EP over the TP ranks) and
    # the sampler's own warning about flashinfer.
    if e.get("enable_expert_parallel"): parts.append(f"ep={tp}")
    if e.get("sampler_from_log"): parts.append(f"sampler={e['sampler_from_log']}")
    return "&".join(parts)

def logged_tokens(e):
    lg = e["logged"]
    if "kv_cache_tokens" in lg: return lg["kv_cache_tokens"]
    return None

def main(binary, part):
    d = json.load(open("tests/data/serve_logs.json"))
    split = json.load(open("tests/data/serve_split.json"))
    ids = split["calibration"] + split["held_out"] if part == "all" else split[part]
    rows = []
    for e in d["entries"]:
        if e["id"] not in ids: continue
        preset = split["models"][e["model"]]
        q = q_of(e, preset)
        out = json.loads(subprocess.run([binary, q], capture_output=True, text=True).stdout)
        s = out["serve"]
        lg = e["logged"]
        tok = logged_tokens(e)
        err = (s["kv_tokens"] - tok) / tok * 100 if tok else None
        kvg = lg.get("available_kv_cache_gib")
        rows.append((e["id"], lg.get("model_loading_gib"), s["weights_bytes"] / 2**30, kvg, s["kv_cache_bytes"] / 2**30, tok, s["kv_tokens"], err, lg.get("torch_peak_increase_gib"), s["activation_bytes"]/2**30, lg.get("non_torch_gib"), lg.get("cuda_graph_estimated_gib")))
    if "--markdown" in sys.argv:
        print("| run | logged tokens | memfit | error |\n|---|---:|---:|---:|")
        for r in rows:
            if r[7] is not None:
                print(f"| `{r[0]}` | {r[5]:,} | {r[6]:,} | {r[7]:+.2f} % |")
        errs = [abs(r[7]) for r in rows if r[7] is not None]
        print(f"\n{part}: {len(errs)} runs, median |error| {statistics.median(errs):.2f} %, max {max(errs):.2f} %")
        return
    print(f"{'id':62} {'W log':>7} {'W':>7} {'KV log':>7} {'KV':>7} {'tok log':>9} {'tok':>9} {'err%':>6} {'A log':>5} {'A':>5} {'NT':>5} {'CG':>5}")
    for r in rows:
        f = lambda x, w=7, p=2: (f"{x:{w}.{p}f}" if isinstance(x, (int, float)) else f"{'-':>{w}}")
        print(f"{r[0][-62:]:62} {f(r[1])} {f(r[2])} {f(r[3])} {f(r[4])} {str(r[5]):>9} {r[6]:>9} {f(r[7],6,1)} {f(r[8],5)} {f(r[9],5)} {f(r[10],5)} {f(r[11],5)}")
    errs = [abs(r[7]) for r in rows if r[7] is not None]
    if errs: print(f"{part}: {len(errs)} with tokens, median |err| {statistics.median(errs):.2f} %, max {max(errs):.2f} %")

main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "calibration")

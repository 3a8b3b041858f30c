#!/usr/bin/env python3
"""Compares memfit's step-time model with published training runs (tests/data/train_runs.json).

usage: train_eval.py <memfit binary> calibration|held_out|all [--markdown] [--pairs: list the misordered pairs]
Prints, per run, the measured and predicted step time and the error, then the median and
max |error| and the pair ordering. tests/step_time.rs checks the same figures; this is the
development view (run it on the calibration part only while modelling).
"""
import json, subprocess, sys, statistics

CLUSTERS = json.load(open("tests/data/train_clusters.json"))["sources"]

def query(r, gpu):
    a = r["arch"]
    h, ffn = a["hidden"], a.get("ffn") or 4 * a["hidden"]
    gelu = ffn == 4 * h
    base = "gpt3-175b" if gelu else "llama-2-7b"
    q = [f"model={base}", f"layers={a['layers']}", f"hidden={h}", f"heads={a['heads']}",
         f"kv_heads={a.get('kv_heads') or a['heads']}", f"ffn={ffn}", f"vocab={a['vocab']}",
         f"head_dim={h // a['heads']}"]
    if not gelu:
        q.append("positions=0")
    gpus = r.get("gpus") or r["tp"] * r["pp"] * (r.get("dp") or 1) * (r.get("cp") or 1)
    per_node = 8 if gpus >= 8 else gpus
    q += [f"gpu={gpu}", f"gpus_per_node={per_node}", f"nodes={max(1, gpus // per_node)}",
          f"tp={r['tp']}", f"pp={r['pp']}", f"cp={r.get('cp') or 1}"]
    dp = r.get("dp") or gpus // (r["tp"] * r["pp"] * (r.get("cp") or 1))
    mb = r["micro_batch"]
    q += [f"dp={dp}", f"batch={mb}", f"microbatches={max(1, r['global_batch'] // (dp * mb))}",
          f"seq={r['seq_len']}"]
    if r.get("vpp") and r["vpp"] > 1:
        q += [f"vpp={r['vpp']}", "schedule=interleaved"]
    if r.get("recompute") in ("selective", "full"):
        q.append(f"recompute={r['recompute']}")
    if r.get("sequence_parallel"):
        q.append("sp=1")
    p = (r.get("precision") or "").lower()
    q.append("precision=" + ("fp8" if p.startswith("fp8") else p))
    # The attention kernel of the source's era: FlashAttention reached Megatron in 2023;
    # Narayanan 2021, Korthikanti 2022, MT-NLG and BLOOM ran Megatron's fused softmax.
    if r.get("source_key") in ("narayanan2021", "korthikanti2022", "mtnlg2022", "bigscience_bloom"):
        q.append("attn=eager")
    # The cluster's figures where the source states them (tests/data/train_clusters.json).
    for k, v in CLUSTERS.get(r.get("source_key"), {}).get("keys", {}).items():
        q.append(f"{k}={v}")
    fw = (r.get("framework") or "").lower()
    # NeMo's and Megatron-Bridge's performance recipes overlap TP communication.
    if "nemo" in fw or "bridge" in fw:
        q.append("tp_overlap=1")
    if "torchtitan" in fw or "foundry" in fw:
        # The row's sharding strategy (llm-foundry states FULL_SHARD or SHARD_GRAD_OP).
        strategy = "shard_grad_op" if r.get("fsdp") == "SHARD_GRAD_OP" else "full_shard"
        q += ["framework=pytorch", f"fsdp={strategy}"]
    elif "deepspeed" in fw:
        q.append(f"zero={r.get('zero_stage') or 1}")
    else:
        q += ["framework=megatron", "zero=1"]
    q.append("time=1")
    return "&".join(q)

def measured_step(r):
    m = r["measured"]
    if m.get("iteration_time_s"): return m["iteration_time_s"]
    tokens = r["global_batch"] * r["seq_len"]
    gpus = r.get("gpus") or r["tp"] * r["pp"] * (r.get("dp") or 1) * (r.get("cp") or 1)
    if m.get("tokens_per_s_total"): return tokens / m["tokens_per_s_total"]
    if m.get("tokens_per_s_per_gpu"): return tokens / (m["tokens_per_s_per_gpu"] * gpus)

def main(binary, part):
    d = json.load(open("tests/data/train_runs.json"))
    split = json.load(open("tests/data/train_split.json"))
    ids = split["calibration"] + split["held_out"] if part == "all" else split[part]
    rows = []
    for r in d["runs"]:
        if r["id"] not in ids: continue
        q = query(r, split["gpus"][r["gpu"]])
        out = json.loads(subprocess.run([binary, q], capture_output=True, text=True).stdout)
        t = out.get("time") or {}
        ours = t.get("step_s")
        meas = measured_step(r)
        err = (ours - meas) / meas * 100 if ours and meas else None
        rows.append((r["id"], meas, ours, err, t.get("mfu"), r.get("pair_group"), t.get("breakdown")))
    md = "--markdown" in sys.argv
    if md: print("| run | measured step (s) | memfit (s) | error | memfit MFU |\n|---|---:|---:|---:|---:|")
    for r in rows:
        if md: print(f"| `{r[0]}` | {r[1]:.3f} | {r[2]:.3f} | {r[3]:+.1f} % | {r[4]:.3f} |")
        else: print(f"{r[0][:48]:48} {r[1]:9.3f} {r[2]:9.3f} {r[3]:+7.1f}% mfu {r[4]:.3f}")
    errs = [abs(r[3]) for r in rows if r[3] is not None]
    print(f"\n{part}: {len(errs)} runs, median |error| {statistics.median(errs):.1f} %, max {max(errs):.1f} %")
    # Pairs: the faster one predicted faster (per-token time, since pairs may differ in batch).
    groups = {}
    byid = {x["id"]: x for x in d["runs"]}
    for r in rows:
        g = byid[r[0]].get("pair_group")
        if g: groups.setdefault(g, []).append(r)
    ok = tot = 0
    for g, rs in groups.items():
        for i in range(len(rs)):
            for j in range(i + 1, len(rs)):
                a, b = rs[i], rs[j]
                ta = a[1] / (byid[a[0]]["global_batch"] * byid[a[0]]["seq_len"])
                tb = b[1] / (byid[b[0]]["global_batch"] * byid[b[0]]["seq_len"])
                pa = a[2] / (byid[a[0]]["global_batch"] * byid[a[0]]["seq_len"])
                pb = b[2] / (byid[b[0]]["global_batch"] * byid[b[0]]["seq_len"])
                if ta == tb: continue
                tot += 1
                right = (ta < tb) == (pa < pb)
                ok += right
                if not right and "--pairs" in sys.argv:
                    print(f"  misordered ({g}): {a[0]} measured {ta:.3e}, memfit {pa:.3e} s/token; {b[0]} measured {tb:.3e}, memfit {pb:.3e}")
    print(f"{part}: pairs ordered right {ok} of {tot}")

main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "calibration")

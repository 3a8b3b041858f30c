#!/usr/bin/env python3
"""Fixes which published training runs are held out, before the step-time model is
compared with any of them.

Eligible: a GPU in memfit's catalogue (A100 SXM, H100 SXM 80 GB, B200), a precision memfit
models (fp16, bf16, fp8), the layout stated (tp, pp, dp, micro- and global batch, sequence),
the architecture stated, and a measured iteration time or tokens per second (MFU and
TFLOP/s alone are left out: the sources count FLOPs differently). Held out: every run whose
sha1(id) is 0 mod 2 (half, by a rule that reads nothing else).
Writes tests/data/train_split.json; run once, committed before modelling.
"""
import hashlib, json

GPU = {"A100-SXM-80GB": "a100-80", "A100 (Ampere; memory not stated)": "a100-80",
       "H100-SXM-80GB": "h100-80", "B200": "b200-180"}

def precision(p):
    p = (p or "").lower()
    if p.startswith("fp8"): return "fp8"
    if p in ("bf16", "fp16"): return p
    return None

def eligible(r):
    if GPU.get(r["gpu"]) is None or precision(r.get("precision")) is None: return False
    if any(r.get(k) in (None, 0) for k in ("tp", "pp", "micro_batch", "global_batch", "seq_len")): return False
    if r.get("dp") is None and r.get("gpus") is None: return False
    a = r.get("arch") or {}
    if any(a.get(k) in (None, 0) for k in ("layers", "hidden", "heads", "vocab")): return False
    m = r["measured"]
    return any(m.get(k) for k in ("iteration_time_s", "tokens_per_s_per_gpu", "tokens_per_s_total"))

d = json.load(open("tests/data/train_runs.json"))
ids = sorted(r["id"] for r in d["runs"] if eligible(r))
held = [i for i in ids if int(hashlib.sha1(i.encode()).hexdigest(), 16) % 2 == 0]
cal = [i for i in ids if i not in held]
json.dump({"rule": __doc__.strip().splitlines()[2:8], "gpus": GPU, "held_out": held, "calibration": cal},
          open("tests/data/train_split.json", "w"), indent=1)
print(len(ids), "eligible:", len(cal), "calibration,", len(held), "held out")

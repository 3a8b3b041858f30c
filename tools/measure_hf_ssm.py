#!/usr/bin/env python3
"""Measure state-space and hybrid `transformers` models on CPU (issue 37), with the harness of
`tools/measure_hf.py` (same MemTracker phases, loops, precisions and run ids).

The families are the SSM / hybrid causal LMs transformers 5.24 ships: Mamba, Mamba-2, Jamba,
Bamba, Nemotron-H, Falcon-H1, LFM2, Qwen3-Next and Granite-4.0-H (GraniteMoeHybrid), at tiny
widths (hidden 256, 2-4 layers, vocab 4096). Without mamba-ssm / causal-conv1d /
flash-linear-attention installed every mixer runs transformers' PyTorch fallback
(`torch_forward` / `slow_forward` / `torch_chunk_gated_delta_rule`): memfit's
`ssm_kernels=torch`.

The run list (`plan()` here) and its split (`measure_hf.held_out`, the sha256 rule) are written
to tests/data/hf_ssm_runs.json before anything is measured or compared; the measurements go to
tests/data/hf_ssm_measurements.json. The 372 runs of tests/data/hf_measurements.json are not
touched.

    nice -n 19 ~/.cache/memfit-venv/bin/python tools/measure_hf_ssm.py --plan-only
    nice -n 19 ~/.cache/memfit-venv/bin/python tools/measure_hf_ssm.py [--resume] [--only SUBSTR]
"""
import argparse
import json
import os
import sys

import measure_hf as H

RUNS_PATH = os.path.join(H.ROOT, "tests", "data", "hf_ssm_runs.json")
OUT_PATH = os.path.join(H.ROOT, "tests", "data", "hf_ssm_measurements.json")

_COMMON = dict(vocab_size=4096, hidden_size=256, tie_word_embeddings=False)

SSM_SHAPES = {
    "mamba": {"s": ("MambaConfig", dict(_COMMON, num_hidden_layers=4, state_size=16, expand=2, conv_kernel=4))},
    "mamba2": {"s": ("Mamba2Config", dict(_COMMON, num_hidden_layers=3, num_heads=8, head_dim=64, state_size=64,
                                          n_groups=2, expand=2, chunk_size=64))},
    "jamba": {"s": ("JambaConfig", dict(_COMMON, num_hidden_layers=4, intermediate_size=512, num_attention_heads=8,
                                        num_key_value_heads=2, num_experts=4, num_experts_per_tok=2,
                                        expert_layer_period=2, expert_layer_offset=1, attn_layer_period=4,
                                        attn_layer_offset=2, mamba_d_state=16, mamba_expand=2,
                                        use_mamba_kernels=False, max_position_embeddings=2048))},
    "bamba": {"s": ("BambaConfig", dict(_COMMON, num_hidden_layers=4, intermediate_size=512, num_attention_heads=8,
                                        num_key_value_heads=2, attn_layer_indices=[2], mamba_n_heads=8,
                                        mamba_n_groups=1, mamba_d_state=64, mamba_expand=2, mamba_chunk_size=64,
                                        max_position_embeddings=2048))},
    "nemotron_h": {"s": ("NemotronHConfig", dict(_COMMON, layers_block_type=["linear_attention", "full_attention",
                                                                             "linear_attention", "mlp"],
                                                 num_attention_heads=8, num_key_value_heads=2, head_dim=32,
                                                 intermediate_size=512, mamba_num_heads=8, mamba_head_dim=64,
                                                 n_groups=2, ssm_state_size=64, expand=2, chunk_size=64,
                                                 max_position_embeddings=2048))},
    "falcon_h1": {"s": ("FalconH1Config", dict(_COMMON, num_hidden_layers=3, intermediate_size=512,
                                               num_attention_heads=8, num_key_value_heads=2, mamba_d_ssm=512,
                                               mamba_n_heads=8, mamba_d_head=64, mamba_n_groups=1, mamba_d_state=64,
                                               mamba_chunk_size=64, max_position_embeddings=2048))},
    "lfm2": {"s": ("Lfm2Config", dict(_COMMON, num_hidden_layers=4, intermediate_size=768, num_attention_heads=8,
                                      num_key_value_heads=2, layer_types=["conv", "full_attention", "conv",
                                                                          "full_attention"],
                                      block_auto_adjust_ff_dim=False, max_position_embeddings=2048))},
    "qwen3_next": {"s": ("Qwen3NextConfig", dict(_COMMON, num_hidden_layers=4, intermediate_size=512,
                                                 num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                                                 linear_key_head_dim=32, linear_value_head_dim=32,
                                                 linear_num_key_heads=4, linear_num_value_heads=8, num_experts=4,
                                                 num_experts_per_tok=2, moe_intermediate_size=128,
                                                 shared_expert_intermediate_size=256,
                                                 max_position_embeddings=2048))},
    "granitemoehybrid": {"s": ("GraniteMoeHybridConfig", dict(_COMMON, num_hidden_layers=4, intermediate_size=256,
                                                              num_attention_heads=8, num_key_value_heads=2,
                                                              layer_types=["mamba", "mamba", "attention", "mamba"],
                                                              num_local_experts=4, num_experts_per_tok=2,
                                                              shared_intermediate_size=512, mamba_n_heads=8,
                                                              mamba_n_groups=1, mamba_d_state=64, mamba_chunk_size=64,
                                                              max_position_embeddings=2048))},
}
SSM_FAMILIES = list(SSM_SHAPES)
# Mamba and Mamba-2 have no attention and refuse attn_implementation="sdpa": planned with eager.
NO_ATTN = {"mamba", "mamba2"}
H.SHAPES.update(SSM_SHAPES)


def plan():
    runs = []

    def add(**r):
        base = dict(kind="train", loop="loss=model", precision="fp32", optimizer="adamw-foreach", attn="sdpa",
                    ckpt=False, batch=2, seq=256, fake=False, family=None, shape="s")
        base.update(r)
        if base["family"] in NO_ATTN:
            base["attn"] = "eager"
        base["id"] = H.run_id(base)
        runs.append(base)

    for fam in SSM_FAMILIES:
        add(family=fam)
        add(family=fam, precision="bf16")
        add(family=fam, ckpt=True)
        add(family=fam, ckpt=True, precision="bf16")
        add(family=fam, optimizer="sgd")
        add(family=fam, batch=1, seq=512, optimizer="adamw-fused")
        for b in (1, 3):
            add(kind="infer", family=fam, loop="generate", optimizer=None, batch=b, seq=128, gen=16,
                cache="dynamic")
        add(kind="infer", family=fam, loop="generate", optimizer=None, batch=2, seq=256, gen=8, cache="dynamic",
            precision="bf16")
        add(kind="prefill", family=fam, loop="prefill", optimizer=None, batch=2, seq=256, logits_to_keep=1)
        add(kind="prefill", family=fam, loop="prefill", optimizer=None, batch=1, seq=512, logits_to_keep=0,
            precision="bf16")
    ids = [r["id"] for r in runs]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]
    for r in runs:
        r["model_type"] = H.make_config(r["family"], r["shape"]).model_type
        r["held_out"] = H.held_out(r["id"])
        for k in ("gen", "world", "mp_policy", "logits_to_keep", "cache"):
            r.setdefault(k, None)
    return runs


NOTES = H.NOTES[:2] + H.NOTES[3:4] + H.NOTES[5:9] + [
    "No mamba-ssm, causal-conv1d or flash-linear-attention installed: every mixer runs transformers' PyTorch "
    "fallback (memfit's ssm_kernels=torch).",
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan-only", action="store_true")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--only", default=None, help="comma-separated substrings of run ids")
    ap.add_argument("--out", default=OUT_PATH)
    ap.add_argument("--runs", default=RUNS_PATH)
    args = ap.parse_args()
    runs = plan()
    if args.plan_only or not os.path.exists(args.runs):
        H.dump(args.runs, {"what": "Run list for tools/measure_hf_ssm.py (ids and settings, no measurements)",
                           "split": H.SPLIT, "runs": runs})
        print(f"wrote {len(runs)} runs to {args.runs}", file=sys.stderr)
        if args.plan_only:
            return
    fixed = {r["id"] for r in json.load(open(args.runs))["runs"]}
    assert fixed == {r["id"] for r in runs}, "run list differs from " + args.runs
    out = {"what": "Peak CPU memory (bytes, per MemTracker category) of state-space and hybrid transformers models, "
                   "measured with torch.distributed._tools MemTracker by tools/measure_hf_ssm.py",
           "versions": H.versions(), "split": H.SPLIT, "notes": NOTES, "runs": [], "failed": []}
    done = set()
    if args.resume and os.path.exists(args.out):
        prev = json.load(open(args.out))
        out["runs"] = prev["runs"]
        done = {r["id"] for r in prev["runs"]}
    todo = [r for r in runs if r["id"] not in done and (args.only is None or any(o in r["id"] for o in args.only.split(",")))]
    H.measure_all(todo, out, args.out)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Measure the real peak memory of real Hugging Face `transformers` models on CPU.

Every model is a real `transformers` class built with `AutoModelForCausalLM.from_config`
from a config written here (nothing is downloaded; token ids are random, seeded). Each run
is measured with `torch.distributed._tools.mem_tracker.MemTracker` (FSDP2 runs with
`torch.distributed._tools.fsdp2_mem_tracker.FSDPMemTracker` on a fake process group), which
attributes every tensor storage to PARAM / BUFFER / GRAD / ACT / TEMP / OPT / OTH. On CPU
there is no caching allocator: the bytes are the sum of live tensor storages.

Kinds of run (see `plan()` for the exact list):
  train    two steps of a hand-written loop; loop "loss=model"
           (`loss = model(input_ids=ids, labels=ids).loss; loss.backward(); opt.step();
           opt.zero_grad(set_to_none=True)`) or "loss=loop" (the loop keeps
           `logits = model(input_ids=ids).logits` and computes the shifted cross entropy of
           `logits.float()` itself). Precision fp32, pure bf16 (`model.to(bfloat16)`), or
           autocast-bf16 (fp32 params, `torch.autocast("cpu", bfloat16)` around forward+loss).
           Optimizers AdamW foreach=True / fused=True / foreach=False, SGD, SGD momentum 0.9.
           Gradient checkpointing via `gradient_checkpointing_enable(use_reentrant=False)`.
  trainer  `transformers.Trainer(...).train()` with max_steps=2, its default optimizer.
  fsdp     FSDP2 `fully_shard` on every decoder layer and the root, world 2/8/32, with and
           without MixedPrecisionPolicy(bf16 params, fp32 reduce), loop "loss=model".
  infer    `model.generate(..., do_sample=False, use_cache=True)`, DynamicCache or
           cache_implementation="static", under torch.no_grad().
  prefill  one `model(input_ids=ids, logits_to_keep=0 | 1)` under torch.no_grad().
  Full-width Llama (7B width) and GPT-2 (hidden 2048) runs are built and run entirely
  under FakeTensorMode ("fake": true): shapes and storages are tracked, no data exists.

Phase peaks: MemTracker keeps one running peak (`_peak_mem` / `_peak_mem_snap`, updated after
every dispatched op). At each phase boundary the harness saves it, restarts it from the current
total, and at the end of the phase reads the phase's peak and restores the running maximum
(`PhaseMeter`). Snapshots are `get_tracker_snapshot("current")` totals at phase boundaries of
the last step. MemTracker refuses a second forward of the root module unless
`reset_mod_stats()` is called in between; a global forward pre-hook (registered before the
tracker, so it runs first) calls it whenever the root module starts a forward.

Run (about 6 minutes on 2 cores for all 372 runs; results are written after every run, --resume skips
ids already in the output):

    python3 -m venv ~/.cache/memfit-venv
    ~/.cache/memfit-venv/bin/pip install torch transformers accelerate
    # measured with torch 2.15.0+cu132, transformers 5.24.0, accelerate 1.15.0, Python 3.11.7
    nice -n 19 ~/.cache/memfit-venv/bin/python tools/measure_hf.py --plan-only   # writes tests/data/hf_runs.json
    nice -n 19 ~/.cache/memfit-venv/bin/python tools/measure_hf.py [--resume] [--only SUBSTR]
"""
import argparse
import copy
import hashlib
import json
import math
import os
import platform
import sys
import tempfile
import time
import traceback
import warnings

import torch
import torch.nn.functional as F

torch.set_num_threads(1)
warnings.filterwarnings("ignore")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import transformers  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402
from torch.distributed._tools.mem_tracker import MemTracker  # noqa: E402

transformers.logging.set_verbosity_error()

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS_PATH = os.path.join(ROOT, "tests", "data", "hf_runs.json")
OUT_PATH = os.path.join(ROOT, "tests", "data", "hf_measurements.json")
SPLIT = {"rule": "held_out = int(sha256(id)[:8], 16) % 3 == 0", "note": "fixed before any modelling"}
CPU = torch.device("cpu")


def held_out(run_id):
    return int(hashlib.sha256(run_id.encode()).hexdigest()[:8], 16) % 3 == 0


# ---------------------------------------------------------------------------------------------
# Model families and shapes. Each entry: (config class name, kwargs). Dropout is 0 everywhere.
# ---------------------------------------------------------------------------------------------

def _llama_like(h, a, kv, f, v, layers, **extra):
    return dict(hidden_size=h, num_attention_heads=a, num_key_value_heads=kv, intermediate_size=f,
                vocab_size=v, num_hidden_layers=layers, max_position_embeddings=2048,
                attention_dropout=0.0, **extra)


SHAPES = {
    "llama": {
        "s": ("LlamaConfig", _llama_like(256, 8, 2, 688, 4096, 4, tie_word_embeddings=False)),
        "m": ("LlamaConfig", _llama_like(512, 8, 4, 1376, 8192, 2, tie_word_embeddings=False)),
        "wide": ("LlamaConfig", _llama_like(4096, 32, 32, 11008, 32000, 2, tie_word_embeddings=False)),
    },
    "qwen2": {
        "s": ("Qwen2Config", _llama_like(128, 4, 2, 512, 2048, 2, tie_word_embeddings=True)),
        "m": ("Qwen2Config", _llama_like(384, 6, 2, 1024, 6144, 3, tie_word_embeddings=False)),
    },
    "qwen3": {
        "s": ("Qwen3Config", _llama_like(256, 4, 2, 768, 4096, 2, head_dim=64, tie_word_embeddings=True)),
        "m": ("Qwen3Config", _llama_like(512, 8, 4, 1536, 8192, 3, head_dim=128, tie_word_embeddings=False)),
    },
    "mistral": {
        "s": ("MistralConfig", _llama_like(256, 8, 2, 896, 4096, 3, sliding_window=None, tie_word_embeddings=False)),
        "m": ("MistralConfig", _llama_like(512, 16, 4, 1792, 8192, 2, sliding_window=128, tie_word_embeddings=False)),
    },
    "gemma2": {
        "s": ("Gemma2Config", _llama_like(256, 4, 2, 1024, 4096, 2, head_dim=64, query_pre_attn_scalar=64,
                                         sliding_window=128)),
        "m": ("Gemma2Config", _llama_like(384, 6, 3, 1536, 8192, 4, head_dim=64, query_pre_attn_scalar=64,
                                         sliding_window=128)),
    },
    "gemma3": {
        "s": ("Gemma3TextConfig", _llama_like(256, 4, 1, 1024, 4096, 2, head_dim=64, query_pre_attn_scalar=64,
                                             sliding_window=128)),
        "m": ("Gemma3TextConfig", _llama_like(512, 8, 4, 2048, 8192, 4, head_dim=64, query_pre_attn_scalar=64,
                                             sliding_window=128)),
    },
    "phi3": {
        "s": ("Phi3Config", _llama_like(256, 8, 8, 768, 4096, 2, resid_pdrop=0.0, embd_pdrop=0.0,
                                       pad_token_id=0, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)),
        "m": ("Phi3Config", _llama_like(512, 16, 4, 1536, 8192, 3, resid_pdrop=0.0, embd_pdrop=0.0,
                                       pad_token_id=0, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)),
    },
    "gpt2": {
        "s": ("GPT2Config", dict(n_embd=256, n_head=8, n_layer=4, vocab_size=4096, n_positions=1024,
                                 resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)),
        "m": ("GPT2Config", dict(n_embd=512, n_head=8, n_layer=2, vocab_size=8192, n_positions=1024,
                                 resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)),
        "wide": ("GPT2Config", dict(n_embd=2048, n_head=16, n_layer=2, vocab_size=50257, n_positions=2048,
                                    resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)),
    },
    "gpt_neox": {
        "s": ("GPTNeoXConfig", dict(hidden_size=256, num_attention_heads=8, intermediate_size=1024, vocab_size=4096,
                                    num_hidden_layers=2, max_position_embeddings=2048, rotary_pct=0.25,
                                    attention_dropout=0.0, hidden_dropout=0.0, tie_word_embeddings=False)),
        "m": ("GPTNeoXConfig", dict(hidden_size=512, num_attention_heads=8, intermediate_size=2048, vocab_size=8192,
                                    num_hidden_layers=3, max_position_embeddings=2048, rotary_pct=0.25,
                                    attention_dropout=0.0, hidden_dropout=0.0, tie_word_embeddings=False)),
    },
    "mixtral": {
        "s": ("MixtralConfig", _llama_like(256, 8, 2, 512, 4096, 2, num_local_experts=4, num_experts_per_tok=2,
                                          router_jitter_noise=0.0, tie_word_embeddings=False)),
        "m": ("MixtralConfig", _llama_like(384, 6, 2, 768, 6144, 2, num_local_experts=8, num_experts_per_tok=2,
                                          router_jitter_noise=0.0, tie_word_embeddings=False)),
    },
    "qwen2_moe": {
        "s": ("Qwen2MoeConfig", _llama_like(256, 8, 2, 1024, 4096, 2, num_experts=4, num_experts_per_tok=2,
                                           moe_intermediate_size=256, shared_expert_intermediate_size=512,
                                           decoder_sparse_step=1, tie_word_embeddings=False)),
        "m": ("Qwen2MoeConfig", _llama_like(384, 6, 2, 1024, 6144, 3, num_experts=8, num_experts_per_tok=2,
                                           moe_intermediate_size=192, shared_expert_intermediate_size=768,
                                           decoder_sparse_step=1, tie_word_embeddings=False)),
    },
}
FAMILIES = list(SHAPES)
# Gemma2ForCausalLM refuses attn_implementation="sdpa" in transformers 5.24 (its soft-capping
# needs eager): its runs are planned with eager attention instead.
NO_SDPA = {"gemma2"}


def make_config(family, shape):
    cls_name, kw = SHAPES[family][shape]
    return getattr(transformers, cls_name)(**copy.deepcopy(kw))


def config_json(config):
    d = json.loads(config.to_json_string(use_diff=False))
    for k in list(d):
        if k.startswith("_"):
            d.pop(k)
    return d


# ---------------------------------------------------------------------------------------------
# The run list.
# ---------------------------------------------------------------------------------------------

def run_id(r):
    parts = [r["kind"], r["family"], r["shape"]]
    if r["kind"] in ("train", "trainer", "fsdp"):
        parts += [r["precision"], r["optimizer"] or "noopt", r["attn"], "ckpt" if r["ckpt"] else "nockpt", r["loop"]]
    else:
        parts += [r["precision"], r["attn"]]
    if r["kind"] == "fsdp":
        parts += [f"w{r['world']}", "mp" if r["mp_policy"] else "nomp"]
    if r["kind"] == "infer":
        parts += [r["cache"], f"gen{r['gen']}"]
    if r["kind"] == "prefill":
        parts += [f"ltk{r['logits_to_keep']}"]
    parts += [f"b{r['batch']}s{r['seq']}"]
    if r.get("fake"):
        parts.append("fake")
    return "/".join(parts)


def plan():
    runs = []

    def add(**r):
        base = dict(kind="train", loop="loss=model", precision="fp32", optimizer="adamw-foreach", attn="sdpa",
                    ckpt=False, batch=2, seq=256, fake=False)
        base.update(r)
        if base["family"] in NO_SDPA:
            base["attn"] = "eager"
        base["id"] = run_id(base)
        if base["id"] not in {x["id"] for x in runs}:  # NO_SDPA makes some variants coincide
            runs.append(base)

    bs = {"s": (2, 256), "m": (1, 512)}
    # Training, loop A, every family, both shapes.
    for fam in FAMILIES:
        for shape in ("s", "m"):
            b, s = bs[shape]
            add(family=fam, shape=shape, batch=b, seq=s)
            add(family=fam, shape=shape, batch=b, seq=s, attn="eager")
            add(family=fam, shape=shape, batch=b, seq=s, precision="bf16")
            add(family=fam, shape=shape, batch=b, seq=s, precision="autocast-bf16")
            add(family=fam, shape=shape, batch=b, seq=s, ckpt=True)
            add(family=fam, shape=shape, batch=b, seq=s, ckpt=True, attn="eager", precision="bf16")
            opts = ("adamw-fused", "sgd") if shape == "s" else ("adamw-forloop", "sgd-momentum")
            for o in opts:
                add(family=fam, shape=shape, batch=b, seq=s, optimizer=o)
        add(family=fam, shape="s", batch=4, seq=128)
    # Training, loop B (the loop computes the loss from logits it holds).
    for i, fam in enumerate(FAMILIES):
        add(family=fam, shape="s", loop="loss=loop")
        if i % 3 == 0:
            add(family=fam, shape="m", batch=1, seq=512, loop="loss=loop", precision="autocast-bf16")
        if i % 3 == 1:
            add(family=fam, shape="m", batch=1, seq=512, loop="loss=loop", ckpt=True)
    # HF Trainer.
    for fam in ("llama", "gpt2", "qwen2", "mixtral", "gemma3", "phi3"):
        add(kind="trainer", family=fam, shape="s", loop="trainer", optimizer="trainer-default")
        add(kind="trainer", family=fam, shape="s", loop="trainer", optimizer="trainer-default", ckpt=True)
    add(kind="trainer", family="llama", shape="m", batch=1, seq=512, loop="trainer", optimizer="trainer-default")
    add(kind="trainer", family="llama", shape="s", loop="trainer", optimizer="adamw-forloop")
    add(kind="trainer", family="llama", shape="s", loop="trainer", optimizer="trainer-default",
        precision="autocast-bf16")
    # FSDP2 on a fake process group.
    for fam in ("llama", "gpt2", "qwen3", "mixtral"):
        for world in (2, 8, 32):
            for mp in (False, True):
                add(kind="fsdp", family=fam, shape="m", batch=2, seq=256, loop="fsdp2", world=world, mp_policy=mp)
    # Inference: generate and prefill.
    for fam in FAMILIES:
        for cache in ("dynamic", "static"):
            for b in (1, 3):
                add(kind="infer", family=fam, shape="s", loop="generate", optimizer=None, batch=b, seq=128, gen=32,
                    cache=cache)
        add(kind="infer", family=fam, shape="m", loop="generate", optimizer=None, batch=2, seq=256, gen=16,
            cache="dynamic", precision="bf16")
        for ltk in (0, 1):
            add(kind="prefill", family=fam, shape="m", loop="prefill", optimizer=None, batch=2, seq=384,
                logits_to_keep=ltk)
            add(kind="prefill", family=fam, shape="s", loop="prefill", optimizer=None, batch=1, seq=512,
                logits_to_keep=ltk, attn="eager", precision="bf16")
    # Full width under FakeTensorMode.
    for fam in ("llama", "gpt2"):
        for precision, opt, attn, ckpt in [("fp32", "adamw-foreach", "sdpa", False), ("bf16", "adamw-foreach", "sdpa", False),
                                           ("autocast-bf16", "adamw-foreach", "sdpa", False), ("fp32", "sgd", "sdpa", False),
                                           ("fp32", "adamw-foreach", "eager", False), ("fp32", "adamw-foreach", "sdpa", True),
                                           ("bf16", "adamw-foreach", "eager", True)]:
            add(family=fam, shape="wide", batch=1, seq=2048, precision=precision, optimizer=opt, attn=attn, ckpt=ckpt,
                fake=True)
        add(family=fam, shape="wide", batch=1, seq=2048, loop="loss=loop", fake=True)
        # larger batches, so that activations (not the optimizer step) set the peak
        add(family=fam, shape="wide", batch=4, seq=2048, fake=True)
        add(family=fam, shape="wide", batch=2, seq=2048, precision="bf16", attn="eager", fake=True)
        add(family=fam, shape="wide", batch=8, seq=2048, precision="bf16", ckpt=True, fake=True)
        add(family=fam, shape="wide", batch=4, seq=1024, precision="autocast-bf16", fake=True)
        add(family=fam, shape="wide", batch=4, seq=2048, loop="loss=loop", fake=True)
        for ltk in (0, 1):
            add(kind="prefill", family=fam, shape="wide", loop="prefill", optimizer=None, batch=1, seq=2048,
                logits_to_keep=ltk, precision="bf16", fake=True)
    ids = [r["id"] for r in runs]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]
    for r in runs:
        r["model_type"] = make_config(r["family"], r["shape"]).model_type
        r["held_out"] = held_out(r["id"])
        for k in ("gen", "world", "mp_policy", "logits_to_keep", "cache"):
            r.setdefault(k, None)
    return runs


# ---------------------------------------------------------------------------------------------
# Measurement helpers.
# ---------------------------------------------------------------------------------------------

def cpu_entry(snap):
    for dev, s in snap.items():
        if torch.device(dev).type == "cpu":
            return s
    return {}


def plain(snap_dev):
    return {(k.name if hasattr(k, "name") else str(k)): int(v) for k, v in snap_dev.items()}


def total_now(mt):
    return int(cpu_entry(mt.get_tracker_snapshot("current")).get("Total", 0))


class PhaseMeter:
    """Per-phase peaks from MemTracker's running peak (private `_peak_mem`, `_peak_mem_snap`)."""

    def __init__(self, mt):
        self.mt = mt
        self.peaks = {}
        self.snaps = {}
        self.cur = None

    def begin(self, name):
        if self.cur is not None:
            self.end()
        mt = self.mt
        self.saved = (copy.deepcopy(mt._peak_mem), copy.deepcopy(mt._peak_mem_snap))
        cur = mt.get_tracker_snapshot("current")
        mt._peak_mem = {d: s["Total"] for d, s in cur.items()}
        mt._peak_mem_snap = cur
        self.cur = name

    def end(self):
        if self.cur is None:
            return
        mt = self.mt
        p = int(cpu_entry({d: {"Total": v} for d, v in mt._peak_mem.items()}).get("Total", 0))
        self.peaks[self.cur] = max(self.peaks.get(self.cur, 0), p)
        saved_peak, saved_snap = self.saved
        for d, v in saved_peak.items():
            if v >= mt._peak_mem.get(d, 0):
                mt._peak_mem[d] = v
                mt._peak_mem_snap[d] = saved_snap[d]
        self.cur = None

    def snap(self, name):
        self.snaps[name] = total_now(self.mt)


class RootReset:
    """Global forward pre-hook, registered before the tracker's own hooks: resets the tracker's
    per-module stats whenever the root module starts a forward outside backward."""

    def __init__(self, mt, root):
        self.mt, self.root, self.calls = mt, root, 0
        self.handle = None

    def __enter__(self):
        def hook(module, args):
            if module is self.root and not self.mt._mod_tracker.is_bw:
                self.calls += 1
                self.mt.reset_mod_stats()
        self.handle = torch.nn.modules.module.register_module_forward_pre_hook(hook)
        return self

    def __exit__(self, *a):
        self.handle.remove()


def build_model(r):
    config = make_config(r["family"], r["shape"])
    torch.manual_seed(0)
    if r["precision"] == "bf16" and r.get("fake"):
        # Under FakeTensorMode `model.to(bfloat16)` fails for tied weights ("Couldn't swap
        # Embedding.weight"), so fake pure-bf16 models are built in bf16 directly.
        model = AutoModelForCausalLM.from_config(config, attn_implementation=r["attn"], dtype=torch.bfloat16)
        assert all(p.dtype == torch.bfloat16 for p in model.parameters())
        return config, model
    model = AutoModelForCausalLM.from_config(config, attn_implementation=r["attn"])
    if any(p.dtype != torch.float32 for p in model.parameters()):
        model = model.float()
    if r["precision"] == "bf16":
        model = model.to(torch.bfloat16)
    return config, model


def make_opt(name, params):
    if name == "adamw-foreach":
        return torch.optim.AdamW(params, lr=1e-4, foreach=True)
    if name == "adamw-fused":
        return torch.optim.AdamW(params, lr=1e-4, fused=True)
    if name == "adamw-forloop":
        return torch.optim.AdamW(params, lr=1e-4, foreach=False)
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-2)
    if name == "sgd-momentum":
        return torch.optim.SGD(params, lr=1e-2, momentum=0.9)
    raise ValueError(name)


def vocab_of(config):
    return config.vocab_size


def loop_loss(model, ids, vocab):
    logits = model(input_ids=ids).logits
    loss = F.cross_entropy(logits.float()[:, :-1].reshape(-1, vocab), ids[:, 1:].reshape(-1))
    return logits, loss


def train_steps(mt, model, opt, ids, r, vocab, steps=2):
    pm = PhaseMeter(mt)
    autocast = r["precision"] == "autocast-bf16"
    for step in range(steps):
        last = step == steps - 1
        pm.begin("forward")
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            if r["loop"] == "loss=loop":
                logits, loss = loop_loss(model, ids, vocab)
            else:
                logits, loss = None, model(input_ids=ids, labels=ids).loss
        pm.end()
        if last:
            pm.snap("post_forward")
        pm.begin("backward")
        loss.backward()
        pm.end()
        if last:
            pm.snap("post_backward")
        pm.begin("optimizer_step")
        opt.step()
        pm.end()
        if last:
            pm.snap("post_step")
        pm.begin("zero_grad")
        opt.zero_grad(set_to_none=True)
        pm.end()
        if last:
            pm.snap("post_zero_grad")
        del logits, loss
    pm.peaks.pop("zero_grad", None)
    return pm


def run_train(r):
    config, model = build_model(r)
    model.train()
    if r["ckpt"]:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    opt = make_opt(r["optimizer"], model.parameters())
    torch.manual_seed(1)
    ids = torch.randint(0, config.vocab_size, (r["batch"], r["seq"]))
    mt = MemTracker()
    mt.track_external(model, opt, ids)
    with RootReset(mt, model), mt:
        pm = train_steps(mt, model, opt, ids, r, config.vocab_size)
    return config, mt, pm, {}


def run_fsdp(r):
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if dist.is_initialized():
        dist.destroy_process_group()
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=r["world"])
    try:
        mesh = init_device_mesh("cpu", (r["world"],))
        config, model = build_model(r)
        model.train()
        mp = (MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if r["mp_policy"]
              else MixedPrecisionPolicy())
        block_names = set(getattr(model, "_no_split_modules", None) or [])
        blocks = [m for m in model.modules() if type(m).__name__ in block_names]
        assert blocks, "no decoder layers found"
        for blk in blocks:
            fully_shard(blk, mesh=mesh, mp_policy=mp)
        fully_shard(model, mesh=mesh, mp_policy=mp)
        opt = make_opt(r["optimizer"], model.parameters())
        torch.manual_seed(1)
        ids = torch.randint(0, config.vocab_size, (r["batch"], r["seq"]))
        mt = FSDPMemTracker(model, opt)
        mt.track_inputs((ids,))
        with RootReset(mt, model), mt:
            pm = train_steps(mt, model, opt, ids, r, config.vocab_size)
        return config, mt, pm, {"fsdp_blocks": len(blocks)}
    finally:
        dist.destroy_process_group()


class _Capture(transformers.TrainerCallback):
    def __init__(self):
        self.pm = None
        self.max_steps = None

    def on_step_begin(self, args, state, control, **kw):
        self.last = state.global_step == args.max_steps - 1
        self.pm.begin("forward")

    def on_pre_optimizer_step(self, args, state, control, **kw):
        self.pm.end()
        if self.last:
            self.pm.snap("post_backward")
        self.pm.begin("optimizer_step")

    def on_optimizer_step(self, args, state, control, **kw):
        self.pm.end()
        if self.last:
            self.pm.snap("post_step")
        self.pm.begin("zero_grad")

    def on_step_end(self, args, state, control, **kw):
        self.pm.end()
        if self.last:
            self.pm.snap("post_zero_grad")


def run_trainer(r):
    from transformers import Trainer, TrainingArguments

    config, model = build_model(r)
    torch.manual_seed(1)
    n = r["batch"] * 2
    data = torch.randint(0, config.vocab_size, (n, r["seq"]))
    dataset = [{"input_ids": data[i], "labels": data[i]} for i in range(n)]
    extra = {}
    if r["optimizer"] == "adamw-forloop":
        extra["optim"] = "adamw_torch"
    with tempfile.TemporaryDirectory() as tmp:
        args = TrainingArguments(output_dir=tmp, per_device_train_batch_size=r["batch"], max_steps=2,
                                 logging_steps=1000, save_strategy="no", report_to=[], use_cpu=True,
                                 dataloader_num_workers=0, gradient_checkpointing=r["ckpt"],
                                 bf16=r["precision"] == "autocast-bf16", seed=0, **extra)
        cb = _Capture()
        trainer = Trainer(model=model, args=args, train_dataset=dataset, callbacks=[cb])
        mt = MemTracker()
        mt.track_external(model, data)
        pm = PhaseMeter(mt)
        cb.pm = pm

        def post_fw(module, a, out):  # the forward phase ends when the root module returns
            if pm.cur == "forward" and not mt._mod_tracker.is_bw:
                pm.end()
                if cb.last:
                    pm.snap("post_forward")
                pm.begin("backward")

        h = model.register_forward_hook(post_fw)
        try:
            with RootReset(mt, model), mt:
                trainer.train()
        finally:
            h.remove()
        pm.end()
        pm.peaks.pop("zero_grad", None)
        opt = trainer.optimizer
        inner = getattr(opt, "optimizer", opt)
        d = inner.defaults
        info = {"trainer_optim": str(args.optim.value if hasattr(args.optim, "value") else args.optim),
                "trainer_optimizer_class": type(inner).__module__ + "." + type(inner).__name__,
                "trainer_optimizer_flags": {k: d.get(k) for k in ("foreach", "fused", "lr", "weight_decay")},
                "trainer_gradient_checkpointing_kwargs": args.gradient_checkpointing_kwargs,
                "dataset_size": n}
        if r["ckpt"]:
            info["trainer_gradient_checkpointing_kwargs_effective"] = "transformers default (use_reentrant=False in modeling_utils)" \
                if not args.gradient_checkpointing_kwargs else args.gradient_checkpointing_kwargs
    return config, mt, pm, info


def run_infer(r):
    config, model = build_model(r)
    model.eval()
    torch.manual_seed(1)
    ids = torch.randint(3, config.vocab_size, (r["batch"], r["seq"]))
    mask = torch.ones_like(ids)
    mt = MemTracker()
    mt.track_external(model, ids, mask)
    pm = PhaseMeter(mt)
    state = {"n": 0}

    def pre(module, a, kw=None):
        if state["n"] == 0:
            pm.begin("prefill")

    def post(module, a, out):
        state["n"] += 1
        if state["n"] == 1:
            pm.end()
            pm.snap("post_prefill")
            pm.begin("decode")

    h1 = model.register_forward_pre_hook(pre)
    h2 = model.register_forward_hook(post)
    kw = dict(max_new_tokens=r["gen"], min_new_tokens=r["gen"], do_sample=False, use_cache=True,
              attention_mask=mask, pad_token_id=0)
    if r["cache"] == "static":
        kw["cache_implementation"] = "static"
    try:
        with RootReset(mt, model), mt, torch.no_grad():
            out = model.generate(ids, **kw)
            pm.end()
            pm.snap("post_generate")
    finally:
        h1.remove()
        h2.remove()
    return config, mt, pm, {"forward_calls": state["n"], "out_len": int(out.shape[1])}


def run_prefill(r):
    config, model = build_model(r)
    model.eval()
    torch.manual_seed(1)
    ids = torch.randint(0, config.vocab_size, (r["batch"], r["seq"]))
    mt = MemTracker()
    mt.track_external(model, ids)
    pm = PhaseMeter(mt)
    with RootReset(mt, model), mt, torch.no_grad():
        pm.begin("prefill")
        out = model(input_ids=ids, logits_to_keep=r["logits_to_keep"])
        pm.end()
        pm.snap("post_prefill")
        info = {"logits_shape": list(out.logits.shape),
                "cache_returned": type(out.past_key_values).__name__ if out.past_key_values is not None else None}
        del out
    return config, mt, pm, info


NOTES = [
    "Bytes are live tensor storages as MemTracker attributes them on CPU (no caching allocator, no fragmentation).",
    "peak = get_tracker_snapshot('peak') for the cpu device: the category breakdown at the moment of the highest Total.",
    "fsdp runs use FSDPMemTracker, whose categories are SHARDED_PARAM, UNSHARDED_PARAM, BUFFER, SHARDED_GRAD, "
    "UNSHARDED_GRAD, ACT, TEMP, ALL_GATHER, REDUCE_SCATTER, OPT, INP (rank 0 of a fake process group).",
    "train/fsdp: two steps; peak and phase_peaks are maxima over both steps; snapshots are from the last step. "
    "forward phase includes the loss (loss=loop: logits.float() + shifted cross entropy; the logits stay alive until "
    "the end of the step). post_forward is after the loss is computed and the model output dropped (loss=model) "
    "or kept (loss=loop: logits).",
    "trainer: phases from TrainerCallback on_step_begin / a forward hook on the model (end of forward, while the "
    "output incl. logits is still alive) / on_pre_optimizer_step / on_optimizer_step / on_step_end.",
    "infer: prefill = the first forward call of generate(), decode = the rest; post_prefill is taken in the model's "
    "forward hook (prefill output still alive); post_generate after generate() returned (only the output ids kept).",
    "prefill: post_prefill holds the model output (logits and the DynamicCache, use_cache=True by config default).",
    "Models are built with from_config in fp32 (pure bf16: model.to(torch.bfloat16); under FakeTensorMode pure bf16 "
    "is from_config(dtype=torch.bfloat16) because .to() cannot swap tied fake weights). Training uses the config "
    "default use_cache=True. Token ids: torch.randint with torch.manual_seed(1) after the model (seed 0).",
    "adamw-foreach is AdamW(foreach=True) set explicitly: on CPU torch's own default (foreach=None) runs the for-loop "
    "implementation.",
    "gemma2 runs use eager attention: Gemma2ForCausalLM refuses attn_implementation='sdpa' in this version.",
    "fake=true: built and run entirely under torch._subclasses.fake_tensor.FakeTensorMode (sizes exact, no data).",
]


RUNNERS = {"train": run_train, "trainer": run_trainer, "fsdp": run_fsdp, "infer": run_infer, "prefill": run_prefill}


def measure(r):
    t0 = time.time()
    if r.get("fake"):
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode(allow_non_fake_inputs=True):
            config, mt, pm, info = RUNNERS[r["kind"]](r)
    else:
        config, mt, pm, info = RUNNERS[r["kind"]](r)
    peak = plain(cpu_entry(mt.get_tracker_snapshot("peak")))
    res = dict(r)
    res["hf_config"] = config_json(config)
    res["peak"] = peak
    res["phase_peaks"] = pm.peaks
    res["snapshots"] = pm.snaps
    res["info"] = info
    res["seconds"] = round(time.time() - t0, 2)
    return res


def versions():
    import accelerate
    return {"torch": torch.__version__, "transformers": transformers.__version__, "accelerate": accelerate.__version__,
            "python": platform.python_version()}


def dump(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan-only", action="store_true")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--only", default=None, help="measure only runs whose id contains one of these comma-separated substrings")
    ap.add_argument("--out", default=OUT_PATH)
    ap.add_argument("--runs", default=RUNS_PATH, help="the fixed run list")
    ap.add_argument("--order", default="spread", choices=["spread", "plan"])
    args = ap.parse_args()
    runs = plan()
    if args.plan_only or not os.path.exists(args.runs):
        dump(args.runs, {"what": "Run list for tools/measure_hf.py (ids and settings, no measurements)",
                         "split": SPLIT, "runs": runs})
        print(f"wrote {len(runs)} runs to {args.runs}", file=sys.stderr)
        if args.plan_only:
            return
    fixed = {r["id"] for r in json.load(open(args.runs))["runs"]}
    assert fixed == {r["id"] for r in runs}, "run list differs from tests/data/hf_runs.json"
    out = {"what": "Peak CPU memory (bytes, per MemTracker category) of real Hugging Face transformers models, "
                   "measured with torch.distributed._tools MemTracker / FSDPMemTracker by tools/measure_hf.py",
           "versions": versions(), "split": SPLIT, "notes": NOTES, "runs": [], "failed": []}
    done = set()
    if args.resume and os.path.exists(args.out):
        prev = json.load(open(args.out))
        out["runs"] = prev["runs"]
        done = {r["id"] for r in prev["runs"]}
    todo = [r for r in runs if r["id"] not in done and (args.only is None or any(o in r["id"] for o in args.only.split(",")))]
    if args.order == "spread":  # interleave kinds and families so that a partial file covers everything
        buckets = {}
        for r in todo:
            buckets.setdefault((r["kind"], r["family"]), []).append(r)
        todo = []
        while any(buckets.values()):
            for k in list(buckets):
                if buckets[k]:
                    todo.append(buckets[k].pop(0))
    measure_all(todo, out, args.out)


def measure_all(todo, out, path):
    """Measures each run of `todo` into `out` (a failure recorded, not raised), writing `path`
    after every run (tools/measure_hf_ssm.py uses it too)."""
    for i, r in enumerate(todo):
        try:
            res = measure(r)
            out["runs"].append(res)
            print(f"[{i + 1}/{len(todo)}] {r['id']}: peak {res['peak'].get('Total')} ({res['seconds']}s)",
                  file=sys.stderr, flush=True)
        except Exception as e:  # noqa: BLE001
            out["failed"].append({"id": r["id"], "error": f"{type(e).__name__}: {e}"[:2000],
                                  "traceback": traceback.format_exc()[-3000:]})
            print(f"[{i + 1}/{len(todo)}] {r['id']}: FAILED {type(e).__name__}: {str(e)[:300]}", file=sys.stderr,
                  flush=True)
        dump(path, out)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Measure real PyTorch memory on CPU, per category, for memfit's `framework=pytorch`.

Runs small Llama- and GPT-2-shaped models (written here with the same modules as
Hugging Face's implementations: RMSNorm/LayerNorm, q/k/v/o or fused c_attn, repeat_kv,
SwiGLU or GELU MLP, untied/tied head, `logits.float()` + cross entropy) through two
training steps under `torch.distributed._tools.mem_tracker.MemTracker`, and inference
(prefill + decode into a static KV cache). Writes JSON with the per-category peaks.

Not run by CI (it needs torch); its output is committed as tests/data/pytorch_measurements.json
and checked by tests/pytorch_measured.rs.

    python3 -m venv ~/.cache/memfit-venv && ~/.cache/memfit-venv/bin/pip install torch==2.15.0
    ~/.cache/memfit-venv/bin/python tools/measure_pytorch.py > tests/data/pytorch_measurements.json
    # then add the FSDP2 (fake process group) and full-width (FakeTensorMode) runs:
    ~/.cache/memfit-venv/bin/python tools/measure_pytorch.py --fsdp-into tests/data/pytorch_measurements.json > /tmp/m.json && mv /tmp/m.json tests/data/pytorch_measurements.json
    ~/.cache/memfit-venv/bin/python tools/measure_pytorch.py --large-into tests/data/pytorch_measurements.json > /tmp/m.json && mv /tmp/m.json tests/data/pytorch_measurements.json
    # AdamW fused / for-loop runs and whole-prompt inference (logits of every position):
    ~/.cache/memfit-venv/bin/python tools/measure_pytorch.py --impl-into tests/data/pytorch_measurements.json > /tmp/m.json && mv /tmp/m.json tests/data/pytorch_measurements.json
"""
import itertools
import json
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed._tools.mem_tracker import MemTracker
from torch.utils.checkpoint import checkpoint


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        h, a, kv, d = c["hidden"], c["heads"], c["kv_heads"], c["hidden"] // c["heads"]
        if c["style"] == "gpt2":
            self.c_attn = nn.Linear(h, 3 * h)
            self.o = nn.Linear(h, h)
        else:
            self.q = nn.Linear(h, a * d, bias=False)
            self.k = nn.Linear(h, kv * d, bias=False)
            self.v = nn.Linear(h, kv * d, bias=False)
            self.o = nn.Linear(a * d, h, bias=False)

    def forward(self, x, cache=None, pos=0):
        c = self.c
        b, s, h = x.shape
        a, kv, d = c["heads"], c["kv_heads"], h // c["heads"]
        if c["style"] == "gpt2":
            q, k, v = self.c_attn(x).split(h, dim=2)
        else:
            q, k, v = self.q(x), self.k(x), self.v(x)
        q = q.view(b, s, a, d).transpose(1, 2)
        k = k.view(b, s, kv, d).transpose(1, 2)
        v = v.view(b, s, kv, d).transpose(1, 2)
        if cache is not None:
            kc, vc = cache
            kc[:, :, pos:pos + s] = k
            vc[:, :, pos:pos + s] = v
            k, v = kc[:, :, :pos + s], vc[:, :, :pos + s]
        if kv != a:  # Hugging Face repeat_kv
            k = k[:, :, None].expand(b, kv, a // kv, k.shape[2], d).reshape(b, a, k.shape[2], d)
            v = v[:, :, None].expand(b, kv, a // kv, v.shape[2], d).reshape(b, a, v.shape[2], d)
        causal = cache is None or s > 1
        if c["attn"] == "sdpa":
            o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        else:
            scores = (q @ k.transpose(2, 3)) / math.sqrt(d)
            if causal:
                mask = torch.full((s, k.shape[2]), float("-inf"), dtype=scores.dtype).triu(1 + k.shape[2] - s)
                scores = scores + mask
            o = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype) @ v
        o = o.transpose(1, 2).reshape(b, s, a * d)
        return self.o(o)


class Mlp(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, f = c["hidden"], c["ffn"]
        self.style = c["style"]
        if self.style == "gpt2":
            self.fc = nn.Linear(h, f)
            self.proj = nn.Linear(f, h)
        else:
            self.gate = nn.Linear(h, f, bias=False)
            self.up = nn.Linear(h, f, bias=False)
            self.down = nn.Linear(f, h, bias=False)

    def forward(self, x):
        if self.style == "gpt2":
            return self.proj(F.gelu(self.fc(x), approximate="tanh"))
        return self.down(F.silu(self.gate(x)) * self.up(x))


def norm(c):
    return nn.LayerNorm(c["hidden"]) if c["style"] == "gpt2" else nn.RMSNorm(c["hidden"], eps=1e-5)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n1, self.attn, self.n2, self.mlp = norm(c), Attention(c), norm(c), Mlp(c)

    def forward(self, x, cache=None, pos=0):
        x = x + self.attn(self.n1(x), cache, pos)
        return x + self.mlp(self.n2(x))


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed = nn.Embedding(c["vocab"], c["hidden"])
        self.pos = nn.Embedding(c["positions"], c["hidden"]) if c["style"] == "gpt2" else None
        self.blocks = nn.ModuleList(Block(c) for _ in range(c["layers"]))
        self.norm = norm(c)
        self.head = nn.Linear(c["hidden"], c["vocab"], bias=False)
        if c["tied"]:
            self.head.weight = self.embed.weight

    def forward(self, ids, caches=None, pos=0, last_only=False):
        x = self.embed(ids)
        if self.pos is not None:
            x = x + self.pos(torch.arange(pos, pos + ids.shape[1]))
        for i, blk in enumerate(self.blocks):
            if self.c.get("ckpt") and caches is None:
                x = checkpoint(blk, x, use_reentrant=False)
            else:
                x = blk(x, None if caches is None else caches[i], pos)
        if last_only:  # generate() computes logits for the last position only (logits_to_keep=1)
            x = x[:, -1:]
        return self.head(self.norm(x))


def shapes():
    llama = dict(style="llama", hidden=256, heads=8, kv_heads=2, ffn=688, vocab=4096, layers=4, positions=0, tied=False)
    gpt2 = dict(style="gpt2", hidden=256, heads=8, kv_heads=8, ffn=1024, vocab=4096, layers=4, positions=1024, tied=True)
    return [llama, gpt2]


def train_case(c, precision, optim, seq, batch):
    torch.manual_seed(0)
    model = Model(c)
    if precision == "bf16-pure":
        model = model.to(torch.bfloat16)
    params = [p for p in model.parameters()]
    if optim == "adamw":
        opt = torch.optim.AdamW(params, lr=1e-4, foreach=True)
    elif optim == "adamw-fused":
        opt = torch.optim.AdamW(params, lr=1e-4, fused=True)
    elif optim == "adamw-forloop":
        opt = torch.optim.AdamW(params, lr=1e-4, foreach=False)
    else:
        opt = torch.optim.SGD(params, lr=1e-2)
    ids = torch.randint(0, c["vocab"], (batch, seq))
    labels = torch.randint(0, c["vocab"], (batch * seq,))
    mt = MemTracker()
    mt.track_external(model, opt)
    with mt:
        for step in range(2):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
                logits = model(ids)
            loss = F.cross_entropy(logits.float().view(-1, c["vocab"]), labels)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            del logits, loss
            if step == 0:
                mt.reset_mod_stats()
    snap = mt.get_tracker_snapshot("peak")["cpu" if "cpu" in mt.get_tracker_snapshot("peak") else torch.device("cpu")]
    return {k.name if hasattr(k, "name") else str(k): v for k, v in snap.items()}


def prompt_case(c, precision, seq, batch):
    """A plain forward over the whole prompt, as evaluation / perplexity runs do: the
    prompt's KV cache is written (Hugging Face's default use_cache=True), the logits of
    every position are kept, and the loss upcasts them (`logits.float()`, cross entropy)."""
    torch.manual_seed(0)
    model = Model(c).eval()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    model = model.to(dtype)
    kv, d = c["kv_heads"], c["hidden"] // c["heads"]
    ids = torch.randint(0, c["vocab"], (batch, seq))
    labels = torch.randint(0, c["vocab"], (batch * seq,))
    mt = MemTracker()
    mt.track_external(model)
    with mt, torch.no_grad():
        caches = [(torch.zeros(batch, kv, seq, d, dtype=dtype), torch.zeros(batch, kv, seq, d, dtype=dtype)) for _ in range(c["layers"])]
        logits = model(ids, caches, 0, last_only=False)
        loss = F.cross_entropy(logits.float().view(-1, c["vocab"]), labels)
        del logits, loss
    snap = mt.get_tracker_snapshot("peak")
    snap = snap[list(snap.keys())[0]]
    return {k.name if hasattr(k, "name") else str(k): v for k, v in snap.items()}


def infer_case(c, precision, seq, gen, batch):
    torch.manual_seed(0)
    model = Model(c).eval()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    model = model.to(dtype)
    a, kv, d = c["heads"], c["kv_heads"], c["hidden"] // c["heads"]
    ids = torch.randint(0, c["vocab"], (batch, seq))
    mt = MemTracker()
    mt.track_external(model)
    with mt, torch.no_grad():
        caches = [(torch.zeros(batch, kv, seq + gen, d, dtype=dtype), torch.zeros(batch, kv, seq + gen, d, dtype=dtype)) for _ in range(c["layers"])]
        logits = model(ids, caches, 0, last_only=True)
        tok = logits.argmax(-1)
        del logits
        for i in range(gen):
            mt.reset_mod_stats()  # MemTracker needs this between forward calls; peaks are kept
            logits = model(tok, caches, seq + i)
            tok = logits.argmax(-1)
            del logits
    snap = mt.get_tracker_snapshot("peak")
    snap = snap[list(snap.keys())[0]]
    return {k.name if hasattr(k, "name") else str(k): v for k, v in snap.items()}


def fsdp_case(c, world, precision, seq, batch):
    """FSDP2 (fully_shard per block and at the root) on a fake process group of `world` ranks."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if dist.is_initialized():
        dist.destroy_process_group()
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world)
    mesh = init_device_mesh("cpu", (world,))
    torch.manual_seed(0)
    model = Model(c)
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if precision == "bf16" else MixedPrecisionPolicy()
    for blk in model.blocks:
        fully_shard(blk, mesh=mesh, mp_policy=mp)
    fully_shard(model, mesh=mesh, mp_policy=mp)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    ids = torch.randint(0, c["vocab"], (batch, seq))
    labels = torch.randint(0, c["vocab"], (batch * seq,))
    mt = MemTracker()
    mt.track_external(model, opt)
    with mt:
        for step in range(2):
            logits = model(ids)
            loss = F.cross_entropy(logits.float().view(-1, c["vocab"]), labels)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            del logits, loss
            if step == 0:
                mt.reset_mod_stats()
    snap = mt.get_tracker_snapshot("peak")
    snap = snap[list(snap.keys())[0]]
    return {k.name if hasattr(k, "name") else str(k): v for k, v in snap.items()}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--large-into":
        # Full-width Llama-2-7B blocks (2 of them) under FakeTensorMode: shapes too large to
        # allocate here, tracked exactly (fake tensors carry sizes, not data).
        from torch._subclasses.fake_tensor import FakeTensorMode

        out = json.load(open(sys.argv[2]))
        out["large"] = []
        base = dict(style="llama", hidden=4096, heads=32, kv_heads=32, ffn=11008, vocab=32000, layers=2, positions=0, tied=False)
        for precision, optim, attn, ckpt in itertools.product(["fp32", "bf16"], ["adamw", "sgd"], ["sdpa", "eager"], [False, True]):
            cfg = dict(base, attn=attn, ckpt=ckpt)
            with FakeTensorMode(allow_non_fake_inputs=True):
                peaks = train_case(cfg, precision, optim, 2048, 1)
            out["large"].append(dict(config=cfg, precision=precision, optimizer=optim, seq=2048, batch=1, peak=peaks))
            print(f"large {precision} {optim} {attn} ckpt={ckpt}: {peaks['Total']}", file=sys.stderr)
        json.dump(out, sys.stdout, indent=1)
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--fsdp-into":
        out = json.load(open(sys.argv[2]))
        out["fsdp"] = []
        c = dict(shapes()[0], attn="sdpa", ckpt=False, hidden=512, heads=8, kv_heads=2, ffn=1376, layers=4)
        for world, precision in itertools.product([2, 8, 32, 64], ["fp32", "bf16"]):
            peaks = fsdp_case(c, world, precision, 256, 2)
            out["fsdp"].append(dict(config=c, world=world, precision=precision, seq=256, batch=2, peak=peaks))
            print(f"fsdp {world} {precision}: {peaks}", file=sys.stderr)
        json.dump(out, sys.stdout, indent=1)
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--impl-into":
        # AdamW's fused and for-loop implementations, and inference over a whole prompt with
        # every position's logits (appended to an existing file).
        out = json.load(open(sys.argv[2]))
        # Short sequences, so that the optimizer step (not the activations) is the peak.
        out["train"] = [r for r in out["train"] if r["seq"] != 32]
        for c, precision, optim in itertools.product(shapes(), ["fp32", "bf16"], ["adamw", "adamw-fused", "adamw-forloop"]):
            cfg = dict(c, attn="sdpa", ckpt=False)
            peaks = train_case(cfg, precision, optim, 32, 1)
            out["train"].append(dict(config=cfg, precision=precision, optimizer=optim, seq=32, batch=1, peak=peaks))
            print(f"train {c['style']} {precision} {optim}: {peaks['Total']}", file=sys.stderr)
        out["prompt"] = []
        for c, precision in itertools.product(shapes(), ["fp32", "bf16"]):
            cfg = dict(c, attn="sdpa", ckpt=False)
            peaks = prompt_case(cfg, precision, 384, 2)
            out["prompt"].append(dict(config=cfg, precision=precision, seq=384, batch=2, peak=peaks))
            print(f"prompt {c['style']} {precision}: {peaks['Total']}", file=sys.stderr)
        json.dump(out, sys.stdout, indent=1)
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--infer-into":
        # Re-measure inference only, keeping an existing file's training runs.
        out = json.load(open(sys.argv[2]))
        out["infer"] = []
        for c, precision in itertools.product(shapes(), ["fp32", "bf16"]):
            cfg = dict(c, attn="sdpa", ckpt=False)
            peaks = infer_case(cfg, precision, 384, 64, 2)
            out["infer"].append(dict(config=cfg, precision=precision, seq=384, gen=64, batch=2, peak=peaks))
        json.dump(out, sys.stdout, indent=1)
        return
    out = {"what": "Per-category peak bytes measured with torch.distributed._tools.mem_tracker.MemTracker on CPU",
           "torch": torch.__version__, "train": [], "infer": []}
    for c, precision, optim, attn, ckpt in itertools.product(shapes(), ["fp32", "bf16", "bf16-pure"], ["adamw", "sgd"], ["eager", "sdpa"], [False, True]):
        cfg = dict(c, attn=attn, ckpt=ckpt)
        seq, batch = 256, 2
        peaks = train_case(cfg, precision, optim, seq, batch)
        out["train"].append(dict(config=cfg, precision=precision, optimizer=optim, seq=seq, batch=batch, peak=peaks))
        print(f"train {c['style']} {precision} {optim} {attn} ckpt={ckpt}: {peaks['Total'] if 'Total' in peaks else peaks}", file=sys.stderr)
    for c, precision in itertools.product(shapes(), ["fp32", "bf16"]):
        cfg = dict(c, attn="sdpa", ckpt=False)
        seq, gen, batch = 384, 64, 2
        peaks = infer_case(cfg, precision, seq, gen, batch)
        out["infer"].append(dict(config=cfg, precision=precision, seq=seq, gen=gen, batch=batch, peak=peaks))
        print(f"infer {c['style']} {precision}: {peaks}", file=sys.stderr)
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()

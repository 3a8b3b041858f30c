"""Records the real allocation stream of a measured CUDA training run, on the meta device.

usage: ~/.cache/memfit-venv/bin/python tools/trace_alloc.py [--out DIR] RUN_ID [...]
       ~/.cache/memfit-venv/bin/python tools/trace_alloc.py [--out DIR] --config config.json --batch B --seq S
           [--policy fp32|amp_bf16|bf16_pure] [--attn sdpa|eager] [--ckpt] [--optimizer adamw|sgd|sgd-momentum]
           [--adam-impl foreach|fused|forloop] [--id NAME]     (a model of your own: DIR/NAME.json)
(runs of tests/data/cuda_h200/train.jsonl; the venv as in tools/measure_hf.py, plus peft for LoRA runs)
Writes DIR/RUN_ID.json (default DIR: the current directory); replay one with
`memfit --alloc-replay DIR/RUN_ID.json` or `python3 tools/sim_alloc.py DIR/RUN_ID.json`.

Every storage a dispatched aten op creates is an allocation of its nbytes; a storage whose weak
reference has expired by the next op is a free. The model is built by transformers from the run's
config on the meta device (no compute, real shapes), with the run's optimizer, dtype, checkpointing
and LoRA, for three iterations of the measured loop. CUDA's own choices are reproduced where the
meta device would differ: SDPA dispatches to the backend CUDA takes (flash for fp16/bf16 without a
mask; memory-efficient for fp32 without GQA; math otherwise) and CUDA autocast's casts are applied
by an autocast emulation (lower-precision ops: linear, matmul, bmm, baddbmm, addmm, SDPA; fp32 ops:
softmax, log_softmax, cross_entropy, layer_norm, ...; weights cast once per forward and cached).
Output, per run: {"id", "source", "resident": [bytes of each parameter/buffer/input, in creation
order], "events": [[+bytes | -bytes | 0, tensor id], ...], "marks": [[event index, name], ...]}
(marks: it0…it2, fw_end, bw_end, opt_end, zg_end of each iteration).
"""
import contextlib
import json
import os
import sys
import weakref

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.multiprocessing.reductions import StorageWeakRef

BF16 = torch.bfloat16
ROUTED_EXPERTS = 0  # the run's routed experts (MoE runs), for the routing masks' even share
DEBUG = bool(os.environ.get("MEMFIT_TRACE_DEBUG"))  # live tensors by op at each forward end; ops kept in the output


class Tracer(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.live = {}  # cdata -> (weakref, nbytes, id)
        self.events = []
        self.next_id = 0
        self.ops = {}

    def poll(self):
        dead = [k for k, (w, n, i) in self.live.items() if w.expired()]
        for k in dead:
            w, n, i = self.live.pop(k)
            self.events.append((-n, i))

    def track(self, t, tag):
        st = t.untyped_storage()
        k = st._cdata
        if k in self.live or st.nbytes() == 0:
            return
        self.next_id += 1
        self.live[k] = (StorageWeakRef(st), st.nbytes(), self.next_id)
        self.ops[self.next_id] = tag
        self.events.append((st.nbytes(), self.next_id))

    def seed(self, t):
        """A storage that exists before tracing (parameters, buffers, inputs): known, not an event."""
        st = t.untyped_storage()
        self.live.setdefault(st._cdata, (StorageWeakRef(st), st.nbytes(), 0))

    def mark(self, name):
        self.poll()
        if DEBUG and name == "fw_end":
            from collections import Counter
            c = Counter((n, self.ops.get(i, "resident")) for w, n, i in self.live.values())
            print(name, sorted(((n, op, k) for (n, op), k in c.items()), reverse=True)[:40], file=sys.stderr)
        self.events.append((0, name))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.poll()
        if func is torch.ops.aten.nonzero.default and args[0].device.type == "meta":
            # Token routing (MoE): which experts are hit (a short mask: all of them) and which
            # tokens an expert takes (a (top_k, tokens) mask: an even share, tokens·top_k/E).
            x = args[0]
            n = x.numel() if x.numel() <= 4096 else x.numel() // max(ROUTED_EXPERTS, 1)
            out = torch.empty((n, x.dim()), dtype=torch.long, device="meta")
            self.track(out, str(func))
            return out
        if func is torch.ops.aten._local_scalar_dense.default:
            # data-dependent checks (padding warnings, packed-sequence detection): answer "true"
            return True if args[0].dtype == torch.bool else 1
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.device.type == "meta":
                self.track(t, str(func))
        return out


# ---------------------------------------------------------------- CUDA's SDPA backend choice
_SDPA = F.scaled_dot_product_attention


def sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    q, k, v = (AMP.cast_low(x) for x in (q, k, v)) if AMP.on else (q, k, v)
    gqa = k.shape[-3] != q.shape[-3]
    if attn_mask is None and q.dtype in (torch.float16, BF16) and q.shape[-1] <= 256:
        return torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, dropout_p, is_causal, False, scale=scale)[0]
    if not gqa and q.shape[-1] <= 256 and q.dtype in (torch.float32, torch.float16, BF16):
        return torch.ops.aten._scaled_dot_product_efficient_attention(
            q, k, v, attn_mask, True, dropout_p, is_causal, scale=scale)[0]
    # math: transformers' GQA flag makes the math path repeat k, v
    if gqa:
        r = q.shape[-3] // k.shape[-3]
        k = k.repeat_interleave(r, dim=-3)
        v = v.repeat_interleave(r, dim=-3)
    if q.device.type == "meta" and dropout_p == 0.0:
        return _math_cuda(q, k, v, attn_mask, is_causal, scale)
    return torch.ops.aten._scaled_dot_product_attention_math(q, k, v, attn_mask, dropout_p, is_causal, scale=scale)[0]


def _math_cuda(q, k, v, attn_mask, is_causal, scale):
    """SDPA's math fallback as CUDA runs it (torch 2.11, read off the real allocator traces of the
    fp32 grouped-query calibration runs C04 and D29): q and k each scaled by sqrt(scale), the
    scores' product, the mask added in place, the softmax (whose backward holds CUDA's temporary
    of the scores' size, `_EagerSoftmax`), a bool of the scores' size made and dropped after it
    (`_safe_softmax`'s check for fully masked rows), then the product with v. torch 2.15's math
    op on the meta device adds the mask out of place and has neither temporary."""
    import math
    L, S, d = q.shape[-2], k.shape[-2], q.shape[-1]
    sf = math.sqrt(scale if scale is not None else 1.0 / math.sqrt(d))
    if is_causal:
        attn_mask = torch.ones(L, S, dtype=torch.bool, device=q.device).tril()
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        zero = torch.zeros((), dtype=q.dtype, device=q.device)
        ninf = torch.full((), float("-inf"), dtype=q.dtype, device=q.device)
        attn_mask = torch.where(attn_mask, zero, ninf)
    attn = (q * sf) @ (k * sf).transpose(-2, -1)
    if attn_mask is not None:
        attn.add_(attn_mask)
    p = _EagerSoftmax.apply(attn, -1)
    rows = torch.empty(attn.shape, dtype=torch.bool, device=q.device)  # _safe_softmax's check
    del rows, attn
    return p @ v


# ---------------------------------------------------------------- CUDA's eager softmax backward
class _EagerSoftmax(torch.autograd.Function):
    """The softmax of eager attention scores (4-D) as CUDA runs its backward: the gradient's
    buffer, then a temporary of the same size and dtype, freed as the kernel ends. Every eager
    calibration trace with a real CUDA stream shows it, once per layer and iteration, between
    the softmax's gradient and the release of its saved output (C02, C08, C21, D05, D08, D25,
    D31: fp32, autocast and pure bf16, with and without checkpointing); SDPA's math path holds
    it too (C04, D29: `_math_cuda`). On the meta device `_softmax_backward_data` allocates only
    the gradient."""

    @staticmethod
    def forward(ctx, x, dim):
        y = torch.ops.aten._softmax(x, dim, False)
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        gi = torch.ops.aten._softmax_backward_data(g, y, ctx.dim, y.dtype)
        tmp = torch.empty_like(g)  # CUDA's temporary
        del tmp
        torch.ops.aten.alias(gi)  # a dispatched op: the tracer records the temporary's free here
        return gi, None


_SOFTMAX = F.softmax


def eager_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if input.dim() != 4 or input.device.type != "meta" or not torch.is_grad_enabled() or not input.requires_grad:
        return _SOFTMAX(input, dim=dim, _stacklevel=_stacklevel, dtype=dtype)
    x = input.to(dtype) if dtype is not None else input
    return _EagerSoftmax.apply(x, dim if dim is not None else -1)


# ---------------------------------------------------------------- CUDA autocast, emulated
class Amp:
    on = False
    cache = {}

    def cast_low(self, x):
        if not isinstance(x, torch.Tensor) or x.dtype != torch.float32:
            return x
        if x.is_leaf and x.requires_grad:
            c = self.cache.get(id(x))
            if c is None:
                c = x.to(BF16)
                self.cache[id(x)] = c
            return c
        return x.to(BF16)

    def cast_f32(self, x):
        return x.float() if isinstance(x, torch.Tensor) and x.dtype in (BF16, torch.float16) else x


AMP = Amp()


def low(fn):
    def w(*a, **k):
        if AMP.on:
            a = tuple(AMP.cast_low(x) for x in a)
            k = {n: AMP.cast_low(x) for n, x in k.items()}
        return fn(*a, **k)
    return w


def f32(fn):
    def w(*a, **k):
        if AMP.on:
            a = tuple(AMP.cast_f32(x) for x in a)
            k = {n: AMP.cast_f32(x) for n, x in k.items()}
        return fn(*a, **k)
    return w


@contextlib.contextmanager
def autocast(on):
    AMP.on, AMP.cache = on, {}
    try:
        yield
    finally:
        AMP.on, AMP.cache = False, {}


class _Autocast:
    """torch.amp.autocast as torch.utils.checkpoint re-enters it for a recompute: the emulation."""

    def __init__(self, device_type, enabled=True, **kw):
        self.ctx = autocast(enabled) if device_type == "cpu" and enabled else contextlib.nullcontext()

    def __enter__(self):
        return self.ctx.__enter__()

    def __exit__(self, *a):
        return self.ctx.__exit__(*a)


def patch():
    import torch.utils.checkpoint as CK
    CK._get_autocast_kwargs = lambda device_type="cuda": (None, {"enabled": AMP.on})
    torch.amp.autocast = _Autocast
    torch.pow = f32(torch.pow)
    torch.Tensor.pow = f32(torch.Tensor.pow)
    torch.Tensor.__pow__ = f32(torch.Tensor.__pow__)
    import transformers.modeling_utils as MU
    MU.PreTrainedModel.warn_if_padding_and_no_attention_mask = lambda *a, **k: None
    F.scaled_dot_product_attention = sdpa
    F.linear = low(F.linear)
    torch.matmul = low(torch.matmul)
    torch.Tensor.__matmul__ = low(torch.Tensor.__matmul__)
    torch.bmm = low(torch.bmm)
    torch.baddbmm = low(torch.baddbmm)
    torch.addmm = low(torch.addmm)
    F.conv1d = low(F.conv1d)
    F.softmax = eager_softmax
    for name in ("softmax", "log_softmax", "cross_entropy", "layer_norm", "nll_loss", "group_norm"):
        setattr(F, name, f32(getattr(F, name)))
    torch.softmax = f32(torch.softmax)
    torch.Tensor.softmax = f32(torch.Tensor.softmax)


class FusedAdamW:
    """torch.optim.AdamW(fused=True) as the allocator sees it (the meta device has no fused kernel):
    at the first step, per parameter in order, a 4-byte step tensor on the device and exp_avg and
    exp_avg_sq (zeros_like); the fused kernel then updates everything in place, allocating nothing."""

    def __init__(self, params):
        self.params, self.state = list(params), None

    def step(self):
        if self.state is None:
            self.state = [(torch.zeros((), dtype=torch.float32, device=p.device), torch.zeros_like(p),
                           torch.zeros_like(p)) for p in self.params]

    def zero_grad(self, set_to_none=True):
        for p in self.params:
            p.grad = None


def make_opt(MC, params, c):
    if c["optimizer"] == "adamw" and c["adam_impl"] == "fused":
        return FusedAdamW(params)
    return MC.make_opt(params, c)


def harness():
    """measure_cuda.py's model table and builders (its main() is not run)."""
    import types
    src = open(HARNESS).read().split("\ndef main():")[0]
    argv, sys.argv = sys.argv, ["measure_cuda.py", "--smoke"]
    mod = types.ModuleType("measure_cuda")
    exec(compile(src, HARNESS, "exec"), mod.__dict__)
    sys.argv = argv
    return mod


HARNESS = os.path.join(os.path.dirname(__file__), "measure_cuda.py")


def build_from_config(path, attn, dtype):
    """A user's own model: transformers builds it from its config.json on the meta device."""
    from transformers import AutoConfig, AutoModelForCausalLM
    cfg = AutoConfig.from_pretrained(path)
    cfg.use_cache = False
    cfg._attn_implementation = attn
    with torch.device("meta"):
        m = AutoModelForCausalLM.from_config(cfg, attn_implementation=attn, dtype=dtype)
    return m, cfg


def from_args(args):
    """`--config DIR_OR_FILE --batch B --seq S [--policy fp32|amp_bf16|bf16_pure] [--attn sdpa|eager]
    [--ckpt] [--optimizer adamw|sgd|sgd-momentum] [--adam-impl foreach|fused|forloop]`: a run of
    the measured loop for a model of the user's own."""
    import argparse
    ap = argparse.ArgumentParser(prog="trace_alloc.py")
    ap.add_argument("--config", required=True, help="config.json, or the folder holding it")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--policy", default="amp_bf16", choices=["fp32", "amp_bf16", "bf16_pure"])
    ap.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"])
    ap.add_argument("--ckpt", action="store_true")
    ap.add_argument("--optimizer", default="adamw", choices=["adamw", "sgd", "sgd-momentum"])
    ap.add_argument("--adam-impl", default="foreach", choices=["foreach", "fused", "forloop"])
    ap.add_argument("--id", default="model")
    a = ap.parse_args(args)
    if a.batch < 1 or a.seq < 1:
        ap.error("--batch and --seq must be at least 1")
    path = a.config if os.path.isdir(a.config) else os.path.dirname(os.path.abspath(a.config))
    return dict(id=a.id, model=None, config_path=path, policy=a.policy, attn=a.attn, ckpt=a.ckpt,
                optimizer=a.optimizer, adam_impl=a.adam_impl, lora=None, batch=a.batch, seq=a.seq)


def run(rec):
    MC = harness()
    MC.ARGS.smoke = False
    MC.DEV = torch.device("meta")
    c = {k: rec[k] for k in ("id", "model", "policy", "attn", "ckpt", "optimizer", "adam_impl", "lora")}
    pdt = BF16 if c["policy"] == "bf16_pure" or c["lora"] else torch.float32
    if rec.get("config_path"):
        m, cfg = build_from_config(rec["config_path"], c["attn"], pdt)
    else:
        m, cfg = MC.build(c["model"], c["attn"], pdt)
    global ROUTED_EXPERTS
    ROUTED_EXPERTS = getattr(cfg, "num_experts", 0) or getattr(cfg, "num_local_experts", 0) or 0
    if c["lora"]:
        m, _ = MC.apply_lora(m, c["lora"])
    m.train()
    if c["ckpt"]:
        MC.enable_ckpt(m)
    opt = make_opt(MC, [p for p in m.parameters() if p.requires_grad], c)
    amp = c["policy"] == "amp_bf16" or bool(c["lora"])
    tr = Tracer()
    ids = torch.randint(0, cfg.vocab_size, (rec["batch"], rec["seq"]), device="meta")
    for t in [*m.parameters(), *m.buffers(), ids]:
        tr.seed(t)
    with tr:
        for it in range(3):
            tr.mark(f"it{it}")
            with autocast(amp):
                loss = m(input_ids=ids, labels=ids).loss
            tr.mark("fw_end")
            loss.backward()
            del loss
            tr.mark("bw_end")
            opt.step()
            tr.mark("opt_end")
            opt.zero_grad(set_to_none=True)
            tr.mark("zg_end")
    seen, res_t = set(), []
    for t in [*m.parameters(), *m.buffers(), ids]:
        st = t.untyped_storage()
        if st._cdata not in seen and st.nbytes():
            seen.add(st._cdata)
            res_t.append(st.nbytes())
    marks = [[i, k] for i, (d, k) in enumerate(tr.events) if d == 0]
    events = [[d, 0 if d == 0 else k] for d, k in tr.events]
    return dict(id=c["id"], source=f"tools/trace_alloc.py (torch {torch.__version__}, meta device) of run {c['id']}",
                resident=res_t, events=events, marks=marks, ops=tr.ops if DEBUG else None)


def main():
    patch()
    runs = {}
    for line in open(os.path.join(os.path.dirname(__file__), "..", "tests/data/cuda_h200/train.jsonl")):
        r = json.loads(line)
        runs[r["id"]] = r
    args = sys.argv[1:]
    out_dir = "."
    if args[:1] == ["--out"]:
        out_dir, args = args[1], args[2:]
    os.makedirs(out_dir, exist_ok=True)
    recs = [from_args(args)] if "--config" in args else [runs[rid] for rid in args]
    for rec in recs:
        rid = rec["id"]
        out = run(rec)
        if not DEBUG:
            out.pop("ops")
        with open(os.path.join(out_dir, rid + ".json"), "w") as f:
            json.dump(out, f, separators=(",", ":"))
        print(rid, len(out["events"]), "events", file=sys.stderr)


if __name__ == "__main__":
    main()

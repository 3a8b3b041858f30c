"""Derives memfit's op-level allocation templates from transformers itself (meta device).

usage: ~/.cache/memfit-venv/bin/python tools/alloc_templates.py [--check] [--out FILE] (--all | KEY ...)
       ~/.cache/memfit-venv/bin/python tools/alloc_templates.py --merge crates/core/data/op_templates.txt FILE ...
       (KEY: model|policy|attn|ckpt[|tie=0|mha=1|win=1], e.g. llama-3.2-1b|amp_bf16|sdpa|0; --all: every
       class of CLASSES, about 20 minutes on one core; the venv as in tools/measure_hf.py)

A template is one training iteration's allocation stream, as `tools/trace_alloc.py` records it
(every storage an aten op creates is an allocation, every storage that dies a free; CUDA's SDPA
backend choice and CUDA autocast emulated), cut at the decoder layers and written with symbolic
sizes, so that memfit can rebuild the stream of a model of any size and replay it through the
caching allocator (`crates/core/src/allocator.rs`) for `max_memory_reserved`.

How a size becomes a formula: the model is traced once with every dimension set to its own prime
(micro-batch b = 11, sequence s = 397 (s + 1 = 2·199, s rounded up to 32 = 32·13), hidden h = 17, FFN f = 19, vocabulary V = 23, KV heads
kv = 29, query heads per KV head g = 41, head size d = 8·31, learned positions P = 401); a tensor's
bytes then factor uniquely into those primes (a fused q/k/v projection's (g + 2) is 43), and what
is left is the constant (dtype bytes, counts). `--check` traces a second time at other primes'
sizes (b = 3, s = 37, …) and demands the template rebuild that stream exactly, event for event.

Cut points (forward hooks and gradient hooks, no allocation of their own): P (it starts → layer 0),
per layer F (its forward), H (after the last layer: norm, head, loss), HB (the loss's backward down
to the last layer's output gradient), per layer B (its backward, the recompute of a checkpointed
layer included), EB (below layer 0: the embedding's backward). The first, a middle and the last
layer are kept apart (a middle layer's stream must be the same for every middle layer). A free names
the allocation it ends: [iteration offset, segment, layer (relative to the freeing layer, or from
the start ≥ 0 / end < 0 of the model), index in that segment]. An allocation that becomes a
parameter's `.grad` says which parameter. The optimizer's and `zero_grad`'s events are not in the
template: memfit writes them from the parameter list (`crates/core/src/alloc_program.rs`); the
traces here use plain SGD, which allocates nothing.
"""
import difflib
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import trace_alloc as TA  # noqa: E402

PRIMES = dict(b=11, s=397, h=17, f=19, V=23, kv=29, g=41, d=8 * 31, P=401, r=53)
CHECK = dict(b=3, s=50, h=53, f=59, V=61, kv=67, g=71, d=8 * 7, P=89, r=6)
VARS = ["b", "s", "s1", "s32", "h", "f", "V", "kv", "g", "g2", "d", "P", "r"]
# each symbol's value at PRIMES as (its own prime, the small factor beside it)
FACTORS = dict(b=(11, 1), s=(397, 1), s1=(199, 2), s32=(13, 32), h=(17, 1), f=(19, 1), V=(23, 1), kv=(29, 1),
               g=(41, 1), g2=(43, 1), d=(31, 8), P=(401, 1), r=(53, 1))


def derived(v):
    """The composite symbols: s1 = s + 1 (the loss's shifted labels), s32 = s rounded up to 32 (the
    memory-efficient kernel's log-sum-exp), g2 = g + 2 (fused q, k, v)."""
    vals = dict(v)
    vals["s1"] = v["s"] + 1
    vals["s32"] = -(-v["s"] // 32) * 32
    vals["g2"] = v["g"] + 2
    return vals
SEGS = ["P", "F0", "Fm", "Fl", "H", "HB", "Bl", "Bm", "B0", "EB"]
LAYERS = 5

# The classes the templates cover: a model of tools/measure_cuda.py's table for each, with the
# overrides that make a class no measured model has (untied multi-head Llama, untied Qwen3), and
# the sliding-window classes past their window (win=1).
CLASSES = ["gpt2-124m", "llama-3.2-1b", "llama-3-8b", "smollm2-1.7b", "llama-3-8b|mha=1", "mistral-7b",
           "mistral-7b|win=1", "qwen2.5-0.5b", "qwen2.5-7b", "qwen3-0.6b", "qwen3-0.6b|tie=0", "phi-3-mini",
           "phi-4-mini", "gemma-2-2b", "gemma-2-2b|win=1", "gemma-3-1b", "gemma-3-1b|win=1"]


# PEFT LoRA (targets all linear, attention, q and v) over a bf16 base under autocast, SDPA: the
# classes whose projections are named q_proj … (not GPT-2's c_attn nor Phi-3's fused qkv_proj).
LORA_CLASSES = ["llama-3.2-1b", "llama-3-8b", "smollm2-1.7b", "llama-3-8b|mha=1", "mistral-7b", "mistral-7b|win=1",
                "qwen2.5-0.5b", "qwen2.5-7b", "qwen3-0.6b", "qwen3-0.6b|tie=0", "gemma-3-1b", "gemma-3-1b|win=1"]


def all_keys():
    """Every key `--all` derives: each class at fp32, bf16 autocast and pure bf16, SDPA and eager
    (Gemma 2: eager only, transformers has no SDPA path for it), with and without checkpointing;
    then LoRA (LORA_CLASSES) on each target set, with and without checkpointing."""
    out = lora_keys() + moe_keys()
    for c in CLASSES:
        name, _, extra = c.partition("|")
        for pol in ("fp32", "amp_bf16", "bf16_pure"):
            for attn in ("sdpa", "eager"):
                if name.startswith("gemma-2") and attn == "sdpa":
                    continue
                for ck in "01":
                    out.append(f"{name}|{pol}|{attn}|{ck}" + (f"|{extra}" if extra else ""))
    return out


# Mixture-of-experts, each model's own experts and top-k (tokens routed evenly, T·top_k/E each, as
# tools/trace_alloc.py routes them; bm: the micro-batch multiple that makes that whole).
MOE_CLASSES = ["olmoe-1b-7b|bm=8", "qwen1.5-moe-a2.7b|bm=15"]


def moe_keys():
    out = []
    for c in MOE_CLASSES:
        name, _, extra = c.partition("|")
        for pol in ("fp32", "amp_bf16", "bf16_pure"):
            for attn in ("sdpa", "eager"):
                for ck in "01":
                    out.append(f"{name}|{pol}|{attn}|{ck}|{extra}")
    return out


def lora_keys():
    out = []
    for c in LORA_CLASSES:
        name, _, extra = c.partition("|")
        for t in ("all", "attn", "qv"):
            for ck in "01":
                out.append(f"{name}|lora-{t}|sdpa|{ck}" + (f"|{extra}" if extra else ""))
    return out


def mc():
    m = TA.harness()
    m.ARGS.smoke = False
    m.DEV = torch.device("meta")
    return m


OVERRIDE = {}  # "tie": bool, "mha": bool — a class the measured models do not cover (e.g. untied MHA Llama)


def config(MC, name, attn, v):
    """The model's own config with its dimensions replaced by `v`'s."""
    cfg = MC.make_config(name, attn)
    mha = cfg.num_attention_heads == getattr(cfg, "num_key_value_heads", cfg.num_attention_heads) \
        if hasattr(cfg, "num_key_value_heads") else True
    if "mha" in OVERRIDE:
        mha = OVERRIDE["mha"]
    if "tie" in OVERRIDE:
        cfg.tie_word_embeddings = OVERRIDE["tie"]
    if getattr(cfg, "sliding_window", None):
        # win=1: sequences longer than the window (a sliding mask of its own); else shorter
        cfg.sliding_window = 5 if OVERRIDE.get("win") else 1 << 20
    heads = v["kv"] * (1 if mha else v["g"])
    kvh = v["kv"]
    derived_d = cfg.model_type in ("gpt2", "phi3", "olmoe", "qwen2_moe")  # head size = hidden / heads
    h = heads * v["d"] if derived_d else v["h"]
    if cfg.model_type == "gpt2":
        cfg.n_embd, cfg.n_head, cfg.n_inner, cfg.n_layer = h, heads, v["f"], LAYERS
        cfg.n_positions = v["P"]
    else:
        if getattr(cfg, "moe_intermediate_size", None):
            # Qwen2-MoE: f is an expert's width; the shared expert keeps its multiple of it
            mult = round(cfg.shared_expert_intermediate_size / cfg.moe_intermediate_size)
            cfg.moe_intermediate_size, cfg.shared_expert_intermediate_size = v["f"], mult * v["f"]
        cfg.hidden_size, cfg.intermediate_size, cfg.num_attention_heads = h, v["f"], heads
        cfg.num_key_value_heads = kvh
        cfg.num_hidden_layers = LAYERS
        if not derived_d:
            cfg.head_dim = v["d"]
        pat = pattern(cfg)
        if pat:
            cfg.layer_types = [pat[i % len(pat)] for i in range(LAYERS)]
        if getattr(cfg, "max_window_layers", None):
            cfg.max_window_layers = LAYERS
    cfg.vocab_size = v["V"]
    return cfg, mha


def pattern(cfg):
    """The layer types' period (Gemma 2: sliding, full; Gemma 3: five sliding, one full), or None."""
    lt = getattr(cfg, "layer_types", None)
    if not lt or len(set(lt)) == 1:
        return None
    for p in range(1, len(lt) + 1):
        if all(lt[i] == lt[i % p] for i in range(len(lt))):
            return list(lt[:p])


def layers_for(name, attn):
    """Layers to trace: every layer type in the middle, and the real model's last type last."""
    cfg = mc().make_config(name, attn)
    pat = pattern(cfg)
    if not pat:
        return 5, 1, None
    n, real = len(pat), cfg.num_hidden_layers
    L = 2 * n + 1
    while L % n != real % n:
        L += 1
    return L, n, pat


def trace(name, policy, attn, ckpt, v, optimizer="sgd", impl="foreach"):
    """One run of the measured loop (three iterations) with cut marks and the grads' owners.
    `policy` "lora-T" is PEFT LoRA of rank v["r"] on targets T (all, attn, qv) over a bf16 base
    under bf16 autocast, as tools/measure_cuda.py runs it."""
    from transformers import AutoModelForCausalLM
    MC = mc()
    cfg, mha = config(MC, name, attn, v)
    lora = policy.startswith("lora-")
    pdt = torch.bfloat16 if policy == "bf16_pure" or lora else torch.float32
    with torch.device("meta"):
        m = AutoModelForCausalLM.from_config(cfg, attn_implementation=attn, dtype=pdt)
    if lora:
        t = policy[5:]
        m, _ = MC.apply_lora(m, dict(r=v["r"], targets={"all": "all-linear"}.get(t, t)))
    m.train()
    if ckpt:
        MC.enable_ckpt(m)
    params = [p for p in m.parameters() if p.requires_grad]
    opt = TA.make_opt(MC, params, dict(optimizer=optimizer, adam_impl=impl, lora=None))
    tr = TA.Tracer()
    st = {"fw": True}
    base = m.get_base_model() if hasattr(m, "get_base_model") else m
    layers = base.model.layers if hasattr(base, "model") else base.transformer.h

    def pre(i):
        def hook(mod, args, kwargs):
            if st["fw"]:
                tr.mark(("f", i))
                x = args[0] if args else kwargs.get("hidden_states")
                if i == 0 and x is not None and x.requires_grad:
                    x.register_hook(lambda g: tr.mark(("x", 0)))
        return hook

    def post(i):
        def hook(mod, args, kwargs, out):
            if st["fw"]:
                tr.mark(("e", i))
                t = out[0] if isinstance(out, tuple) else out
                if t.requires_grad:
                    t.register_hook(lambda g: tr.mark(("b", i)))
        return hook

    for i, layer in enumerate(layers):
        layer.register_forward_pre_hook(pre(i), with_kwargs=True)
        layer.register_forward_hook(post(i), with_kwargs=True)
    ids = torch.randint(0, cfg.vocab_size, (v["b"], v["s"]), device="meta")
    for t in [*m.parameters(), *m.buffers(), ids]:
        tr.seed(t)
    grads = []
    with tr:
        for it in range(3):
            st["fw"] = True
            tr.mark(("it", it))
            with TA.autocast(policy == "amp_bf16" or lora):
                loss = m(input_ids=ids, labels=ids).loss
            tr.mark(("fw_end",))
            st["fw"] = False
            loss.backward()
            del loss
            tr.mark(("bw_end",))
            gid = {}
            for k, p in enumerate(params):
                if p.grad is not None:
                    e = tr.live.get(p.grad.untyped_storage()._cdata)
                    if e:
                        gid[e[2]] = k
            grads.append(gid)
            opt.step()
            tr.mark(("opt_end",))
            opt.zero_grad(set_to_none=True)
            tr.mark(("zg_end",))
    names = [n for n, p in m.named_parameters() if p.requires_grad]
    seen, every = set(), []
    for n, p in m.named_parameters():
        if p.untyped_storage()._cdata not in seen:
            seen.add(p.untyped_storage()._cdata)
            every.append((n, p.numel() * p.element_size()))
    types = list(cfg.layer_types) if pattern(cfg) else None
    tied = bool(getattr(cfg, "tie_word_embeddings", False))
    return dict(events=tr.events, grads=grads, params=[p.numel() * p.element_size() for p in params], types=types, tied=tied, every=every,
                names=names, resident=resident(m, ids), mha=mha, model_type=cfg.model_type)


def resident(m, ids):
    seen, out = set(), []
    for t in [*m.parameters(), *m.buffers(), ids]:
        st = t.untyped_storage()
        if st._cdata not in seen and st.nbytes():
            seen.add(st._cdata)
            out.append(st.nbytes())
    return out


# ------------------------------------------------------------------------------------ sizes
def formula(n, v, mha):
    """`n` bytes as constant · Π var^e, read off the primes of `v`."""
    assert v == PRIMES
    exps, r, den = {}, n, 1
    for k, (p, m) in FACTORS.items():
        if mha and k in ("g", "g2"):
            continue
        e = 0
        while r % p == 0:
            r //= p
            e += 1
        if e:
            exps[k] = e
            den *= m ** e  # the symbol is taken whole: its small factor leaves the constant
    num = r
    c = math.gcd(num, den)
    return [num // c, den // c, exps]


def value(fm, v):
    num, den, exps = fm
    x = num
    vals = derived(v)
    for k, e in exps.items():
        x *= vals[k] ** e
    return x // den


def fstr(fm):
    num, den, exps = fm
    parts = [str(num) if den == 1 else f"{num}/{den}"]
    for k in VARS:
        if k in exps:
            parts.append(k if exps[k] == 1 else f"{k}^{exps[k]}")
    return "*".join(parts)


# ------------------------------------------------------------------------------------ cutting
def cut(tr, L):
    """The trace as segment instances: {(it, seg, layer): [("a", bytes, id) | ("f", id)]}, in order."""
    segs, order, where = {}, [], {}
    cur = None

    def open_(key):
        nonlocal cur
        cur = key
        if key not in segs:
            segs[key] = []
            order.append(key)

    it = 0
    for d, k in tr["events"]:
        if d == 0:
            tag = k[0]
            if tag == "it":
                it = k[1]
                open_((it, "P", None))
            elif tag == "f":
                open_((it, "F", k[1]))
            elif tag == "e" and k[1] == L - 1:
                open_((it, "H", None))  # a layer's F runs to the next layer's start
            elif tag == "fw_end":
                open_((it, "HB", None))
            elif tag == "b":
                open_((it, "B", k[1]))
            elif tag == "x":
                open_((it, "EB", None))
            elif tag == "bw_end":
                open_((it, "O", None))
            elif tag == "opt_end":
                open_((it, "Z", None))
            elif tag == "zg_end":
                open_((it, "end", None))
            continue
        if d > 0:
            where[k] = (cur, sum(1 for e in segs[cur] if e[0] == "a"))
            segs[cur].append(("a", d, k))
        else:
            segs[cur].append(("f", k))
    return segs, order, where


def variant(seg, j, L, types=None):
    if seg not in ("F", "B"):
        return seg
    v = seg + ("0" if j == 0 else "l" if j == L - 1 else "m")
    return v + (":" + types[j % len(types)] if types else "")


def encode(tr, v, L):
    """The template: it0 and it1 (it2 must equal it1), segment variants, params and grads."""
    segs, order, where = cut(tr, L)
    for key in order:
        if key[1] == "gap" and segs[key]:
            raise SystemExit(f"events between layers {key}: not a template")
        if key[1] == "O" and any(e[0] == "a" for e in segs[key]):
            raise SystemExit("the optimizer allocated: trace with plain SGD")
    grad_of = {}
    for it, gid in enumerate(tr["grads"]):
        for aid, k in gid.items():
            grad_of[aid] = k
    pl = param_layout(tr["names"])
    out, pins = {}, {0: [], 1: [], 2: []}
    for key in order:
        it, seg, j = key
        if seg in ("gap", "end", "O", "Z"):
            continue
        name = variant(seg, j, L, tr["pattern"])
        evs = []
        for e in segs[key]:
            if e[0] == "a":
                s = fstr(formula(e[1], v, tr["mha"]))
                if e[2] in grad_of:
                    s += "@" + grad_ref(pl[grad_of[e[2]]], j)
                evs.append(s)
            else:
                (ait, aseg, aj), idx = where[e[1]]
                if aseg in ("O", "Z"):
                    raise SystemExit(f"a free of an optimizer allocation in {key}")
                if aj is None and j is not None:
                    # the last user of a model-level tensor (a mask, the rotary pair): pinned to
                    # the first or last layer of its type, not part of the layer's template
                    role = layer_role(j, L, tr["pattern"])
                    if role is None:
                        raise SystemExit(f"{key}: a middle layer frees a model-level tensor")
                    pins[it].append([seg, role, len(evs), [it - ait, aseg, None, idx]])
                    continue
                if aj is None:
                    lay = None
                elif j is not None:
                    lay = f"r{aj - j}"
                    if aj != j:  # another layer's: counted from its segment's end (types differ in the middle)
                        idx -= sum(1 for x in segs[(ait, aseg, aj)] if x[0] == "a")
                else:
                    lay = f"a{aj if aj < L // 2 else aj - L}"
                evs.append([it - ait, aseg, lay, idx])
        if j is None:
            evs = loops(evs, L)
        out.setdefault(it, {}).setdefault(name, []).append(evs)
    # every instance of a variant must be the same
    tmpl = {}
    for it, by in out.items():
        tmpl[it] = {}
        for name, insts in by.items():
            for x in insts[1:]:
                if x != insts[0]:
                    k = next((i for i, (p, q) in enumerate(zip(x, insts[0])) if p != q), None)
                    raise SystemExit(f"iteration {it}: {name} differs between layers at {k}: "
                                     f"{insts[0][k:k + 3] if k is not None else len(insts[0])} vs "
                                     f"{x[k:k + 3] if k is not None else len(x)}")
            tmpl[it][name] = insts[0]
    for it in range(3):
        tmpl[it]["pins"] = sorted(pins[it], key=lambda x: (x[0], x[1], x[2]))
    if tmpl[1] != tmpl[2]:
        raise SystemExit("iterations 1 and 2 differ")
    # Z: the grads freed in parameter order (checked, then written by the interpreter)
    for it in range(3):
        z = [e for e in segs[(it, "Z", None)]]
        want = [k for k in range(len(tr["params"]))]
        got = sorted(grad_of.get(e[1], -1) for e in z if e[0] == "f")
        if got != want:
            raise SystemExit(f"zero_grad frees {got[:8]}…, not the grads in parameter order")
    params = {"pre": [], "layer": [], "post": []}
    for k, (grp, j, _) in enumerate(pl):
        if grp != "layer" or j == 0:
            params[grp].append(fstr(formula(tr["params"][k], v, tr["mha"])))
    res = tr["resident"]
    every = tr["every"]
    if res[:len(every)] != [n for _, n in every]:
        raise SystemExit("the resident tensors do not start with the parameters")
    extra = [fstr(formula(n, v, tr["mha"])) for n in res[len(every):]]
    # every parameter (frozen ones too: a LoRA base), by group, for the resident list
    resident = {"pre": [], "layer": [], "post": []}
    for (grp, j, _), (_, n) in zip(param_layout([n for n, _ in every]), every):
        if grp != "layer" or j == 0:
            resident[grp].append(fstr(formula(n, v, tr["mha"])))
    return dict(it0=tmpl[0], it1=tmpl[1], params=params, extra=extra, types=tr["pattern"], resident=resident,
                mha=tr["mha"], model_type=tr["model_type"], tied=tr["tied"], window=bool(OVERRIDE.get("win")))


def loops(evs, L):
    """Frees of one allocation of every layer, in a segment outside the layers (autocast's
    weight cache dropped when the forward leaves autocast): one ["each", dit, seg, idx]."""
    groups = {}
    for i, e in enumerate(evs):
        if isinstance(e, list) and e[2] is not None and e[2].startswith("a"):
            groups.setdefault((e[0], e[1], e[3]), []).append(i)
    drop, first = set(), {}
    for (dit, seg, idx), pos in groups.items():
        lays = sorted(int(evs[i][2][1:]) % L for i in pos)
        if lays == list(range(L)):
            first[pos[0]] = ["each", dit, seg, idx]
            drop.update(pos)
    return [first[i] if i in first else e for i, e in enumerate(evs) if i in first or i not in drop]


def layer_role(j, L, types):
    """'first:T' / 'last:T': layer j is the first or last layer of its type T ('' without types)."""
    t = types[j % len(types)] if types else ""
    same = [i for i in range(L) if (types[i % len(types)] if types else "") == t]
    if j == same[0]:
        return "first:" + t
    if j == same[-1]:
        return "last:" + t
    return None


def layer_roles(j, L, types):
    """Every role of layer j: 'first:T' and 'last:T' both where it is its type's only layer."""
    t = types[j % len(types)] if types else ""
    same = [i for i in range(L) if (types[i % len(types)] if types else "") == t]
    return (["first:" + t] if j == same[0] else []) + (["last:" + t] if j == same[-1] else [])


def param_layout(names):
    """Each trainable parameter as (group, layer, index in its group)."""
    out, pre, post, per = [], 0, 0, {}
    seen_layer = False
    for n in names:
        parts = n.split(".")
        j = next((int(parts[i + 1]) for i, p in enumerate(parts[:-1]) if p in ("layers", "h") and parts[i + 1].isdigit()),
                 None)
        if j is None:
            if seen_layer:
                out.append(("post", None, post))
                post += 1
            else:
                out.append(("pre", None, pre))
                pre += 1
        else:
            seen_layer = True
            out.append(("layer", j, per.get(j, 0)))
            per[j] = per.get(j, 0) + 1
    return out


def grad_ref(p, j):
    grp, pj, k = p
    if grp == "layer":
        return f"r{pj - j}:{k}" if j is not None else f"a{pj}:{k}"
    return f"{grp}:{k}"


# ------------------------------------------------------------------------------------ rebuilding
def parse(s, v):
    """'num[/den]*var^e*…' at the values `v` (g2 = g + 2)."""
    vals = derived(v)
    head, *rest = s.split("*")
    num, _, den = head.partition("/")
    x, dv = int(num), int(den or 1)
    for t in rest:
        k, _, e = t.partition("^")
        x *= vals[k] ** int(e or 1)
    return x // dv


def instantiate(t, v, L, iters=3):
    """The stream a template gives for `v` and `L` layers: (resident, [(delta, id)], grads freed in Z)."""
    params = [("pre", None, k, s) for k, s in enumerate(t["params"]["pre"])]
    params += [("layer", j, k, s) for j in range(L) for k, s in enumerate(t["params"]["layer"])]
    params += [("post", None, k, s) for k, s in enumerate(t["params"]["post"])]
    events, ids, nid, count = [], {}, [0], {}
    for it in range(iters):
        tm = t["it0"] if it == 0 else t["it1"]
        grads = {}
        plan = [("P", None)] + [("F", j) for j in range(L)] + [("H", None), ("HB", None)]
        plan += [("B", j) for j in reversed(range(L))] + [("EB", None)]
        for seg, j in plan:
            name = variant(seg, j, L, t["types"])
            a = 0
            roles = layer_roles(j, L, t["types"]) if j is not None else []
            pins = [(pos, ref) for sg, rl, pos, ref in tm["pins"] if sg == seg and rl in roles]
            evl = list(tm.get(name, []))
            for pos, ref in sorted(pins, key=lambda x: -x[0]):
                evl.insert(pos, ref)
            for e in evl:
                if isinstance(e, str):
                    size, _, g = e.partition("@")
                    nid[0] += 1
                    ids[(it, seg, j, a)] = (nid[0], parse(size, v))
                    count[(it, seg, j)] = a + 1
                    events.append((parse(size, v), nid[0]))
                    if g:
                        grads[grad_key(g, j, L)] = nid[0]
                    a += 1
                elif e[0] == "each":
                    _, dit, aseg, idx = e
                    for aj in range(L):
                        i, n = ids[(it - dit, aseg, aj, idx)]
                        events.append((-n, i))
                else:
                    dit, aseg, lay, idx = e
                    aj = None if lay is None else (j + int(lay[1:]) if lay[0] == "r" else int(lay[1:]) % L)
                    if idx < 0:
                        idx += count[(it - dit, aseg, aj)]
                    i, n = ids[(it - dit, aseg, aj, idx)]
                    events.append((-n, i))
        for grp, j, k, s in params:  # zero_grad(set_to_none=True): each grad, in parameter order
            i = grads[(grp, j, k)]
            events.append((-parse(s, v), i))
    rl = t["resident"]
    res = [parse(x, v) for x in rl["pre"]] + [parse(x, v) for _ in range(L) for x in rl["layer"]]
    res += [parse(x, v) for x in rl["post"]] + [parse(x, v) for x in t["extra"]]
    return res, events


def grad_key(g, j, L):
    where, _, k = g.partition(":")
    if where in ("pre", "post"):
        return (where, None, int(k))
    pj = j + int(where[1:]) if where[0] == "r" else int(where[1:]) % L
    return ("layer", pj, int(k))


def canonical(events):
    """Deltas with each free pointing at its allocation's position: ids fall away."""
    pos, out, run = {}, [], []
    for d, i in events:
        if d > 0:
            out += sorted(run)
            run = []
            pos[i] = len(pos)
            out.append(d)
        else:
            run.append(("free", pos[i], -d))
    return out + sorted(run)


def traced(tr):
    return [(d, k) for d, k in tr["events"] if d != 0]


def derive(key, check=True):
    """One key's template; `bm=M` (mixture-of-experts) makes the micro-batch a multiple of M, so
    that every expert's even share of the tokens, T·top_k/E, is whole."""
    bm = next((int(r[3:]) for r in key.split("|") if r.startswith("bm=")), 1)
    keep = dict(PRIMES), dict(CHECK), dict(FACTORS)
    if bm > 1:
        PRIMES["b"], CHECK["b"], FACTORS["b"] = 11 * bm, 2 * bm, (11, bm)
        # grouped expert GEMMs want 16-byte rows: the FFN width a multiple of 8
        PRIMES["f"], CHECK["f"], FACTORS["f"] = 19 * 8, 59 * 8, (19, 8)
    try:
        return derive_(key, check)
    finally:
        for d, k in zip((PRIMES, CHECK, FACTORS), keep):
            d.clear()
            d.update(k)


def derive_(key, check=True):
    name, policy, attn, ckpt, *rest = key.split("|")
    ckpt = ckpt == "1"
    OVERRIDE.clear()
    for r in rest:
        if r.startswith("bm="):
            continue
        k, _, val = r.partition("=")
        OVERRIDE[k] = val == "1"
    L, period, pat = layers_for(name, attn)
    tr = trace_l(name, policy, attn, ckpt, PRIMES, L)
    tr["pattern"] = pat
    t = encode(tr, PRIMES, L)
    if check:
        L2 = L + (period if pat else 2)
        tr2 = trace_l(name, policy, attn, ckpt, CHECK, L2)
        res, ev = instantiate(t, CHECK, L2)
        a, b = canonical(ev), canonical(traced(tr2))
        if a != b:
            k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            raise SystemExit(f"{key}: rebuilt stream differs at event {k} of {len(b)}: {a[k:k+4]} vs {b[k:k+4]}")
        if res != tr2["resident"]:
            raise SystemExit(f"{key}: resident differs: {res[:6]} vs {tr2['resident'][:6]}")
    return t


def trace_l(name, policy, attn, ckpt, v, L):
    global LAYERS
    keep, LAYERS = LAYERS, L
    try:
        return trace(name, policy, attn, ckpt, v)
    finally:
        LAYERS = keep


def class_key(key, t):
    """The key memfit looks a template up by: family|tied|mha[|partial]|policy|attn|ckpt[|win=1]
    (`crates/core/src/opstream/mod.rs`, `class` and `run_of`)."""
    name, policy, attn, ckpt, *_ = key.split("|")
    cfg = mc().make_config(name, attn)
    rp = getattr(cfg, "rope_parameters", None) or {}
    partial = (rp.get("partial_rotary_factor") or getattr(cfg, "partial_rotary_factor", 1.0) or 1.0) < 1.0
    c = f"{t['model_type']}|{'tied' if t['tied'] else 'untied'}|{'mha' if t['mha'] else 'gqa'}"
    c += "|partial" if partial else ""
    experts = getattr(cfg, "num_experts", 0) or getattr(cfg, "num_local_experts", 0) or 0
    if experts:  # mixture-of-experts: experts, top-k and the shared expert's width in experts
        c += f"|E{experts}k{cfg.num_experts_per_tok}"
        if getattr(cfg, "shared_expert_intermediate_size", 0):
            c += f"s{round(cfg.shared_expert_intermediate_size / cfg.moe_intermediate_size)}"
    return f"{c}|{policy}|{attn}|{ckpt}" + ("|win=1" if t.get("window") else "")


def merge(out, ins):
    """Every template of the files `ins` under its class key, written compactly: sizes and
    segments are stored once (`sizes`, `segs`) and named by index. A segment is one string of
    events separated by spaces: `N` allocates size N, `N@G` also becomes parameter G's
    gradient, `~dit,seg,layer,idx` frees (layer empty for a model-level segment), `-idx` frees
    the segment's own allocation idx, `=idx` (in a layer's backward) its forward's, `*dit,seg,idx`
    frees that allocation of every layer. A segment starting `^N` is segment N edited (see
    `variant_seg`); a template without `it1` repeats `it0`."""
    res = {}
    for path in ins:
        for key, t in json.load(open(path)).items():
            k = class_key(key, t)
            if k in res and res[k] != t:
                print(f"{k}: {key} differs from the template already kept", file=sys.stderr)
                continue
            res[k] = t
    sizes, segs = {}, {}

    def size(x):
        return str(sizes.setdefault(x, len(sizes)))

    def ev(e, kind=None):
        if isinstance(e, str):
            a, _, g = e.partition("@")
            return size(a) + ("@" + g if g else "")
        if e[0] == "each":
            return f"*{e[1]},{e[2]},{e[3]}"
        own = "r0" if kind in ("F", "B") else None
        if e[0] == 0 and e[1] == kind and e[2] == own:
            return f"-{e[3]}"  # this segment's own allocation
        if e[0] == 0 and kind == "B" and e[1] == "F" and e[2] == "r0":
            return f"={e[3]}"  # the same layer's forward (a saved tensor)
        return f"~{e[0]},{e[1]},{e[2] or ''},{e[3]}"

    def tokens(name, evs):
        kind = name.split(":")[0].rstrip("0ml") if name[0] in "FB" else name
        return [ev(e, kind) for e in evs]

    def seg(text):
        return segs.setdefault(text, len(segs))

    def variant_seg(name, evs, its):
        """The first or last layer's segment as edits of the middle layer's of its type
        (`^base K<n> D<n> tok…`: keep n of the base's tokens, drop n, insert tok), when shorter."""
        toks = tokens(name, evs)
        plain = " ".join(toks)
        head, _, typ = name.partition(":")
        mid = head[0] + "m" + (":" + typ if typ else "")
        if head[1:] in ("0", "l") and mid in its:
            base = tokens(mid, its[mid])
            ops = [f"^{seg(' '.join(base))}"]
            sm = difflib.SequenceMatcher(None, base, toks, autojunk=False)
            for op, i1, i2, j1, j2 in sm.get_opcodes():
                if op == "equal":
                    ops.append(f"K{i2 - i1}")
                    continue
                if i2 > i1:
                    ops.append(f"D{i2 - i1}")
                ops.extend(toks[j1:j2])
            diff = " ".join(ops)
            if len(diff) < len(plain):
                return seg(diff)
        return seg(plain)

    outt = {}
    for k, t in sorted(res.items()):
        o = {}
        for it in ("it0", "it1"):
            its = t[it]
            o[it] = {name: variant_seg(name, evs, its) for name, evs in its.items() if name != "pins"}
            o[it]["pins"] = [[p[0], p[1], p[2], ev(p[3])] for p in its["pins"]]
        if o["it1"] == o["it0"]:
            del o["it1"]  # every later iteration as the first
        o["params"] = {g: [size(x) for x in v] for g, v in t["params"].items()}
        o["extra"] = [size(x) for x in t["extra"]]
        if t.get("resident") and t["resident"] != t["params"]:  # frozen parameters too (LoRA)
            o["resident"] = {g: [size(x) for x in v] for g, v in t["resident"].items()}
        o["types"] = t["types"]
        outt[k] = o
    with open(out, "w") as f:
        f.write(text_format(list(sizes), list(segs), outt))
    print(len(res), "templates,", len(segs), "segments,", len(sizes), "sizes", file=sys.stderr)


def text_format(sizes, segs, templates):
    """The data as lines (`crates/core/src/opstream/template.rs` reads it without a JSON parser):
    `size F` per size and `seg TEXT` per segment, in index order; then per template `tmpl KEY`
    followed by `it0`/`it1` (`NAME=SEG …`), `pins0`/`pins1` (`SEG;ROLE;POS;FREE …`),
    `pre`/`layer`/`post`/`extra` (size indices), `rpre`/`rlayer`/`rpost` (every parameter, where
    frozen ones are resident too) and `types` (the layer types' period)."""
    out = ["# memfit op-level allocation templates: tools/alloc_templates.py --merge (do not edit)"]
    out += [f"size {x}" for x in sizes]
    out += [f"seg {x}" for x in segs]
    for k, o in templates.items():
        out.append(f"tmpl {k}")
        for i, it in enumerate(("it0", "it1")):
            if it not in o:
                continue
            out.append(f"{it} " + " ".join(f"{n}={v}" for n, v in o[it].items() if n != "pins"))
            if o[it]["pins"]:
                out.append(f"pins{i} " + " ".join(";".join(str(x) for x in p) for p in o[it]["pins"]))
        for g in ("pre", "layer", "post"):
            out.append(f"{g} " + " ".join(o["params"][g]))
        out.append("extra " + " ".join(o["extra"]))
        if "resident" in o:
            for g in ("pre", "layer", "post"):
                out.append(f"r{g} " + " ".join(o["resident"][g]))
        if o["types"]:
            out.append("types " + " ".join(o["types"]))
    return "\n".join(out) + "\n"


def main():
    TA.patch()
    args = sys.argv[1:]
    if args[:1] == ["--merge"]:
        return merge(args[1], args[2:])
    out = None
    if "--out" in args:
        i = args.index("--out")
        out = args[i + 1]
        del args[i:i + 2]
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    keys = all_keys() if args == ["--all"] else lora_keys() if args == ["--lora"] else moe_keys() if args == ["--moe"] else args
    res = {}
    for key in keys:
        try:
            t = derive(key, check)
        except (SystemExit, ValueError, RuntimeError, KeyError) as e:
            print(key, "FAILED:", str(e)[:300], file=sys.stderr)
            continue
        n = sum(len(x) for x in t["it1"].values())
        print(key, "ok" if check else "", n, "events per iteration", file=sys.stderr)
        res[key] = t
        if out:  # after every key: a long run that stops keeps what it derived
            with open(out, "w") as f:
                json.dump(res, f, separators=(",", ":"))


if __name__ == "__main__":
    main()

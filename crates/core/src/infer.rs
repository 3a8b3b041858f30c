//! Inference memory: weights in their storage dtype, the KV cache, and the
//! transient workspace of prefill and decode.

use super::expr::{Expr, Tok, Tok::*};
use super::ledger::{Component, Ledger, Location, Mech, Phase};
use super::model::Arch;
use super::quant::{self, Quant};
use super::scenario::{Dtype, Layout, Logits, Scenario};

const SRC_KV: &str = "seed 003 (KV cache 4·b·l·h·(s+n) in fp16), generalised to GQA, MLA and TP/PP";
const SRC_QUANT: &str = "group-wise weight quantisation (GPTQ/AWQ style: one fp16 scale per group; embeddings, norms and LM head stay 16-bit)";

/// Weight storage bytes for `psi` parameters of which `quantisable` are block
/// linears, in `dtype` with `group` weights per scale.
///
/// # Formula
/// ```text
/// float dtypes (fp32/bf16/fp16): bits/8 · Ψ
/// fp8:          1·Ψ_q + 2·(Ψ − Ψ_q)
/// int8 / int4:  bits/8·Ψ_q + 2·⌈Ψ_q/g⌉ + 2·(Ψ − Ψ_q)      (fp16 scale per group of g)
/// ```
/// # Example
/// 1,048,576 linear weights in int4, g = 128: 524,288 + 2·8,192 = 540,672 bytes (0.516 B/param).
pub fn weight_bytes(psi: u64, quantisable: u64, dtype: Dtype, bits: u64, group: u32) -> u64 {
    weight_expr(psi, quantisable, dtype, bits, group).eval()
}

/// [`weight_bytes`] as an expression (`Ψ_q = min(quantisable, Ψ)`).
pub fn weight_expr(psi: u64, quantisable: u64, dtype: Dtype, bits: u64, group: u32) -> Expr {
    let (all, q) = (
        Sym("Ψ", psi as u128),
        Sym("Ψ_q", quantisable.min(psi) as u128),
    );
    let rest = [Num(2), all, q, Sub, Mul, Add];
    match dtype {
        Dtype::Fp8 => Expr::new(&[q]).then(&rest),
        Dtype::Int8 | Dtype::Int4 => {
            let codes = [Sym("bits", bits as u128), q, Mul, Num(8), DivCeil];
            let scales = [Num(2), q, Sym("g", group.max(1) as u128), DivCeil, Mul, Add];
            Expr::new(&codes).then(&scales).then(&rest)
        }
        _ => Expr::new(&[all, Sym("bits", bits as u128), Mul, Num(8), Div]),
    }
}

/// The whole model's weights in the scenario's format (`quant`, else `weight_dtype`),
/// before they are split over ranks, and the formula's source.
///
/// # Formula
/// `quant=none`: [`weight_expr`] in `weight_dtype`; `int8_g`/`int4_g`: [`weight_expr`]
/// with 8/4-bit codes; every other format: [`quant::weights_expr`] over the model's
/// tensors.
pub fn format_weights(s: &Scenario, arch: &Arch, psi: u64) -> (Expr, &'static str) {
    let q = s.numerics.quant;
    let g = s.numerics.quant_group.get();
    let (dtype, bits) = match q {
        Quant::Int8G => (Dtype::Int8, 8),
        Quant::Int4G => (Dtype::Int4, 4),
        Quant::None => (
            s.numerics.weight_dtype,
            s.numerics.weight_dtype.bits(s.numerics.precision),
        ),
        q => {
            let sh = quant::shares(arch, q, g);
            let k = s.numerics.precision.compute_bytes();
            return (quant::weights_expr(q, &sh, k, s.double_quant()), q.source());
        }
    };
    let quantisable = super::train::quantisable_share(arch, psi);
    let src = match dtype {
        Dtype::Int8 | Dtype::Int4 | Dtype::Fp8 => SRC_QUANT,
        _ => "seed 003 (weights = bytes per parameter · Φ)",
    };
    (weight_expr(psi, quantisable, dtype, bits, g), src)
}

/// The layers of the most loaded pipeline stage that keep every token (`L_g`) and that
/// keep at most the sliding window (`L_w`): a stage holds `⌈L/p⌉` layers, and the stage
/// with the most full-context layers bounds the per-GPU cache.
///
/// # Formula
/// ```text
/// L_s = ⌈L/p⌉,  L_g = min(L_s, L − L_local),  L_w = L_s − L_g
/// ```
/// Source: Gemma 2 / Gemma 3 reports (local and global layers), Mistral 7B paper
/// (rolling buffer cache of W tokens); exact for p = 1, an upper bound for p > 1.
///
/// # Example
/// Gemma 2 9B (42 layers, 21 windowed), p = 1: L_g = 21, L_w = 21; p = 2: L_s = 21,
/// L_g = 21, L_w = 0.
pub(crate) fn kv_layers(arch: &Arch, p: u32) -> (u128, u128) {
    let stage = (arch.layers as u128).div_ceil(p.max(1) as u128);
    let global_total = (arch.layers as u128).saturating_sub(if arch.window > 0 {
        arch.local_layers as u128
    } else {
        0
    });
    let global = stage.min(global_total);
    (global, stage - global)
}

/// Inference items per GPU: weights; KV cache and workspace at prefill (prompt
/// only) and at the end of decoding (prompt + generated).
///
/// # Formula
/// ```text
/// weights    = weight_bytes(Ψ) / (t·p)
/// kv_cache   = 2·b·T·⌈L/p⌉·⌈a_kv/t⌉·d·k_kv          standard attention (T = s at prefill, s+n at the end)
///            =   b·T·⌈L/p⌉·(r_kv + d_rope)·k_kv      MLA (the compressed latent, replicated over TP)
///            with a sliding window W on L_w of the stage's layers (see `kv_layers`),
///            T·⌈L/p⌉ becomes L_g·T + L_w·min(T, W)
/// workspace  = max(k·b·T'·(3h + ⌈w_a/t⌉) + A_e,  k·b·T'·(3h + ⌈w_m/t⌉) + W_e) + 4·b·V
///              (one layer's transient tensors, T' = s at prefill and 1 per decode step: the
///               layer's input, which the caller still holds, the residual and a norm's
///               output, with either the attention's q, k, v and repeat_kv copies
///               (`w_a`, see `attention_width`) or the MLP's intermediates (`w_m`, see
///               `mlp_width`) — whichever moment is larger; eager attention adds its scores
///               at the first (`A_e`, `eager_scores`) and its returned probabilities at the
///               second (`W_e`, `eager_probs`); plus fp32 logits of the last position)
///            logits=prompt, prefill: max(that layer term, c·b·s·V·k/t)  (c = 2 with soft-capping)
///            logits=all, prefill: max(that layer term,  b·s·V·(k + [k < 4]·4 + 4)/t)
///              (every position's logits, the fp32 upcast, the loss's log-softmax)
/// ```
/// `b` batch, `s` prompt, `n` generated tokens, `L` layers, `a`/`a_kv` heads, `d`
/// head width, `h` hidden, `f` FFN width (MoE: per-expert width × top-k), `m` MLP
/// matrices, `V` vocabulary, `k` compute bytes, `k_kv` cache bytes.
///
/// Source: seed 003 (`4·b·l·h·(s+n)` for MHA in fp16); DeepSeek-V2 §2.1 (MLA cache);
/// Mistral 7B §2 (rolling buffer cache) and the Gemma 2/3 reports (local layers);
/// the workspace is memfit's own count of one layer's tensors, measured with MemTracker
/// (`tools/measure_pytorch.py`, Llama and GPT-2 shapes, fp32 and bf16: the prefill's
/// working set exactly) and traced tensor by tensor on Hugging Face transformers 5.24
/// (`tools/measure_hf.py` runs: GPT-2, Llama, Gemma 2/3; docs/validation.md).
///
/// # Example
/// Llama-2-7B, b = 1, s = 512, n = 32, bf16: KV cache 2·1·544·32·32·128·2 =
/// 285,212,672 B (equals llm-analysis 0.2.2's `kv_cache_memory_per_gpu`). Gemma 2 9B
/// (a_kv = 8, d = 256, 21 of 42 layers windowed to 4,096), b = 1, T = 32,768, bf16:
/// 2·(21·32,768 + 21·4,096)·8·256·2 = 6,341,787,648 B, against 11,274,289,152 B if every
/// layer kept the whole context. The measured Llama shape (h = 256, a = 8, a_kv = 2,
/// d = 32, f = 688, SwiGLU), b = 2, s = 384, fp32, SDPA: workspace max(4·2·384·(3·256 +
/// 12·32 + 2·256), 4·2·384·(3·256 + 3·688)) + 4·2·4096 = 8,732,672 B.
pub(crate) fn inference_items(
    s: &Scenario,
    arch: &Arch,
    psi: u64,
    l: &Layout,
    ledger: &mut Ledger,
) {
    let k = s.numerics.precision.compute_bytes();
    let (t, p) = (l.tp as u64, l.pp as u64);
    let (w, src) = format_weights(s, arch, psi);
    let w = w.then(&[Sym("t", t as u128), Sym("p", p as u128), Mul, DivCeil]);
    let dtype = s.numerics.weight_dtype;
    let q = s.numerics.quant;
    let ctx = || match q {
        Quant::None => format!("dtype={}", dtype.as_str()),
        Quant::Int8G | Quant::Int4G => format!("dtype={}", &q.as_str()[..4]),
        q => format!("quant={}; {}", q.as_str(), q.kept(arch.experts > 0)),
    };
    let (mech, comp, gpu) = (Mech::InferWeights, Component::Weights, Location::Gpu);
    ledger.push_expr(&[], mech, comp, gpu, &w, "", ctx, src);

    kv_cache_items(s, arch, t, p, ledger);
    workspace_items(s, arch, k, t, ledger);
}

/// The KV cache at the end of prefill (`T = s`) and of decoding (`T = s + n`); see
/// [`inference_items`] for the formula and [`kv_layers`] for sliding windows.
fn kv_cache_items(s: &Scenario, arch: &Arch, t: u64, p: u64, ledger: &mut Ledger) {
    let kv_bits = s.numerics.kv_dtype.bits(s.numerics.precision) as u128;
    let (global, local) = kv_layers(arch, p as u32);
    let kv = |tokens: u128| -> Expr {
        let head = match arch.mla {
            Some(_) => Expr::new(&[Sym("b", s.workload.batch.get() as u128)]),
            None => Expr::new(&[Num(2), Sym("b", s.workload.batch.get() as u128), Mul]),
        };
        // Token-layers held: full-context layers keep every token, windowed ones ≤ W.
        let held = if local > 0 {
            let (g, w, tk) = (Sym("L_g", global), Sym("L_w", local), Sym("T", tokens));
            head.then(&[
                g,
                tk,
                Mul,
                w,
                tk,
                Sym("W", arch.window as u128),
                Min,
                Mul,
                Add,
                Mul,
            ])
        } else {
            head.then(&[Sym("T", tokens), Mul, Sym("L_s", global), Mul])
        };
        let per_token = match arch.mla {
            Some(m) => {
                let (r, d) = (
                    Sym("r_kv", m.kv_rank as u128),
                    Sym("d_rope", m.rope_dim as u128),
                );
                held.then(&[r, d, Add, Mul])
            }
            None => {
                let a = Sym("a_kv", arch.kv_heads as u128);
                held.then(&[a, Sym("t", t as u128), DivCeil, Mul])
                    .then(&[Sym("d", arch.head_dim as u128), Mul])
            }
        };
        per_token.then(&[Sym("bits", kv_bits), Mul, Num(8), Div])
    };
    let ctx = || {
        let layers = if local > 0 {
            "L_g full-context and L_w windowed layers on the most loaded stage"
        } else {
            "L_s = layers on the most loaded stage, ⌈L/p⌉"
        };
        format!("{layers}; L={}, p={p}, kv_dtype bits", arch.layers)
    };
    let seq = s.workload.seq.get() as u128;
    let (mech, comp, gpu) = (Mech::KvPrefill, Component::KvCache, Location::Gpu);
    let pre = [Phase::Prefill];
    ledger.push_expr(&pre, mech, comp, gpu, &kv(seq), "T = s", ctx, SRC_KV);
    let full = kv(seq + s.workload.gen as u128);
    let dec = [Phase::Decode];
    ledger.push_expr(
        &dec,
        Mech::KvDecode,
        comp,
        gpu,
        &full,
        "T = s + n",
        ctx,
        SRC_KV,
    );
}

/// Eager attention's score tensors at the moment of its softmax, for `tokens` queries over
/// `keys` keys, and the additive mask the model builds once per forward; 0 for flash/SDPA.
///
/// # Formula
/// ```text
/// A_e = b·⌈a/t⌉·T·S·(k + 4 + u) + b·T·S·k      (eager; u = 4 when k < 4, else 0)
/// A_e = b·⌈a/t⌉·T·S·2·k + b·T·S·k              (softmax in the model's dtype: GPT-2)
/// ```
/// The masked scores (`k`), their fp32 upcast that `softmax(…, dtype=float32)` takes first
/// when `k < 4` (`u`), and its fp32 output, alive together; then the 4-D additive mask
/// (`b·1·T·S`, model dtype) that every layer reads. `T` queries (`s` at prefill, 1 per
/// decoded token), `S` keys (`s`, then up to `s + n`). GPT-2's own eager attention takes
/// the softmax in the model's dtype: its peak is the score product and the scaled scores,
/// two tensors of `k` bytes (`Arch::softmax_in_dtype`; in fp32 both forms give 8 bytes).
/// Source: Hugging Face `eager_attention_forward` (transformers 5.24: matmul · scaling +
/// mask, `softmax(dtype=torch.float32).to(query.dtype)`); measured with MemTracker
/// (`tools/measure_hf.py`, Llama shape h = 256, a = 8, b = 1, s = 512, bf16: the prefill
/// working set 23.1 MB = 10·8·512² + 2·512² + the layer's other tensors).
///
/// GPT-2's form: traced with MemTracker (`prefill/gpt2/s/bf16/eager/ltk0/b1s512` peaks at the
/// `* scaling` multiply, modeling_gpt2.py:59, with two bf16 `[8, 512, 512]` tensors).
///
/// # Example
/// b = 1, a = 8, t = 1, T = S = 512, bf16 (k = 2, u = 4):
/// 8·512²·10 + 512²·2 = 20,971,520 + 524,288 = 21,495,808 B; GPT-2's form:
/// 8·512²·4 + 512²·2 = 8,912,896 B.
fn eager_scores(s: &Scenario, arch: &Arch, k: u64, t: u64, tokens: u128, keys: u128) -> Expr {
    let kk = Sym("k", k as u128);
    if arch.softmax_in_dtype {
        return score_tensors(s, arch, t, tokens, keys, k, &[Num(2), Mul, kk, Mul]);
    }
    let u = Sym("u", if k < 4 { 4 } else { 0 });
    score_tensors(s, arch, t, tokens, keys, k, &[kk, Num(4), Add, u, Add, Mul])
}

/// Score-sized tensors of eager attention, `b·⌈a/t⌉·T·S·c + b·T·S·k` with the bytes per
/// score element `c` given as the tokens that multiply the stack's top (`c` = `k + 4 + u`,
/// `2·k` or `k`), plus the additive mask; 0 with flash/SDPA. See [`eager_scores`] and
/// [`eager_probs`] for the formulas and sources.
fn score_tensors(
    s: &Scenario,
    arch: &Arch,
    t: u64,
    tokens: u128,
    keys: u128,
    k: u64,
    per_element: &[Tok],
) -> Expr {
    if s.activations.attn != crate::scenario::Attn::Eager {
        return Expr::new(&[Num(0)]);
    }
    let b = Sym("b", s.workload.batch.get() as u128);
    let (tq, sk) = (Sym("T", tokens), Sym("S", keys));
    let heads = [
        b,
        Sym("a", arch.heads as u128),
        Sym("t", t as u128),
        DivCeil,
        Mul,
        tq,
        Mul,
        sk,
        Mul,
    ];
    let mask = [b, tq, Mul, sk, Mul, Sym("k", k as u128), Mul, Add];
    Expr::new(&heads).then(per_element).then(&mask)
}

/// What eager attention leaves alive after it returns: the probabilities (the softmax's
/// output in the model's dtype, returned as `attn_weights` and held by the decoder layer's
/// locals through its MLP), and the additive mask; 0 for flash/SDPA (which return none).
///
/// # Formula
/// `W_e = b·⌈a/t⌉·T·S·k + b·T·S·k`
///
/// Source: Hugging Face decoder layers (transformers 5.24) keep the attention's second
/// output (`hidden_states, self_attn_weights = self.self_attn(…)`, or `_`) until they return;
/// traced with MemTracker on `prefill/gemma2/m/fp32/eager/ltk1/b2s384`: the peak is in the
/// last layer's MLP with the fp32 `[2, 6, 384, 384]` probabilities (7,077,888 B) alive.
///
/// # Example
/// b = 2, a = 6, t = 1, T = S = 384, fp32: 2·6·384²·4 + 2·384²·4 = 8,257,536 B.
fn eager_probs(s: &Scenario, arch: &Arch, k: u64, t: u64, tokens: u128, keys: u128) -> Expr {
    score_tensors(s, arch, t, tokens, keys, k, &[Sym("k", k as u128), Mul])
}

/// Per-token width of the attention's transient tensors at inference (beyond the three
/// `h`-wide ones), and its text.
///
/// # Formula
/// `w_a = (a + 2·a_kv)·d + 2·a·d·[a_kv < a]` — q, k and v, and the copies `repeat_kv` makes
/// of k and v for `a` heads (grouped-query attention only: with `a_kv = a` it returns its
/// input, and no copy is made).
///
/// Source: Hugging Face `repeat_kv` (transformers 5.24, `if n_rep == 1: return
/// hidden_states`); traced with MemTracker on GPT-2 (`prefill/gpt2/s/bf16/eager/ltk0`: the
/// `c_attn` output, no copies) and Llama (`prefill/llama/s/bf16/eager/ltk0`: two copies).
///
/// # Example
/// Llama shape a = 8, a_kv = 2, d = 32: (8 + 4)·32 + 2·8·32 = 896; GPT-2 a = a_kv = 8:
/// (8 + 16)·32 = 768.
fn attention_width(arch: &Arch) -> (u128, String) {
    let (a, kv, d) = (
        arch.heads as u128,
        arch.kv_heads as u128,
        arch.head_dim as u128,
    );
    let r = u128::from(kv < a);
    let w = (a + 2 * kv) * d + r * 2 * a * d;
    (
        w,
        format!("w_a = (a + 2·a_kv)·d + 2·a·d·[a_kv < a] = ({a} + 2·{kv})·{d} + {r}·2·{a}·{d}"),
    )
}

/// Per-token width of a mixture-of-experts layer's transient tensors at inference (Hugging
/// Face's grouped dispatch), and its text.
///
/// # Formula
/// ```text
/// shared  = m·n_s·f_e                         the shared experts run first (their MLP's tensors)
/// routed  = top_k·(h + u·f_e) + [n_s > 0]·h   then each token's routed copies, the shared output
///                                             kept: the gathered input and, per copy, u = 4
///                                             (SwiGLU: the fused gate-up output 2·f_e, the
///                                             activation and the product) or u = 2 (GELU)
/// w_m     = max(routed, shared)
/// ```
/// Source: transformers 5.24 `integrations/moe.py` (`grouped_mm_experts_forward`: the hidden
/// states gathered per routed copy, `_grouped_linear` for gate-up, then `act_fn(gate) * up`;
/// Qwen2-MoE's block calls its shared expert before the routed ones). Traced with MemTracker:
/// `infer/mixtral/s/fp32/sdpa/static/gen32/b3s128` peaks at that product with `[768, 256]`,
/// `[768, 1024]`, `[768, 512]`, `[768, 512]` fp32 tensors for 384 tokens × top-2;
/// `infer/qwen2_moe/s/fp32/sdpa/static/gen32/b3s128` the same with the shared output `[384, 256]`.
///
/// # Example
/// Mixtral shape h = 256, f_e = 512, top-2: 2·(256 + 4·512) = 4,608; Qwen2-MoE shape h = 256,
/// f_e = 256, top-2, n_s = 2: max(2·(256 + 4·256) + 256, 3·2·256) = 2,816.
fn moe_width(arch: &Arch) -> (u128, String) {
    let (h, fe) = (arch.hidden as u128, arch.expert_ffn() as u128);
    let (k, ns, m) = (
        arch.top_k.max(1) as u128,
        arch.shared_experts as u128,
        arch.mlp.matrices() as u128,
    );
    let u = if arch.mlp == crate::model::Mlp::Swiglu {
        4
    } else {
        2
    };
    let kept = u128::from(ns > 0);
    let routed = k * (h + u * fe) + kept * h;
    (
        routed.max(m * ns * fe),
        format!(
            "w_m = max(top_k·(h + {u}·f_e) + [n_s > 0]·h, m·n_s·f_e) = max({k}·({h} + {u}·{fe}) + {kept}·{h}, {m}·{ns}·{fe})"
        ),
    )
}

/// Per-token width of the MLP's transient tensors at inference, and its text.
///
/// # Formula
/// `w_m = m·f`, or `4·f` for a GELU in Python ops (`gelu_ops`): GPT-2's `gelu_new`,
/// `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`, peaks at `0.044715·x³` with `x`, `0.5·x`,
/// `x³` and that product alive.
///
/// Source: traced with MemTracker (transformers 5.24, torch 2.15, CPU):
/// `prefill/gpt2/m/fp32/sdpa/ltk1/b2s384` peaks at `aten.mul` in `gelu_new`
/// (activations.py:66) with four `b·s·f` fp32 tensors (25,165,824 B).
///
/// # Example
/// GPT-2 shape f = 2,048: 4·2,048 = 8,192; Llama shape (SwiGLU, f = 688): 3·688 = 2,064.
fn mlp_width(s: &Scenario, arch: &Arch) -> (u128, String) {
    if arch.experts > 0 && s.stack.framework != crate::scenario::Framework::Megatron {
        return moe_width(arch);
    }
    let f = arch.active_ffn();
    let python_gelu = arch.mlp == crate::model::Mlp::Gelu
        && arch.gelu_ops
        && s.stack.framework != crate::scenario::Framework::Megatron;
    if python_gelu {
        (4 * f, format!("w_m = 4·f = 4·{f} (gelu_new in Python ops)"))
    } else {
        let m = arch.mlp.matrices() as u128;
        (m * f, format!("w_m = m·f = {m}·{f}"))
    }
}

/// An eager-attention term of the working set: its symbol and the text that defines it
/// (`None` when it is 0: flash / SDPA attention).
type EagerTerm = Option<(Tok, String)>;

fn eager_term(name: &'static str, e: &Expr) -> EagerTerm {
    let v = e.eval_u128().unwrap_or(0);
    (v > 0).then(|| {
        (
            Sym(name, v),
            format!("; {name} = {} ({})", e.symbols(), e.values()),
        )
    })
}

/// The symbols the working set's formulas share: bytes per value `k`, batch `b`, hidden
/// `h`, TP degree `t`, vocabulary `V`, the attention's and the MLP's widths.
#[derive(Clone, Copy)]
struct WsSyms {
    k: Tok,
    b: Tok,
    h: Tok,
    t: Tok,
    vocab: Tok,
    w_a: Tok,
    w_m: Tok,
}

impl WsSyms {
    /// One layer's moment: `k·b·T·(3h + ⌈w/t⌉)`.
    fn moment(&self, tokens: Tok, w: Tok) -> Expr {
        let WsSyms { k, b, h, t, .. } = *self;
        Expr::new(&[
            k,
            b,
            Mul,
            tokens,
            Mul,
            Num(3),
            h,
            Mul,
            w,
            t,
            DivCeil,
            Add,
            Mul,
        ])
    }

    /// One layer's two moments, the attention's with its eager scores and the MLP's with
    /// eager attention's returned probabilities: the larger counts.
    fn layer(&self, tokens: Tok, ae: &EagerTerm, we: &EagerTerm) -> Expr {
        let plus = |e: Expr, term: &EagerTerm| match term {
            Some((sym, _)) => e.then(&[*sym, Add]),
            None => e,
        };
        plus(self.moment(tokens, self.w_a), ae)
            .then(plus(self.moment(tokens, self.w_m), we).tokens())
            .then(&[Max])
    }

    /// [`Self::layer`], then the last position's fp32 logits `4·b·V`.
    fn work(&self, tokens: Tok, ae: &EagerTerm, we: &EagerTerm) -> Expr {
        self.layer(tokens, ae, we)
            .then(&[Num(4), self.b, Mul, self.vocab, Mul, Add])
    }
}

/// The working set's context text: the eager terms' definitions, then the widths'.
fn workspace_context(ae: &EagerTerm, we: &EagerTerm, ws: &str) -> String {
    match (ae, we) {
        (Some((_, a)), Some((_, w))) => format!(
            "eager attention's scores at the softmax and the additive mask{a}; its probabilities, returned and held through the MLP{w}{ws}"
        ),
        _ => ws.trim_start_matches("; ").to_string(),
    }
}

const WORKSPACE_SOURCE: &str = "memfit: one layer's forward tensors (flash/SDPA attention, nothing kept) + last-position fp32 logits; measured with MemTracker (tools/measure_pytorch.py: prefill working set 8,699,904 B = 4·2·384·(3·256 + 3·688), Llama shape)";

/// The prefill's working set by `logits`: `(expression, note, source)`, from one layer's
/// tensors at T = s (`at_layer`) and that plus the last position's logits (`last`).
fn prefill_workspace(
    s: &Scenario,
    arch: &Arch,
    sy: &WsSyms,
    seq: Tok,
    at_layer: Expr,
    last: Expr,
) -> (Expr, &'static str, &'static str) {
    let WsSyms { k, b, t, vocab, .. } = *sy;
    match s.workload.logits {
        Logits::All => {
            // Every prompt position's logits and the loss over them (evaluation,
            // perplexity): the larger of the two moments counts.
            let upcast = Sym(
                "u",
                if s.numerics.precision.compute_bytes() < 4 {
                    4
                } else {
                    0
                },
            );
            let logits = [
                b, seq, Mul, vocab, Mul, k, upcast, Add, Num(4), Add, Mul, t, DivCeil,
            ];
            (
                at_layer.then(&logits).then(&[Max]),
                "every position's logits: u = 4 when their fp32 upcast is taken (k < 4), 4 for the loss's log-softmax",
                "every position's logits, their fp32 upcast and the loss's log-softmax (Hugging Face forward with labels; measured with MemTracker, tools/measure_pytorch.py --impl-into)",
            )
        }
        // Every prompt position's logits in the model's dtype and no loss
        // (`logits_to_keep=0`): the LM head's output follows the last layer. Gemma 2's final
        // soft-capping (`logits / cap`, `tanh`, `· cap`) holds two of them at each step:
        // `c = 2` with soft-capping, else 1.
        Logits::Prompt => (
            at_layer.then(&[
                Sym("c", if arch.softcap { 2 } else { 1 }),
                b,
                Mul,
                seq,
                Mul,
                vocab,
                Mul,
                k,
                Mul,
                t,
                DivCeil,
                Max,
            ]),
            "every prompt position's logits in the model's dtype, no loss (logits_to_keep=0); c = 2 with Gemma 2's final soft-capping (its division and tanh each allocate while the previous tensor lives), else 1",
            "Hugging Face `model(input_ids, logits_to_keep=0)`: `lm_head(hidden_states[:, slice(-0, None)])` keeps every position, in the model's dtype; Gemma 2's `final_logit_softcapping` (modeling_gemma2.py: `logits = logits / cap; logits = torch.tanh(logits); logits = logits * cap`)",
        ),
        Logits::Last => (
            last,
            "one layer's tensors at T = s tokens, then the last position's fp32 logits",
            WORKSPACE_SOURCE,
        ),
    }
}

/// One layer's transient forward tensors and the logits, at prefill and per decoded
/// token; see [`inference_items`] for the formula (`logits=all`: every position's).
fn workspace_items(s: &Scenario, arch: &Arch, k: u64, t: u64, ledger: &mut Ledger) {
    let (sq, n) = (s.workload.seq.get() as u128, s.workload.gen as u128);
    // Eager attention's scores (0 with flash/SDPA): at prefill T = S = s; per decoded token
    // T = 1 over at most S = s + n keys; and what eager attention leaves alive through the
    // MLP: its returned probabilities.
    let ae_pre = eager_term("A_e", &eager_scores(s, arch, k, t, sq, sq));
    let ae_dec = eager_term("A_e", &eager_scores(s, arch, k, t, 1, sq + n));
    let we_pre = eager_term("W_e", &eager_probs(s, arch, k, t, sq, sq));
    let we_dec = eager_term("W_e", &eager_probs(s, arch, k, t, 1, sq + n));
    let (w_a, w_m) = (attention_width(arch), mlp_width(s, arch));
    let ws = format!("; {}, {}", w_a.1, w_m.1);
    let sy = WsSyms {
        k: Sym("k", k as u128),
        b: Sym("b", s.workload.batch.get() as u128),
        h: Sym("h", arch.hidden as u128),
        t: Sym("t", t as u128),
        vocab: Sym("V", arch.vocab as u128),
        w_a: Sym("w_a", w_a.0),
        w_m: Sym("w_m", w_m.0),
    };
    let (comp, gpu) = (Component::Workspace, Location::Gpu);
    let seq = Sym("s", s.workload.seq.get() as u128);
    // One layer's tensors at T = s, for the variants whose logits follow the last layer.
    let at_layer = sy.layer(seq, &ae_pre, &we_pre);
    let last = sy.work(seq, &ae_pre, &we_pre);
    let (e, note, pre_src) = prefill_workspace(s, arch, &sy, seq, at_layer, last);
    let pre_ctx = || workspace_context(&ae_pre, &we_pre, &ws);
    ledger.push_expr(
        &[Phase::Prefill],
        Mech::PrefillWorkspace,
        comp,
        gpu,
        &e,
        note,
        pre_ctx,
        pre_src,
    );
    let e = sy.work(Num(1), &ae_dec, &we_dec);
    let dec_ctx = || workspace_context(&ae_dec, &we_dec, &ws);
    ledger.push_expr(
        &[Phase::Decode],
        Mech::DecodeWorkspace,
        comp,
        gpu,
        &e,
        "one decoded token",
        dec_ctx,
        WORKSPACE_SOURCE,
    );
}

#[cfg(test)]
mod tests {
    use super::kv_layers;
    use crate::contract::query::decode;
    use crate::estimate::{estimate, Component};

    /// The largest item of component `c` in the estimate of `query`.
    /// The doc example of `eager_scores`, and what eager attention adds to the prefill's
    /// working set: the scores at the attention's moment, the returned probabilities at the
    /// MLP's (`eager_probs`), the larger of the two counting.
    #[test]
    fn eager_scores_by_hand() {
        let q = "model=llama-2-7b&hidden=256&heads=8&kv_heads=2&ffn=688&vocab=4096&layers=4\
                 &mode=infer&precision=bf16&batch=1&seq=512&gen=0&attn=";
        let (s, _) = decode(&format!("{q}eager"));
        let e = super::eager_scores(&s.scenario, &s.scenario.arch(), 2, 1, 512, 512);
        // b·⌈a/t⌉·T·S·(k + 4 + u) + b·T·S·k with b = 1, a = 8, T = S = 512, k = 2, u = 4.
        let want = 8 * 512 * 512 * (2 + 4 + 4) + 512 * 512 * 2;
        assert_eq!(e.eval_u128(), Some(want));
        assert_eq!(want, 21_495_808);
        let probs = super::eager_probs(&s.scenario, &s.scenario.arch(), 2, 1, 512, 512);
        assert_eq!(probs.eval_u128(), Some(8 * 512 * 512 * 2 + 512 * 512 * 2));
        // The moments, k·b·s·(3h + w): attention w_a = (8 + 2·2)·32 + 2·8·32 = 896, MLP
        // w_m = 3·688 = 2,064; + 4·b·V = 16,384 for the last position's fp32 logits.
        let (m_a, m_m) = (2 * 512 * (768 + 896), 2 * 512 * (768 + 2064));
        assert_eq!((m_a, m_m), (1_703_936, 2_899_968));
        let work = |attn: &str| largest(&format!("{q}{attn}"), Component::Workspace);
        assert_eq!(work("sdpa"), m_m + 16_384);
        assert_eq!(
            work("eager"),
            (m_a + 21_495_808).max(m_m + 4_718_592) + 16_384
        );
        // MemTracker's ACT of that run less its KV cache: 23,662,592 − 524,288 = 23,138,304
        // (prefill/llama/s/bf16/eager/ltk0/b1s512, whose logits come after: memfit +0.3 %).
        assert_eq!(work("eager"), 23_216_128);
        assert_eq!(work("flash"), work("sdpa"));
        // GPT-2's softmax in the model's dtype: two bf16 score tensors, 8·512²·2·2 + 512²·2.
        let g = "model=gpt2&hidden=256&heads=8&kv_heads=8&ffn=1024&vocab=4096&layers=4\
                 &mode=infer&precision=bf16&batch=1&seq=512&gen=0&attn=eager";
        let (s, _) = decode(g);
        let e = super::eager_scores(&s.scenario, &s.scenario.arch(), 2, 1, 512, 512);
        assert_eq!(e.eval_u128(), Some(8_912_896));
        let (s, _) = decode(&format!("{g}&softmax_in_dtype=0"));
        let e = super::eager_scores(&s.scenario, &s.scenario.arch(), 2, 1, 512, 512);
        assert_eq!(e.eval_u128(), Some(21_495_808));
    }

    /// The doc examples of `moe_width` (the traced Mixtral and Qwen2-MoE shapes), and that a
    /// dense model keeps `m·f`.
    #[test]
    fn moe_width_by_hand() {
        let arch = |q: &str| decode(q).0.scenario.arch();
        let mixtral = arch("model=mixtral-8x7b&hidden=256&ffn=512&experts=4&top_k=2");
        assert_eq!(super::moe_width(&mixtral).0, 2 * (256 + 4 * 512));
        let qwen = arch(
            "model=mixtral-8x7b&hidden=256&ffn=1024&moe_ffn=256&experts=4&top_k=2&shared_experts=2",
        );
        assert_eq!(
            super::moe_width(&qwen).0,
            (2 * (256 + 4 * 256) + 256).max(3 * 2 * 256)
        );
        assert_eq!(super::moe_width(&qwen).0, 2_816);
        let (s, _) = decode("model=llama-2-7b&mode=infer");
        assert_eq!(
            super::mlp_width(&s.scenario, &s.scenario.arch()).0,
            3 * 11_008
        );
    }

    /// Hugging Face GPT-2 at prefill (traced: `prefill/gpt2/m/fp32/sdpa/ltk1/b2s384` peaks in
    /// the last block's `gelu_new` with four f-wide fp32 tensors).
    #[test]
    fn gpt2_gelu_new_prefill_by_hand() {
        let q = "model=gpt2&hidden=512&heads=8&ffn=2048&vocab=8192&layers=2&mode=infer\
                 &precision=fp32&batch=2&seq=384&gen=0&attn=sdpa";
        let work = largest(q, Component::Workspace);
        // k·b·s·(3h + 4f) + 4·b·V = 4·2·384·(1,536 + 8,192) + 4·2·8,192.
        assert_eq!(work, 29_884_416 + 65_536);
        // MemTracker's ACT less the KV cache: 40,111,104 − 6,291,456 = 33,819,648. What memfit
        // leaves out (−3.8 % of the run's total): the attention output and the residual sum
        // GPT-2's block keeps through its MLP (2·b·s·h·4 = 3,145,728), the position
        // embeddings (s·h·4 = 786,432) and position ids (3,072); the logits it adds come later.
        assert_eq!(33_819_648 - 29_884_416, 3_145_728 + 786_432 + 3_072);
        // A fused GELU: m·f = 2f.
        assert_eq!(
            largest(&format!("{q}&gelu_ops=0"), Component::Workspace),
            4 * 2 * 384 * (1_536 + 2 * 2_048) + 65_536
        );
    }

    fn largest(query: &str, c: Component) -> u64 {
        let (s, w) = decode(query);
        let s = s.scenario;
        assert!(w.is_empty(), "{w:?}");
        estimate(&s)
            .items
            .iter()
            .filter(|i| i.component == c)
            .map(|i| i.bytes)
            .max()
            .unwrap()
    }

    fn kv(query: &str) -> u64 {
        largest(query, Component::KvCache)
    }

    /// The prefill's working set of the measured runs (`tests/data/pytorch_measurements.json`
    /// "infer": MemTracker's ACT less the harness's cache of s + n tokens): the layer's
    /// input, the residual, a norm's output and the MLP's intermediates, plus the last
    /// position's fp32 logits memfit adds on top.
    #[test]
    fn prefill_workspace_of_the_measured_runs() {
        let work = |q: &str| largest(q, Component::Workspace);
        let base = "mode=infer&framework=pytorch&batch=2&seq=384&gen=64&precision=fp32&vocab=4096&layers=4&hidden=256&heads=8";
        // Llama shape: measured 10,534,912 − 2·2·448·4·2·32·4 = 8,699,904 = 4·2·384·(3·256 + 3·688).
        let llama = work(&format!(
            "model=llama-2-7b&{base}&kv_heads=2&ffn=688&tied=0"
        ));
        assert_eq!(llama, 4 * 2 * 384 * (3 * 256 + 3 * 688) + 4 * 2 * 4096);
        assert_eq!(
            10_534_912 - 2 * 2 * 448 * 4 * 2 * 32 * 4 + 4 * 2 * 4096,
            llama
        );
        // GPT-2 shape (GELU: fc output and its activation): 15,990,784 − 7,340,032.
        // The harness's own GPT-2 module calls a fused GELU.
        let gpt2 = work(&format!(
            "model=gpt2&{base}&kv_heads=8&ffn=1024&tied=1&gelu_ops=0"
        ));
        assert_eq!(gpt2, 4 * 2 * 384 * (3 * 256 + 2 * 1024) + 4 * 2 * 4096);
        assert_eq!(
            15_990_784 - 2 * 2 * 448 * 4 * 8 * 32 * 4 + 4 * 2 * 4096,
            gpt2
        );
    }

    /// The doc example (Gemma 2 9B at 32,768 tokens), the split per stage, and a window
    /// that the context never reaches.
    #[test]
    fn sliding_window_kv_by_hand() {
        let q = "model=gemma-2-9b&mode=infer&seq=32768&gen=0&batch=1&precision=bf16";
        assert_eq!(kv(q), 2 * (21 * 32_768 + 21 * 4096) * 8 * 256 * 2);
        assert_eq!(kv(&format!("{q}&window=0")), 2 * 42 * 32_768 * 8 * 256 * 2);
        // Shorter than the window: the same as full attention.
        let short = "model=gemma-2-9b&mode=infer&seq=1000&gen=0&batch=1&precision=bf16";
        assert_eq!(kv(short), kv(&format!("{short}&window=0")));
        // Two stages of 21 layers: the worst stage may hold 21 global layers.
        let a = &crate::model::preset("gemma-2-9b").unwrap().arch;
        assert_eq!(kv_layers(a, 1), (21, 21));
        assert_eq!(kv_layers(a, 2), (21, 0));
        assert_eq!(kv_layers(a, 7), (6, 0));
        // A depth override keeps the share of windowed layers: 10 of 20.
        let s = decode("model=gemma-2-9b&layers=20").0.scenario;
        assert_eq!(s.arch().local_layers, 10);
    }
}

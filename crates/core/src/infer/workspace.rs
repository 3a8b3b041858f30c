//! One layer's transient forward tensors at inference (the prefill's and a decoded
//! token's working set) and the logits after the last layer: the mechanisms the
//! tensor-by-tensor traces of Hugging Face inference showed (eager attention's scores and
//! returned probabilities, `repeat_kv`'s copies, GPT-2's `gelu_new`, MoE dispatch, the
//! final soft-capping).

use super::scores::{eager_probs, eager_scores};
use crate::expr::{Expr, Tok, Tok::*};
use crate::ledger::{Component, Ledger, Location, Mech, Phase};
use crate::model::Arch;
use crate::scenario::{Logits, Scenario};

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
        arch.heads.get() as u128,
        arch.kv_heads.get() as u128,
        arch.head_dim.get() as u128,
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
/// routed  = top_k·max(h + u·f_e, 4·h)        then each token's routed copies, the shared output
///           + [n_s > 0]·h                     kept: the gathered input and, per copy, u = 4
///                                             (SwiGLU: the fused gate-up output 2·f_e, the
///                                             activation and the product) or u = 2 (GELU);
///                                             or, at the end, four h-wide tensors per copy
/// w_m     = max(routed, shared)
/// ```
/// The end of `grouped_mm_experts_forward` holds four `S·h` tensors (`S = T·top_k`): the
/// gathered input `selected_hidden_states_g` and the down projection's `proj_out` (both still
/// locals), `weighted_out = proj_out · weights` and its reordering `weighted_out[inv_perm]`.
/// That moment is the larger when `4·h > h + u·f_e` (fine-grained experts, `f_e < 3·h/4`
/// with SwiGLU): OLMoE (h = 2,048, f_e = 1,024). Found on the CUDA calibration run DJ08
/// (OLMoE-1B-7B, b = 8, prompt 1,024): its allocator trace at the prefill's peak holds four
/// 268,435,456 B tensors (`65,536·2,048·2`), where memfit counted `h + 4·f_e` per copy.
/// Source: transformers 5.24 `integrations/moe.py` (`grouped_mm_experts_forward`: the hidden
/// states gathered per routed copy, `_grouped_linear` for gate-up, then `act_fn(gate) * up`;
/// Qwen2-MoE's block calls its shared expert before the routed ones). Traced with MemTracker:
/// `infer/mixtral/s/fp32/sdpa/static/gen32/b3s128` peaks at that product with `[768, 256]`,
/// `[768, 1024]`, `[768, 512]`, `[768, 512]` fp32 tensors for 384 tokens × top-2;
/// `infer/qwen2_moe/s/fp32/sdpa/static/gen32/b3s128` the same with the shared output `[384, 256]`.
///
/// # Example
/// Mixtral shape h = 256, f_e = 512, top-2: 2·max(256 + 4·512, 4·256) = 4,608; Qwen2-MoE
/// shape h = 256, f_e = 256, top-2, n_s = 2: max(2·(256 + 4·256) + 256, 3·2·256) = 2,816;
/// OLMoE h = 2,048, f_e = 1,024, top-8: 8·max(2,048 + 4,096, 8,192) = 65,536.
pub(super) fn moe_width(arch: &Arch) -> (u128, String) {
    let (h, fe) = (arch.hidden.get() as u128, arch.expert_ffn() as u128);
    let (k, ns, m) = (
        arch.routed_k().get() as u128,
        arch.shared_experts as u128,
        arch.mlp.matrices() as u128,
    );
    let u = if arch.mlp == crate::model::Mlp::Swiglu {
        4
    } else {
        2
    };
    let kept = u128::from(ns > 0);
    let routed = k * (h + u * fe).max(4 * h) + kept * h;
    (
        routed.max(m * ns * fe),
        format!(
            "w_m = max(top_k·max(h + {u}·f_e, 4·h) + [n_s > 0]·h, m·n_s·f_e) = max({k}·max({h} + {u}·{fe}, 4·{h}) + {kept}·{h}, {m}·{ns}·{fe})"
        ),
    )
}

/// Per-token width of what is alive beside a layer's own tensors at inference, `h_l`: the
/// layer's input (which the caller still holds), the residual and a norm's output, `3·h`;
/// and, in a Hugging Face model (framework=pytorch, two layers or more), the embedding's
/// output and the rotary cos and sin, which the model's forward computes once and holds
/// for every layer.
///
/// # Formula
/// ```text
/// h_l = 3·h                          plain modules (`modules=plain`: memfit's own harness),
///                                    other frameworks
/// h_l = 3·h + h + [rotary]·2·d·n_r   Hugging Face: + inputs_embeds (a local of
///     + [positions > 0]·h            LlamaModel.forward until it returns) + cos, sin
///                                    (n_r pairs, `rope_sets`), + the learned position
///                                    embeddings' output
/// ```
/// Source: transformers 5.17 `modeling_llama.py` (`LlamaModel.forward`: `inputs_embeds`,
/// `position_embeddings = self.rotary_emb(...)` before the layers); the layer-input,
/// residual and norm terms measured with MemTracker on memfit's own modules
/// (`tools/measure_pytorch.py`). Found on the CUDA calibration `generate` runs (J01, J02,
/// J05, J07 were 1.3–3.3 % low by 2.1–2.7·h bytes a prompt token); the CPU tracker's
/// held-out transformers runs moved from 0.8 % to 0.5 % median with it, untuned.
///
/// A model with learned absolute positions (GPT-2, OPT) also holds the position
/// embeddings' output, `wpe(position_ids)`, beside `inputs_embeds`: `generate` builds
/// `position_ids` from the attention mask, one row per sequence (`attention_mask.long()
/// .cumsum(-1) − 1`), so it is `b·s·h` like the token embeddings (`+ [positions > 0]·h`);
/// a forward alone (`gen=0`) takes `arange(s).unsqueeze(0)`, one row shared by the batch:
/// `s·h`, `⌈h/b⌉` a token.
/// Source: transformers 5.17 `modeling_gpt2.py` (`GPT2Model.forward`: `position_embeds =
/// self.wpe(position_ids)`), `generation/utils.py` (`_prepare_position_ids_for_generation`).
/// Found on the CUDA calibration run DJ10 (GPT-2 medium, b = 32, prompt 512): its allocator
/// trace at the prefill's peak (in the last layer's `gelu_new`) holds six `b·s·h` bf16
/// tensors (33,554,432 B each) beside the 48 K/V tensors and four `b·s·f` ones, where memfit
/// counted four (this term and GPT-2's `attn_output`, see [`mlp_width`]).
///
/// # Example
/// Llama 3.2 3B (h = 3,072, d = 128): h_l = 4·3,072 + 256 = 12,544; without the model's
/// tensors 9,216. GPT-2 medium (h = 1,024): h_l = 4·1,024 + 1,024 = 5,120. Gemma 3 1B
/// (h = 1,152, d = 256, n_r = 2): 4·1,152 + 2·256·2 = 5,632.
fn held_width(s: &Scenario, arch: &Arch) -> u128 {
    let h = arch.hidden.get() as u128;
    if s.stack.framework != crate::scenario::Framework::Pytorch
        || s.runtime.modules == crate::scenario::Modules::Plain
        || arch.layers.get() < 2
    {
        return 3 * h;
    }
    // Rotary cos/sin only where there is attention (a pure Mamba model has none).
    let rotary = if arch.positions == 0 && arch.attention_layers() > 0 {
        2 * arch.head_dim.get() as u128 * rope_sets(arch)
    } else {
        0
    };
    let rows = if s.workload.gen > 0 {
        1
    } else {
        s.workload.batch.get() as u128
    };
    let learned = u128::from(arch.positions > 0) * h.div_ceil(rows);
    4 * h + rotary + learned
}

/// How many rotary (cos, sin) pairs a Hugging Face model's forward computes and holds for
/// its layers, `n_r`: one per layer type when the layer types carry their own rope
/// parameters, as Gemma 3's sliding (θ = 10,000) and full (θ = 1,000,000) layers do;
/// otherwise one. memfit knows the Gemma 3 family by its per-head q/k norms with a mix of
/// windowed and full layers (Gemma 2 and gpt-oss mix them too, with one rotary embedding).
///
/// # Formula
/// ```text
/// n_r = 2   if qk_norm_head ∧ 0 < L_w < L     (Gemma 3: sliding and full attention)
///       1   otherwise
/// ```
/// Source: transformers 5.17 `modeling_gemma3.py` (`Gemma3TextModel.forward`: `for layer_type
/// in set(self.config.layer_types): position_embeddings[layer_type] = self.rotary_emb(…,
/// layer_type)`), against `modeling_gemma2.py` (one `position_embeddings`). Found on the CUDA
/// calibration runs DJ01 and DJ02 (Gemma 3 1B, b·s = 32,768): the allocator trace at the
/// prefill's peak holds 56 tensors of `b·s·256·2 = 16,777,216` B, the 52 K/V and four
/// cos/sin, where memfit counted two.
///
/// # Example
/// Gemma 3 1B (L = 26, L_w = 22, d = 256): n_r = 2, `2·d·n_r = 1,024` values a token;
/// Llama 3.2 3B: n_r = 1.
pub(crate) fn rope_sets(arch: &Arch) -> u128 {
    let mixed = arch.window > 0 && arch.local_layers > 0 && arch.local_layers < arch.layers.get();
    if arch.qk_norm_head && mixed {
        2
    } else {
        1
    }
}

/// Per-token width of what is alive beside a Mamba or linear-attention mixer's scan at
/// inference, `h_x`: [`held_width`] less the one `h` of the block's second half. The
/// mixer runs in the block's first half, where the residual is the block's input itself:
/// the caller's input, the norm's output and (Hugging Face) `inputs_embeds` and cos/sin.
///
/// # Formula
/// `h_x = h_l − h` for Hugging Face models (`h_l = 4·h + [rotary]·2·d`), else `h_l = 3·h`.
/// Source: transformers 5.24 `modeling_qwen3_next.Qwen3NextDecoderLayer.forward`
/// (`residual = hidden_states`, then `input_layernorm`, then `linear_attn`), likewise
/// `MambaBlock`, `Mamba2Block`, `NemotronHBlock`; read off the live tensors at the peak of
/// the calibration run `prefill/qwen3_next/s/fp32/sdpa/ltk1/b2s256`
/// (`tests/data/hf_ssm_measurements.json`: the embedding's output, the layer's input and
/// the norm's output, 3 × 524,288 B, and cos, sin 2 × 16,384 B).
///
/// # Example
/// Qwen3-Next's tracker shape (h = 256, d = 64): h_x = 4·256 + 128 − 256 = 1,024.
fn scan_held_width(s: &Scenario, arch: &Arch) -> u128 {
    let h = arch.hidden.get() as u128;
    let all = held_width(s, arch);
    if all > 3 * h {
        all - h
    } else {
        all
    }
}

/// Per-token width of the MLP's transient tensors at inference, and its text.
///
/// # Formula
/// `w_m = m·f`, or `4·f` for a fused gate‖up projection (Phi-3) or a GELU in Python ops
/// (`gelu_ops`): GPT-2's `gelu_new`,
/// `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`, peaks at `0.044715·x³` with `x`, `0.5·x`,
/// `x³` and that product alive. GPT-2's own block adds `h`: `GPT2Block.forward` keeps the
/// attention's output in its local `attn_output` after the residual add, through the MLP
/// (`w_m = 4·f + h`; GPT-2's modeling code is the one whose softmax runs in the model's
/// dtype, `Arch::softmax_in_dtype`). Source: transformers 5.17 `modeling_gpt2.py`
/// `GPT2Block.forward`; found on the CUDA calibration run DJ10 (see [`held_width`]).
///
/// Source: traced with MemTracker (transformers 5.24, torch 2.15, CPU):
/// `prefill/gpt2/m/fp32/sdpa/ltk1/b2s384` peaks at `aten.mul` in `gelu_new`
/// (activations.py:66) with four `b·s·f` fp32 tensors (25,165,824 B).
///
/// # Example
/// GPT-2 shape f = 2,048: 4·2,048 = 8,192 (GPT-2's own block, h = 512: 8,704); Llama shape
/// (SwiGLU, f = 688): 3·688 = 2,064.
pub(super) fn mlp_width(s: &Scenario, arch: &Arch) -> (u128, String) {
    if arch.experts > 0 && s.stack.framework != crate::scenario::Framework::Megatron {
        return moe_width(arch);
    }
    let f = arch.active_ffn();
    let python_gelu = arch.mlp == crate::model::Mlp::Gelu
        && arch.gelu_ops
        && s.stack.framework != crate::scenario::Framework::Megatron;
    if python_gelu && arch.softmax_in_dtype {
        let h = arch.hidden.get() as u128;
        let text =
            format!("w_m = 4·f + h = 4·{f} + {h} (gelu_new in Python ops, GPT-2's attn_output)");
        (4 * f + h, text)
    } else if python_gelu {
        (4 * f, format!("w_m = 4·f = 4·{f} (gelu_new in Python ops)"))
    } else if arch.fused_gate_up && arch.mlp == crate::model::Mlp::Swiglu {
        // Phi-3's gate_up_proj: gate and up are views of one 2·f output, alive with
        // silu(gate) and the product (the CUDA calibration run J04, Phi-4-mini: −1.7 % with
        // three f-wide tensors).
        (
            4 * f,
            format!("w_m = 4·f = 4·{f} (fused gate‖up: its 2·f output, silu, the product)"),
        )
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
    /// The prefill's Mamba scan transient `X_scan` (`ssm::scan_transient`), when the model
    /// has Mamba blocks.
    scan: Option<Tok>,
}

impl WsSyms {
    /// One layer's moment: `k·b·T·(h_l + ⌈w/t⌉)`, `h_l` the per-token width beside the
    /// layer's own tensors (`held_width`).
    fn moment(&self, tokens: Tok, w: Tok) -> Expr {
        let WsSyms { k, b, h, t, .. } = *self;
        Expr::new(&[k, b, Mul, tokens, Mul, h, w, t, DivCeil, Add, Mul])
    }

    /// One layer's two moments, the attention's with its eager scores and the MLP's with
    /// eager attention's returned probabilities: the larger counts.
    fn layer(&self, tokens: Tok, ae: &EagerTerm, we: &EagerTerm) -> Expr {
        let plus = |e: Expr, term: &EagerTerm| match term {
            Some((sym, _)) => e.then(&[*sym, Add]),
            None => e,
        };
        let e = plus(self.moment(tokens, self.w_a), ae)
            .then(plus(self.moment(tokens, self.w_m), we).tokens())
            .then(&[Max]);
        match self.scan {
            Some(x) => e.then(&[x, Max]),
            None => e,
        }
    }

    /// The larger of [`Self::layer`] and the moment after the last layer: what the model
    /// holds (`k·b·T·h_l`) with the last position's fp32 logits `4·b·V`. The logits are made
    /// after every layer's tensors are freed, so they do not add to a layer's moment.
    ///
    /// # Formula
    /// `max(layer, k·b·T·h_l + 4·b·V)`
    ///
    /// Source: transformers 5.17 `generation/utils.py` (`next_token_logits =
    /// outputs.logits[:, -1, :].to(copy=True, dtype=torch.float32)`, after the forward
    /// returned). Found on the CUDA calibration `generate` runs of set D: with the logits
    /// added to the layer's moment memfit was above each allocator trace's peak (plus the
    /// 32 MiB cuBLAS workspace) by 4·b·V within 0.02 % on all eight (DJ01 … DJ11: Gemma 3
    /// 1B, Mistral 7B, Qwen3 1.7B, Llama 3.2 1B, OLMoE, GPT-2 medium), whose peaks are in
    /// the last layer's MLP.
    ///
    /// # Example
    /// DJ02 (Gemma 3 1B, b = 32, s = 1,024, V = 262,144, bf16): the MLP's moment
    /// 2·32·1,024·(5,632 + 20,736) = 1,728,053,248 B; after the layers
    /// 2·32·1,024·5,632 + 4·32·262,144 = 402,653,184 B; the working set 1,728,053,248 B
    /// (33,554,432 B less than the sum).
    fn work(&self, tokens: Tok, ae: &EagerTerm, we: &EagerTerm) -> Expr {
        let WsSyms { k, b, h, vocab, .. } = *self;
        self.layer(tokens, ae, we).then(&[
            k,
            b,
            Mul,
            tokens,
            Mul,
            h,
            Mul,
            Num(4),
            b,
            Mul,
            vocab,
            Mul,
            Add,
            Max,
        ])
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

const WORKSPACE_SOURCE: &str = "memfit: one layer's forward tensors (flash/SDPA attention, nothing kept), or after the layers the last position's fp32 logits; measured with MemTracker (tools/measure_pytorch.py: prefill working set 8,699,904 B = 4·2·384·(3·256 + 3·688), Llama shape)";

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
            "one layer's tensors at T = s tokens, or after the layers the last position's fp32 logits",
            WORKSPACE_SOURCE,
        ),
    }
}

/// One layer's transient forward tensors and the logits, at prefill and per decoded
/// token; see [`inference_items`] for the formula (`logits=all`: every position's).
pub(super) fn workspace_items(s: &Scenario, arch: &Arch, k: u64, t: u64, ledger: &mut Ledger) {
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
        h: Sym("h_l", held_width(s, arch)),
        t: Sym("t", t as u128),
        vocab: Sym("V", arch.vocab.get() as u128),
        w_a: Sym("w_a", w_a.0),
        w_m: Sym("w_m", w_m.0),
        scan: None,
    };
    // The larger of a Mamba block's and a gated-DeltaNet block's scan transient.
    let mamba = arch.ssm_shape().map(|m| super::ssm::scan_transient(s, &m));
    let linear = arch
        .linear_shape()
        .map(|g| super::ssm::linear_transient(s, &g));
    let scan = match (mamba, linear) {
        (Some(a), Some(b)) => Some(if b.0 > a.0 { b } else { a }),
        (a, b) => a.or(b),
    };
    // The scan runs inside its block's first half: the held stream k·b·s·h_x stays beside it.
    let held = k as u128 * s.workload.batch.get() as u128 * sq * scan_held_width(s, arch);
    let pre = WsSyms {
        scan: scan.map(|x| Sym("X_scan", x.0.saturating_add(held))),
        ..sy
    };
    let ws_pre = match scan {
        Some((_, what)) => {
            format!("{ws}; X_scan = k·b·s·h_x + one Mamba / linear-attention block's scan transient (h_x = h_l − h where h_l > 3·h: the block's input is its residual): {what}")
        }
        None => ws.clone(),
    };
    let (comp, gpu) = (Component::Workspace, Location::Gpu);
    let seq = Sym("s", s.workload.seq.get() as u128);
    // One layer's tensors at T = s, for the variants whose logits follow the last layer.
    let at_layer = pre.layer(seq, &ae_pre, &we_pre);
    let last = pre.work(seq, &ae_pre, &we_pre);
    let (e, note, pre_src) = prefill_workspace(s, arch, &pre, seq, at_layer, last);
    let pre_ctx = || workspace_context(&ae_pre, &we_pre, &ws_pre);
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

//! Inference memory: weights in their storage dtype, the KV cache, and the
//! transient workspace of prefill and decode.

mod scores;
mod ssm;
mod workspace;

use super::expr::{Expr, Tok::*};
use super::ledger::{Component, Ledger, Location, Mech, Phase};
use super::model::Arch;
use super::quant::{self, Quant};
use super::scenario::{Count, Dtype, Layout, Scenario};
use workspace::workspace_items;

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
pub fn weight_bytes(psi: u64, quantisable: u64, dtype: Dtype, bits: u64, group: Count) -> u64 {
    weight_expr(psi, quantisable, dtype, bits, group).eval()
}

/// [`weight_bytes`] as an expression (`Ψ_q = min(quantisable, Ψ)`).
pub fn weight_expr(psi: u64, quantisable: u64, dtype: Dtype, bits: u64, group: Count) -> Expr {
    let (all, q) = (
        Sym("Ψ", psi as u128),
        Sym("Ψ_q", quantisable.min(psi) as u128),
    );
    let rest = [Num(2), all, q, Sub, Mul, Add];
    match dtype {
        Dtype::Fp8 => Expr::new(&[q]).then(&rest),
        Dtype::Int8 | Dtype::Int4 => {
            let codes = [Sym("bits", bits as u128), q, Mul, Num(8), DivCeil];
            let scales = [Num(2), q, Sym("g", group.get() as u128), DivCeil, Mul, Add];
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
    let g = s.numerics.quant_group;
    let (dtype, bits) = match q {
        Quant::Int8G => (Dtype::Int8, 8),
        Quant::Int4G => (Dtype::Int4, 4),
        Quant::None => (
            s.numerics.weight_dtype,
            s.numerics.weight_dtype.bits(s.numerics.precision),
        ),
        q => {
            let sh = quant::shares_in(arch, q, s.gguf(), g);
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
/// L_s = ⌈L/p⌉,  L_g = min(L_s, L_a − L_local),  L_w = min(L_s − L_g, L_local)
/// ```
/// with `L_a` the blocks with softmax attention (`L` for a transformer; a hybrid's
/// `attn_layers`: its Mamba, convolution and linear-attention blocks keep no K/V).
/// Source: Gemma 2 / Gemma 3 reports (local and global layers), Mistral 7B paper
/// (rolling buffer cache of W tokens); exact for p = 1, an upper bound for p > 1.
///
/// # Example
/// Gemma 2 9B (42 layers, 21 windowed), p = 1: L_g = 21, L_w = 21; p = 2: L_s = 21,
/// L_g = 21, L_w = 0.
pub(crate) fn kv_layers(arch: &Arch, p: Count) -> (u128, u128) {
    let stage = (arch.layers.get() as u128).div_ceil(p.get() as u128);
    // Only softmax-attention blocks keep K/V (`Arch::attention_layers`: every block of a
    // transformer, `attn_layers` of a hybrid).
    let attention = arch.attention_layers() as u128;
    let global_total = attention.saturating_sub(if arch.window > 0 {
        arch.local_layers as u128
    } else {
        0
    });
    let global = stage.min(global_total);
    (global, (stage - global).min(attention - global_total))
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
///            T·⌈L/p⌉ becomes L_g·T + L_w·min(T, W); a hybrid's attention blocks only
/// ssm_state  = ⌈b·(L_m·S_m + L_c·S_c + L_l·S_l)/t⌉   Mamba / convolution / gated-DeltaNet
///              blocks' conv and recurrent state, constant in T (see `ssm::state_items`)
/// workspace  = max(k·b·T'·(h_l + ⌈w_a/t⌉) + A_e,  k·b·T'·(h_l + ⌈w_m/t⌉) + W_e,
///                  k·b·T'·h_l + 4·b·V)
///              (one layer's transient tensors, T' = s at prefill and 1 per decode step: the
///               layer's input, which the caller still holds, the residual and a norm's
///               output, with either the attention's q, k, v and repeat_kv copies
///               (`w_a`, see `attention_width`) or the MLP's intermediates (`w_m`, see
///               `mlp_width`) — whichever moment is larger; eager attention adds its scores
///               at the first (`A_e`, `eager_scores`) and its returned probabilities at the
///               second (`W_e`, `eager_probs`); or, after the layers, the fp32 logits of
///               the last position; `h_l` what the model holds beside, `held_width`)
///              with Mamba or gated-DeltaNet blocks, the prefill's layer term is max(that,
///              X_scan), the scan's transient by `ssm_kernels` (see `ssm::scan_transient`,
///              `ssm::linear_transient`)
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
    let (t, p) = (l.tp.get() as u64, l.pp.get() as u64);
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

    kv_cache_items(s, arch, t, l.pp, ledger);
    ssm::state_items(s, arch, t, p, ledger);
    workspace_items(s, arch, k, t, ledger);
}

const SRC_KV_VIEW: &str = "transformers 5.17 cache_utils.DynamicSlidingWindowLayer.update: self.keys = full_key_states[:, :, -sliding_window + 1:, :] (a view of the whole prompt's K/V until the next update)";

/// Whether Hugging Face `generate` holds the whole prompt's K/V in its windowed layers after
/// the prefill: plain PyTorch, a window the prompt exceeds.
///
/// # Formula
/// ```text
/// prefill KV = 2·b·(L_g + L_w)·s·⌈a_kv/t⌉·d·k_kv      (instead of L_g·s + L_w·min(s, W))
/// sliding mask = b·s·s                              (bool, held through the prefill)
/// ```
/// `DynamicSlidingWindowLayer.update` concatenates the new K/V onto the cache, keeps
/// `full[:, :, -W + 1:]` — a view, whose storage is the whole concatenation — and returns
/// the full states. After the prefill every windowed layer thus holds all `s` prompt
/// tokens; the first decoded token's concatenation copies the last `W − 1` and frees them.
/// The SDPA path also builds one boolean mask `b·1·s·s` for the windowed layers
/// (`masking_utils.sdpa_mask`; a full-attention layer needs none without padding), alive
/// through the forward. Source: transformers 5.17 `cache_utils.py`, `masking_utils.py`.
/// Found on the CUDA calibration runs J06 (Mistral 7B, s = 16,384 over W = 4,096: memfit
/// −10.9 % without it; the view is 1.5 GiB, the mask 0.25 GiB) and J03 (Gemma 3 1B).
///
/// # Example
/// Mistral 7B (32 layers windowed to 4,096, a_kv = 8, d = 128), b = 1, s = 16,384, bf16:
/// 2·32·16,384·8·128·2 = 2,147,483,648 B of cache at the prefill (536,870,912 B windowed),
/// and a 268,435,456 B mask.
fn prefill_view(s: &Scenario, arch: &Arch) -> bool {
    s.stack.framework == crate::scenario::Framework::Pytorch
        && arch.window > 0
        && arch.local_layers > 0
        && arch.mla.is_none()
        && s.workload.seq.get() as u128 > arch.window as u128
}

/// The boolean sliding-window mask of the prefill, `b·s·s` bytes (see [`prefill_view`]).
fn sliding_mask_item(s: &Scenario, ledger: &mut Ledger) {
    let (b, sq) = (s.workload.batch.get() as u128, s.workload.seq.get() as u128);
    let e = Expr::new(&[Sym("b", b), Sym("s", sq), Mul, Sym("s", sq), Mul]);
    let (comp, gpu) = (Component::Workspace, Location::Gpu);
    let note = "the boolean sliding-window mask, b·1·s·s";
    let src = "transformers 5.17 masking_utils.sdpa_mask (one mask for the windowed layers, held through the forward)";
    ledger.push_expr(
        &[Phase::Prefill],
        Mech::SlidingMask,
        comp,
        gpu,
        &e,
        note,
        String::new,
        src,
    );
}

/// The KV cache at the end of prefill (`T = s`) and of decoding (`T = s + n`); see
/// [`inference_items`] for the formula and [`kv_layers`] for sliding windows.
fn kv_cache_items(s: &Scenario, arch: &Arch, t: u64, p: Count, ledger: &mut Ledger) {
    let (global, local) = kv_layers(arch, p);
    // Hugging Face's sliding-window cache keeps a slice *view* of the whole prompt's K/V
    // after the prefill (see `prefill_view`): the windowed layers hold every prompt token
    // until the first decoded token replaces the storage.
    let view = prefill_view(s, arch);
    let kv = |tokens: u128, view: bool| kv_expr(s, arch, t, (global, local), tokens, view);
    let ctx = || {
        let layers = if arch.is_hybrid() {
            "L_s (L_g, L_w) = the softmax-attention blocks on the most loaded stage (attn_layers)"
        } else if local > 0 {
            "L_g full-context and L_w windowed layers on the most loaded stage"
        } else {
            "L_s = layers on the most loaded stage, ⌈L/p⌉"
        };
        format!("{layers}; L={}, p={p}, kv_dtype bits", arch.layers)
    };
    let seq = s.workload.seq.get() as u128;
    let (mech, comp, gpu) = (Mech::KvPrefill, Component::KvCache, Location::Gpu);
    let pre = [Phase::Prefill];
    if view {
        let note = "T = s; the windowed layers' cache a view of the whole prompt's K/V";
        ledger.push_expr(
            &pre,
            mech,
            comp,
            gpu,
            &kv(seq, true),
            note,
            ctx,
            SRC_KV_VIEW,
        );
        sliding_mask_item(s, ledger);
    } else {
        ledger.push_expr(&pre, mech, comp, gpu, &kv(seq, false), "T = s", ctx, SRC_KV);
    }
    let full = kv(seq + s.workload.gen as u128, false);
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

/// The KV cache's bytes when `tokens` positions are held: full-context layers keep every
/// token, windowed layers at most `W` (all of the prompt while the prefill's `view` is held,
/// see [`prefill_view`]); MLA keeps its compressed latent and rotary key per token. See
/// [`inference_items`] for the formula.
fn kv_expr(
    s: &Scenario,
    arch: &Arch,
    t: u64,
    (global, local): (u128, u128),
    tokens: u128,
    view: bool,
) -> Expr {
    let head = match arch.mla {
        Some(_) => Expr::new(&[Sym("b", s.workload.batch.get() as u128)]),
        None => Expr::new(&[Num(2), Sym("b", s.workload.batch.get() as u128), Mul]),
    };
    // Token-layers held: full-context layers keep every token, windowed ones ≤ W.
    let held = if local > 0 && view {
        let (g, w, tk) = (Sym("L_g", global), Sym("L_w", local), Sym("T", tokens));
        head.then(&[g, w, Add, tk, Mul, Mul])
    } else if local > 0 {
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
            let a = Sym("a_kv", arch.kv_heads.get() as u128);
            held.then(&[a, Sym("t", t as u128), DivCeil, Mul])
                .then(&[Sym("d", arch.head_dim.get() as u128), Mul])
        }
    };
    let kv_bits = s.numerics.kv_dtype.bits(s.numerics.precision) as u128;
    per_token.then(&[Sym("bits", kv_bits), Mul, Num(8), Div])
}

#[cfg(test)]
mod tests {
    use super::kv_layers;
    use super::scores::{eager_probs, eager_scores};
    use super::workspace::{mlp_width, moe_width};
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
        let e = eager_scores(&s.scenario, &s.scenario.arch(), 2, 1, 512, 512);
        // b·⌈a/t⌉·T·S·(k + 4 + u) + b·T·S·k with b = 1, a = 8, T = S = 512, k = 2, u = 4.
        let want = 8 * 512 * 512 * (2 + 4 + 4) + 512 * 512 * 2;
        assert_eq!(e.eval_u128(), Some(want));
        assert_eq!(want, 21_495_808);
        let probs = eager_probs(&s.scenario, &s.scenario.arch(), 2, 1, 512, 512);
        assert_eq!(probs.eval_u128(), Some(8 * 512 * 512 * 2 + 512 * 512 * 2));
        // The moments, k·b·s·(3h + w): attention w_a = (8 + 2·2)·32 + 2·8·32 = 896, MLP
        // w_m = 3·688 = 2,064; the last position's fp32 logits (4·b·V = 16,384) come after
        // the layers, beside the held 2·512·768: smaller.
        let (m_a, m_m) = (2 * 512 * (768 + 896), 2 * 512 * (768 + 2064));
        assert_eq!((m_a, m_m), (1_703_936, 2_899_968));
        let work = |attn: &str| largest(&format!("{q}{attn}"), Component::Workspace);
        assert_eq!(work("sdpa"), m_m);
        assert_eq!(work("eager"), (m_a + 21_495_808).max(m_m + 4_718_592));
        // MemTracker's ACT of that run less its KV cache: 23,662,592 − 524,288 = 23,138,304
        // (prefill/llama/s/bf16/eager/ltk0/b1s512, whose logits come after: memfit +0.3 %).
        assert_eq!(work("eager"), 23_199_744);
        assert_eq!(work("flash"), work("sdpa"));
        // GPT-2's softmax in the model's dtype: two bf16 score tensors, 8·512²·2·2 + 512²·2.
        let g = "model=gpt2&hidden=256&heads=8&kv_heads=8&ffn=1024&vocab=4096&layers=4\
                 &mode=infer&precision=bf16&batch=1&seq=512&gen=0&attn=eager";
        let (s, _) = decode(g);
        let e = eager_scores(&s.scenario, &s.scenario.arch(), 2, 1, 512, 512);
        assert_eq!(e.eval_u128(), Some(8_912_896));
        let (s, _) = decode(&format!("{g}&softmax_in_dtype=0"));
        let e = eager_scores(&s.scenario, &s.scenario.arch(), 2, 1, 512, 512);
        assert_eq!(e.eval_u128(), Some(21_495_808));
    }

    /// The doc examples of `moe_width` (the traced Mixtral and Qwen2-MoE shapes), and that a
    /// dense model keeps `m·f`.
    #[test]
    fn moe_width_by_hand() {
        let arch = |q: &str| decode(q).0.scenario.arch();
        let mixtral = arch("model=mixtral-8x7b&hidden=256&ffn=512&experts=4&top_k=2");
        assert_eq!(moe_width(&mixtral).0, 2 * (256 + 4 * 512));
        let qwen = arch(
            "model=mixtral-8x7b&hidden=256&ffn=1024&moe_ffn=256&experts=4&top_k=2&shared_experts=2",
        );
        assert_eq!(moe_width(&qwen).0, (2 * (256 + 4 * 256) + 256));
        assert_eq!(moe_width(&qwen).0, 2_816);
        let (s, _) = decode("model=llama-2-7b&mode=infer");
        assert_eq!(mlp_width(&s.scenario, &s.scenario.arch()).0, 3 * 11_008);
    }

    /// Hugging Face GPT-2 at prefill (traced: `prefill/gpt2/m/fp32/sdpa/ltk1/b2s384` peaks in
    /// the last block's `gelu_new` with four f-wide fp32 tensors).
    #[test]
    fn gpt2_gelu_new_prefill_by_hand() {
        let q = "model=gpt2&hidden=512&heads=8&ffn=2048&vocab=8192&layers=2&mode=infer\
                 &precision=fp32&batch=2&seq=384&gen=0&attn=sdpa&framework=pytorch";
        let work = largest(q, Component::Workspace);
        // k·b·s·(h_l + 4f + h): h_l = 4h (layer input, residual, ln_2's output,
        // inputs_embeds) + ⌈h/b⌉ (the position embeddings, one row for the batch without
        // generate), 4f gelu_new's tensors, h GPT2Block's attn_output:
        // 4·2·384·(2,048 + 256 + 8,192 + 512).
        assert_eq!(work, 33_816_576);
        // MemTracker's ACT less the KV cache: 40,111,104 − 6,291,456 = 33,819,648; what memfit
        // leaves out is the position ids, 384·8 = 3,072 B. The logits come after the layers.
        assert_eq!(33_819_648 - work, 384 * 8);
        // A fused GELU: m·f = 2f, and no GPT-2 block term beyond the MLP's.
        assert_eq!(
            largest(&format!("{q}&gelu_ops=0"), Component::Workspace),
            4 * 2 * 384 * (2_048 + 256 + 2 * 2_048)
        );
        // generate: position ids from the attention mask, one row per sequence: h, not h/b.
        let g = largest(&q.replace("gen=0", "gen=8"), Component::Workspace);
        assert_eq!(g, 4 * 2 * 384 * (2_048 + 512 + 8_192 + 512));
    }

    /// The largest item of component `c`, on PyTorch's CPU kernels (`device=cpu`: these
    /// tests check MemTracker's CPU measurements, which have no cuBLAS workspaces).
    fn largest(query: &str, c: Component) -> u64 {
        let (s, w) = decode(&format!("{query}&device=cpu"));
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
    /// input, the residual, a norm's output and the MLP's intermediates; the last position's
    /// fp32 logits come after the layers and are smaller.
    #[test]
    fn prefill_workspace_of_the_measured_runs() {
        let work = |q: &str| largest(q, Component::Workspace);
        let base = "mode=infer&framework=pytorch&modules=plain&batch=2&seq=384&gen=64&precision=fp32&vocab=4096&layers=4&hidden=256&heads=8";
        // Llama shape: measured 10,534,912 − 2·2·448·4·2·32·4 = 8,699,904 = 4·2·384·(3·256 + 3·688).
        let llama = work(&format!(
            "model=llama-2-7b&{base}&kv_heads=2&ffn=688&tied=0"
        ));
        assert_eq!(llama, 4 * 2 * 384 * (3 * 256 + 3 * 688));
        assert_eq!(10_534_912 - 2 * 2 * 448 * 4 * 2 * 32 * 4, llama);
        // GPT-2 shape (GELU: fc output and its activation): 15,990,784 − 7,340,032.
        // The harness's own GPT-2 module calls a fused GELU.
        let gpt2 = work(&format!(
            "model=gpt2&{base}&kv_heads=8&ffn=1024&tied=1&gelu_ops=0"
        ));
        assert_eq!(gpt2, 4 * 2 * 384 * (3 * 256 + 2 * 1024));
        assert_eq!(15_990_784 - 2 * 2 * 448 * 4 * 8 * 32 * 4, gpt2);
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
        assert_eq!(kv_layers(a, crate::scenario::count(1)), (21, 21));
        assert_eq!(kv_layers(a, crate::scenario::count(2)), (21, 0));
        assert_eq!(kv_layers(a, crate::scenario::count(7)), (6, 0));
        // A depth override keeps the share of windowed layers: 10 of 20.
        let s = decode("model=gemma-2-9b&layers=20").0.scenario;
        assert_eq!(s.arch().local_layers, 10);
    }
}

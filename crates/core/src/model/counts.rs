//! What a shape holds: parameter counts by part (embedding, attention, MLP, norms, head),
//! the active parameters of a mixture of experts, the largest layer, and the list of
//! linear maps the activation and LoRA formulas read.

use super::*;

/// Parameter counts of one model, by part.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamCount {
    /// Token embedding + learned positions + embedding norm.
    pub embedding: u64,
    /// All attention projections (with biases and q/k norms), all layers; a pure
    /// state-space model's Mamba mixers (`Arch::ssm_params`).
    pub attention: u64,
    /// All feed-forward weights (all experts and routers), all layers.
    pub mlp: u64,
    /// All norms in the blocks plus the final norm.
    pub norms: u64,
    /// Untied LM head (0 when tied).
    pub lm_head: u64,
    /// Sum of the above, `Ψ`.
    pub total: u64,
    /// Parameters one token touches (MoE: `top_k` experts instead of all).
    pub active: u64,
    /// DeepSpeed's `largest_layer_params`: the biggest module's own parameters.
    pub largest_layer: u64,
    /// Parameters of one transformer block.
    pub per_layer: u64,
}

impl Arch {
    /// Exact parameter count.
    ///
    /// # Formula
    /// ```text
    /// Ψ = V·h + P·h [+ n(h) if emb_norm]
    ///   + L · ( h·a·d + 2·h·a_kv·d + a·d·h + b_qkv + b_o + n_qk
    ///         + E'·m·h·f + b_mlp + router + k_n·n(h) )
    ///   + n(h) + [V·h if untied]
    /// ```
    /// where `V` vocab, `h` hidden, `P` learned positions, `L` layers, `a` heads,
    /// `a_kv` KV heads, `d` head width, `f` FFN width, `m` = 2 (GELU) or 3 (SwiGLU)
    /// matrices, `E'` = max(1, experts), `router = h·E` for MoE, `k_n` norms per
    /// block, `n(h)` = `2h` (LayerNorm) or `h` (RMSNorm); biases: `b_qkv = (a+2a_kv)·d`,
    /// `b_o = h`, `b_mlp = E'·(f + h)` for GELU.
    ///
    /// Source: the modules of Hugging Face `transformers` (`LlamaForCausalLM`,
    /// `GPT2LMHeadModel`, ...); checked against published counts in the tests.
    ///
    /// # Example
    /// ```
    /// use memfit_core::model::preset;
    /// // Llama-2-7B: 32·(4·4096² + 3·4096·11008 + 2·4096) + 4096 + 2·32000·4096
    /// assert_eq!(preset("llama-2-7b").unwrap().arch.params().total, 6_738_415_616);
    /// ```
    pub fn params(&self) -> ParamCount {
        if let Some(p) = self.ssm_params() {
            return p;
        }
        // Computed in u128: absurd overrides (1024 layers × 1024 experts × ...) saturate instead of overflowing.
        let h = self.hidden.get() as u128;
        let v = self.vocab.get() as u128;
        let a = self.heads.get() as u128;
        let layers = self.layers.get() as u128;
        let n = |w: u128| self.norm.params(w);
        let mut largest = 0u128;
        let mut see = |m: u128| largest = largest.max(m);

        let embedding = v * h + self.positions as u128 * h + if self.emb_norm { n(h) } else { 0 };
        see(v * h);
        see(self.positions as u128 * h);

        // One attention block (self- or cross-attention).
        let attn_layer = self.attention_params(&mut see);

        let Ffn {
            dense_mlp,
            one_expert,
            moe_layer,
            dense_layers,
            moe_layers,
        } = self.ffn_params(&mut see);
        let e = self.experts as u128;
        let norm_layer = self.norms_per_layer as u128 * n(h);

        // Decoder blocks (cross-attention and a third norm for encoder-decoder models).
        let enc = self.encoder_layers as u128;
        let cross = if enc > 0 { attn_layer + n(h) } else { 0 };
        let rel = self.rel_buckets as u128 * a;
        let decoder_attn = layers * (attn_layer + cross) + if enc > 0 { rel } else { 0 };
        let decoder_mlp = dense_layers * dense_mlp + moe_layers * moe_layer;
        let decoder_norms = layers * norm_layer + n(h);
        // Encoder stack (T5): self-attention, MLP, 2 norms per block, a final norm.
        let attention = decoder_attn + if enc > 0 { enc * attn_layer + rel } else { 0 };
        let mlp = decoder_mlp + enc * dense_mlp;
        let norms = decoder_norms + if enc > 0 { enc * 2 * n(h) + n(h) } else { 0 };
        let lm_head = if self.tied { 0 } else { v * h } + if self.head_bias { v } else { 0 };
        let total = embedding + attention + mlp + norms + lm_head;
        let active_routed = if e > 0 {
            (self.top_k as u128).min(e)
        } else {
            0
        };
        let active = total - moe_layers * (e - active_routed) * one_expert;
        let per_layer =
            attn_layer + cross + if moe_layers > 0 { moe_layer } else { dense_mlp } + norm_layer;

        let c = |x: u128| x.min(u64::MAX as u128) as u64;
        ParamCount {
            embedding: c(embedding),
            attention: c(attention),
            mlp: c(mlp),
            norms: c(norms),
            lm_head: c(lm_head),
            total: c(total),
            active: c(active),
            largest_layer: c(largest),
            per_layer: c(per_layer),
        }
    }

    /// The feed-forward side of a block: a dense MLP of width `f`, one routed expert,
    /// one MoE layer (routed and shared experts, router, shared gate), and how many
    /// blocks are dense or MoE.
    fn ffn_params(&self, see: &mut impl FnMut(u128)) -> Ffn {
        let (h, f, layers) = (
            self.hidden.get() as u128,
            self.ffn.get() as u128,
            self.layers.get() as u128,
        );
        let matrices = self.mlp.matrices() as u128;
        let mlp_bias = |w: u128| {
            if self.bias == Bias::All && self.mlp == Mlp::Gelu {
                w + h
            } else {
                0
            }
        };
        let dense_mlp = |w: u128| matrices * h * w + mlp_bias(w);
        let up_module = |w: u128| {
            if self.fused_gate_up && self.mlp == Mlp::Swiglu {
                2 * h * w
            } else {
                h * w + mlp_bias(w) - if mlp_bias(w) > 0 { h } else { 0 }
            }
        };
        let moe_w = if self.moe_ffn > 0 {
            self.moe_ffn as u128
        } else {
            f
        };
        let e = self.experts as u128;
        let (dense_layers, moe_layers) = if e > 0 {
            let fd = (self.first_dense as u128).min(layers);
            (fd, layers - fd)
        } else {
            (layers, 0)
        };
        let dense_f = f;
        // gpt-oss: gate/up biases (2·f_e) and the down bias (h) on every expert.
        let expert_bias = if self.expert_bias {
            (matrices - 1) * moe_w + h
        } else {
            0
        };
        let one_expert = dense_mlp(moe_w) + expert_bias;
        let router = if e > 0 {
            h * e + if self.expert_bias { e } else { 0 }
        } else {
            0
        };
        let shared_gate = if self.shared_gate && self.shared_experts > 0 {
            h
        } else {
            0
        };
        let moe_layer = (e + self.shared_experts as u128) * one_expert + router + shared_gate;
        see(up_module(dense_f));
        see(f * h + if mlp_bias(f) > 0 { h } else { 0 });
        if e > 0 {
            see(up_module(moe_w));
            see(router);
        }
        Ffn {
            dense_mlp: dense_mlp(dense_f),
            one_expert,
            moe_layer,
            dense_layers,
            moe_layers,
        }
    }

    /// One attention block's parameters (`see` is offered each matrix, for the largest
    /// layer): grouped-query attention, or multi-head latent attention.
    fn attention_params(&self, see: &mut impl FnMut(u128)) -> u128 {
        match self.mla {
            None => self.gqa_params(see),
            Some(m) => self.mla_params(m, see),
        }
    }

    /// `q, k, v, o` (fused or not) with biases, q/k norms and attention sinks.
    fn gqa_params(&self, see: &mut impl FnMut(u128)) -> u128 {
        let (h, a, kv, d) = (
            self.hidden.get() as u128,
            self.heads.get() as u128,
            self.kv_heads.get() as u128,
            self.head_dim.get() as u128,
        );
        let n = |w: u128| self.norm.params(w);
        let q = h * a * d;
        let k = h * kv * d;
        let o = a * d * h;
        let (b_qkv, b_o) = match self.bias {
            Bias::None => (0, 0),
            Bias::Qkv => ((a + 2 * kv) * d, 0),
            Bias::All => ((a + 2 * kv) * d, h),
        };
        let qk_norm = if self.qk_norm {
            n(a * d) + n(kv * d)
        } else if self.qk_norm_head {
            2 * n(d)
        } else {
            0
        };
        if self.fused_qkv {
            see(q + 2 * k + b_qkv);
        } else {
            let (qb, kb) = if self.bias == Bias::None {
                (0, 0)
            } else {
                (a * d, kv * d)
            };
            see(q + qb);
            see(k + kb);
        }
        see(o + b_o);
        let sinks = if self.attn_sinks { a } else { 0 };
        q + 2 * k + o + b_qkv + b_o + qk_norm + sinks
    }

    /// DeepSeek's multi-head latent attention: low-rank q (or a full q), the compressed
    /// kv with its rope part, the kv up-projection, o.
    fn mla_params(&self, m: Mla, see: &mut impl FnMut(u128)) -> u128 {
        let (h, a) = (self.hidden.get() as u128, self.heads.get() as u128);
        let n = |w: u128| self.norm.params(w);
        let (qr, kvr) = (m.q_rank as u128, m.kv_rank as u128);
        let qk_head = (m.rope_dim + m.nope_dim) as u128;
        let q = if qr > 0 {
            h * qr + n(qr) + qr * a * qk_head
        } else {
            h * a * qk_head
        };
        let kv_a = h * (kvr + m.rope_dim as u128);
        let kv_b = kvr * a * (m.nope_dim as u128 + m.v_dim as u128);
        let o = a * m.v_dim as u128 * h;
        if qr > 0 {
            see(h * qr);
            see(qr * a * qk_head);
        } else {
            see(q);
        }
        see(kv_a);
        see(kv_b);
        see(o);
        q + kv_a + n(kvr) + kv_b + o
    }

    /// Experts each token is routed to, `k ≥ 1`: a mixture's `top_k` (the key table parses
    /// `top_k ≥ 1`, [`crate::scenario::Scenario::arch`] gives a mixture without one 1 and
    /// [`Arch::check`] rejects 0); 1 for a dense model, whose one MLP every token passes.
    pub fn routed_k(&self) -> Count {
        crate::nonzero::at_least_one(self.top_k)
    }

    /// The routed experts of a mixture, `E`; `None` for a dense model (`experts = 0`).
    pub fn mixture(&self) -> Option<Count> {
        Count::new(self.experts)
    }

    /// Inner width of one routed expert (`moe_ffn`, or `ffn` when not given).
    pub fn expert_ffn(&self) -> u32 {
        if self.moe_ffn > 0 {
            self.moe_ffn
        } else {
            self.ffn.get()
        }
    }

    /// Parameters of all routed experts (what expert parallelism divides).
    ///
    /// ```
    /// use memfit_core::model::preset;
    /// // Mixtral 8x7B: 32 layers · 8 experts · 3·4096·14336
    /// assert_eq!(preset("mixtral-8x7b").unwrap().arch.routed_expert_params(), 32 * 8 * 3 * 4096 * 14336);
    /// ```
    pub fn routed_expert_params(&self) -> u64 {
        if self.experts == 0 {
            return 0;
        }
        let moe_layers = (self.layers.get() as u128)
            .saturating_sub(self.first_dense.min(self.layers.get()) as u128);
        let per =
            self.mlp.matrices() as u128 * self.hidden.get() as u128 * self.expert_ffn() as u128;
        (moe_layers * self.experts as u128 * per).min(u64::MAX as u128) as u64
    }

    /// MLP width one token passes through: `ffn` for dense models, `(top_k + shared)·f_e` for MoE.
    pub fn active_ffn(&self) -> u128 {
        if self.experts > 0 {
            self.expert_ffn() as u128 * (self.routed_k().get() + self.shared_experts) as u128
        } else {
            self.ffn.get() as u128
        }
    }

    /// Every weight matrix (`in × out`, how many), for adapters, quantisation and
    /// factored optimizers. Vectors (biases, norms) are not listed.
    pub fn linears(&self) -> Vec<Linear> {
        let h = self.hidden.get() as u64;
        let mut out = vec![lin(
            "embedding",
            LinearKind::Embedding,
            self.vocab.get() as u64,
            h,
            1,
        )];
        self.attention_linears(&mut out);
        self.mlp_linears(&mut out);
        if !self.tied {
            out.push(lin(
                "lm_head",
                LinearKind::Head,
                h,
                self.vocab.get() as u64,
                1,
            ));
        }
        out
    }

    /// Attention projections: q, k, v, o in every self-attention (both stacks of an
    /// encoder-decoder) and every decoder cross-attention; MLA's low-rank q_a/q, kv_a, v
    /// (the kv_b up-projection) and o.
    pub(crate) fn attention_linears(&self, out: &mut Vec<Linear>) {
        let h = self.hidden.get() as u64;
        let (a, kv, d) = (
            self.heads.get() as u64,
            self.kv_heads.get() as u64,
            self.head_dim.get() as u64,
        );
        let (layers, enc) = (self.layers.get() as u64, self.encoder_layers as u64);
        let n = layers + enc + if enc > 0 { layers } else { 0 };
        let attn = |name, inp, o| lin(name, LinearKind::Attn, inp, o, n);
        match self.mla {
            None => out.extend([
                attn("q", h, a * d),
                attn("k", h, kv * d),
                attn("v", h, kv * d),
                attn("o", a * d, h),
            ]),
            Some(m) => {
                let qk = (m.rope_dim + m.nope_dim) as u64;
                if m.q_rank > 0 {
                    out.push(attn("q_a", h, m.q_rank as u64));
                    out.push(attn("q", m.q_rank as u64, a * qk));
                } else {
                    out.push(attn("q", h, a * qk));
                }
                out.extend([
                    attn("kv_a", h, (m.kv_rank + m.rope_dim) as u64),
                    attn("v", m.kv_rank as u64, a * (m.nope_dim + m.v_dim) as u64),
                    attn("o", a * m.v_dim as u64, h),
                ]);
            }
        }
    }

    /// MLP matrices: `m − 1` up projections (gate and up for SwiGLU) and one down per
    /// dense block (encoder blocks included) and per expert (routed + shared) of the MoE
    /// blocks, plus each MoE block's router.
    pub(crate) fn mlp_linears(&self, out: &mut Vec<Linear>) {
        let h = self.hidden.get() as u64;
        let (layers, enc, e) = (
            self.layers.get() as u64,
            self.encoder_layers as u64,
            self.experts as u64,
        );
        let (dense_layers, moe_layers) = if e > 0 {
            let fd = (self.first_dense as u64).min(layers);
            (fd + enc, layers - fd)
        } else {
            (layers + enc, 0)
        };
        let mut mlp = |width: u64, count: u64| {
            if count > 0 {
                let ups = self.mlp.matrices() - 1;
                out.push(lin("up", LinearKind::Mlp, h, width, count * ups));
                out.push(lin("down", LinearKind::Mlp, width, h, count));
            }
        };
        mlp(self.ffn.get() as u64, dense_layers);
        if moe_layers > 0 {
            mlp(
                self.expert_ffn() as u64,
                moe_layers * (e + self.shared_experts as u64),
            );
            out.push(lin("router", LinearKind::Router, h, e, moe_layers));
        }
    }

    /// Checks the shape is self-consistent.
    ///
    /// # Errors
    /// A message naming the offending field when the KV heads do not divide the query
    /// heads, or when `top_k` exceeds the experts (the sizes are [`Count`]s: never 0).
    pub fn check(&self) -> Result<(), String> {
        if self.kv_heads > self.heads || !self.heads.get().is_multiple_of(self.kv_heads.get()) {
            return Err(format!(
                "kv_heads ({}) must divide heads ({})",
                self.kv_heads, self.heads
            ));
        }
        if self.local_layers > self.layers.get() {
            return Err(format!(
                "local_layers ({}) must not exceed layers ({})",
                self.local_layers, self.layers
            ));
        }
        if self.local_layers > 0 && self.window == 0 {
            return Err("local_layers needs a sliding window (window ≥ 1)".into());
        }
        if self.experts == 0 && (self.shared_experts > 0 || self.moe_ffn > 0) {
            return Err(
                "shared_experts and moe_ffn need a mixture-of-experts model (experts ≥ 1)".into(),
            );
        }
        if self.experts > 0 && self.first_dense >= self.layers.get() {
            return Err(format!(
                "first_dense ({}) must be below layers ({}): at least one block is MoE",
                self.first_dense, self.layers
            ));
        }
        if self.experts > 0 && (self.top_k == 0 || self.top_k > self.experts) {
            return Err(format!(
                "top_k ({}) must be between 1 and experts ({})",
                self.top_k, self.experts
            ));
        }
        self.check_mix()
    }
}

/// What a weight matrix belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LinearKind {
    /// Token embedding table.
    Embedding,
    /// Attention projections.
    Attn,
    /// Feed-forward projections (dense or experts).
    Mlp,
    /// MoE router.
    Router,
    /// Untied LM head.
    Head,
}

/// One family of equal weight matrices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Linear {
    /// Short name (`q`, `k`, `v`, `o`, `up`, `down`, ...).
    pub name: &'static str,
    /// What it belongs to.
    pub kind: LinearKind,
    /// Input width.
    pub inp: u64,
    /// Output width.
    pub out: u64,
    /// How many such matrices the model has.
    pub count: u64,
}

impl Linear {
    /// Parameters of all matrices of this family (saturating).
    pub fn params(&self) -> u64 {
        self.inp.saturating_mul(self.out).saturating_mul(self.count)
    }
}

/// The feed-forward parameters of a block (see `Arch::ffn_params`).
struct Ffn {
    /// A dense MLP of width `f`.
    dense_mlp: u128,
    /// One routed expert.
    one_expert: u128,
    /// One MoE block's feed-forward: routed and shared experts, router, shared gate.
    moe_layer: u128,
    /// Dense blocks.
    dense_layers: u128,
    /// MoE blocks.
    moe_layers: u128,
}

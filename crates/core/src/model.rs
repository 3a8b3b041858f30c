//! Transformer shapes and their exact parameter counts.
//!
//! A model is an [`Arch`]: the handful of numbers in a Hugging Face `config.json`
//! that fix every weight matrix. From it memfit counts parameters exactly (the way
//! `sum(p.numel() for p in model.parameters())` does, tied weights once) and the
//! "largest layer" the way DeepSpeed's ZeRO-3 estimator does (the largest single
//! module's own parameters, not recursive).

use serde::{Deserialize, Serialize};

crate::spelled! {
    /// Feed-forward block shape.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Mlp {
        /// Two matrices, `h→f→h` (GPT-2, GPT-3, BLOOM, T5): GELU or ReLU.
        Gelu = "gelu", "GELU (2 matrices)", "2 matrices";
        /// Three matrices, gate and up `h→f` and down `f→h` (Llama, Mistral, Qwen, Gemma).
        Swiglu = "swiglu", "SwiGLU (3 matrices)", "3 matrices";
    }
}

impl Mlp {
    /// Number of `h×f` matrices.
    pub fn matrices(self) -> u64 {
        match self {
            Mlp::Gelu => 2,
            Mlp::Swiglu => 3,
        }
    }
}

crate::spelled! {
    /// Normalisation layer kind.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Norm {
        /// LayerNorm: weight and bias, `2h` parameters.
        Layernorm = "layernorm", "LayerNorm", "";
        /// RMSNorm: weight only, `h` parameters.
        Rmsnorm = "rmsnorm", "RMSNorm", "";
        /// LayerNorm without affine weights (`F.layer_norm(x, ...)`, OLMo v1): no parameters;
        /// it saves what a LayerNorm saves.
        #[serde(rename = "layernorm-np")]
        LayernormNp = "layernorm-np", "LayerNorm, no weights", "no weights: OLMo v1";
    }
}

impl Norm {
    /// Parameters of one norm over a vector of width `h`.
    pub fn params(self, h: u128) -> u128 {
        match self {
            Norm::Layernorm => 2 * h,
            Norm::Rmsnorm => h,
            Norm::LayernormNp => 0,
        }
    }
}

crate::spelled! {
    /// Which linear layers carry a bias vector.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Bias {
        /// No biases (Llama, Mistral, Gemma).
        None = "none", "none", "";
        /// Only the q, k, v projections (Qwen2/2.5).
        Qkv = "qkv", "q/k/v", "q/k/v only";
        /// Every linear layer (GPT-2, GPT-3, BLOOM).
        All = "all", "all", "";
    }
}

/// The shape of a decoder-only transformer (dense or mixture-of-experts).
///
/// All counts are plain integers; `head_dim` is explicit because some models
/// (Gemma 2) do not use `hidden / heads`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Arch {
    /// Transformer blocks, `L`.
    pub layers: u32,
    /// Model width, `h`.
    pub hidden: u32,
    /// Query heads, `a`.
    pub heads: u32,
    /// Key/value heads, `a_kv` (= `a` for MHA, 1 for MQA, in between for GQA).
    pub kv_heads: u32,
    /// Width of one head, `d` (usually `h / a`).
    pub head_dim: u32,
    /// Feed-forward inner width, `f` (per expert for MoE).
    pub ffn: u32,
    /// Vocabulary size, `V`.
    pub vocab: u32,
    /// Feed-forward shape.
    pub mlp: Mlp,
    /// Normalisation kind.
    pub norm: Norm,
    /// LM head shares the embedding matrix.
    pub tied: bool,
    /// Which linears have biases.
    pub bias: Bias,
    /// Learned absolute position embeddings (0 for RoPE / ALiBi).
    pub positions: u32,
    /// Norms inside each block: 2 (pre-norm) or 4 (Gemma 2's sandwich norms).
    pub norms_per_layer: u32,
    /// OLMo 2 style q/k norms over the full projected q and k vectors.
    pub qk_norm: bool,
    /// Qwen3 / Gemma 3 style q/k norms per head: one `d`-wide norm each for q and k
    /// (`Qwen3RMSNorm(head_dim)`), shared by the heads.
    #[serde(default)]
    pub qk_norm_head: bool,
    /// LayerNorm right after the embedding (BLOOM).
    pub emb_norm: bool,
    /// q, k and v live in one fused linear module (GPT-2 `c_attn`, Phi-3 `qkv_proj`).
    pub fused_qkv: bool,
    /// Gate and up projections live in one fused module (Phi-3 `gate_up_proj`).
    pub fused_gate_up: bool,
    /// Routed experts per MoE layer (0 = dense model).
    pub experts: u32,
    /// Experts each token is routed to.
    pub top_k: u32,
    /// Shared (always active) experts per MoE layer (DeepSeek).
    pub shared_experts: u32,
    /// Inner width of one expert (0 = `ffn`).
    pub moe_ffn: u32,
    /// The first `first_dense` blocks use a dense MLP of width `ffn` (DeepSeek-V3: 3).
    pub first_dense: u32,
    /// A sigmoid gate on the shared experts' output, `Linear(h, 1)` per MoE layer
    /// (Qwen2-MoE's `shared_expert_gate`).
    #[serde(default)]
    pub shared_gate: bool,
    /// Biases on every expert's projections (gate and up `2·f_e`, down `h`) and on the
    /// router (`E`) (gpt-oss).
    #[serde(default)]
    pub expert_bias: bool,
    /// A bias on the LM head, `V` (Phi-2, Phi-3.5-MoE).
    #[serde(default)]
    pub head_bias: bool,
    /// One learned attention-sink logit per head and layer (gpt-oss `sinks`).
    #[serde(default)]
    pub attn_sinks: bool,
    /// Sliding-window attention span `W` in tokens (0 = every layer attends to the whole
    /// context). Changes no weight; bounds the KV cache of the windowed layers.
    #[serde(default)]
    pub window: u32,
    /// Layers that attend within the window, `L_w` (Gemma 2: every other layer; Gemma 3:
    /// five of six; gpt-oss: every other; StarCoder2 and Mistral v0.1: all).
    #[serde(default)]
    pub local_layers: u32,
    /// Multi-head latent attention shape (DeepSeek-V2/V3); `None` = standard q/k/v/o.
    pub mla: Option<Mla>,
    /// Encoder blocks of an encoder-decoder model (T5); 0 = decoder-only.
    pub encoder_layers: u32,
    /// T5 relative-position buckets (a `buckets × heads` table in the first block of each stack).
    pub rel_buckets: u32,
}

/// Multi-head latent attention (DeepSeek-V2/V3): low-rank q and kv projections.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mla {
    /// `q_lora_rank` (0 = a plain q projection).
    pub q_rank: u32,
    /// `kv_lora_rank`.
    pub kv_rank: u32,
    /// `qk_rope_head_dim`.
    pub rope_dim: u32,
    /// `qk_nope_head_dim`.
    pub nope_dim: u32,
    /// `v_head_dim`.
    pub v_dim: u32,
}

/// Parameter counts of one model, by part.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamCount {
    /// Token embedding + learned positions + embedding norm.
    pub embedding: u64,
    /// All attention projections (with biases and q/k norms), all layers.
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
        // Computed in u128: absurd overrides (1024 layers × 1024 experts × ...) saturate instead of overflowing.
        let h = self.hidden as u128;
        let v = self.vocab as u128;
        let a = self.heads as u128;
        let kv = self.kv_heads as u128;
        let d = self.head_dim as u128;
        let f = self.ffn as u128;
        let layers = self.layers as u128;
        let n = |w: u128| self.norm.params(w);
        let mut largest = 0u128;
        let mut see = |m: u128| largest = largest.max(m);

        let embedding = v * h + self.positions as u128 * h + if self.emb_norm { n(h) } else { 0 };
        see(v * h);
        see(self.positions as u128 * h);

        // One attention block (self- or cross-attention).
        let attn_layer = match self.mla {
            None => {
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
            Some(m) => {
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
        };

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
        let norm_layer = self.norms_per_layer as u128 * n(h);

        // Decoder blocks (cross-attention and a third norm for encoder-decoder models).
        let enc = self.encoder_layers as u128;
        let cross = if enc > 0 { attn_layer + n(h) } else { 0 };
        let rel = self.rel_buckets as u128 * a;
        let decoder_attn = layers * (attn_layer + cross) + if enc > 0 { rel } else { 0 };
        let decoder_mlp = dense_layers * dense_mlp(dense_f) + moe_layers * moe_layer;
        let decoder_norms = layers * norm_layer + n(h);
        // Encoder stack (T5): self-attention, MLP, 2 norms per block, a final norm.
        let attention = decoder_attn + if enc > 0 { enc * attn_layer + rel } else { 0 };
        let mlp = decoder_mlp + enc * dense_mlp(dense_f);
        let norms = decoder_norms + if enc > 0 { enc * 2 * n(h) + n(h) } else { 0 };
        let lm_head = if self.tied { 0 } else { v * h } + if self.head_bias { v } else { 0 };
        let total = embedding + attention + mlp + norms + lm_head;
        let active_routed = if e > 0 {
            (self.top_k as u128).min(e)
        } else {
            0
        };
        let active = total - moe_layers * (e - active_routed) * one_expert;
        let per_layer = attn_layer
            + cross
            + if moe_layers > 0 {
                moe_layer
            } else {
                dense_mlp(dense_f)
            }
            + norm_layer;

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

    /// Inner width of one routed expert (`moe_ffn`, or `ffn` when not given).
    pub fn expert_ffn(&self) -> u32 {
        if self.moe_ffn > 0 {
            self.moe_ffn
        } else {
            self.ffn
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
        let moe_layers =
            (self.layers as u128).saturating_sub(self.first_dense.min(self.layers) as u128);
        let per = self.mlp.matrices() as u128 * self.hidden as u128 * self.expert_ffn() as u128;
        (moe_layers * self.experts as u128 * per).min(u64::MAX as u128) as u64
    }

    /// MLP width one token passes through: `ffn` for dense models, `(top_k + shared)·f_e` for MoE.
    pub fn active_ffn(&self) -> u128 {
        if self.experts > 0 {
            self.expert_ffn() as u128 * (self.top_k + self.shared_experts).max(1) as u128
        } else {
            self.ffn as u128
        }
    }

    /// Every weight matrix (`in × out`, how many), for adapters, quantisation and
    /// factored optimizers. Vectors (biases, norms) are not listed.
    pub fn linears(&self) -> Vec<Linear> {
        let h = self.hidden as u64;
        let mut out = vec![lin(
            "embedding",
            LinearKind::Embedding,
            self.vocab as u64,
            h,
            1,
        )];
        self.attention_linears(&mut out);
        self.mlp_linears(&mut out);
        if !self.tied {
            out.push(lin("lm_head", LinearKind::Head, h, self.vocab as u64, 1));
        }
        out
    }

    /// Attention projections: q, k, v, o in every self-attention (both stacks of an
    /// encoder-decoder) and every decoder cross-attention; MLA's low-rank q_a/q, kv_a, v
    /// (the kv_b up-projection) and o.
    fn attention_linears(&self, out: &mut Vec<Linear>) {
        let h = self.hidden as u64;
        let (a, kv, d) = (
            self.heads as u64,
            self.kv_heads as u64,
            self.head_dim as u64,
        );
        let (layers, enc) = (self.layers as u64, self.encoder_layers as u64);
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
    fn mlp_linears(&self, out: &mut Vec<Linear>) {
        let h = self.hidden as u64;
        let (layers, enc, e) = (
            self.layers as u64,
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
        mlp(self.ffn as u64, dense_layers);
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
    /// A message naming the offending field when a count is zero, when the KV
    /// heads do not divide the query heads, or when `top_k` exceeds the experts.
    pub fn check(&self) -> Result<(), String> {
        for (name, v) in [
            ("layers", self.layers),
            ("hidden", self.hidden),
            ("heads", self.heads),
            ("kv_heads", self.kv_heads),
            ("head_dim", self.head_dim),
            ("ffn", self.ffn),
            ("vocab", self.vocab),
        ] {
            if v == 0 {
                return Err(format!("{name} must be at least 1"));
            }
        }
        if self.kv_heads > self.heads || self.heads % self.kv_heads != 0 {
            return Err(format!(
                "kv_heads ({}) must divide heads ({})",
                self.kv_heads, self.heads
            ));
        }
        if self.local_layers > self.layers {
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
        if self.experts > 0 && self.first_dense >= self.layers {
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
        Ok(())
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

/// `count` matrices `inp × out` of one kind.
const fn lin(name: &'static str, kind: LinearKind, inp: u64, out: u64, count: u64) -> Linear {
    Linear {
        name,
        kind,
        inp,
        out,
        count,
    }
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

/// A named model with its exact shape and the parameter count its authors publish.
#[derive(Clone, Debug, PartialEq)]
pub struct Preset {
    /// Query-string id (`model=`).
    pub id: &'static str,
    /// Display name.
    pub name: &'static str,
    /// The shape.
    pub arch: Arch,
    /// The total parameter count as published (model card or `num_parameters()`).
    pub published_params: u64,
    /// Relative tolerance of the published count: 0 when the publisher gives the
    /// exact integer, larger when it only gives a rounded figure (GPT-3's "175.0B").
    pub published_rel_tol: f64,
    /// Where the shape and count come from.
    pub source: &'static str,
}

#[allow(clippy::too_many_arguments)]
const fn dense(
    layers: u32,
    hidden: u32,
    heads: u32,
    kv_heads: u32,
    ffn: u32,
    vocab: u32,
    mlp: Mlp,
    norm: Norm,
    tied: bool,
    bias: Bias,
) -> Arch {
    Arch {
        layers,
        hidden,
        heads,
        kv_heads,
        head_dim: hidden / heads,
        ffn,
        vocab,
        mlp,
        norm,
        tied,
        bias,
        positions: 0,
        norms_per_layer: 2,
        qk_norm: false,
        qk_norm_head: false,
        emb_norm: false,
        fused_qkv: false,
        fused_gate_up: false,
        experts: 0,
        top_k: 0,
        shared_experts: 0,
        moe_ffn: 0,
        first_dense: 0,
        shared_gate: false,
        expert_bias: false,
        head_bias: false,
        attn_sinks: false,
        window: 0,
        local_layers: 0,
        mla: None,
        encoder_layers: 0,
        rel_buckets: 0,
    }
}

const fn llama(layers: u32, hidden: u32, heads: u32, kv: u32, ffn: u32, vocab: u32) -> Arch {
    dense(
        layers,
        hidden,
        heads,
        kv,
        ffn,
        vocab,
        Mlp::Swiglu,
        Norm::Rmsnorm,
        false,
        Bias::None,
    )
}

const fn gpt2(layers: u32, hidden: u32, heads: u32, positions: u32, vocab: u32) -> Arch {
    let mut a = dense(
        layers,
        hidden,
        heads,
        heads,
        4 * hidden,
        vocab,
        Mlp::Gelu,
        Norm::Layernorm,
        true,
        Bias::All,
    );
    a.positions = positions;
    a.fused_qkv = true;
    a
}

const fn with_experts(mut a: Arch, experts: u32, top_k: u32) -> Arch {
    a.experts = experts;
    a.top_k = top_k;
    a
}

const fn qwen(layers: u32, hidden: u32, heads: u32, kv: u32, ffn: u32) -> Arch {
    let mut a = llama(layers, hidden, heads, kv, ffn, 152_064);
    a.bias = Bias::Qkv;
    a
}

const fn gemma2(layers: u32, hidden: u32, heads: u32, kv: u32, head_dim: u32, ffn: u32) -> Arch {
    let mut a = llama(layers, hidden, heads, kv, ffn, 256_000);
    a.head_dim = head_dim;
    a.tied = true;
    a.norms_per_layer = 4;
    a
}

impl Arch {
    /// The same architecture with another vocabulary size.
    pub const fn with_vocab(mut self, vocab: u32) -> Arch {
        self.vocab = vocab;
        self
    }

    /// The same architecture with `local_layers` layers attending within `window` tokens.
    pub const fn with_window(mut self, window: u32, local_layers: u32) -> Arch {
        self.window = window;
        self.local_layers = local_layers;
        self
    }
}

const fn phi3(layers: u32, hidden: u32, heads: u32, kv: u32, ffn: u32) -> Arch {
    let mut a = llama(layers, hidden, heads, kv, ffn, 32_064);
    a.fused_qkv = true;
    a.fused_gate_up = true;
    a
}

fn bloom7b1() -> Arch {
    let mut a = dense(
        30,
        4096,
        32,
        32,
        16_384,
        250_880,
        Mlp::Gelu,
        Norm::Layernorm,
        true,
        Bias::All,
    );
    a.emb_norm = true;
    a.fused_qkv = true;
    a
}

/// Every model preset, in display order.
pub fn presets() -> &'static [Preset] {
    use std::sync::OnceLock;
    static P: OnceLock<Vec<Preset>> = OnceLock::new();
    P.get_or_init(|| {
        let mut all = build_presets();
        // Each family preset goes after its relatives (display order), in its own order.
        let mut placed: Vec<&str> = Vec::new();
        for p in family_presets() {
            let anchor = family_anchor(p.id);
            let n = placed.iter().filter(|a| **a == anchor).count();
            match all.iter().position(|q| q.id == anchor) {
                Some(i) => all.insert(i + 1 + n, p),
                None => all.push(p),
            }
            placed.push(anchor);
        }
        all
    })
}

const fn t5(layers: u32, hidden: u32, heads: u32, d_kv: u32, ffn: u32) -> Arch {
    let mut a = dense(
        layers,
        hidden,
        heads,
        heads,
        ffn,
        32_128,
        Mlp::Gelu,
        Norm::Rmsnorm,
        true,
        Bias::None,
    );
    a.head_dim = d_kv;
    a.encoder_layers = layers;
    a.rel_buckets = 32;
    a
}

/// T5 v1.1 / mT5 style: gated-GELU (3 matrices), untied head.
const fn t5_v11(layers: u32, hidden: u32, heads: u32, d_kv: u32, ffn: u32, vocab: u32) -> Arch {
    let mut a = t5(layers, hidden, heads, d_kv, ffn);
    a.mlp = Mlp::Swiglu;
    a.tied = false;
    a.vocab = vocab;
    a
}

fn build_presets() -> Vec<Preset> {
    let hf = "Hugging Face config.json; count = transformers num_parameters()";
    let mut olmo2 = llama(32, 4096, 32, 32, 11_008, 100_352);
    olmo2.qk_norm = true;
    let mut bloom = dense(
        70,
        14_336,
        112,
        112,
        57_344,
        250_880,
        Mlp::Gelu,
        Norm::Layernorm,
        true,
        Bias::All,
    );
    bloom.emb_norm = true;
    bloom.fused_qkv = true;
    let mut deepseek_v3 = with_experts(llama(61, 7168, 128, 128, 18_432, 129_280), 256, 8);
    deepseek_v3.head_dim = 128;
    deepseek_v3.moe_ffn = 2048;
    deepseek_v3.shared_experts = 1;
    deepseek_v3.first_dense = 3;
    deepseek_v3.mla = Some(Mla {
        q_rank: 1536,
        kv_rank: 512,
        rope_dim: 64,
        nope_dim: 128,
        v_dim: 128,
    });
    // Llama 3.2 1B/3B: tied embeddings.
    let mut llama32_1b = llama(16, 2048, 32, 8, 8192, 128_256);
    llama32_1b.tied = true;
    let mut llama32_3b = llama(28, 3072, 24, 8, 8192, 128_256);
    llama32_3b.tied = true;
    // Qwen3: RMSNorm on q and k per head, no q/k/v bias, head_dim 128.
    let qwen3 = |layers, hidden, kv, ffn, tied| {
        let mut a = llama(layers, hidden, 32, kv, ffn, 151_936);
        a.head_dim = 128;
        a.qk_norm_head = true;
        a.tied = tied;
        a
    };
    // Gemma 3 (text): sandwich norms, per-head q/k norms, tied, head_dim 256.
    let mut gemma3_1b = gemma2(26, 1152, 4, 1, 256, 6912).with_window(512, 22);
    gemma3_1b.vocab = 262_144;
    gemma3_1b.qk_norm_head = true;
    // Mistral Small 3 (24B): head_dim 128 (not hidden/heads = 160).
    let mut mistral_small = llama(40, 5120, 32, 8, 32_768, 131_072);
    mistral_small.head_dim = 128;
    // Qwen3 MoE: Qwen3's attention (per-head q/k norms, head_dim 128), every block MoE,
    // no shared experts, untied.
    let qwen3_moe = |layers, hidden, heads, ffn, moe_ffn| {
        let mut a = with_experts(llama(layers, hidden, heads, 4, ffn, 151_936), 128, 8);
        a.head_dim = 128;
        a.qk_norm_head = true;
        a.moe_ffn = moe_ffn;
        a
    };
    // Qwen1.5-MoE / Qwen2-MoE: q/k/v biases, 60 routed experts of width 1408, one shared
    // expert of width 5632 (= 4 × 1408: counted as 4 shared experts) behind a sigmoid gate.
    let mut qwen15_moe = with_experts(qwen(24, 2048, 16, 16, 5632).with_vocab(151_936), 60, 4);
    qwen15_moe.moe_ffn = 1408;
    qwen15_moe.shared_experts = 4;
    qwen15_moe.shared_gate = true;
    // StarCoder2: LayerNorm, biases on every linear, GELU MLP (c_fc, c_proj), GQA, tied.
    let starcoder2 = |layers, hidden, heads, kv| {
        dense(
            layers,
            hidden,
            heads,
            kv,
            4 * hidden,
            49_152,
            Mlp::Gelu,
            Norm::Layernorm,
            true,
            Bias::All,
        )
        .with_window(4096, layers)
    };
    // OPT: learned positions (max_position_embeddings + 2: OPT's offset), LayerNorm,
    // biases everywhere, ReLU MLP (fc1, fc2), tied.
    let opt = |layers, hidden, heads| {
        let mut a = dense(
            layers,
            hidden,
            heads,
            heads,
            4 * hidden,
            50_272,
            Mlp::Gelu,
            Norm::Layernorm,
            true,
            Bias::All,
        );
        a.positions = 2050;
        a
    };
    // Phi-2 / Phi-1.5: one LayerNorm per block (attention and MLP in parallel), biases on
    // every linear including the LM head, GELU MLP, untied.
    let phi = |layers, hidden| {
        let mut a = dense(
            layers,
            hidden,
            32,
            32,
            4 * hidden,
            51_200,
            Mlp::Gelu,
            Norm::Layernorm,
            false,
            Bias::All,
        );
        a.norms_per_layer = 1;
        a.head_bias = true;
        a
    };
    // Phi-3.5-MoE: LayerNorm, biases on q/k/v/o and the LM head (none on the experts or
    // the router), 16 experts, top-2, untied.
    let mut phi35_moe = with_experts(
        dense(
            32,
            4096,
            32,
            8,
            6400,
            32_064,
            Mlp::Swiglu,
            Norm::Layernorm,
            false,
            Bias::All,
        ),
        16,
        2,
    );
    phi35_moe.head_bias = true;
    // gpt-oss: biases on q/k/v/o, on every expert and on the router, one sink logit per
    // head, head_dim 64, every block MoE (experts as wide as the model), untied.
    let gpt_oss = |layers, experts| {
        let mut a = with_experts(
            dense(
                layers,
                2880,
                64,
                8,
                2880,
                201_088,
                Mlp::Swiglu,
                Norm::Rmsnorm,
                false,
                Bias::All,
            ),
            experts,
            4,
        );
        a.head_dim = 64;
        a.expert_bias = true;
        a.attn_sinks = true;
        a.fused_gate_up = true;
        a.with_window(128, layers / 2)
    };
    // Cohere (Command R): one weight-only LayerNorm per block (parallel attention and
    // MLP; counted as an RMSNorm: h weights, no bias), SwiGLU, no biases, tied.
    let command_r = {
        let mut a = dense(
            40,
            8192,
            64,
            64,
            22_528,
            256_000,
            Mlp::Swiglu,
            Norm::Rmsnorm,
            true,
            Bias::None,
        );
        a.norms_per_layer = 1;
        a
    };
    let mut bloom560m = bloom7b1();
    (
        bloom560m.layers,
        bloom560m.hidden,
        bloom560m.heads,
        bloom560m.kv_heads,
    ) = (24, 1024, 16, 16);
    (bloom560m.head_dim, bloom560m.ffn) = (64, 4096);
    let mut gpt3 = gpt2(96, 12_288, 96, 2048, 50_257);
    gpt3.fused_qkv = true;
    vec![
        Preset { id: "gpt2", name: "GPT-2 small (124M)", arch: gpt2(12, 768, 12, 1024, 50_257), published_params: 124_439_808, published_rel_tol: 0.0, source: hf },
        Preset { id: "gpt2-medium", name: "GPT-2 medium (355M)", arch: gpt2(24, 1024, 16, 1024, 50_257), published_params: 354_823_168, published_rel_tol: 0.0, source: hf },
        Preset { id: "gpt2-large", name: "GPT-2 large (774M)", arch: gpt2(36, 1280, 20, 1024, 50_257), published_params: 774_030_080, published_rel_tol: 0.0, source: hf },
        Preset { id: "gpt2-xl", name: "GPT-2 XL (1.5B)", arch: gpt2(48, 1600, 25, 1024, 50_257), published_params: 1_557_611_200, published_rel_tol: 0.0, source: hf },
        Preset { id: "gpt3-175b", name: "GPT-3 175B", arch: gpt3, published_params: 175_000_000_000, published_rel_tol: 0.005, source: "Brown et al. 2020 Table 2.1 shape (L=96, h=12288, a=96, n_ctx=2048), GPT-2 vocabulary 50257 unpadded, learned positions; exact count 174,604,259,328; the paper rounds to 175.0B" },
        Preset { id: "llama-2-7b", name: "Llama 2 7B", arch: llama(32, 4096, 32, 32, 11_008, 32_000), published_params: 6_738_415_616, published_rel_tol: 0.0, source: hf },
        Preset { id: "llama-2-13b", name: "Llama 2 13B", arch: llama(40, 5120, 40, 40, 13_824, 32_000), published_params: 13_015_864_320, published_rel_tol: 0.0, source: hf },
        Preset { id: "llama-2-70b", name: "Llama 2 70B", arch: llama(80, 8192, 64, 8, 28_672, 32_000), published_params: 68_976_648_192, published_rel_tol: 0.0, source: hf },
        Preset { id: "llama-3-8b", name: "Llama 3 / 3.1 8B", arch: llama(32, 4096, 32, 8, 14_336, 128_256), published_params: 8_030_261_248, published_rel_tol: 0.0, source: hf },
        Preset { id: "llama-3-70b", name: "Llama 3 / 3.1 70B", arch: llama(80, 8192, 64, 8, 28_672, 128_256), published_params: 70_553_706_496, published_rel_tol: 0.0, source: hf },
        Preset { id: "llama-3.1-405b", name: "Llama 3.1 405B", arch: llama(126, 16_384, 128, 8, 53_248, 128_256), published_params: 405_853_388_800, published_rel_tol: 0.0, source: hf },
        Preset { id: "llama-3.2-1b", name: "Llama 3.2 1B", arch: llama32_1b, published_params: 1_235_814_400, published_rel_tol: 0.0, source: "Hugging Face meta-llama/Llama-3.2-1B config.json (tied embeddings); count = transformers num_parameters()" },
        Preset { id: "llama-3.2-3b", name: "Llama 3.2 3B", arch: llama32_3b, published_params: 3_212_749_824, published_rel_tol: 0.0, source: "Hugging Face meta-llama/Llama-3.2-3B config.json (tied embeddings); count = transformers num_parameters()" },
        Preset { id: "mistral-7b", name: "Mistral 7B v0.1", arch: llama(32, 4096, 32, 8, 14_336, 32_000).with_window(4096, 32), published_params: 7_241_732_096, published_rel_tol: 0.0, source: "Hugging Face mistralai/Mistral-7B-v0.1 config.json (sliding window 4,096 on every layer: a rolling KV cache)" },
        Preset { id: "mistral-small-24b", name: "Mistral Small 3 (24B)", arch: mistral_small, published_params: 23_572_403_200, published_rel_tol: 0.0, source: "Hugging Face mistralai/Mistral-Small-24B-Base-2501 config.json (head_dim 128); count = transformers num_parameters()" },
        Preset { id: "mixtral-8x7b", name: "Mixtral 8x7B", arch: with_experts(llama(32, 4096, 32, 8, 14_336, 32_000), 8, 2), published_params: 46_702_792_704, published_rel_tol: 0.0, source: hf },
        Preset { id: "mixtral-8x22b", name: "Mixtral 8x22B", arch: with_experts(llama(56, 6144, 48, 8, 16_384, 32_768), 8, 2), published_params: 141_000_000_000, published_rel_tol: 0.005, source: "Hugging Face config.json; the model card says 141B (exact count 140,630,071,296)" },
        Preset { id: "qwen2.5-7b", name: "Qwen2.5 7B", arch: qwen(28, 3584, 28, 4, 18_944), published_params: 7_615_616_512, published_rel_tol: 0.0, source: hf },
        Preset { id: "qwen2.5-14b", name: "Qwen2.5 14B", arch: qwen(48, 5120, 40, 8, 13_824), published_params: 14_770_033_664, published_rel_tol: 0.0, source: hf },
        Preset { id: "qwen2.5-32b", name: "Qwen2.5 32B", arch: qwen(64, 5120, 40, 8, 27_648), published_params: 32_763_876_352, published_rel_tol: 0.0, source: hf },
        Preset { id: "qwen2.5-72b", name: "Qwen2.5 72B", arch: qwen(80, 8192, 64, 8, 29_568), published_params: 72_706_203_648, published_rel_tol: 0.0, source: hf },
        Preset { id: "qwen3-4b", name: "Qwen3 4B", arch: qwen3(36, 2560, 8, 9728, true), published_params: 4_022_468_096, published_rel_tol: 0.0, source: "Hugging Face Qwen/Qwen3-4B config.json (qk_norm, tied); model card: 4.0B, 3.6B non-embedding (3,633,511,936 here)" },
        Preset { id: "qwen3-8b", name: "Qwen3 8B", arch: qwen3(36, 4096, 8, 12_288, false), published_params: 8_190_735_360, published_rel_tol: 0.0, source: "Hugging Face Qwen/Qwen3-8B config.json (qk_norm, untied); model card: 8.2B, 6.95B non-embedding (6,946,075,648 here)" },
        Preset { id: "qwen3-30b-a3b", name: "Qwen3 30B-A3B (MoE)", arch: qwen3_moe(48, 2048, 32, 6144, 768), published_params: 30_532_122_624, published_rel_tol: 0.0, source: "Hugging Face Qwen/Qwen3-30B-A3B config.json (qwen3_moe: 128 experts of width 768, top-8, per-head q/k norms, untied); model card: 30.5B total, 3.3B activated" },
        Preset { id: "qwen3-235b-a22b", name: "Qwen3 235B-A22B (MoE)", arch: qwen3_moe(94, 4096, 64, 12_288, 1536), published_params: 235_093_634_560, published_rel_tol: 0.0, source: "Hugging Face Qwen/Qwen3-235B-A22B config.json (qwen3_moe: 128 experts of width 1536, top-8); model card: 235B total, 22B activated" },
        Preset { id: "qwen1.5-moe-a2.7b", name: "Qwen1.5-MoE A2.7B", arch: qwen15_moe, published_params: 14_315_784_192, published_rel_tol: 0.0, source: "Hugging Face Qwen/Qwen1.5-MoE-A2.7B config.json (qwen2_moe: 60 experts of width 1408, top-4, shared expert of width 5632 with its gate); model card: 14.3B total, 2.7B activated" },
        Preset { id: "gemma-2-9b", name: "Gemma 2 9B", arch: gemma2(42, 3584, 16, 8, 256, 14_336).with_window(4096, 21), published_params: 9_241_705_984, published_rel_tol: 0.0, source: hf },
        Preset { id: "gemma-2-27b", name: "Gemma 2 27B", arch: gemma2(46, 4608, 32, 16, 128, 36_864).with_window(4096, 23), published_params: 27_227_128_320, published_rel_tol: 0.0, source: hf },
        Preset { id: "gemma-3-1b", name: "Gemma 3 1B", arch: gemma3_1b, published_params: 999_885_952, published_rel_tol: 0.0, source: "Hugging Face google/gemma-3-1b-pt config.json (gemma3_text: sandwich norms, per-head q/k norms, tied)" },
        Preset { id: "phi-3-mini", name: "Phi-3 mini (3.8B)", arch: phi3(32, 3072, 32, 32, 8192), published_params: 3_821_079_552, published_rel_tol: 0.0, source: hf },
        Preset { id: "phi-3-medium", name: "Phi-3 medium (14B)", arch: phi3(40, 5120, 40, 10, 17_920), published_params: 13_960_238_080, published_rel_tol: 0.0, source: hf },
        Preset { id: "phi-4", name: "Phi-4 (14B)", arch: phi3(40, 5120, 40, 10, 17_920).with_vocab(100_352), published_params: 14_659_507_200, published_rel_tol: 0.0, source: "Hugging Face microsoft/phi-4 config.json (model_type phi3, untied)" },
        Preset { id: "t5-large", name: "T5 large (770M, encoder-decoder)", arch: t5(24, 1024, 16, 64, 4096), published_params: 737_668_096, published_rel_tol: 0.0, source: "Hugging Face t5-large config.json; count as DeepSpeed's doc prints it (737.67M)" },
        Preset { id: "t5-3b", name: "T5 3B (encoder-decoder)", arch: t5(24, 1024, 32, 128, 16_384), published_params: 2_851_598_336, published_rel_tol: 0.0, source: "Hugging Face t5-3b config.json; count as DeepSpeed's doc prints it (2851M)" },
        Preset { id: "deepseek-v3", name: "DeepSeek-V3 (671B MoE, MLA)", arch: deepseek_v3.clone(), published_params: 671_026_404_352, published_rel_tol: 0.0, source: "Hugging Face deepseek-ai/DeepSeek-V3 config.json, transformers num_parameters() (MTP module excluded); DeepSeek-V3 report: 671B total, 37B activated" },
        Preset { id: "deepseek-r1", name: "DeepSeek-R1 (671B MoE, MLA; V3's architecture)", arch: deepseek_v3, published_params: 671_026_404_352, published_rel_tol: 0.0, source: "Hugging Face deepseek-ai/DeepSeek-R1 config.json (model_type deepseek_v3, the V3 shape; MTP module excluded); model card: 671B total, 37B activated" },
        Preset { id: "t0-3b", name: "T0 3B (T5 v1.1 XL LM-adapted)", arch: t5_v11(24, 2048, 32, 64, 5120, 32_128), published_params: 2_849_757_184, published_rel_tol: 0.0, source: "Hugging Face bigscience/T0_3B config.json (gated-gelu, untied)" },
        Preset { id: "mt0-xxl", name: "mT0 XXL (13B, mT5 XXL)", arch: t5_v11(24, 4096, 64, 64, 10_240, 250_112), published_params: 12_921_057_280, published_rel_tol: 0.0, source: "Hugging Face bigscience/mt0-xxl config.json (gated-gelu, untied)" },
        Preset { id: "phi-2", name: "Phi-2 (2.7B)", arch: phi(32, 2560), published_params: 2_779_683_840, published_rel_tol: 0.0, source: "Hugging Face microsoft/phi-2 config.json (phi: parallel block with one LayerNorm, biases everywhere incl. the LM head, untied)" },
        Preset { id: "phi-1.5", name: "Phi-1.5 (1.4B)", arch: phi(24, 2048), published_params: 1_418_270_720, published_rel_tol: 0.0, source: "Hugging Face microsoft/phi-1_5 config.json (phi)" },
        Preset { id: "phi-3.5-moe", name: "Phi-3.5-MoE (42B, 16 experts)", arch: phi35_moe, published_params: 41_873_153_344, published_rel_tol: 0.0, source: "Hugging Face microsoft/Phi-3.5-MoE-instruct config.json (phimoe: LayerNorm, q/k/v/o and LM-head biases, 16 experts top-2); model card: 42B total, 6.6B active" },
        Preset { id: "gpt-oss-20b", name: "gpt-oss 20B (MoE)", arch: gpt_oss(24, 32), published_params: 20_914_757_184, published_rel_tol: 0.0, source: "Hugging Face openai/gpt-oss-20b config.json (gpt_oss: 32 experts top-4 with biases, attention sinks, untied; counted in bf16 — the checkpoint stores the experts in MXFP4)" },
        Preset { id: "gpt-oss-120b", name: "gpt-oss 120B (MoE)", arch: gpt_oss(36, 128), published_params: 116_829_156_672, published_rel_tol: 0.0, source: "Hugging Face openai/gpt-oss-120b config.json (gpt_oss: 128 experts top-4); model card: 117B total, 5.1B active" },
        Preset { id: "command-r", name: "Command R (35B)", arch: command_r, published_params: 34_980_831_232, published_rel_tol: 0.0, source: "Hugging Face CohereForAI/c4ai-command-r-v01 config.json (cohere: one weight-only LayerNorm per parallel block, tied)" },
        Preset { id: "starcoder2-3b", name: "StarCoder2 3B", arch: starcoder2(30, 3072, 24, 2), published_params: 3_030_371_328, published_rel_tol: 0.0, source: "Hugging Face bigcode/starcoder2-3b config.json (starcoder2: LayerNorm, biases on every linear, GELU, GQA 24/2, tied)" },
        Preset { id: "starcoder2-7b", name: "StarCoder2 7B", arch: starcoder2(32, 4608, 36, 4), published_params: 7_173_923_840, published_rel_tol: 0.0, source: "Hugging Face bigcode/starcoder2-7b config.json (starcoder2, GQA 36/4, tied)" },
        Preset { id: "stablelm-2-1.6b", name: "StableLM 2 1.6B", arch: dense(24, 2048, 32, 32, 5632, 100_352, Mlp::Swiglu, Norm::Layernorm, false, Bias::Qkv), published_params: 1_644_515_328, published_rel_tol: 0.0, source: "Hugging Face stabilityai/stablelm-2-1_6b config.json (stablelm: LayerNorm, SwiGLU, q/k/v biases, untied)" },
        Preset { id: "stablelm-3b-4e1t", name: "StableLM 3B 4E1T", arch: dense(32, 2560, 32, 32, 6912, 50_304, Mlp::Swiglu, Norm::Layernorm, false, Bias::None), published_params: 2_795_443_200, published_rel_tol: 0.0, source: "Hugging Face stabilityai/stablelm-3b-4e1t config.json (stablelm: LayerNorm, SwiGLU, no biases, untied)" },
        Preset { id: "opt-125m", name: "OPT 125M", arch: opt(12, 768, 12), published_params: 125_239_296, published_rel_tol: 0.0, source: "Hugging Face facebook/opt-125m config.json (opt: 2048 + 2 learned positions, LayerNorm, biases, ReLU MLP, tied)" },
        Preset { id: "opt-1.3b", name: "OPT 1.3B", arch: opt(24, 2048, 32), published_params: 1_315_758_080, published_rel_tol: 0.0, source: "Hugging Face facebook/opt-1.3b config.json (opt)" },
        Preset { id: "bloom-560m", name: "BLOOM 560M", arch: bloom560m, published_params: 559_214_592, published_rel_tol: 0.0, source: "Hugging Face bigscience/bloom-560m config.json (bloom: embedding LayerNorm, ALiBi, biases, tied)" },
        Preset { id: "bloom-7b1", name: "BLOOM 7B1 (bloomz-7b1)", arch: bloom7b1(), published_params: 7_069_016_064, published_rel_tol: 0.0, source: "Hugging Face bigscience/bloom-7b1 config.json" },
        Preset { id: "olmo-2-7b", name: "OLMo 2 7B", arch: olmo2, published_params: 7_298_617_344, published_rel_tol: 0.0, source: hf },
        Preset { id: "bloom-176b", name: "BLOOM 176B", arch: bloom, published_params: 176_247_271_424, published_rel_tol: 0.0, source: hf },
    ]
}

/// The preset a family preset is listed after.
fn family_anchor(id: &str) -> &'static str {
    match id {
        _ if id.starts_with("llama-4") => "llama-3.2-3b",
        "gemma-2b" | "gemma-7b" => "qwen1.5-moe-a2.7b",
        _ if id.starts_with("gemma-3") => "gemma-3-1b",
        _ if id.starts_with("deepseek-v2") => "t5-3b",
        _ if id.starts_with("command") => "command-r",
        _ if id.starts_with("olmo") => "olmo-2-7b",
        _ => "bloom-176b",
    }
}

/// Presets of the families the importer reads beyond the first dozen: Llama 4, Gemma 1
/// and 3, DeepSeek-V2, GPT-NeoX, Falcon, OLMo and OLMoE, Command R+, R7B and A. Each count
/// is `model.num_parameters()` of the class `transformers` 5.23 builds from the named
/// checkpoint's config.json (`tools/count_params.py`; the configs are in `tests/configs/`).
fn family_presets() -> Vec<Preset> {
    let exact = |id, name, arch: Arch, published_params, source| Preset {
        id,
        name,
        arch,
        published_params,
        published_rel_tol: 0.0,
        source,
    };
    // Llama 4 (text decoder): every MoE block has one shared expert as wide as a routed
    // one (`intermediate_size`), dense blocks are `intermediate_size_mlp` wide; q/k L2
    // norms have no weights; 3 of 4 layers attend within 8,192-token chunks.
    let llama4 = |experts, dense_blocks| {
        let mut a = with_experts(llama(48, 5120, 40, 8, 16_384, 202_048), experts, 1);
        (a.head_dim, a.moe_ffn, a.shared_experts, a.first_dense) = (128, 8192, 1, dense_blocks);
        a.with_window(8192, 36)
    };
    // Gemma (v1): two RMSNorms per block (Gemma 2 has four), GeGLU, head_dim 256, tied.
    let gemma = |layers, hidden, heads, kv, ffn| {
        let mut a = gemma2(layers, hidden, heads, kv, 256, ffn);
        a.norms_per_layer = 2;
        a
    };
    // Gemma 3 (text decoder of the 4B/12B/27B multimodal checkpoints): Gemma 2's block with
    // per-head q/k norms, 262,208 tokens, 1,024-token window on 5 of 6 layers.
    let gemma3 = |layers: u32, hidden, heads, kv, head_dim, ffn| {
        let mut a = gemma2(layers, hidden, heads, kv, head_dim, ffn).with_vocab(262_208);
        a.qk_norm_head = true;
        a.with_window(1024, layers - layers / 6)
    };
    // DeepSeek-V2: MLA (q rank 1536, or none in Lite; kv rank 512), 2 shared experts, one dense first block.
    let deepseek_v2 = |layers, hidden, heads, ffn, moe_ffn, experts, q_rank| {
        let mut a = with_experts(
            llama(layers, hidden, heads, heads, ffn, 102_400),
            experts,
            6,
        );
        (a.head_dim, a.moe_ffn, a.shared_experts, a.first_dense) = (128, moe_ffn, 2, 1);
        a.mla = Some(Mla {
            q_rank,
            kv_rank: 512,
            rope_dim: 64,
            nope_dim: 128,
            v_dim: 128,
        });
        a
    };
    // GPT-NeoX / Pythia: LayerNorm, biases on every linear, GELU MLP, fused qkv, untied.
    let mut neox = dense(
        44,
        6144,
        64,
        64,
        24_576,
        50_432,
        Mlp::Gelu,
        Norm::Layernorm,
        false,
        Bias::All,
    );
    neox.fused_qkv = true;
    // Falcon: no biases, GELU MLP, fused qkv, tied; 7B: multi-query, one LayerNorm per
    // parallel block; 40B (new decoder architecture): 8 KV groups, two LayerNorms.
    let falcon = |layers, hidden, heads, kv, norms| {
        let mut a = dense(
            layers,
            hidden,
            heads,
            kv,
            4 * hidden,
            65_024,
            Mlp::Gelu,
            Norm::Layernorm,
            true,
            Bias::None,
        );
        a.fused_qkv = true;
        a.norms_per_layer = norms;
        a
    };
    // OLMo (v1): LayerNorm without weights, SwiGLU, no biases.
    let olmo = |layers, hidden, heads, ffn, tied| {
        dense(
            layers,
            hidden,
            heads,
            heads,
            ffn,
            50_304,
            Mlp::Swiglu,
            Norm::LayernormNp,
            tied,
            Bias::None,
        )
    };
    // OLMoE: 64 experts of width 1024, top-8, RMSNorm over the whole q and k vectors.
    let mut olmoe = with_experts(llama(16, 2048, 16, 16, 1024, 50_304), 64, 8);
    olmoe.qk_norm = true;
    // Cohere: one weight-only LayerNorm per parallel block (counted as h weights), tied;
    // Command R+ adds per-head q/k LayerNorms (`a·d + a_kv·d` weights); Cohere2 (R7B, A)
    // attends within 4,096 tokens on 3 of 4 layers.
    let cohere = |layers: u32, hidden, heads, kv, ffn, qk_norm, window| {
        let mut a = dense(
            layers,
            hidden,
            heads,
            kv,
            ffn,
            256_000,
            Mlp::Swiglu,
            Norm::Rmsnorm,
            true,
            Bias::None,
        );
        a.norms_per_layer = 1;
        a.qk_norm = qk_norm;
        if window {
            a.with_window(4096, layers - layers / 4)
        } else {
            a
        }
    };
    vec![
        exact("llama-4-scout", "Llama 4 Scout (109B MoE, text)", llama4(16, 0), 107_769_861_120, "Hugging Face meta-llama/Llama-4-Scout-17B-16E config.json, text decoder (Llama4ForCausalLM: 16 experts top-1 + a shared expert in every block); the vision encoder (~0.9B of the card's 109B) is not counted"),
        exact("llama-4-maverick", "Llama 4 Maverick (400B MoE, text)", llama4(128, 24), 400_711_848_960, "Hugging Face meta-llama/Llama-4-Maverick-17B-128E config.json, text decoder (128 experts top-1 + shared in every other block; memfit places the 24 dense blocks first: totals exact)"),
        exact("gemma-2b", "Gemma 2B", gemma(18, 2048, 8, 1, 16_384), 2_506_172_416, "Hugging Face google/gemma-2b config.json (gemma: two RMSNorms per block, MQA, tied)"),
        exact("gemma-7b", "Gemma 7B", gemma(28, 3072, 16, 16, 24_576), 8_537_680_896, "Hugging Face google/gemma-7b config.json (gemma)"),
        exact("gemma-3-4b", "Gemma 3 4B (text)", gemma3(34, 2560, 8, 4, 256, 10_240), 3_880_263_168, "Hugging Face google/gemma-3-4b-pt config.json, text decoder (Gemma 3 report: 3,209M non-embedding + 675M embedding; the 417M SigLIP vision encoder is not counted)"),
        exact("gemma-3-12b", "Gemma 3 12B (text)", gemma3(48, 3840, 16, 8, 256, 15_360), 11_766_034_176, "Hugging Face google/gemma-3-12b-pt config.json, text decoder (report: 10,759M non-embedding)"),
        exact("gemma-3-27b", "Gemma 3 27B (text)", gemma3(62, 5376, 32, 16, 128, 21_504), 27_009_346_304, "Hugging Face google/gemma-3-27b-pt config.json, text decoder (report: 25,600M non-embedding)"),
        exact("deepseek-v2-lite", "DeepSeek-V2-Lite (16B MoE, MLA)", deepseek_v2(27, 2048, 16, 10_944, 1408, 64, 0), 15_706_484_224, "Hugging Face deepseek-ai/DeepSeek-V2-Lite config.json (no q compression, 64 experts + 2 shared, top-6); model card: 15.7B total, 2.4B activated"),
        exact("deepseek-v2", "DeepSeek-V2 (236B MoE, MLA)", deepseek_v2(60, 5120, 128, 12_288, 1536, 160, 1536), 235_741_434_880, "Hugging Face deepseek-ai/DeepSeek-V2 config.json (160 experts + 2 shared, top-6); model card: 236B total, 21B activated"),
        exact("gpt-neox-20b", "GPT-NeoX 20B", neox, 20_554_567_680, "Hugging Face EleutherAI/gpt-neox-20b config.json (gpt_neox: parallel block, two LayerNorms, biases, untied); the Pythia README's count"),
        exact("falcon-7b", "Falcon 7B", falcon(32, 4544, 71, 1, 1), 6_921_720_704, "Hugging Face tiiuae/falcon-7b config.json (falcon: multi-query, one LayerNorm per parallel block, no biases, tied)"),
        exact("falcon-40b", "Falcon 40B", falcon(60, 8192, 128, 8, 2), 41_303_293_952, "Hugging Face tiiuae/falcon-40b config.json (new decoder architecture: 8 KV groups, ln_attn and ln_mlp, tied)"),
        exact("olmo-1b", "OLMo 1B", olmo(16, 2048, 16, 8192, true), 1_176_764_416, "Hugging Face allenai/OLMo-1B-hf config.json (olmo: LayerNorm without weights, SwiGLU, tied)"),
        exact("olmo-7b", "OLMo 7B", olmo(32, 4096, 32, 11_008, false), 6_888_095_744, "Hugging Face allenai/OLMo-7B-hf config.json (olmo, untied)"),
        exact("olmoe-1b-7b", "OLMoE 1B-7B (MoE)", olmoe, 6_919_161_856, "Hugging Face allenai/OLMoE-1B-7B-0924 (and -0125, the same shape) config.json (olmoe: 64 experts top-8, q/k RMSNorms); model card: 6.9B total, 1.3B active"),
        exact("command-r-plus", "Command R+ (104B)", cohere(64, 12_288, 96, 8, 33_792, true, false), 103_810_674_688, "Hugging Face CohereForAI/c4ai-command-r-plus config.json (cohere with use_qk_norm: per-head q/k LayerNorms, tied)"),
        exact("command-r7b", "Command R7B", cohere(32, 4096, 32, 8, 14_336, false, true), 8_028_033_024, "Hugging Face CohereForAI/c4ai-command-r7b-12-2024 config.json (cohere2: 4,096-token window on 3 of 4 layers, tied)"),
        exact("command-a", "Command A (111B)", cohere(64, 12_288, 96, 8, 36_864, false, true), 111_057_580_032, "Hugging Face CohereForAI/c4ai-command-a-03-2025 config.json (cohere2)"),
    ]
}

/// Looks a preset up by its id.
pub fn preset(id: &str) -> Option<&'static Preset> {
    presets().iter().find(|p| p.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every preset's computed count equals the count its publisher reports.
    #[test]
    fn presets_match_published_counts() {
        for p in presets() {
            p.arch.check().unwrap_or_else(|e| panic!("{}: {e}", p.id));
            let got = p.arch.params().total;
            if p.published_rel_tol == 0.0 {
                assert_eq!(got, p.published_params, "{}", p.id);
            } else {
                let rel =
                    (got as f64 - p.published_params as f64).abs() / p.published_params as f64;
                assert!(
                    rel <= p.published_rel_tol,
                    "{}: {got} vs {} (rel {rel})",
                    p.id,
                    p.published_params
                );
            }
        }
    }

    #[test]
    fn gpt2_breakdown_by_hand() {
        // wte 50257·768 + wpe 1024·768; block: c_attn 768·2304+2304, c_proj 768²+768,
        // c_fc 768·3072+3072, c_proj 3072·768+768, 2 LayerNorms 4·768; ln_f 2·768.
        let p = preset("gpt2").unwrap().arch.params();
        assert_eq!(p.embedding, 38_597_376 + 786_432);
        assert_eq!(
            p.per_layer,
            1_771_776 + 590_592 + 2_362_368 + 2_360_064 + 3_072
        );
        assert_eq!(p.largest_layer, 38_597_376); // transformer.wte, as DeepSpeed reports
        assert_eq!(p.lm_head, 0);
    }

    #[test]
    fn deepseek_v3_active_params() {
        // DeepSeek-V3 technical report: "37B activated" per token, which rounds a count
        // without the input embedding lookup (129280·7168): 37.55B − 0.93B = 36.63B → 37B.
        let p = preset("deepseek-v3").unwrap().arch.params();
        assert_eq!(p.active, 37_552_282_624);
        let without_lookup = p.active - 129_280 * 7168;
        assert_eq!((without_lookup as f64 / 1e9).round(), 37.0);
    }

    #[test]
    fn t5_largest_layer_is_the_shared_embedding() {
        // DeepSpeed reports `shared` (32128·1024) for both T5 shapes.
        assert_eq!(
            preset("t5-3b").unwrap().arch.params().largest_layer,
            32_899_072
        );
    }

    #[test]
    fn moe_active_params() {
        // Mixtral 8x7B: "12.9B active" (Mistral AI). By hand: total minus the 6 unused
        // experts in each of 32 layers, 46,702,792,704 − 32·6·(3·4096·14336).
        let p = preset("mixtral-8x7b").unwrap().arch.params();
        assert_eq!(p.active, 46_702_792_704 - 32 * 6 * 3 * 4096 * 14_336);
        assert_eq!(p.active, 12_879_925_248);
    }

    #[test]
    fn linears_cover_every_matrix() {
        // Matrices + vectors = the total; Llama-2-7B's vectors are its 65 RMSNorms.
        for id in ["llama-2-7b", "mixtral-8x7b", "t5-3b", "deepseek-v3", "gpt2"] {
            let a = &preset(id).unwrap().arch;
            let m: u64 = a.linears().iter().map(Linear::params).sum();
            let p = a.params();
            assert!(m <= p.total, "{id}");
            if id == "llama-2-7b" {
                assert_eq!(p.total - m, 65 * 4096);
            }
        }
    }

    #[test]
    fn check_rejects_bad_shapes() {
        let mut a = preset("llama-2-7b").unwrap().arch.clone();
        a.kv_heads = 5;
        assert!(a.check().unwrap_err().contains("kv_heads"));
        a.kv_heads = 32;
        a.layers = 0;
        assert!(a.check().unwrap_err().contains("layers"));
    }
}

//! What the blocks of a state-space or hybrid model are: how many mix tokens with
//! softmax attention (and so carry a KV cache), with a Mamba / Mamba-2 state-space layer
//! (and of what state), with a short convolution, or with linear attention, and how many
//! feed-forwards are mixtures of experts.
//!
//! An [`Arch`] describes `L` identical transformer blocks; these models are not that.
//! The config.json import counts their parameters exactly from the config (see
//! `hfconfig::hybrid`) and describes their blocks with a [`LayerMix`]; the import carries
//! the mix into the query (`attn_layers`, `mamba_layers`, `conv_layers`, `linear_layers`
//! and the `ssm_*` shape keys, resolved onto the [`Arch`]), where inference reads it: the
//! KV cache only in attention blocks, the conv and recurrent state per Mamba / convolution
//! block (see `infer::ssm`).

use super::{Arch, ParamCount};
use serde::{Deserialize, Serialize};

/// The shape of the state-space layers of a model (all of its SSM layers share one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ssm {
    /// 1 (Mamba: selective scan, a `d_inner × d_state` state per sequence and layer) or
    /// 2 (Mamba-2 / SSD: `heads × head_dim × d_state`, `groups` shared B and C).
    pub version: u8,
    /// Inner width `d_inner` (Mamba: `expand·h`; Mamba-2: `heads·head_dim`), channels.
    pub d_inner: u64,
    /// State size per channel, `N` (`state_size`, `mamba_d_state`, `ssm_state_size`).
    pub d_state: u64,
    /// Groups of B and C (Mamba-2 `n_groups`; 1 for Mamba).
    pub groups: u64,
    /// SSM heads (Mamba-2 `num_heads`; 0 for Mamba).
    pub heads: u64,
    /// Causal depthwise convolution kernel, tokens (`conv_kernel`, `d_conv`); the
    /// convolution cache holds `kernel − 1` tokens of `d_inner + 2·groups·N` channels.
    pub conv_kernel: u64,
    /// Mamba-2's chunk length `l` of the chunked scan, tokens (`chunk_size`,
    /// `mamba_chunk_size`; transformers' `Mamba2Config` default 256; 0 for Mamba).
    #[serde(default)]
    pub chunk: u64,
}

impl Ssm {
    /// Mamba-2's chunk length `l`, tokens: `chunk`, or transformers' `Mamba2Config`
    /// default 256 when unset (0).
    pub fn chunk_len(&self) -> u128 {
        if self.chunk == 0 {
            256
        } else {
            self.chunk as u128
        }
    }
}

/// The shape of a model's gated-DeltaNet linear-attention layers (Qwen3-Next): `k_heads`
/// query/key heads of `k_dim`, `v_heads` value heads of `v_dim`, a causal convolution of
/// `conv_kernel` over q, k and v, and a `v_heads × k_dim × v_dim` state per sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinearAttn {
    /// `linear_num_key_heads`, `H_k`.
    pub k_heads: u64,
    /// `linear_num_value_heads`, `H_v`.
    pub v_heads: u64,
    /// `linear_key_head_dim`, `d_k`.
    pub k_dim: u64,
    /// `linear_value_head_dim`, `d_v`.
    pub v_dim: u64,
    /// `linear_conv_kernel_dim`, `K`.
    pub conv_kernel: u64,
}

crate::spelled! {
    /// The recurrent (SSM) state's element type a checkpoint declares (`mamba_ssm_dtype`):
    /// the serving engines' cache of Mamba and gated-DeltaNet blocks holds it.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum SsmDtype {
        /// None declared: vLLM keeps the state in the model dtype, SGLang in fp32.
        #[default]
        Auto = "auto", "the engine's default", "vLLM: model dtype; SGLang: fp32";
        /// float32 (Qwen3.5's `mamba_ssm_dtype`), 4 B an element.
        Fp32 = "fp32", "float32", "4 B";
        /// bfloat16, 2 B an element.
        Bf16 = "bf16", "bfloat16", "2 B";
    }
}

impl SsmDtype {
    /// Bytes an element: the declared type's, else `default`.
    pub fn bytes_or(self, default: u64) -> u64 {
        match self {
            SsmDtype::Auto => default,
            SsmDtype::Fp32 => 4,
            SsmDtype::Bf16 => 2,
        }
    }
}

crate::spelled! {
    /// Which linear attention the `linear_layers` blocks run.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum LinKind {
        /// Gated DeltaNet (Qwen3-Next): a causal convolution over q, k, v and an fp32
        /// `H_v·d_k·d_v` state in transformers (`lin_k_heads`, `lin_v_heads`, `lin_k_dim`,
        /// `lin_v_dim`).
        #[default]
        Gdn = "gdn", "gated DeltaNet", "Qwen3-Next";
        /// Lightning attention (MiniMax-Text-01): no convolution, a `H·d·d` state (`K^T V`)
        /// in the model dtype (`lin_v_heads` heads of `lin_v_dim`).
        Lightning = "lightning", "lightning attention", "MiniMax-Text-01";
    }
}

/// The shape of a model's lightning-attention blocks (MiniMax-Text-01): `heads` of
/// `head_dim`, whose state per sequence is one `head_dim × head_dim` matrix per head
/// (`attn_weights_inter`, constant in the tokens).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lightning {
    /// `num_attention_heads`, `H`.
    pub heads: u64,
    /// `head_dim`, `d`.
    pub head_dim: u64,
}

/// How the blocks of a non-transformer (state-space, hybrid, short-convolution,
/// linear-attention) model divide. Every count is of decoder blocks (`layers` in all);
/// Falcon-H1's parallel blocks count as both an attention and a Mamba layer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerMix {
    /// Decoder blocks.
    pub layers: u64,
    /// Blocks with softmax attention: the only ones with a KV cache.
    pub attention: u64,
    /// Of those, blocks whose attention is windowed (`window` tokens of KV cache).
    pub windowed: u64,
    /// Blocks with a Mamba / Mamba-2 mixer ([`LayerMix::ssm`]).
    pub mamba: u64,
    /// Their state-space shape.
    pub ssm: Option<Ssm>,
    /// Blocks with a gated short convolution (LFM2): cache `conv_kernel − 1` tokens × `h`.
    pub conv: u64,
    /// The short convolution's kernel, tokens.
    pub conv_kernel: u64,
    /// Blocks with linear attention (Qwen3-Next's gated DeltaNet, MiniMax's lightning
    /// attention): a fixed-size state, no KV cache.
    pub linear_attention: u64,
    /// Their shape, where they are gated DeltaNet.
    #[serde(default)]
    pub linear: Option<LinearAttn>,
    /// Their shape, where they are MiniMax's lightning attention.
    #[serde(default)]
    pub lightning: Option<Lightning>,
    /// Blocks whose feed-forward is a mixture of experts.
    pub moe: u64,
}

impl Arch {
    /// Whether some blocks are not softmax-attention transformer blocks (Mamba,
    /// short-convolution or linear-attention blocks).
    pub fn is_hybrid(&self) -> bool {
        self.mamba_layers > 0 || self.conv_layers > 0 || self.linear_layers > 0
    }

    /// Blocks with softmax attention, `L_a`: `attn_layers` when given (Falcon-H1's
    /// parallel blocks are attention and Mamba blocks at once; Nemotron-H's MLP-only blocks
    /// are neither), else `L − L_m − L_c − L_lin` (every block of a transformer).
    pub fn attention_layers(&self) -> u32 {
        match self.attn_layers {
            Some(n) => n.min(self.layers.get()),
            None => self.layers.get().saturating_sub(
                self.mamba_layers
                    .saturating_add(self.conv_layers)
                    .saturating_add(self.linear_layers),
            ),
        }
    }

    /// The Mamba blocks' shape with the defaults of transformers' `MambaConfig` /
    /// `Mamba2Config` (5.24) for what the query leaves empty: `d = 2·h`, `N` = 16 (Mamba)
    /// or 128 (Mamba-2), `G = 1`, `H = ⌈d/64⌉` (head_dim 64), `K = 4`, Mamba-2's chunk
    /// `l = 256`. `None` without
    /// Mamba blocks.
    pub fn ssm_shape(&self) -> Option<Ssm> {
        if self.mamba_layers == 0 {
            return None;
        }
        let version: u8 = if self.ssm_version == 2 { 2 } else { 1 };
        let or = |v: u32, d: u64| if v > 0 { v as u64 } else { d };
        let d_inner = or(self.ssm_inner, 2 * self.hidden.get() as u64);
        Some(Ssm {
            version,
            d_inner,
            d_state: or(self.ssm_state, if version == 2 { 128 } else { 16 }),
            groups: if version == 2 {
                or(self.ssm_groups, 1)
            } else {
                1
            },
            heads: if version == 2 {
                or(self.ssm_heads, d_inner.div_ceil(64))
            } else {
                0
            },
            conv_kernel: or(self.ssm_conv, 4),
            chunk: if version == 2 {
                or(self.ssm_chunk, 256)
            } else {
                0
            },
        })
    }

    /// The exact count of a pure state-space model (every block a Mamba / Mamba-2 block: no
    /// attention, convolution or linear-attention blocks, no MLP), as transformers builds
    /// `MambaForCausalLM` / `FalconMambaForCausalLM` / `Mamba2ForCausalLM` with their
    /// default flags (conv bias, no projection biases, Mamba-2's gated norm); `None`
    /// otherwise (a hybrid's count comes from its config.json import as `params`).
    ///
    /// # Formula
    /// ```text
    /// Ψ = V·h + L·(h + mixer) + h + [untied]·V·h
    /// Mamba:    mixer = 3·d·h + d·K + d + d·(R + 2N) + R·d + d + d·N + d,   R = ⌈h/16⌉
    /// Mamba-2:  mixer = h·(2d + 2GN + H) + (d + 2GN)·(K + 1) + 3H + d + d·h
    /// ```
    /// (in_proj, the depthwise conv with its bias, x_proj, dt_proj with its bias, A_log, D,
    /// out_proj; Mamba-2: in_proj, conv, dt_bias, A_log, D, the gated RMSNorm, out_proj).
    /// Source: transformers 5.24 `modeling_mamba.MambaMixer.__init__`,
    /// `modeling_mamba2.Mamba2Mixer.__init__` (as `hfconfig::hybrid` counts them).
    ///
    /// # Example
    /// state-spaces/mamba2-2.7b (h 2,560, d 5,120, N 128, G 1, H 80, K 4, V 50,288, 64
    /// layers, tied): 50,288·2,560 + 64·(2,560 + 40,214,000) + 2,560 = 2,702,599,680.
    pub fn ssm_params(&self) -> Option<ParamCount> {
        let m = self.ssm_shape()?;
        if self.mamba_layers != self.layers.get()
            || self.attn_layers.is_some_and(|a| a > 0)
            || self.conv_layers > 0
            || self.linear_layers > 0
        {
            return None;
        }
        let (h, v, l) = (
            self.hidden.get() as u128,
            self.vocab.get() as u128,
            self.layers.get() as u128,
        );
        let (d, n, k) = (m.d_inner as u128, m.d_state as u128, m.conv_kernel as u128);
        let (in_proj, mixer) = if m.version == 2 {
            let (g, hh) = (m.groups as u128, m.heads as u128);
            let in_proj = h * (2 * d + 2 * g * n + hh);
            let conv = (d + 2 * g * n) * (k + 1);
            (in_proj, in_proj + conv + 3 * hh + d + d * h)
        } else {
            let r = h.div_ceil(16);
            let in_proj = 2 * d * h;
            let rest = d * k + d + d * (r + 2 * n) + r * d + d + d * n + d + d * h;
            (in_proj, in_proj + rest)
        };
        let c = |x: u128| x.min(u64::MAX as u128) as u64;
        let embedding = v * h;
        let lm_head = if self.tied { 0 } else { v * h };
        let norms = l * h + h;
        let total = embedding + l * mixer + norms + lm_head;
        Some(ParamCount {
            embedding: c(embedding),
            attention: c(l * mixer),
            mlp: 0,
            norms: c(norms),
            lm_head: c(lm_head),
            total: c(total),
            active: c(total),
            largest_layer: c(embedding.max(in_proj)),
            per_layer: c(h + mixer),
        })
    }

    /// Whether the attention blocks are Qwen3-Next's gated attention: `q_proj` twice as wide
    /// (the query and a sigmoid output gate, `attn_output * torch.sigmoid(gate)` before
    /// `o_proj`) with per-head q/k RMSNorms. True for a model with gated-DeltaNet blocks
    /// ([`Arch::linear_shape`]): Qwen3-Next is the one family memfit imports with them
    /// (transformers 5.24 `modeling_qwen3_next.Qwen3NextAttention.forward`).
    pub fn gated_attention(&self) -> bool {
        self.linear_shape().is_some()
    }

    /// The gated-DeltaNet shape of the linear-attention blocks (`lin_*` keys, the
    /// convolution's kernel `ssm_conv`, else 4); `None` without linear-attention blocks, when
    /// they are lightning attention ([`Arch::lightning_shape`]) or without their shape (not
    /// modelled, a warning says so).
    pub fn linear_shape(&self) -> Option<LinearAttn> {
        let f = [
            self.lin_k_heads,
            self.lin_v_heads,
            self.lin_k_dim,
            self.lin_v_dim,
        ];
        if self.linear_layers == 0 || self.lin_kind != LinKind::Gdn || f.contains(&0) {
            return None;
        }
        Some(LinearAttn {
            k_heads: f[0] as u64,
            v_heads: f[1] as u64,
            k_dim: f[2] as u64,
            v_dim: f[3] as u64,
            conv_kernel: if self.ssm_conv > 0 {
                self.ssm_conv as u64
            } else {
                4
            },
        })
    }

    /// The lightning-attention shape of the linear-attention blocks (`lin_kind=lightning`:
    /// `lin_v_heads` heads of `lin_v_dim`); `None` otherwise or without the shape.
    pub fn lightning_shape(&self) -> Option<Lightning> {
        let ok = self.linear_layers > 0 && self.lin_kind == LinKind::Lightning;
        (ok && self.lin_v_heads > 0 && self.lin_v_dim > 0).then_some(Lightning {
            heads: self.lin_v_heads as u64,
            head_dim: self.lin_v_dim as u64,
        })
    }

    /// Whether the model has state blocks and every one is Mamba-2 or gated DeltaNet with
    /// its shape (what SGLang's `Mamba2StateShape` covers, and memfit models for SGLang):
    /// short convolutions, Mamba-1 and lightning attention are not.
    pub fn states_mamba2_or_gdn(&self) -> bool {
        let mamba = self.mamba_layers == 0 || self.ssm_shape().is_some_and(|m| m.version == 2);
        let linear = self.linear_layers == 0 || self.linear_shape().is_some();
        let any = self.mamba_layers > 0 || self.linear_layers > 0;
        any && mamba && linear && self.conv_layers == 0
    }

    /// The linear-attention blocks whose state memfit counts: gated DeltaNet or lightning
    /// attention with their shape, else 0.
    pub fn modelled_linear_layers(&self) -> u32 {
        if self.linear_shape().is_some() || self.lightning_shape().is_some() {
            self.linear_layers
        } else {
            0
        }
    }

    /// The short convolution's kernel `K` (LFM2's `conv_L_cache`): `ssm_conv`, else 3.
    pub fn short_conv_kernel(&self) -> u64 {
        if self.ssm_conv > 0 {
            self.ssm_conv as u64
        } else {
            3
        }
    }

    /// Checks the layer mix: the attention blocks at most `L`, the Mamba, convolution and
    /// linear-attention blocks together at most `L` (a block has one mixer, except
    /// Falcon-H1's parallel attention + Mamba, counted by `attn_layers`), Mamba-2's heads
    /// dividing `d` and its groups dividing the heads.
    ///
    /// # Errors
    /// A message naming the keys.
    pub fn check_mix(&self) -> Result<(), String> {
        if let Some(a) = self.attn_layers {
            if a > self.layers.get() {
                return Err(format!(
                    "attn_layers ({a}) must not exceed layers ({})",
                    self.layers
                ));
            }
        }
        let other = self.mamba_layers as u64 + self.conv_layers as u64 + self.linear_layers as u64;
        if other > self.layers.get() as u64 {
            return Err(format!(
                "mamba_layers + conv_layers + linear_layers ({other}) must not exceed layers ({})",
                self.layers
            ));
        }
        if let Some(m) = self.ssm_shape() {
            if m.version == 2
                && (m.heads == 0 || m.d_inner % m.heads != 0 || m.heads % m.groups != 0)
            {
                return Err(format!(
                    "Mamba-2: ssm_heads ({}) must divide ssm_inner ({}) and ssm_groups ({}) must divide ssm_heads",
                    m.heads, m.d_inner, m.groups
                ));
            }
        }
        Ok(())
    }
}

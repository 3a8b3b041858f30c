//! Megatron-LM's theoretical memory formula, reproduced.
//!
//! `megatron/training/theoretical_memory_usage.py` reports, for the first (most
//! loaded) pipeline stage, "weight and optimizer" bytes and activation bytes. Two
//! revisions are reproduced (`reference/megatron_formula.json`, tolerance 1e-9):
//!
//! - **HEAD** (d98e8a64, 2026-08-22): RMSNorm counted as 1 parameter per element,
//!   norms and routers replicated across TP, experts sharded by EP × expert-TP with
//!   their own expert-data-parallel size; a "without SP" activation path
//!   `s·b·h·(10 + 24/t) × 1.05` used when sequence parallelism is off or recompute is
//!   not selective.
//! - **core_v0.14.0**: every norm 2 parameters per element and TP-sharded, no expert
//!   sharding; activations only for sequence parallel + selective recompute.
//!
//! Megatron computes in floats (it divides by t, p, d); so does this module.

use crate::fexpr::{FExpr, FTok, FTok::*};
use serde::{Deserialize, Serialize};
use std::num::NonZeroU64;

/// Which revision of Megatron-LM's formula.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MegatronVersion {
    /// NVIDIA/Megatron-LM HEAD d98e8a64 (megatron-core 0.20.0 dev).
    Head,
    /// Tag core_v0.14.0.
    V0_14,
}

crate::spelled! {
    /// Activation recomputation.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Recompute {
        /// Keep every activation.
        #[default]
        None = "none", "none", "";
        /// Recompute the attention core (Korthikanti et al.'s selective recomputation).
        Selective = "selective", "selective", "";
        /// Recompute whole layers from their checkpointed inputs.
        Full = "full", "full", "";
    }
}

/// The arguments Megatron's formula reads (names follow Megatron's `args`).
#[derive(Clone, Debug, PartialEq)]
pub struct MegatronArgs {
    /// `num_layers`, L.
    pub num_layers: u64,
    /// `hidden_size`, h.
    pub hidden_size: u64,
    /// `num_attention_heads`, a.
    pub num_attention_heads: u64,
    /// `num_query_groups` (GQA), g.
    pub num_query_groups: u64,
    /// `kv_channels` (head width).
    pub kv_channels: u64,
    /// `ffn_hidden_size`.
    pub ffn_hidden_size: u64,
    /// `swiglu`.
    pub swiglu: bool,
    /// `normalization == "LayerNorm"` (else RMSNorm).
    pub layernorm: bool,
    /// Unpadded vocabulary.
    pub vocab_size: u64,
    /// `make_vocab_size_divisible_by` (Megatron's default 128).
    pub make_vocab_size_divisible_by: NonZeroU64,
    /// `untie_embeddings_and_output_weights`.
    pub untie: bool,
    /// `num_experts` (None = dense).
    pub num_experts: Option<NonZeroU64>,
    /// `moe_ffn_hidden_size`.
    pub moe_ffn_hidden_size: u64,
    /// `moe_router_topk`.
    pub moe_router_topk: u64,
    /// `add_bias_linear` (adds a router bias).
    pub add_bias_linear: bool,
    /// TP degree.
    pub tp: NonZeroU64,
    /// PP degree.
    pub pp: NonZeroU64,
    /// Virtual pipeline stages per rank (interleaved schedule), if any.
    pub vp: Option<NonZeroU64>,
    /// DP degree.
    pub dp: NonZeroU64,
    /// Expert-parallel degree.
    pub ep: NonZeroU64,
    /// Expert tensor-parallel degree.
    pub etp: NonZeroU64,
    /// Sequence parallelism.
    pub sequence_parallel: bool,
    /// Recompute granularity.
    pub recompute: Recompute,
    /// Distributed optimizer (ZeRO-1 style sharding of fp32 state over DP).
    pub use_distributed_optimizer: bool,
    /// Sequence length, s.
    pub seq_length: u64,
    /// Micro-batch size, b.
    pub micro_batch_size: u64,
    /// Micro-batches per step (None = not given).
    pub num_microbatches: Option<u64>,
}

/// Megatron's answer for the first pipeline stage.
#[derive(Clone, Debug, PartialEq)]
pub struct MegatronEstimate {
    /// Total parameters (Megatron's count).
    pub total_params: f64,
    /// Active parameters per token (MoE).
    pub active_params: f64,
    /// Parameters on the most loaded shard (first stage).
    pub most_loaded_shard_params: f64,
    /// Weights + gradients + optimizer states, bytes.
    pub weight_and_optimizer_bytes: f64,
    /// Activations, bytes (`None`: this revision does not report them for these settings).
    pub activation_bytes: Option<f64>,
    /// Whether the "without SP" path (HEAD only) was taken.
    pub without_sp_path: bool,
    /// `weight_and_optimizer_bytes` as its formula (the ledger prints it).
    pub states: FExpr,
    /// `activation_bytes` as its formula.
    pub activations: Option<FExpr>,
}

impl MegatronArgs {
    /// `ceil(V / (128·t)) · 128·t`: the vocabulary padded so every TP rank gets an equal slice.
    pub fn padded_vocab(&self) -> u64 {
        let m = self.make_vocab_size_divisible_by.get() * self.tp.get();
        self.vocab_size.div_ceil(m) * m
    }
}

/// Megatron-LM's theoretical memory for the most loaded (first) pipeline stage.
///
/// # Formula
/// ```text
/// per layer (HEAD): attn = 2·h²·(1 + g/a)·(d·a/h)
///                   mlp  = 2·h·f·(3/2 if SwiGLU)       | MoE: 2·h·f_e·E·glu + router h·E
///                   norms = 2·h·n                      (n = 1 RMSNorm, 2 LayerNorm)
/// final norm n·h; embedding h·V_pad (×2 untied)
/// shard = ((attn+mlp)·L/p + emb)/t + (norms+routers)/p + experts/(p·etp·ep) [+ emb/t if untied and p = 1]
/// bytes/param = 18, or 6 + 12/d with the distributed optimizer (experts: d_e = world/(etp·ep·p))
/// activations (SP + selective): [s·b·h·(18 + 4f/h)·L + 8·s·b·p + s·b·h·p]·PP factor
///                               [+ 4·s·b·h·(1 + V/h) if p = 1] / t
/// activations (HEAD, otherwise): [s·b·h·(10 + 24/t)·L + 8·s·b·p + s·b·h·p]·PP factor
///                               [+ 2·(s·b·V/t + s·b·h) if p = 1] · 1.05
/// PP factor: 1 + (p−1)/(p·v) interleaved, else min(1, m/p) when p > 1
/// ```
/// `h` hidden, `a` heads, `g` query groups, `d` kv channels, `f` FFN width, `L`
/// layers, `t`/`p`/`d` TP/PP/DP, `s` sequence, `b` micro-batch, `m` micro-batches,
/// `v` virtual stages, `V` padded vocabulary.
///
/// Source: NVIDIA Megatron-LM `megatron/training/theoretical_memory_usage.py` at
/// HEAD d98e8a64 and core_v0.14.0, as recorded in `reference/megatron_formula.json`.
///
/// # Example
/// GPT-3 175B, t = p = d = 8, SP + selective, distributed optimizer: weight and
/// optimizer 20,978,588,160 B, activations 10,292,838,400 B (HEAD), printed as
/// "weight and optimizer=20006.74 MB, activation=9816.02 MB".
pub fn megatron_memory(args: &MegatronArgs, version: MegatronVersion) -> MegatronEstimate {
    let c = Common::of(args);
    match version {
        MegatronVersion::V0_14 => megatron_v0_14(args, c),
        MegatronVersion::Head => megatron_head(args, c),
    }
}

/// What both revisions compute first (as `theoretical_memory_usage.py` names them).
#[derive(Clone, Copy)]
struct Common {
    l: f64,
    h: f64,
    a: f64,
    g: f64,
    t: f64,
    p: f64,
    d: f64,
    glu: f64,
    v_pad: f64,
    attn: f64,
    emb: f64,
    emb_total: f64,
    experts: u64,
    moe: bool,
}

impl Common {
    fn of(args: &MegatronArgs) -> Common {
        let f = |x: u64| x as f64;
        let (l, h, a) = (
            f(args.num_layers),
            f(args.hidden_size),
            f(args.num_attention_heads).max(1.0),
        );
        let g = f(args.num_query_groups);
        let v_pad = f(args.padded_vocab());
        let emb = h * v_pad;
        Common {
            l,
            h,
            a,
            g,
            t: f(args.tp.get()),
            p: f(args.pp.get()),
            d: f(args.dp.get()),
            glu: if args.swiglu { 1.5 } else { 1.0 },
            v_pad,
            attn: 2.0 * h * h * (1.0 + g / a) * (f(args.kv_channels) * a / h),
            emb,
            emb_total: if args.untie { 2.0 * emb } else { emb },
            experts: args.num_experts.map_or(1, NonZeroU64::get),
            moe: args.num_experts.is_some(),
        }
    }
}

/// core_v0.14.0: everything (incl. 2-per-element norms) in one TP-sharded block;
/// activations only on the sequence-parallel, selective-recompute path.
fn megatron_v0_14(args: &MegatronArgs, c: Common) -> MegatronEstimate {
    let Common {
        l,
        h,
        a,
        g,
        t,
        p,
        d,
        glu,
        v_pad,
        attn: _,
        emb,
        emb_total,
        experts,
        moe,
    } = c;
    let f = |x: u64| x as f64;
    // Everything (incl. 2-per-element norms) in one TP-sharded block.
    let e = f(experts);
    let layer_params = 2.0
        * l
        * h
        * h
        * (((1.0 + g / a) * (f(args.kv_channels) * a / h))
            + (f(args.ffn_hidden_size) / h) * e * glu
            + 2.0 / h
            + 1.0 / (l * h));
    let total = layer_params + emb_total;
    let active = if moe {
        let topk = f(args.moe_router_topk.min(experts));
        total - 2.0 * l * h * f(args.ffn_hidden_size) * glu * (e - topk)
    } else {
        total
    };
    let mut shard = (layer_params / p + emb) / t;
    if args.untie && args.pp.get() == 1 {
        shard += emb / t;
    }
    let bpp = if args.use_distributed_optimizer {
        6.0 + 12.0 / d
    } else {
        18.0
    };
    let activations = if args.sequence_parallel && args.recompute == Recompute::Selective {
        Some(activations_sp(args, v_pad))
    } else {
        None
    };
    let states = FExpr::new(&[Sym("shard", shard), Sym("β", bpp), Mul]);
    MegatronEstimate {
        total_params: total,
        active_params: active,
        most_loaded_shard_params: shard,
        weight_and_optimizer_bytes: states.eval().unwrap_or(0.0),
        activation_bytes: activations.as_ref().and_then(FExpr::eval),
        without_sp_path: false,
        states,
        activations,
    }
}

/// HEAD d98e8a64: norms and routers replicated, experts sharded over `etp·ep`, the
/// distributed optimizer over the expert-data-parallel group for experts.
fn megatron_head(args: &MegatronArgs, c: Common) -> MegatronEstimate {
    let Common {
        l,
        h,
        a: _,
        g: _,
        t,
        p,
        d,
        glu,
        v_pad,
        attn,
        emb,
        emb_total,
        experts,
        moe,
    } = c;
    let f = |x: u64| x as f64;
    let norm_size = if args.layernorm { 2.0 } else { 1.0 };
    let norms = l * 2.0 * h * norm_size + norm_size * h;
    let (dense_mlp, expert_params, router, active_experts) = if moe {
        let e = f(experts);
        let per_layer_experts = 2.0 * h * f(args.moe_ffn_hidden_size) * e * glu;
        let router = h * e + if args.add_bias_linear { e } else { 0.0 };
        let topk = f(args.moe_router_topk.min(experts));
        (
            0.0,
            l * per_layer_experts,
            l * router,
            l * 2.0 * h * f(args.moe_ffn_hidden_size) * topk * glu,
        )
    } else {
        (l * 2.0 * h * f(args.ffn_hidden_size) * glu, 0.0, 0.0, 0.0)
    };
    let sharded = l * attn + dense_mlp;
    let replicated = norms + router;
    let total = sharded + expert_params + replicated + emb_total;
    let active = if moe {
        total - expert_params + active_experts
    } else {
        total
    };
    let mut shard_non_expert = (sharded / p + emb) / t + replicated / p;
    if args.untie && args.pp.get() == 1 {
        shard_non_expert += emb / t;
    }
    let shard_expert = expert_params / p / f(args.etp.get() * args.ep.get());
    let world = t * p * d;
    let edp = (world / (f(args.etp.get() * args.ep.get()) * p)).max(1.0);
    let (bpp, bpp_e) = if args.use_distributed_optimizer {
        (6.0 + 12.0 / d, 6.0 + 12.0 / edp)
    } else {
        (18.0, 18.0)
    };
    let with_sp = args.sequence_parallel && args.recompute == Recompute::Selective;
    let activations = if with_sp {
        activations_sp(args, v_pad)
    } else {
        activations_without_sp(args, v_pad)
    };
    let states = states_expr(moe, (shard_non_expert, bpp), (shard_expert, bpp_e));
    MegatronEstimate {
        total_params: total,
        active_params: active,
        most_loaded_shard_params: shard_non_expert + shard_expert,
        weight_and_optimizer_bytes: states.eval().unwrap_or(0.0),
        activation_bytes: activations.eval(),
        without_sp_path: !with_sp,
        states,
        activations: Some(activations),
    }
}

/// The weight-and-optimizer figure: the most loaded shard's parameters times bytes per
/// parameter `β` (18, or `6 + 12/d` with the distributed optimizer), and for a mixture of
/// experts the experts' shard at their own `β_e` (`6 + 12/d_e` over the expert-data-parallel
/// group).
///
/// # Formula
/// ```text
/// shard·β [+ shard_e·β_e]
/// ```
/// Source: Megatron-LM `theoretical_memory_usage.py compute_weight_and_optimizer_memory`
/// (HEAD d98e8a64). Example: Llama-2-7B at t = 8, one stage, no distributed optimizer:
/// 843,321,344·18 = 15,179,784,192 B.
fn states_expr(moe: bool, (shard, bpp): (f64, f64), (shard_e, bpp_e): (f64, f64)) -> FExpr {
    if moe {
        FExpr::new(&[
            Sym("shard", shard),
            Sym("β", bpp),
            Mul,
            Sym("shard_e", shard_e),
            Sym("β_e", bpp_e),
            Mul,
            Add,
        ])
    } else {
        FExpr::new(&[Sym("shard", shard), Sym("β", bpp), Mul])
    }
}

/// The in-flight factor for the first pipeline stage.
fn pipeline_factor(args: &MegatronArgs) -> f64 {
    let p = args.pp.get() as f64;
    match args.vp {
        Some(v) => 1.0 + (p - 1.0) / (p * v.get() as f64),
        None if args.pp.get() > 1 => match args.num_microbatches {
            Some(m) => (m as f64 / p).min(1.0),
            None => 1.0,
        },
        None => 1.0,
    }
}

/// The symbols both activation formulas read.
fn act_syms(args: &MegatronArgs, v_pad: f64) -> [FTok; 8] {
    [
        Sym("s", args.seq_length as f64),
        Sym("b", args.micro_batch_size as f64),
        Sym("h", args.hidden_size as f64),
        Sym("L", args.num_layers as f64),
        Sym("p", args.pp.get() as f64),
        Sym("φ", pipeline_factor(args)),
        Sym("t", args.tp.get() as f64),
        Sym("V", v_pad),
    ]
}

/// Korthikanti et al. Table 2 with sequence parallelism and selective recompute, as
/// Megatron evaluates it (`φ` the first stage's in-flight factor, [`pipeline_factor`]).
///
/// # Formula
/// ```text
/// ((s·b·h·(18 + 4·(f/h))·L + 8·s·b·p + s·b·h·p)·φ [+ s·b·h·4·(1 + V/h) if p = 1]) / t
/// ```
/// Source: Megatron-LM `megatron/training/theoretical_memory_usage.py`
/// `compute_activation_memory` (HEAD d98e8a64, core_v0.14.0). Example: s = 2,048, b = 1,
/// h = 4,096, f = 11,008, L = 32, p = 1, t = 8, V = 32,000: (8,388,608·28.75·32 +
/// 16,384 + 8,388,608)·1 + 8,388,608·4·(1 + 7.8125) = 7,768,727,552 + 295,698,432 B, /8.
fn activations_sp(args: &MegatronArgs, v_pad: f64) -> FExpr {
    let [s, b, h, l, p, phi, t, v] = act_syms(args, v_pad);
    let f = Sym("f", args.ffn_hidden_size as f64);
    let mut e = vec![
        s,
        b,
        Mul,
        h,
        Mul,
        Num(18.0),
        Num(4.0),
        f,
        h,
        Div,
        Mul,
        Add,
        Mul,
        l,
        Mul, // s·b·h·(18 + 4·f/h)·L
        Num(8.0),
        s,
        Mul,
        b,
        Mul,
        p,
        Mul,
        Add, // + 8·s·b·p
        s,
        b,
        Mul,
        h,
        Mul,
        p,
        Mul,
        Add, // + s·b·h·p
        phi,
        Mul,
    ];
    if args.pp.get() == 1 {
        e.extend([
            s,
            b,
            Mul,
            h,
            Mul,
            Num(4.0),
            Mul,
            Num(1.0),
            v,
            h,
            Div,
            Add,
            Mul,
            Add,
        ]);
    }
    e.extend([t, Div]);
    FExpr::new(&e)
}

/// HEAD's path without sequence parallelism (also used for recompute none/full).
///
/// # Formula
/// ```text
/// ((s·b·h·(10 + 24/t)·L + 8·s·b·p + s·b·h·p)·φ [+ 2·(s·b·V/t + s·b·h) if p = 1])·1.05
/// ```
/// Source: Megatron-LM `theoretical_memory_usage.py` at HEAD d98e8a64 (the 1.05 is its own
/// margin). Example: s = 2,048, b = 1, h = 4,096, L = 32, p = 1, t = 8: 8,388,608·13·32 + … .
fn activations_without_sp(args: &MegatronArgs, v_pad: f64) -> FExpr {
    let [s, b, h, l, p, phi, t, v] = act_syms(args, v_pad);
    let mut e = vec![
        s,
        b,
        Mul,
        h,
        Mul,
        Num(10.0),
        Num(24.0),
        t,
        Div,
        Add,
        Mul,
        l,
        Mul, // s·b·h·(10 + 24/t)·L
        Num(8.0),
        s,
        Mul,
        b,
        Mul,
        p,
        Mul,
        Add, // + 8·s·b·p
        s,
        b,
        Mul,
        h,
        Mul,
        p,
        Mul,
        Add, // + s·b·h·p
        phi,
        Mul,
    ];
    if args.pp.get() == 1 {
        e.extend([
            Num(2.0),
            s,
            b,
            Mul,
            v,
            Mul,
            t,
            Div,
            s,
            b,
            Mul,
            h,
            Mul,
            Add,
            Mul,
            Add,
        ]);
    }
    e.extend([Num(1.05), Mul]);
    FExpr::new(&e)
}

/// Megatron's printed summary, MB = 2^20 bytes.
pub fn printed_summary(e: &MegatronEstimate) -> String {
    let mb = |x: f64| x / (1u64 << 20) as f64;
    match e.activation_bytes {
        Some(act) => format!(
            "Theoretical memory footprints: weight and optimizer={:.2} MB, activation={:.2} MB, total={:.2} MB",
            mb(e.weight_and_optimizer_bytes),
            mb(act),
            mb(e.weight_and_optimizer_bytes + act)
        ),
        None => format!("Theoretical memory footprints: weight and optimizer={:.2} MB", mb(e.weight_and_optimizer_bytes)),
    }
}

#[cfg(test)]
mod tests;

//! The op-level allocation stream of a single-GPU `transformers` training run, replayed
//! through the caching allocator: what `max_memory_reserved` exceeds the allocated peak by.
//!
//! The allocated peak is the event program's (`program`); what runs out on a GPU is the
//! reserved memory, the allocated peak plus the free blocks cached in segments at that
//! moment. Which blocks are cached depends on every tensor's size and lifetime, in order: a
//! per-layer lump does not reproduce it (docs/allocator.md: one block per layer and
//! component misses by 55 % median, every tensor of 1 MiB or more in autograd's order by
//! 0.04 %). This module rebuilds that order from templates and replays it.
//!
//! # Formula
//! ```text
//! stream    = template(class, precision, attention, checkpointing [, window]) at
//!             (b, s, h, f, V, a_kv, a/a_kv, d, P) and L layers, three iterations, the
//!             optimizer's and zero_grad's events written from the parameter list
//! replay    = CachingAllocator (crate::allocator) over the parameters, then the stream
//! gap       = replay.max_reserved − replay.max_allocated          cached free bytes, B
//! reserved  = allocated peak (the event program's) + gap
//! ```
//! Source: the templates are `tools/alloc_templates.py`'s, which traces `transformers` 5.24
//! on the meta device (every storage an aten op creates is an allocation, every storage that
//! dies a free; CUDA's SDPA backend and CUDA autocast emulated, as `tools/trace_alloc.py`)
//! and demands each template rebuild a second trace at other dimensions and another layer
//! count event for event.
//!
//! # Example
//! Llama 3.2 3B, pure bf16, b = 4, s = 4,096, SDPA, AdamW foreach (the calibration run C06):
//! the replay caches 8.4 % of the allocated peak at the reserved peak; measured 8.4 %.

pub mod build;
pub mod template;

pub use build::{stream, OptEvents};
pub use template::{Data, Dims, Template};

use crate::allocator::{replay_dense, replay_dense_on, CachingAllocator};
use crate::megatron::Recompute;
use crate::model::{Arch, Bias, Mlp, Norm};
use crate::scenario::{
    AdamImpl, Attn, Framework, LoraTargets, Loss, Mode, Offload, Optimizer, Precision, Scenario,
    Sharding, Tuning, Zero,
};
use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

/// The templates, as `tools/alloc_templates.py --merge` wrote them (see [`Data`]), compiled
/// in with the `templates` feature (on by default: the CLI, the tests, the benches) on every
/// target but wasm32: the page fetches the same file when a run needs it ([`install`]).
#[cfg(all(feature = "templates", not(target_arch = "wasm32")))]
const DATA: &str = include_str!("../../data/op_templates.txt");

/// The templates given to [`install`].
static INSTALLED: OnceLock<Data> = OnceLock::new();

/// The templates' data: the ones given to [`install`], else the compiled-in ones (the
/// `templates` feature), read once; `None` where there are none (no run is then held: every
/// run's fragmentation is the flat share, `stage::fragmentation`).
pub fn data() -> Option<&'static Data> {
    INSTALLED.get().or_else(embedded)
}

#[cfg(all(feature = "templates", not(target_arch = "wasm32")))]
fn embedded() -> Option<&'static Data> {
    static T: OnceLock<Option<Data>> = OnceLock::new();
    T.get_or_init(|| Data::parse(DATA).ok()).as_ref()
}

#[cfg(not(all(feature = "templates", not(target_arch = "wasm32"))))]
fn embedded() -> Option<&'static Data> {
    None
}

/// Installs the templates from their text (`data/op_templates.txt` as the page fetched it):
/// from then on [`run_of`] holds every run they hold, as with the compiled-in ones. Once per
/// program (a wasm module's instance): a later call changes nothing.
///
/// # Errors
/// The text does not parse, or holds no template (nothing is installed).
pub fn install(text: &str) -> Result<(), String> {
    if INSTALLED.get().is_some() {
        return Ok(());
    }
    let d = Data::parse(text)?;
    if d.keys().next().is_none() {
        return Err("the text holds no template".into());
    }
    let _ = INSTALLED.set(d);
    // This program computes the replay itself from now on ([`replay`]).
    set_replayer(replayed);
    Ok(())
}

/// Where [`replay`] asks for a run's replay, once set ([`set_replayer`]).
static REPLAYER: OnceLock<fn(&Run) -> Option<Replayed>> = OnceLock::new();

/// Has [`replay`] ask `f` from now on (once per program; a later call changes nothing). The
/// page's first module gives the allocator's own module's answer (`memfit-replay`, which
/// holds the templates and the replay), so that it links neither; [`install`] gives
/// [`replayed`], computed here.
pub fn set_replayer(f: fn(&Run) -> Option<Replayed>) {
    let _ = REPLAYER.set(f);
}

/// The replay of a [`candidate`] run, `None` where its template is not held: from the
/// replayer set ([`set_replayer`], [`install`]), else computed here ([`replayed`]) natively and
/// none on wasm32 (a page module that has not installed the templates: the flat share).
pub fn replay(run: &Run) -> Option<Replayed> {
    if let Some(f) = REPLAYER.get() {
        return f(run);
    }
    #[cfg(not(target_arch = "wasm32"))]
    return replayed(run);
    #[cfg(target_arch = "wasm32")]
    None
}

/// Whether templates are there to read: compiled in, or given to [`install`].
pub fn available() -> bool {
    data().is_some()
}

/// The template of `key` (`class|precision|attention|checkpointing[|win=1]`), parsed on first
/// use and kept.
pub fn template(key: &str) -> Option<Arc<Template>> {
    thread_local! {
        static PARSED: RefCell<Vec<(String, Option<Arc<Template>>)>> = const { RefCell::new(Vec::new()) };
    }
    let hit = PARSED.with(|p| {
        p.borrow()
            .iter()
            .find(|(k, _)| k == key)
            .map(|x| x.1.clone())
    });
    if let Some(t) = hit {
        return t;
    }
    let t = data().and_then(|d| d.template(key).ok()).map(Arc::new);
    PARSED.with(|p| p.borrow_mut().push((key.to_string(), t.clone())));
    t
}

/// The template class of an architecture: its `transformers` family, tied or untied head,
/// multi-head or grouped attention, a partial rotary (`None`: no template holds its layers).
///
/// # Formula
/// The family is read off the shape's flags: learned positions, LayerNorm, fused q, k, v
/// and GELU in ops → `gpt2`; fused q, k, v and gate/up → `phi3`; four norms per block with
/// soft-capping → `gemma2`, with per-head q/k norms → `gemma3_text`; otherwise RMSNorm,
/// SwiGLU, two norms: per-head q/k norms → `qwen3`, q/k/v biases → `qwen2`, a sliding window
/// over every layer → `mistral`, none of these → `llama`. Mixture-of-experts: full-width q/k
/// norms without a shared expert → `olmoe`, q/k/v biases with a gated shared expert →
/// `qwen2_moe`, each with its experts, top-k and shared width in experts (`|E64k8`,
/// `|E60k4s4`). Latent attention, state-space, hybrid and encoder models have none.
///
/// # Example
/// Llama 3.2 1B (tied, 32 query heads over 8 KV heads): `llama|tied|gqa`.
pub fn class(a: &Arch) -> Option<String> {
    let odd = a.mla.is_some()
        || a.encoder_layers > 0
        || a.mamba_layers > 0
        || a.conv_layers > 0
        || a.linear_layers > 0
        || a.emb_norm
        || a.head_bias
        || a.attn_sinks
        || a.kv_heads.get() == 0
        || !a.heads.get().is_multiple_of(a.kv_heads.get());
    if odd {
        return None;
    }
    let rms_swiglu = a.norm == Norm::Rmsnorm && a.mlp == Mlp::Swiglu;
    let family = if a.experts > 0 {
        moe_family(a, rms_swiglu)?
    } else if a.qk_norm || a.shared_experts > 0 {
        return None;
    } else if a.positions > 0 {
        let gpt2 = a.norm == Norm::Layernorm && a.fused_qkv && a.gelu_ops && a.bias == Bias::All;
        gpt2.then_some("gpt2")?
    } else if a.fused_qkv || a.fused_gate_up {
        (a.fused_qkv && a.fused_gate_up && rms_swiglu && a.bias == Bias::None).then_some("phi3")?
    } else if !rms_swiglu || a.rope_partial || a.gelu_ops {
        return None;
    } else if a.norms_per_layer == 4 {
        match (a.softcap, a.qk_norm_head) {
            (true, false) => "gemma2",
            (false, true) => "gemma3_text",
            _ => return None,
        }
    } else if a.norms_per_layer != 2 || a.softcap {
        return None;
    } else if a.qk_norm_head {
        (a.bias == Bias::None).then_some("qwen3")?
    } else if a.bias == Bias::Qkv {
        "qwen2"
    } else if a.bias != Bias::None {
        return None;
    } else if a.window > 0 && a.local_layers >= a.layers.get() {
        "mistral"
    } else {
        "llama"
    };
    let mut c = format!(
        "{family}|{}|{}",
        if a.tied { "tied" } else { "untied" },
        if a.kv_heads == a.heads { "mha" } else { "gqa" }
    );
    if a.rope_partial {
        c.push_str("|partial");
    }
    if a.experts > 0 {
        c.push_str(&format!("|E{}k{}", a.experts, a.top_k));
        if a.shared_experts > 0 {
            c.push_str(&format!("s{}", a.shared_experts));
        }
    }
    Some(c)
}

/// A mixture-of-experts family the templates were traced for: OLMoE (full-width q/k norms, no
/// shared expert) or Qwen2-MoE (q/k/v biases, a gated shared expert), every block routed.
fn moe_family(a: &Arch, rms_swiglu: bool) -> Option<&'static str> {
    let plain = rms_swiglu
        && a.norms_per_layer == 2
        && a.first_dense == 0
        && !a.expert_bias
        && !a.qk_norm_head
        && a.positions == 0
        && !a.fused_qkv
        && !a.fused_gate_up
        && a.window == 0;
    if !plain {
        return None;
    }
    match (a.qk_norm, a.shared_experts > 0, a.bias) {
        (true, false, Bias::None) => Some("olmoe"),
        (false, true, Bias::Qkv) if a.shared_gate => Some("qwen2_moe"),
        _ => None,
    }
}

/// A run the templates hold: its template's key, dimensions, layers and optimizer events.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Run {
    /// `class|precision|attention|checkpointing[|win=1]`.
    pub key: String,
    /// The dimensions.
    pub dims: Dims,
    /// Layers.
    pub layers: u32,
    /// The optimizer's events.
    pub opt: OptEvents,
    /// The bytes the device leaves the allocator's segments (0: no bound, as [`candidate`]
    /// gives it; the memory model sets the GPU's, `stage::allocator_cap`), see
    /// [`crate::allocator::CachingAllocator::capped`].
    pub cap: u64,
}

/// The optimizer events in the order [`Run::to_line`] numbers them.
const OPTS: [OptEvents; 5] = [
    OptEvents::None,
    OptEvents::Momentum,
    OptEvents::AdamForeach,
    OptEvents::AdamFused,
    OptEvents::AdamForloop,
];

impl Run {
    /// The run as one line, `key;b,s,h,f,V,kv,g,d,P,r;layers;optimizer;cap`, for the replay
    /// in another wasm module ([`set_replayer`]): integers only, read back by
    /// [`Run::from_line`] (a line without `;cap` reads as no bound).
    pub fn to_line(&self) -> String {
        let d = &self.dims;
        let dims = [d.b, d.s, d.h, d.f, d.v, d.kv, d.g, d.d, d.p, d.r].map(|x| x.to_string());
        let opt = OPTS.iter().position(|o| *o == self.opt).unwrap_or(0);
        format!(
            "{};{};{};{opt};{}",
            self.key,
            dims.join(","),
            self.layers,
            self.cap
        )
    }

    /// A run read from [`Run::to_line`]'s line (`None` where it is not one).
    pub fn from_line(line: &str) -> Option<Run> {
        let mut parts = line.split(';');
        let key = parts.next()?.to_string();
        let v: Vec<u64> = parts
            .next()?
            .split(',')
            .map(|x| x.parse().ok())
            .collect::<Option<_>>()?;
        let layers = parts.next()?.parse().ok()?;
        let opt = *OPTS.get(parts.next()?.parse::<usize>().ok()?)?;
        let cap = match parts.next() {
            Some(c) => c.parse().ok()?,
            None => 0,
        };
        let [b, s, h, f, v, kv, g, d, p, r] = v[..] else {
            return None;
        };
        let dims = Dims {
            b,
            s,
            h,
            f,
            v,
            kv,
            g,
            d,
            p,
            r,
        };
        Some(Run {
            key,
            dims,
            layers,
            opt,
            cap,
        })
    }
}

/// Whether `s` is a run the templates were traced as (`None` where it is not): PyTorch
/// (`framework=pytorch`) training on one GPU, the loss in the model, one micro-batch per
/// step, no offload, no dropout; full fine-tuning at fp32, bf16 autocast or pure bf16, or PEFT
/// LoRA (all linears, attention, or q and v) over a bf16 base under autocast; SDPA or eager
/// attention; no or full checkpointing of every layer; SGD (with or without momentum)
/// or Adam(W) (foreach, fused, for-loop); and its template is in the data ([`data`]).
pub fn run_of(s: &Scenario) -> Option<Run> {
    candidate(s).filter(|r| data().is_some_and(|d| d.has(&r.key)))
}

/// The run `s` is if the templates are read for it ([`run_of`] without asking the data
/// whether its template is there): what the page asks before it has fetched them.
pub fn candidate(s: &Scenario) -> Option<Run> {
    let a = s.arch();
    let (policy, attn, ckpt, opt) = settings_of(s, &a)?;
    let class = class(&a)?;
    let seq = s.workload.seq.get() as u64;
    let win = a.window > 0 && seq > a.window as u64;
    let key = format!(
        "{class}|{policy}|{attn}|{ckpt}{}",
        if win { "|win=1" } else { "" }
    );
    let mha = a.kv_heads == a.heads;
    let dims = Dims {
        b: s.workload.batch.get() as u64,
        s: seq,
        h: a.hidden.get() as u64,
        f: if a.experts > 0 && a.moe_ffn > 0 {
            a.moe_ffn as u64
        } else {
            a.ffn.get() as u64
        },
        v: a.vocab.get() as u64,
        kv: a.kv_heads.get() as u64,
        g: if mha {
            1
        } else {
            (a.heads.get() / a.kv_heads.get()) as u64
        },
        d: a.head_dim.get() as u64,
        r: match s.finetune {
            Tuning::Lora { rank, .. } => rank.get() as u64,
            _ => 1,
        },
        p: if a.positions == 0 {
            1
        } else {
            a.positions as u64
        },
    };
    let derived_d = ["gpt2", "phi3", "olmoe", "qwen2_moe"]
        .iter()
        .any(|f| class.starts_with(f));
    if derived_d && a.hidden.get() as u64 != a.heads.get() as u64 * a.head_dim.get() as u64 {
        return None;
    }
    Some(Run {
        key,
        dims,
        layers: a.layers.get(),
        opt,
        cap: 0,
    })
}

/// Whether a layout the explorer may try for `s` (any cluster size, ZeRO stage, offload,
/// micro-batch count, recomputation or batch: what the fewest-GPU search and the layout
/// sweep vary) is a [`candidate`] with its fragmentation on (`frag` not 0): whether their
/// answers can read the templates.
///
/// # Example
/// `framework=pytorch` Llama 3.2 3B training on 8 GPUs under ZeRO-3: the search tries one
/// GPU without ZeRO first, a candidate, so `true`; the same run under DeepSpeed, `false`.
pub fn may_read(s: &Scenario) -> bool {
    if s.runtime.frag_pct == 0 {
        return false;
    }
    let mut one = s.clone();
    one.cluster.gpus_per_node = crate::scenario::at_least_one(1);
    one.cluster.nodes = crate::scenario::at_least_one(1);
    one.workload.microbatches = crate::scenario::at_least_one(1);
    one.offload.optimizer = Offload::None;
    one.offload.params = Offload::None;
    one.sharding = Sharding::Zero(Zero::Z0);
    one.activations.recompute = Recompute::None;
    candidate(&one).is_some()
}

/// The run's loop as the templates name it (precision, attention, checkpointing) and its
/// optimizer's events, where it is a loop they were traced as.
fn settings_of(
    s: &Scenario,
    a: &Arch,
) -> Option<(&'static str, &'static str, &'static str, OptEvents)> {
    let plain = s.stack.framework == Framework::Pytorch
        && s.workload.mode == Mode::Train
        && s.world() == 1
        && s.workload.microbatches.get() == 1
        && s.workload.loss == Loss::Model
        && s.offload.optimizer == Offload::None
        && s.offload.params == Offload::None
        && s.sharding == Sharding::Zero(Zero::Z0)
        && !s.activations.dropout;
    if !plain {
        return None;
    }
    let policy = match (s.finetune, s.numerics.precision) {
        (Tuning::Full, Precision::Fp32) => "fp32",
        (Tuning::Full, Precision::Bf16) => "amp_bf16",
        (Tuning::Full, Precision::Bf16Pure) => "bf16_pure",
        // PEFT over a bf16 base, its forward under bf16 autocast (tools/measure_cuda.py)
        (Tuning::Lora { targets, .. }, Precision::Bf16) => match targets {
            LoraTargets::All => "lora-all",
            LoraTargets::Attn => "lora-attn",
            LoraTargets::Qv => "lora-qv",
            LoraTargets::Mlp => return None,
        },
        _ => return None,
    };
    let attn = match s.activations.attn {
        Attn::Sdpa => "sdpa",
        Attn::Eager => "eager",
        _ => return None,
    };
    let every = s.activations.ckpt_layers == 0 || s.activations.ckpt_layers >= a.layers.get();
    let ckpt = match s.activations.recompute {
        Recompute::None => "0",
        Recompute::Full if every => "1",
        _ => return None,
    };
    let opt = match (s.numerics.optimizer, s.numerics.adam_impl) {
        (Optimizer::Sgd, _) => OptEvents::None,
        (Optimizer::SgdMomentum, _) => OptEvents::Momentum,
        (Optimizer::Adamw | Optimizer::Adam, AdamImpl::Foreach) => OptEvents::AdamForeach,
        (Optimizer::Adamw | Optimizer::Adam, AdamImpl::Fused) => OptEvents::AdamFused,
        (Optimizer::Adamw | Optimizer::Adam, AdamImpl::Forloop) => OptEvents::AdamForloop,
        _ => return None,
    };
    Some((policy, attn, ckpt, opt))
}

/// The replay of a run's stream: the allocator's largest reserved and allocated bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replayed {
    /// `max_memory_reserved` of the stream, B: under the run's bound ([`Run::cap`]) where it
    /// ran there, else without one.
    pub max_reserved: u64,
    /// `max_memory_allocated` of the stream, B.
    pub max_allocated: u64,
    /// Times the allocator released its cached segments to stay under the bound.
    pub retries: u32,
    /// The stream ran out of memory under the bound even after releasing them.
    pub oom: bool,
}

impl Replayed {
    /// Free bytes cached at the reserved peak beyond the allocated peak, B.
    pub fn gap(&self) -> u64 {
        self.max_reserved.saturating_sub(self.max_allocated)
    }

    /// `R A retries oom`: the figures as decimal integers, read back by
    /// [`Replayed::from_line`].
    pub fn to_line(&self) -> String {
        let (r, a, n) = (self.max_reserved, self.max_allocated, self.retries);
        format!("{r} {a} {n} {}", u8::from(self.oom))
    }

    /// The figures of [`Replayed::to_line`]'s line (`R A` alone: no retries).
    pub fn from_line(line: &str) -> Option<Replayed> {
        let mut it = line.split(' ');
        let r = it.next()?.parse().ok()?;
        let a = it.next()?.parse().ok()?;
        let retries = it.next().map_or(Some(0), |x| x.parse().ok())?;
        let oom = it.next().map_or(Some(0u8), |x| x.parse().ok())? == 1;
        Some(Replayed {
            max_reserved: r,
            max_allocated: a,
            retries,
            oom,
        })
    }
}

/// The run's stream replayed (three iterations, as the measured loop), remembered for the
/// last few runs asked for.
pub fn replayed(run: &Run) -> Option<Replayed> {
    thread_local! {
        static MEMO: RefCell<Vec<(Run, Option<Replayed>)>> = const { RefCell::new(Vec::new()) };
    }
    if let Some(hit) = MEMO.with(|m| m.borrow().iter().find(|(r, _)| r == run).map(|x| x.1)) {
        return hit;
    }
    let t = template(&run.key)?;
    let r = stream(&t, &run.dims, run.layers, run.opt, 3)
        .ok()
        .map(|(resident, events)| {
            let a = replay_dense_on(CachingAllocator::capped(run.cap), &resident, &events);
            // Out of memory: the figures without the bound (what the run would need).
            let (max_reserved, max_allocated) = if a.oom {
                let u = replay_dense(&resident, &events);
                (u.max_reserved, u.max_allocated)
            } else {
                (a.max_reserved, a.max_allocated)
            };
            Replayed {
                max_reserved,
                max_allocated,
                retries: a.retries,
                oom: a.oom,
            }
        });
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= 8 {
            m.remove(0);
        }
        m.push((run.clone(), r));
    });
    r
}

//! Serving engines' start-up (`mode=serve`): what vLLM, SGLang, TensorRT-LLM and
//! llama.cpp take for the weights, the profiling forward, non-torch memory and CUDA
//! graphs, and how many KV-cache tokens the rest becomes.
//!
//! Each engine is one start-up program, in the order the engine runs it (load the
//! weights, profile, capture graphs, allocate the KV pool): [`Plan`] holds every
//! figure, [`Plan::items`] pushes them to the ledger with their formulas and sources,
//! and [`Plan::report`] is the CLI's `serve` object.

pub(crate) mod engines;
pub mod kv;
mod line;

use crate::expr::{Expr, Tok::*};
use crate::ledger::{Component, Ledger, Location, Mech, Phase};
use crate::resolved::Prepared;
use crate::scenario::{Engine, Layout, Scenario, Version};
use serde::{Deserialize, Serialize};

pub use crate::model::model_context;
pub use crate::scenario::CUDA_TOTAL;
pub use engines::{expert_placement, newest, weights_expr};
pub use line::{compute_here, plan_here, set_planner};

/// The CLI's `serve` object (per GPU / rank; byte counts are integers).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServeReport {
    /// `vllm`, `sglang`, `trtllm`, `llamacpp`.
    pub engine: String,
    /// The release whose rules were applied.
    pub engine_version: String,
    /// What the engine may use: vLLM `gpu_memory_utilization × total`, SGLang
    /// `mem_fraction_static × free`, TensorRT-LLM weights + activations +
    /// `free_gpu_memory_fraction × free`, llama.cpp the device.
    pub budget_bytes: u64,
    /// The weights on this rank, as the engine loads them.
    pub weights_bytes: u64,
    /// The profiling forward's peak activation (kept free for the forward at run time).
    pub activation_bytes: u64,
    /// Memory outside PyTorch's allocator that appeared while profiling (NCCL, cuBLAS).
    pub non_torch_bytes: u64,
    /// CUDA graphs' memory the engine sets aside before the KV cache (0 where it does not).
    pub cuda_graph_bytes: u64,
    /// The KV-cache pool.
    pub kv_cache_bytes: u64,
    /// KV bytes one token costs on this rank (all its layers).
    pub kv_bytes_per_token: u64,
    /// Tokens the pool holds (blocks × block size).
    pub kv_tokens: u64,
    /// Blocks (pages) of the pool.
    pub kv_blocks: u64,
    /// Requests of `max_len` tokens that fit at once, two decimals as the engine prints.
    pub max_concurrency: f64,
    /// The longest request that fits alone.
    pub max_len_fit: u64,
    /// The `max_len` used.
    pub max_len: u64,
    /// The engine's own error when one request of `max_len` does not fit.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
    /// llama.cpp: the model file's weights (every tensor once; the whole model, not per GPU).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub file_bytes: Option<u64>,
    /// llama.cpp: what the process keeps in host memory (the whole process): the file's
    /// span the CPU maps (`token_embd`, the layers `ngl` leaves on the CPU; the whole file
    /// once the output layer is there) and the KV cache of the CPU layers (all of it with
    /// `kv_offload=0`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub host_bytes: Option<u64>,
    /// vLLM and SGLang with expert parallelism or EPLB's redundant experts: where the routed
    /// experts are ([`expert_placement`]).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub experts: Option<Experts>,
    /// llama.cpp's `--fit` (llama-server from b7437): what it changed, where it ran and the
    /// settings did not leave its margin free ([`Fitted`]).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub fit: Option<FitReport>,
}

/// How llama.cpp's fit ended, or what Ollama placed (`serve.fit.outcome`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FitOutcome {
    /// The context was shrunk and everything fits (`context`).
    Context,
    /// Layers moved to host memory (`layers`), after the context where it was unset.
    Layers,
    /// `-ngl` was set: the fit stops before moving layers (`ngl_set`).
    NglSet,
    /// Every layer on the GPU, the routed experts of some in host memory (`experts`).
    Experts,
    /// Ollama placed the layers itself (`num_gpu` unset), some in host memory (`ollama`):
    /// `engines::ollama_layout`.
    Ollama,
}

impl FitOutcome {
    const ALL: [FitOutcome; 5] = [
        FitOutcome::Context,
        FitOutcome::Layers,
        FitOutcome::NglSet,
        FitOutcome::Experts,
        FitOutcome::Ollama,
    ];
    /// The spelling in `serve.fit.outcome`.
    pub fn as_str(self) -> &'static str {
        match self {
            FitOutcome::Context => "context",
            FitOutcome::Layers => "layers",
            FitOutcome::NglSet => "ngl_set",
            FitOutcome::Experts => "experts",
            FitOutcome::Ollama => "ollama",
        }
    }
}

/// What llama.cpp's fit changed (the plan's figures are those of the settings it chose).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fitted {
    /// The context before the fit (`max_len`, else the model's), tokens.
    pub n_ctx_from: u64,
    /// The context the fit chose (`n_ctx_from` where it kept it), tokens.
    pub n_ctx: u64,
    /// The `-ngl` it chose (`None`: every layer, as before).
    pub ngl: Option<u64>,
    /// What the dry run projected for the device before the fit (the CUDA context not
    /// counted, as llama.cpp prints it), B.
    pub projected_bytes: u64,
    /// The device's free memory as llama.cpp reads it (`M_total − ctx`), B.
    pub free_bytes: u64,
    /// What the smaller context saves by the fit's line through its two dry runs
    /// (`(c₀ − c)·(U(c₀) − U(4,096))/(c₀ − 4,096)`, or `U(c₀) − U(4,096)` at the shortest
    /// context; 0 where the context was kept), B.
    pub reduction_bytes: u64,
    /// The layers `-ngl` counts (`L + 1`: the repeating layers and the output layer).
    pub layers: u64,
    /// The GPUs the layers are split over (`tp`); the projected, free and reduced bytes are
    /// their sums, as llama.cpp prints them.
    pub devices: u64,
    /// GPU layers whose routed experts the fit put in host memory (llama.cpp's
    /// "overflowing" layers; 0 for a dense model).
    pub cpu_experts: u64,
    /// How it ended.
    pub outcome: FitOutcome,
}

impl Fitted {
    /// The fields in one dot-separated text (the plan's line), read back by [`Fitted::parse`].
    pub(crate) fn to_text(self) -> String {
        let code = FitOutcome::ALL
            .iter()
            .position(|o| *o == self.outcome)
            .unwrap_or(0);
        format!(
            "{}.{}.{}.{}.{}.{}.{}.{}.{}.{code}",
            self.n_ctx_from,
            self.n_ctx,
            self.ngl.map_or(0, |g| g.saturating_add(1)),
            self.projected_bytes,
            self.free_bytes,
            self.reduction_bytes,
            self.layers,
            self.devices,
            self.cpu_experts
        )
    }
    /// See [`Fitted::to_text`].
    pub(crate) fn parse(t: &str) -> Option<Fitted> {
        let n: Vec<u64> = t
            .split('.')
            .map(|x| x.parse().ok())
            .collect::<Option<_>>()?;
        let [from, ctx, ngl, projected, free, reduction, layers, devices, cpu_experts, code] =
            n[..]
        else {
            return None;
        };
        Some(Fitted {
            n_ctx_from: from,
            n_ctx: ctx,
            ngl: ngl.checked_sub(1),
            projected_bytes: projected,
            free_bytes: free,
            reduction_bytes: reduction,
            layers,
            devices,
            cpu_experts,
            outcome: *FitOutcome::ALL.get(code as usize)?,
        })
    }
    /// What llama.cpp logs (its wording, MiB as it rounds them), with memfit's note where
    /// the fit goes on past the model.
    pub fn message(self) -> String {
        let layers = self.layers;
        let mib = |b: u64| b / crate::units::MIB;
        let mut m = format!(
            "projected to use {} MiB of device memory vs. {} MiB of free device memory",
            mib(self.projected_bytes),
            mib(self.free_bytes)
        );
        if self.n_ctx != self.n_ctx_from {
            m += &format!(
                "; context size reduced from {} to {} -> need {} MiB less memory in total",
                self.n_ctx_from,
                self.n_ctx,
                mib(self.reduction_bytes)
            );
        }
        let g = self.ngl.unwrap_or(layers);
        m += &match self.outcome {
            FitOutcome::Context => format!(
                "; entire model {} by reducing context",
                match self.devices {
                    1 => "can be fit",
                    _ => "should be fit across devices",
                }
            ),
            _ if self.cpu_experts > 0 => format!("; {g} layers ({} overflowing)", self.cpu_experts),
            FitOutcome::Layers => format!("; offloaded {g}/{layers} layers to GPU"),
            FitOutcome::Ollama => format!("; Ollama offloads {g}/{layers} layers to GPU"),
            _ => "; failed to fit params to free device memory: n_gpu_layers already set by user, abort".to_string(),
        };
        m
    }
}

/// `serve.fit`: [`Fitted`] with its message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitReport {
    /// [`Fitted::n_ctx_from`].
    pub n_ctx_from: u64,
    /// [`Fitted::n_ctx`].
    pub n_ctx: u64,
    /// [`Fitted::ngl`].
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ngl: Option<u64>,
    /// [`Fitted::projected_bytes`].
    pub projected_bytes: u64,
    /// [`Fitted::free_bytes`].
    pub free_bytes: u64,
    /// [`Fitted::layers`].
    pub layers: u64,
    /// [`Fitted::devices`].
    pub devices: u64,
    /// [`Fitted::cpu_experts`].
    pub cpu_experts: u64,
    /// The free memory the fit keeps (`--fit-target`), B; 0 where Ollama placed the layers
    /// (its reserve is in `projected_bytes`).
    pub margin_bytes: u64,
    /// [`FitOutcome::as_str`].
    pub outcome: String,
    /// [`Fitted::message`].
    pub message: String,
}

/// Where a serving start-up puts a mixture's routed experts (`serve.experts`): spread over
/// EP ranks (vLLM's `--enable-expert-parallel`, SGLang's `--ep-size`), with EPLB's
/// redundant replicas when asked for. The weights item's `E_r` and `t_e` are these.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Experts {
    /// Routed experts per MoE layer in the model (`E`).
    pub routed: u32,
    /// EPLB's redundant replicas per MoE layer (`R`; 0 without EPLB).
    pub redundant: u32,
    /// EP ranks the experts are spread over (vLLM: `t·d`; SGLang: `ep`).
    pub ep_ranks: u32,
    /// Experts per MoE layer on the most loaded rank (`E_r`).
    pub per_rank: u32,
    /// GPUs one expert's matrices are split over inside its EP rank (`t_e`).
    pub expert_tp: u32,
}

/// The model outside the GPUs (llama.cpp): see [`ServeReport::file_bytes`] and
/// [`ServeReport::host_bytes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostMemory {
    /// The file's weights.
    pub file: u64,
    /// Host memory.
    pub host: u64,
}

/// One engine's start-up, every figure per GPU.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The engine.
    pub engine: Engine,
    /// The release modelled.
    pub version: Version,
    /// See [`ServeReport::budget_bytes`].
    pub budget: u64,
    /// Weights (expression: its text goes to the ledger).
    pub weights: Expr,
    /// The profiling peak.
    pub activation: Expr,
    /// Non-torch memory.
    pub non_torch: Expr,
    /// CUDA graphs set aside before the KV cache.
    pub graphs: Expr,
    /// The KV pool.
    pub kv: Expr,
    /// Memory outside the engine's budget that the process still holds (the CUDA
    /// context; vLLM's graphs when captured after the pool).
    pub outside: Expr,
    /// Bytes per token on this rank.
    pub per_token: u64,
    /// Tokens per block.
    pub block_size: u64,
    /// Blocks.
    pub blocks: u64,
    /// Tokens.
    pub tokens: u64,
    /// `max_len`.
    pub max_len: u64,
    /// Concurrency at `max_len`.
    pub concurrency: f64,
    /// The longest single request.
    pub max_len_fit: u64,
    /// The engine's error message, when one request does not fit.
    pub error: Option<String>,
    /// The file and host memory (llama.cpp; `None` for the other engines).
    pub host: Option<HostMemory>,
    /// Sources per item: weights, activation, non-torch, graphs, KV, outside.
    pub sources: [&'static str; 6],
    /// What llama.cpp's fit changed (`None` for the other engines, or where it did not run
    /// or changed nothing).
    pub fit: Option<Fitted>,
    /// [`Fitted::message`], written where the plan is made (the page's first module reads
    /// it from the plan's line and carries no copy of the wording).
    pub fit_message: String,
    /// The engine's own warnings on this launch, written where the plan is made so the
    /// page's first module carries none of their wording: `key\u{1d}message` joined by
    /// `\u{1e}` ([`Plan::notes`]; llama.cpp under an Ollama release,
    /// [`Scenario::ollama_problems`](crate::scenario::Scenario::ollama_problems)).
    pub notes: String,
}

impl Plan {
    /// The engine's start-up for `s`: computed here, or asked of the planner set
    /// ([`set_planner`]: the page's first module asks the module that holds the engines).
    pub fn of(s: &Scenario, p: &Prepared, l: &Layout) -> Plan {
        line::plan(s, p, l)
    }
    /// The release as its project writes it: `0.5.23`, `0.4.7.post1`; llama.cpp's build
    /// number `b8179`, an Ollama release `ollama-0.13.5`.
    pub fn release(&self) -> String {
        match self.engine {
            Engine::Llamacpp if self.version.0 == 0 => format!("ollama-{}", self.version),
            Engine::Llamacpp => format!("b{}", self.version.0),
            _ => self.version.to_string(),
        }
    }
    /// [`Plan::notes`] as `(key, message)` pairs.
    pub fn notes(&self) -> impl Iterator<Item = (&str, &str)> {
        self.notes
            .split('\u{1e}')
            .filter_map(|n| n.split_once('\u{1d}'))
    }
    /// [`Plan::notes`] as the estimate's warnings.
    pub fn note_warnings(&self) -> impl Iterator<Item = crate::ledger::Warning> + '_ {
        self.notes().map(|(key, message)| crate::ledger::Warning {
            key: key.into(),
            value: String::new(),
            message: message.into(),
        })
    }
    /// The `serve` object.
    pub fn report(&self) -> ServeReport {
        ServeReport {
            engine: self.engine.as_str().into(),
            engine_version: self.release(),
            budget_bytes: self.budget,
            weights_bytes: self.weights.eval(),
            activation_bytes: self.activation.eval(),
            non_torch_bytes: self.non_torch.eval(),
            cuda_graph_bytes: self.graphs.eval(),
            kv_cache_bytes: self.kv.eval(),
            kv_bytes_per_token: self.per_token,
            kv_tokens: self.tokens,
            kv_blocks: self.blocks,
            max_concurrency: (self.concurrency * 100.0).floor() / 100.0,
            max_len_fit: self.max_len_fit,
            max_len: self.max_len,
            error: self.error.clone(),
            file_bytes: self.host.map(|h| h.file),
            host_bytes: self.host.map(|h| h.host),
            experts: None,
            fit: self.fit.map(|f| FitReport {
                n_ctx_from: f.n_ctx_from,
                n_ctx: f.n_ctx,
                ngl: f.ngl,
                projected_bytes: f.projected_bytes,
                free_bytes: f.free_bytes,
                layers: f.layers,
                devices: f.devices,
                cpu_experts: f.cpu_experts,
                margin_bytes: match f.outcome {
                    FitOutcome::Ollama => 0,
                    _ => engines::FIT_MARGIN,
                },
                outcome: f.outcome.as_str().into(),
                message: self.fit_message.clone(),
            }),
        }
    }
    /// Every figure as a ledger item (GPU, alive while serving).
    pub(crate) fn items(&self, ledger: &mut Ledger) {
        let serving = [Phase::Decode];
        let g = Location::Gpu;
        let e = self.engine.as_str();
        let ctx = || format!("engine={e} {}", self.release());
        let rows: [(Mech, Component, &Expr, &str); 6] = [
            (
                Mech::ServeWeights,
                Component::Weights,
                &self.weights,
                "loaded weights",
            ),
            (
                Mech::ServeActivation,
                Component::Activations,
                &self.activation,
                "profiling forward's peak, kept free",
            ),
            (
                Mech::ServeNonTorch,
                Component::CommBuffers,
                &self.non_torch,
                "non-torch memory",
            ),
            (
                Mech::ServeGraphs,
                Component::Workspace,
                &self.graphs,
                "CUDA graphs",
            ),
            (Mech::ServeKv, Component::KvCache, &self.kv, "KV-cache pool"),
            (
                Mech::ServeOutside,
                Component::Overhead,
                &self.outside,
                "outside the engine's budget",
            ),
        ];
        for (i, (mech, comp, expr, note)) in rows.into_iter().enumerate() {
            ledger.push_expr(&serving, mech, comp, g, expr, note, ctx, self.sources[i]);
        }
        // llama.cpp's host memory, the whole process (one node), as `serve.host_bytes`.
        if let Some(h) = self.host.filter(|h| h.host > 0) {
            ledger.push_expr(
                &serving,
                Mech::ServeHost,
                Component::Weights,
                Location::Cpu,
                &sym("H_host", h.host),
                "host memory: the file's span the CPU maps and the CPU layers' KV cache",
                ctx,
                SRC_HOST,
            );
        }
    }
}

const SRC_HOST: &str = "llama.cpp llama_model_loader (token_embd and the layers -ngl leaves on the CPU in the CPU_Mapped buffer, get_mapping_range) and llama_kv_cache (the CPU layers' cache; all of it with --no-kv-offload): serve.host_bytes";

/// Whether the engine refuses to start `s` (one request of `max_len` does not fit, or
/// no memory is left for the cache): what the explorer counts as not fitting.
pub fn refuses(s: &Scenario, p: &Prepared) -> bool {
    Plan::of(s, p, &s.layout()).error.is_some()
}

/// What the engine refuses in `s`'s settings whatever the memory and the GPU count: its
/// start-up on one GPU of 1 PiB (`gpu_mem`), every parallel degree 1. `Some` only where no
/// layout or cluster can help (a cache type, a weight format or a page size the engine does
/// not take), so the fewest-GPU search's "no layout fits" can name the setting instead.
///
/// # Example
/// ```
/// use memfit_core::contract::query::decode;
/// let (x, _) = decode("mode=serve&engine=llamacpp&model=llama-3-8b&kv_dtype=fp8");
/// assert!(memfit_core::serve::settings_refusal(&x.scenario).unwrap().contains("Unsupported cache type: fp8"));
/// let (big, _) = decode("mode=serve&model=llama-3.1-405b&gpu=rtx4090");
/// assert_eq!(memfit_core::serve::settings_refusal(&big.scenario), None);
/// ```
pub fn settings_refusal(s: &Scenario) -> Option<String> {
    let one = crate::scenario::at_least_one(1);
    let mut t = s.clone();
    t.cluster.gpu_mem_mib = Some(1 << 30);
    t.cluster.gpus_per_node = one;
    t.cluster.nodes = one;
    let par = &mut t.parallel;
    (par.dp, par.tp, par.pp, par.cp, par.ep) = (None, one, one, one, one);
    Plan::of(&t, &Prepared::of(&t), &t.layout()).error
}

/// `n` as an expression of one named symbol.
pub(crate) fn sym(name: &'static str, n: u64) -> Expr {
    Expr::new(&[Sym(name, n as u128)])
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_checks;
#[cfg(test)]
mod tests_eplb;
#[cfg(test)]
mod tests_fit;
#[cfg(test)]
mod tests_multimodal;
#[cfg(test)]
mod tests_ollama;
#[cfg(test)]
mod tests_sampler;
#[cfg(test)]
mod tests_sglang;

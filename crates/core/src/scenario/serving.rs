//! What serving reads from a scenario: the releases whose rules change what an engine
//! does, each engine's modelled releases and label, the device's CUDA total, the release in
//! use, and what the engine refuses to start with.

use super::*;

/// The device total `cudaMemGetInfo` reports, where public logs or device queries give
/// it (smaller than `nvidia-smi memory.total` by what the driver keeps): `(gpu id, MiB·2^20
/// or bytes)`. Other GPUs: the preset's capacity less 512 MiB.
///
/// Source: deviceQuery / `torch.cuda.get_device_properties` output in public files (see
/// docs/serving.md): H100 80 GB 85,029,158,912 B (79.19 GiB, as vLLM's logs print); L40S
/// 45,486 MiB, vLLM 0.10.2's "Free memory on device (43.93/44.42 GiB)" and "Desired GPU
/// memory utilization is (0.9, 39.98 GiB)" (`vllm-hosting-8xl40s-…` in tests/data; until
/// 2026-11-28 45,589 MiB, a figure without a recorded source); RTX 3090 24,146 MiB, V0's
/// "Memory profiling results: total_gpu_memory=23.58GiB" (vLLM issue 10517, in tests/data;
/// the capacity less 512 MiB, 24,064 MiB, before); A100 40 GB 40,448 MiB, V0's
/// "total_gpu_memory (39.50GiB) x gpu_memory_utilization (0.90) = 35.55GiB" (vLLM issue
/// 12330, in tests/data; 40,536 MiB before, which is the PCIe card's `nvidia-smi` total).
pub const CUDA_TOTAL: &[(&str, u64)] = &[
    ("h100-80", 85_029_158_912),
    ("h100-pcie", 85_029_158_912),
    ("a100-80", 85_093_777_408),
    ("a100-40", 40_448 * MIB),
    ("l40s", 45_486 * MIB),
    ("rtx3090", 24_146 * MIB),
    ("rtx4090", 24_563 * MIB),
    ("h200", 143_156 * MIB),
];

/// llama.cpp's first build whose llama-server runs `--fit` by default: PR #16653 ("llama:
/// automatically set parameters not set by the user in such a way that maximizes GPU
/// utilization", merged 2025-12-15 as b1f3a6e5d); b7437 is the earliest build a log shows it
/// in (llama.cpp issue #18097, 2025-12-16, "version: 7437 (ec98e2002)", naming b1f3a6e5d as
/// the first bad commit; #18181 shows llama-server b7474 fitting by default). The merge's own
/// build number was not found: builds between it and b7437 are read without the fit.
pub const LLAMACPP_FIT_FROM: Version = Version(7437, 0, 0, 0);

/// llama.cpp's first build that reserves the output layer's logits for the server's
/// sequences rather than for every token of a micro-batch: b9460 (PR #23861, "llama: limit
/// max outputs of `llama_context`", merged 2026-06-01; `n_outputs_pp = min(n_tokens,
/// cparams.n_outputs_max)`, which llama-server sets to its slots). Ollama 0.30.1 (b9479) is
/// the first release that runs it; 0.30.0 runs b9452.
pub const LLAMACPP_OUTPUTS_PER_SEQ_FROM: Version = Version(9460, 0, 0, 0);

/// The first llama.cpp build memfit knows to run a CPU layer's large products on the GPU
/// (op offload: PR #6083, "backend : offload large batches to GPU", merged 2024-03-18):
/// b2474, which Ollama took on 2024-03-23 ("Bump llama.cpp to b2474"); the PR is a few
/// builds earlier, so b24xx builds before b2474 are taken as without it. Ollama 0.1.30
/// (b2527) is the first release with it: 0.1.29 runs `ceca1ae` (2024-03-11).
pub const LLAMACPP_OP_OFFLOAD_FROM: Version = Version(2474, 0, 0, 0);

/// See [`LLAMACPP_OP_OFFLOAD_FROM`].
pub const OLLAMA_OP_OFFLOAD_FROM: Version = Version(0, 1, 30, 0);

/// vLLM's first V1 release (the V0 engine is ≤ 0.7).
pub const VLLM_V1_FROM: Version = Version(0, 8, 0, 0);
/// vLLM's `--enable-expert-parallel` first release (not in 0.7.3's `arg_utils.py`).
pub const VLLM_EP_FROM: Version = Version(0, 8, 0, 0);
/// vLLM's first release whose FlashInfer sampler is opt-in (`VLLM_USE_FLASHINFER_SAMPLER=1`):
/// the PyTorch sort runs the dummy sampler pass's top-k/top-p by default.
///
/// Source: vLLM sdists 0.11.0 (FlashInfer's when installed unless the variable is `0`),
/// 0.11.1, 0.11.2 and 0.12.0 (`if envs.VLLM_USE_FLASHINFER_SAMPLER:` … "Users must opt in
/// explicitly"), `v1/sample/ops/topk_topp_sampler.py`. A 0.11.2 log with FlashInfer
/// installed (faradawn/bench3, Llama 3 8B on an H200, 1,024 rows) fits the sort path:
/// 868,080 tokens logged, 870,048 with it, 890,080 with FlashInfer's 16 B.
pub const VLLM_FLASHINFER_OPTIN_FROM: Version = Version(0, 11, 1, 0);
/// vLLM's first release with the Triton top-k/top-p kernel (8 rows or more).
///
/// Source: vLLM sdists 0.16.0 (no `apply_top_k_top_p_triton`) and 0.17.0,
/// `v1/sample/ops/topk_topp_sampler.py`.
pub const VLLM_TRITON_TOPK_FROM: Version = Version(0, 17, 0, 0);
/// vLLM's first release with `--quantization mxfp4` (gpt-oss).
///
/// Source: vLLM sdists 0.10.0 (no `quantization/mxfp4.py`) and 0.10.1 (`Mxfp4Config`).
pub const VLLM_MXFP4_FROM: Version = Version(0, 10, 1, 0);
/// vLLM's first release whose MXFP4 config loads a linear layer unquantized instead of
/// raising `NotImplementedError("Mxfp4 linear layer is not implemented")`.
///
/// Source: vLLM `model_executor/layers/quantization/mxfp4.py Mxfp4Config.get_quant_method`
/// (raises in 0.10.1–0.11.0; `UnquantizedLinearMethod()` with a debug log from 0.11.1,
/// through 0.33.0).
pub const VLLM_MXFP4_LINEAR_FALLBACK: Version = Version(0, 11, 1, 0);

/// Whether release `v` of `e` builds EPLB's redundant experts for the model preset
/// `preset` (its model code takes `num_redundant_experts`; vLLM builds EPLB only for a
/// `MixtureOfExperts` model, `gpu_model_runner.py`, and other models load without
/// replicas): `None` for a model memfit has no such record of (counted as taking them).
///
/// Source: vLLM `model_executor/models/*.py` (`num_redundant_experts`): `deepseek_v2.py`
/// from 0.9.2, `qwen3_moe.py` from 0.10.1 (not in 0.10.0), `mixtral.py` from 0.11.0 (not
/// in 0.10.2), `llama4.py` and `gpt_oss.py` in 0.12.0 (not in 0.11.0; 0.11.1–0.11.2 not
/// read, given 0.12.0's rule); `qwen2_moe.py`, `phimoe.py`, `olmoe.py` in none through
/// 0.33.0. SGLang `srt/models/*.py` (`ep_num_redundant_experts`): `deepseek_v2.py` and
/// `qwen3_moe.py` from 0.4.6.post5, `qwen2_moe.py` and `gpt_oss.py` in 0.5.3 (0.4.7–0.5.2
/// not read, given 0.5.3's rule).
pub fn eplb_model(e: Engine, preset: &str, v: Version) -> Option<bool> {
    let from = |x: (u16, u16, u16)| v >= Version(x.0, x.1, x.2, 0);
    let any = |ps: &[&str]| ps.iter().any(|p| preset.starts_with(p));
    let qwen3 = ["qwen3-30b-a3b", "qwen3-235b-a22b"];
    Some(match e {
        Engine::Vllm if any(&["deepseek-"]) => from((0, 9, 2)),
        Engine::Vllm if any(&qwen3) => from((0, 10, 1)),
        Engine::Vllm if any(&["mixtral-"]) => from((0, 11, 0)),
        Engine::Vllm if any(&["llama-4-", "gpt-oss-"]) => from((0, 12, 0)),
        Engine::Vllm if any(&["qwen1.5-moe", "phi-3.5-moe", "olmoe"]) => false,
        Engine::Sglang if any(&["deepseek-"]) || any(&qwen3) => true,
        Engine::Sglang if any(&["qwen1.5-moe", "gpt-oss-"]) => from((0, 5, 3)),
        Engine::Sglang if any(&["mixtral-", "llama-4-", "phi-3.5-moe", "olmoe"]) => false,
        Engine::Vllm | Engine::Sglang => return None,
        _ => false,
    })
}

impl Engine {
    /// The newest release memfit models (what an empty `engine_version` means).
    pub fn newest(self) -> Version {
        match self {
            Engine::Vllm => Version(0, 33, 0, 0),
            Engine::Sglang => Version(0, 5, 23, 0),
            Engine::Trtllm => Version(1, 0, 0, 0),
            Engine::Llamacpp => Version(8179, 0, 0, 0),
        }
    }
    /// The releases memfit models, `(oldest, newest)`: what its sources were read at
    /// (docs/serving.md, "Sources read"). Patch releases of vLLM's and TensorRT-LLM's newest
    /// minor count as modelled; SGLang's third number counts releases (0.5.4 … 0.5.23 each
    /// changed rules), so a release after the newest read is named; llama.cpp's build numbers
    /// are not checked (every build is read with one
    /// set of rules; the build decides only `flash_attn=auto`'s default, off before b6325).
    ///
    /// Source: vLLM's PyPI sdists 0.6.6.post1 … 0.33.0; SGLang's 0.4.0 … 0.5.23 (sdists and
    /// wheels; the rules that changed after 0.5.3 read release by release, `sglang_args`);
    /// TensorRT-LLM 1.0.
    pub fn modelled(self) -> Option<(Version, Version)> {
        match self {
            Engine::Vllm => Some((Version(0, 6, 6, 0), self.newest())),
            Engine::Sglang => Some((Version(0, 4, 0, 0), self.newest())),
            Engine::Trtllm => Some((Version(1, 0, 0, 0), self.newest())),
            Engine::Llamacpp => None,
        }
    }
    /// The engine's name as its project writes it.
    pub fn label(self) -> &'static str {
        match self {
            Engine::Vllm => "vLLM",
            Engine::Sglang => "SGLang",
            Engine::Trtllm => "TensorRT-LLM",
            Engine::Llamacpp => "llama.cpp",
        }
    }
}

impl Scenario {
    /// The device total a serving engine sees (`cudaMemGetInfo`), bytes: `gpu_mem` when
    /// set, else [`CUDA_TOTAL`]'s figure, else the capacity less 512 MiB.
    pub fn cuda_total(&self) -> u64 {
        if self.cluster.gpu_mem_mib.is_some() {
            return self.usable_bytes();
        }
        CUDA_TOTAL
            .iter()
            .find(|(id, _)| *id == self.cluster.gpu)
            .map_or(self.usable_bytes().saturating_sub(512 * MIB), |(_, b)| *b)
    }

    /// The serving engine's release whose rules apply: `engine_version` (empty: the newest
    /// modelled) when inside [`Engine::modelled`]'s range; `Err((asked, used))` outside it,
    /// `used` the nearest end.
    pub fn engine_release(&self) -> Result<Version, (Version, Version)> {
        let e = self.serving.engine;
        let v = self.serving.version.unwrap_or(e.newest());
        let Some((lo, hi, _)) = self.release_range() else {
            return Ok(v);
        };
        if v < lo {
            Err((v, lo))
        } else if v > match e {
            // SGLang's third number counts releases; its post releases are covered.
            Engine::Sglang => Version(hi.0, hi.1, hi.2, u16::MAX),
            _ => Version(hi.0, hi.1, u16::MAX, u16::MAX),
        } {
            Err((v, hi))
        } else {
            Ok(v)
        }
    }

    /// The releases modelled for this launch, `(oldest, newest, name)`: the engine's
    /// ([`Engine::modelled`]: every patch of the newest minor; SGLang's post releases of its
    /// newest), or Ollama's ([`OLLAMA_MODELLED`]) where `engine_version` names an Ollama
    /// release; `None` for llama.cpp's builds, which are not checked.
    fn release_range(&self) -> Option<(Version, Version, &'static str)> {
        match self.ollama_release() {
            Some(_) => Some((OLLAMA_MODELLED.0, OLLAMA_MODELLED.1, "Ollama")),
            None => {
                let e = self.serving.engine;
                e.modelled().map(|(lo, hi)| (lo, hi, e.label()))
            }
        }
    }

    /// The Ollama release `engine_version` names (`engine=llamacpp`, a version whose first
    /// number is 0: `ollama-0.13.5`), if it names one.
    pub fn ollama_release(&self) -> Option<Version> {
        let v = self.serving.version?;
        (self.serving.engine == Engine::Llamacpp && v.0 == 0).then_some(v)
    }

    /// The llama.cpp build whose rules apply (`engine=llamacpp`): the build `engine_version`
    /// names, the one the named Ollama release vendors ([`ollama_build`]), or the newest
    /// modelled.
    pub fn llamacpp_build(&self) -> Version {
        match self.ollama_used() {
            Some(v) => ollama_build(v),
            None => self.serving.version.unwrap_or(Engine::Llamacpp.newest()),
        }
    }

    /// What memfit takes from a serving scenario but the engine would not, as named
    /// warnings, carried in the serve plan's notes ([`crate::serve::Plan::notes`]: worked
    /// out where the plan is made, so the page's first module carries none of this wording);
    /// what the engine refuses is the serve plan's `error` instead, in the engine's words.
    ///
    /// - `engine_version` outside the releases memfit models ([`Engine::modelled`]): the
    ///   nearest modelled release's rules are used, and named.
    /// - `quant=mxfp4` under vLLM before 0.10.1 (no `--quantization mxfp4`), or on a dense
    ///   model from 0.11.1 (`Mxfp4Config.get_quant_method` loads linear layers unquantized:
    ///   vLLM's MXFP4 path is the MoE experts', as in gpt-oss; 0.10.1–0.11.0 refuse).
    /// - `gpu_util` under vLLM's V0 engine (≤ 0.7) above `(M_total − ctx)/M_total`: V0 has
    ///   no start-up check (0.9.1 added one); its budget and the CUDA context outside it
    ///   exceed the device.
    /// - `max_batched_tokens` below the context under V0 without its automatic chunked
    ///   prefill (context ≤ 32,768): refused unless `--enable-chunked-prefill` is set.
    /// - a `kv_dtype` memfit does not model TensorRT-LLM with (llama.cpp's block types,
    ///   int8, int4).
    ///
    /// Source: vLLM `model_executor/layers/quantization/mxfp4.py` (0.10.1–0.33.0),
    /// `worker/worker.py determine_num_available_blocks` (0.6.6.post1, 0.7.3),
    /// `v1/worker/gpu_worker.py init_device` (0.9.1).
    pub fn serve_problems(&self, arch: &Arch) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let e = self.serving.engine;
        let v = match self.engine_release() {
            Ok(v) => v,
            Err((asked, used)) => {
                if let Some((lo, hi, name)) = self.release_range() {
                    let newest = match e {
                        Engine::Sglang => hi.to_string(),
                        _ => format!("{}.{}.x", hi.0, hi.1),
                    };
                    out.push((
                        "engine_version",
                        format!("memfit models {name} {lo} to {newest}; {asked} is outside that range, so {used}'s rules are used"),
                    ));
                }
                used
            }
        };
        if e == Engine::Vllm && self.numerics.quant == crate::quant::Quant::Mxfp4 {
            if v < VLLM_MXFP4_FROM {
                out.push((
                    "quant",
                    format!("vLLM {v} has no mxfp4 quantization (it arrived in {VLLM_MXFP4_FROM}, for gpt-oss); counted as if it had"),
                ));
            } else if arch.experts == 0 && v >= VLLM_MXFP4_LINEAR_FALLBACK {
                out.push((
                    "quant",
                    format!("vLLM {v} quantises only MoE experts with mxfp4 (gpt-oss-style checkpoints); a dense model's linear layers load unquantized (UnquantizedLinearMethod), but memfit counts them as MXFP4"),
                ));
            }
        }
        if let (Engine::Vllm, true, Some(u)) = (e, v < VLLM_V1_FROM, self.serving.gpu_util) {
            let total = self.cuda_total() as f64;
            let ctx = self.cuda_ctx_mib() as f64 * MIB as f64;
            if total * u + ctx > total {
                out.push((
                    "gpu_util",
                    format!("gpu_util={u} leaves no room for the CUDA context ({} MiB) beside vLLM {v}'s budget: the V0 engine has no start-up check (0.9.1 added one) and would run out of memory allocating the KV cache or capturing CUDA graphs", self.cuda_ctx_mib()),
                ));
            }
        }
        self.sampler_problems(v, &mut out);
        self.v0_chunking_problems(v, &mut out);
        self.context_problems(&mut out);
        self.serve_ep_problems(arch, v, &mut out);
        self.redundant_problems(arch, &mut out);
        self.engine_key_problems(&mut out);
        self.encoder_profile_problems(&mut out);
        self.format_problems(&mut out);
        if e == Engine::Llamacpp && self.parallel.pp.get() > 1 {
            out.push((
                "pp",
                format!("llama.cpp splits the layers over its GPUs itself (--split-mode layer, run as a pipeline); memfit counts that split over tp GPUs: pp = {} is not read (set tp to the GPU count)", self.parallel.pp),
            ));
        }
        if let (Engine::Vllm, Some(n @ 1..)) = (e, self.serving.graph_bs) {
            out.push((
                "graph_bs",
                format!("vLLM's capture sizes (--max-cudagraph-capture-size, --cuda-graph-sizes) are not read: only 0 (--enforce-eager) changes memfit's plan, so graph_bs = {n} is counted as the release's default"),
            ));
        }
        let d = self.numerics.kv_dtype;
        if e == Engine::Trtllm && (d.is_ggml() || d.is_integer()) {
            out.push((
                "kv_dtype",
                format!("kv_dtype={} is not a cache type memfit models for TensorRT-LLM; counted as if TensorRT-LLM had it", d.as_str()),
            ));
        }
        out
    }
    /// A `max_len` longer than the model's `context` or, without one, than any checkpoint of
    /// an unedited preset was configured for (its `config.json`'s `max_position_embeddings`,
    /// [`crate::model::longest_context`]): vLLM
    /// and SGLang refuse it at start-up unless an environment variable allows it. A warning,
    /// not a refusal: a config with rope scaling derives a longer context. Source: vLLM
    /// `_get_and_verify_max_len` (`config.py` 0.6.6–0.10.x, `config/model.py` 0.11–0.33.0),
    /// SGLang `ModelConfig._derive_context_length` (`srt/configs/model_config.py`, 0.5.3).
    ///
    /// # Example
    /// Qwen2.5 7B (32,768 tokens) with `max_len=131072` on vLLM: named; Llama 3 8B with
    /// 131,072 is not (Llama 3.1's checkpoints have it), with 200,000 it is.
    fn context_problems(&self, out: &mut Vec<(&'static str, String)>) {
        let Some(ml) = self.serving.max_len else {
            return;
        };
        let ctx = match self.model.context {
            Some(c) => c,
            None if self.model.overrides.any() => return,
            None => match crate::model::longest_context(&self.model.preset) {
                Some(c) => c,
                None => return,
            },
        };
        let ml = ml.get();
        if ml <= ctx {
            return;
        }
        let (engine, words, env) = match self.serving.engine {
            Engine::Vllm => ("vLLM", format!("User-specified max_model_len ({ml}) is greater than the derived max_model_len"), "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"),
            Engine::Sglang => ("SGLang", format!("User-specified context_length ({ml}) is greater than the derived context_length ({ctx})"), "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"),
            Engine::Trtllm | Engine::Llamacpp => return,
        };
        out.push((
            "max_len",
            format!(
                "max_len = {} is longer than {}'s context ({} tokens, its config.json's max_position_embeddings): {engine} refuses it at start-up (\"{words} …\") unless {env} is set or the checkpoint's config (rope scaling) allows more; counted as given",
                crate::units::group_digits(ml as u64),
                if self.model.context.is_some() { "the model" } else { self.preset().name },
                crate::units::group_digits(ctx as u64)
            ),
        ));
    }
    /// The context a served request may use: `max_len`, else the engine's default: the
    /// model's context ([`Scenario::context`], else `seq + gen`) for vLLM, SGLang and
    /// TensorRT-LLM; llama.cpp's front ends pick their own.
    ///
    /// # Formula
    /// ```text
    /// llama-server (ctx_per=total):   -c 4096 before b7437, then the model's context (the fit may cut it)
    /// Ollama (ctx_per=sequence):      num_ctx = min(C, T),  T = 262,144 if V ≥ 47 GiB,
    ///                                 32,768 if V ≥ 23 GiB, else 4,096
    /// Ollama before 0.15.5 (engine_version=ollama-0.x.y):
    ///                                 min(C, 4,096) from 0.9.3; 4,096 from 0.6.7; 2,048 before
    /// ```
    /// `C` the model's context, `V` the node's GPU memory (each GPU's CUDA total, summed over
    /// `gpus_per_node`), bytes.
    ///
    /// Source: llama.cpp PR #10136 (2024-11-02: `n_ctx = 4096` in `common/common.h`; before it
    /// 0, the model's context, at a build not found) and the `--fit` merge b1f3a6e5d (`n_ctx =
    /// 0`, with `fit_params`; read in Ollama's vendored copy at ec98e2002 = b7437); Ollama
    /// v0.15.5 (commit 0334ffa62, `server/routes.go` `Serve`: the total VRAM over every GPU,
    /// tiers at 47 and 23 GiB; `llm/server.go` caps `num_ctx` at the model's `context_length`
    /// from v0.9.3, per sequence from v0.11.5). Older Ollama, named by `engine_version`:
    /// 4,096 (v0.6.7–v0.15.4), 2,048 (before); an Ollama launch without a release is read as
    /// the newest.
    ///
    /// # Example
    /// Llama 3.1 8B (131,072 tokens) under Ollama on one RTX 4090 (23.99 GiB): 32,768; on an
    /// H100 80 GB: 131,072; on an L4 (22.49 GiB): 4,096. Llama 3.1 70B under Ollama 0.13.5 on
    /// an L40S: 4,096 (logged `n_ctx = 4096`; the newest release would give 32,768).
    pub fn serve_max_len(&self) -> u64 {
        if let Some(c) = self.serving.max_len {
            return c.get() as u64;
        }
        let model = self
            .context()
            .map(u64::from)
            .unwrap_or(self.workload.seq.get() as u64 + self.workload.gen as u64);
        let gib = |n: u64| n << 30;
        let vram = self.cuda_total() as u128 * self.cluster.gpus_per_node.get() as u128;
        let ollama = self.ollama_used();
        match (self.serving.engine, self.serving.ctx_per) {
            _ if ollama.is_some_and(|v| v < OLLAMA_CTX_4096_FROM) => 2048,
            _ if ollama.is_some_and(|v| v < OLLAMA_CAP_FROM) => 4096,
            _ if ollama.is_some_and(|v| v < OLLAMA_CTX_BY_VRAM_FROM) => model.min(4096),
            (Engine::Llamacpp, CtxPer::Sequence) => model.min(match vram {
                v if v >= gib(47) as u128 => 262_144,
                v if v >= gib(23) as u128 => 32_768,
                _ => 4096,
            }),
            (Engine::Llamacpp, _) if self.llamacpp_build() < LLAMACPP_FIT_FROM => 4096,
            _ => model,
        }
    }
    /// vLLM's V0 engine (≤ 0.7) with `max_batched_tokens` below the context and chunked
    /// prefill off: it refuses to start. V0 turns chunked prefill on by itself only for a
    /// context over 32,768 tokens (on CUDA, without a sliding window, LoRA or speculative
    /// decoding); memfit has no key for `--enable-chunked-prefill`, so the refusal is named as a
    /// warning and the profile is counted over `max_batched_tokens`, as a chunked-prefill
    /// launch runs it. Source: vLLM `SchedulerConfig._verify_args` and
    /// `EngineArgs.create_engine_config` (`config.py`, `engine/arg_utils.py`, 0.6.6.post1 and
    /// 0.7.3: `use_long_context = max_model_len > 32768`).
    ///
    /// # Example
    /// Llama 3 8B, `engine_version=0.7.3&max_len=8192&max_batched_tokens=4096`: named;
    /// with `max_len=65536` (chunked prefill on by default) or on 0.8.0 (V1): not.
    fn v0_chunking_problems(&self, v: Version, out: &mut Vec<(&'static str, String)>) {
        let (Engine::Vllm, true, Some(n)) = (
            self.serving.engine,
            v < VLLM_V1_FROM,
            self.serving.max_batched_tokens,
        ) else {
            return;
        };
        let ml = self.serve_max_len();
        let n = n.get() as u64;
        if n >= ml || ml > 32_768 {
            return;
        }
        out.push((
            "max_batched_tokens",
            format!("vLLM {v} (the V0 engine) refuses this unless --enable-chunked-prefill is set: \"max_num_batched_tokens ({n}) is smaller than max_model_len ({ml}). This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len.\" Counted as a launch with chunked prefill"),
        ));
    }
    /// `sampler` where it means nothing: another engine, vLLM's V0 engine, or the Triton
    /// kernel before the release that has it.
    fn sampler_problems(&self, v: Version, out: &mut Vec<(&'static str, String)>) {
        let p = self.serving.sampler;
        if p == Sampler::Auto {
            return;
        }
        let e = self.serving.engine;
        let why = if e != Engine::Vllm {
            format!("`sampler` is vLLM's; ignored under {}", e.label())
        } else if v < VLLM_V1_FROM {
            format!("vLLM {v} runs the V0 engine's sampler; `sampler` ignored")
        } else if p == Sampler::Triton && v < VLLM_TRITON_TOPK_FROM {
            format!("vLLM {v} has no Triton top-k/top-p kernel (it arrived in {VLLM_TRITON_TOPK_FROM}); counted as the release's default")
        } else {
            return;
        };
        out.push(("sampler", why));
    }
    /// `redundant_experts` where nothing has them: a dense model, or TensorRT-LLM and
    /// llama.cpp (whose EPLB memfit does not model): named and ignored.
    fn redundant_problems(&self, arch: &Arch, out: &mut Vec<(&'static str, String)>) {
        let r = self.serving.redundant_experts;
        if r == 0 {
            return;
        }
        let e = self.serving.engine;
        let v = self.engine_release().unwrap_or_else(|(_, used)| used);
        let why = match e {
            _ if arch.experts == 0 => "the model has no routed experts".to_string(),
            Engine::Trtllm | Engine::Llamacpp => {
                format!("EPLB is not modelled for {}", e.label())
            }
            _ if eplb_model(e, &self.model.preset, v) == Some(false) => format!(
                "{} {v}'s code for {} builds no redundant experts (the flag is accepted, the experts load once)",
                e.label(),
                self.model.preset
            ),
            _ => return,
        };
        out.push((
            "redundant_experts",
            format!("redundant_experts = {r} ignored: {why}"),
        ));
    }
    /// A serving key set under an engine that has no such setting, or whose memory memfit
    /// does not read it for ([`engine_reads`]): each named and ignored. llama.cpp's own
    /// (`flash_attn`, `ngl`, `kv_offload`, `parallel`, `ctx_per`) under another engine; the
    /// paged engines' (`gpu_util`, `max_seqs`, `block_size`) under llama.cpp, which allocates
    /// what its context needs, runs `parallel` sequences and pages nothing; `max_seqs` under
    /// TensorRT-LLM (not read by its plan); `block_size` under SGLang before 0.4.4 (no
    /// `--page-size`).
    fn engine_key_problems(&self, out: &mut Vec<(&'static str, String)>) {
        let sv = &self.serving;
        let name = sv.engine.label();
        // `sampler` and `redundant_experts` have warnings of their own.
        // `vision` describes the model (no mode warning: training and inference count the
        // text decoder), so it joins the engines' table here only.
        let vision = (
            "vision",
            super::scope::ReadIn::Serve,
            self.model.vision.is_some_and(|n| n > 0),
        );
        let ignored = self
            .serving_and_stack_keys()
            .into_iter()
            .chain([vision])
            .filter(|&(k, _, set)| {
                set && !engine_reads(k, sv.engine) && !matches!(k, "sampler" | "redundant_experts")
            });
        for (key, _, _) in ignored {
            let why = match sv.engine {
                Engine::Llamacpp if key == "vision" => "is not counted under llama.cpp, which loads a vision encoder from a separate mmproj file (--mmproj): ignored".to_string(),
                Engine::Trtllm if key == "vision" => "is not counted under TensorRT-LLM, which builds a vision encoder as an engine of its own: ignored".to_string(),
                Engine::Llamacpp if key == "graph_bs" => "is SGLang's and vLLM's setting; llama.cpp captures its CUDA graphs itself (GGML_CUDA_DISABLE_GRAPHS turns them off), inside its compute buffer: ignored".to_string(),
                Engine::Llamacpp => "is a paged engine's setting (vLLM, SGLang, TensorRT-LLM); llama.cpp allocates what its context needs, runs `parallel` sequences and pages nothing: ignored".to_string(),
                Engine::Trtllm if key == "max_seqs" => "(max_batch_size) is not read by memfit's TensorRT-LLM plan, which sizes the pool from a max_batched_tokens profile: ignored".to_string(),
                Engine::Trtllm if key == "graph_bs" => "(cuda_graph_config's max_batch_size) is not read by memfit's TensorRT-LLM plan: ignored".to_string(),
                _ => format!("is llama.cpp's setting (engine=llamacpp); ignored under {name}"),
            };
            out.push((key, format!("`{key}` {why}")));
        }
        let v = self.engine_release().unwrap_or_else(|(_, used)| used);
        if sv.engine == Engine::Sglang && sv.block_size.is_some() && v < Version(0, 4, 4, 0) {
            out.push(("block_size", format!("SGLang {v} has no --page-size (it arrived in 0.4.4; one token a page): `block_size` ignored")));
        }
        if sv.engine == Engine::Llamacpp && sv.fit == LlamaFit::On {
            if sv.ctx_per == CtxPer::Sequence {
                out.push(("fit", "`fit=on` is llama-server's; Ollama (ctx_per=sequence) sets its own context and layers: ignored".to_string()));
            } else if v < LLAMACPP_FIT_FROM {
                out.push((
                    "fit",
                    format!(
                        "llama.cpp b{} has no --fit (from b{}): counted as if it had",
                        v.0, LLAMACPP_FIT_FROM.0
                    ),
                ));
            }
        }
    }
    /// Qwen2.5-VL or Qwen3-VL served by vLLM with its encoder: before sizing the KV cache vLLM
    /// also runs the vision encoder on its largest input (one image of the most features:
    /// 16,384 tokens, 65,536 patches at the processors' default largest image) and keeps its output
    /// in the encoder cache through the text forward. memfit does not model that run's peak,
    /// and says so with the one log it was checked on: vLLM 0.8.2, H100 80 GB, offline `LLM`
    /// (16,384 batched tokens, 1,024 sequences), 905,648 tokens logged where memfit gives
    /// 983,904 (+8.6 %; the weights within 0.06 GiB).
    ///
    /// Source: vLLM `v1/worker/gpu_model_runner.py profile_run` ("Encoder cache will be
    /// initialized with a budget of 16384 tokens, and profiled with 1 image items of the
    /// maximum feature size"; V0's `profile_run` builds dummy multimodal sequences too),
    /// QwenLM/Qwen3-VL issue 1057 (the log).
    fn encoder_profile_problems(&self, out: &mut Vec<(&'static str, String)>) {
        let qwen_vl = matches!(self.model.preset.as_str(), "qwen2.5-vl-7b" | "qwen3-vl-8b")
            && self.model.vision != Some(0);
        if self.serving.engine == Engine::Vllm && qwen_vl {
            out.push(("vision", "vLLM also profiles the vision encoder on its largest input before sizing the KV cache (one image of 16,384 tokens, 65,536 patches, at the default max_pixels); memfit does not model that run's peak: on a vLLM 0.8.2 log of Qwen2.5-VL-7B (H100, offline LLM, 16,384 batched tokens) memfit gives 983,904 KV tokens where the log has 905,648 (+8.6 %). A smaller max_pixels (--mm-processor-kwargs) shrinks it; vision=0 (--limit-mm-per-prompt with no images) removes it".to_string()));
        }
    }
    /// A weight format the engine does not load, named and counted at its bytes as if it
    /// did: llama.cpp loads GGUF files (its `q*`/`iq*` types, f16/bf16/f32 as `quant=none`,
    /// MXFP4 for gpt-oss), not Hugging Face checkpoints' FP8, INT8/INT4 or bitsandbytes
    /// formats; TensorRT-LLM loads no GGUF file and has no bitsandbytes format; a llama.cpp
    /// block type as `weight_dtype` (`quant=mxfp4&weight_dtype=q8_0`: gpt-oss's GGUF file) is
    /// llama.cpp's alone.
    ///
    /// Source: llama.cpp `ggml/include/ggml.h` (`enum ggml_type`) and `convert_hf_to_gguf.py`
    /// (a checkpoint is converted before it is served); TensorRT-LLM's quantization modes
    /// (`tensorrt_llm/quantization/mode.py`: FP8, INT8 SmoothQuant, weight-only INT4/INT8,
    /// AWQ/GPTQ W4A16, NVFP4, MXFP4 — no NF4, no GGUF).
    fn format_problems(&self, out: &mut Vec<(&'static str, String)>) {
        use crate::quant::Quant;
        let q = self.numerics.quant;
        let gguf = q.gguf().is_some();
        let why = match self.serving.engine {
            Engine::Llamacpp if !gguf && !matches!(q, Quant::None | Quant::Mxfp4) => format!(
                "llama.cpp loads GGUF files (the q*/iq* types, f16/bf16/f32 as quant=none, MXFP4); quant={} is a Hugging Face checkpoint format it does not load (convert the model to GGUF first): counted at its bytes as if it did",
                q.as_str()
            ),
            e if e != Engine::Llamacpp && self.numerics.weight_dtype.is_ggml() => format!(
                "weight_dtype={} is a llama.cpp block type (a GGUF file's), not one {} stores weights in: counted at its bytes as if it were",
                self.numerics.weight_dtype.as_str(),
                e.as_str()
            ),
            Engine::Trtllm if gguf => format!(
                "TensorRT-LLM does not load GGUF files (quant={}): counted at its bytes as if it did",
                q.as_str()
            ),
            Engine::Trtllm if matches!(q, Quant::Nf4 | Quant::Int8) => format!(
                "TensorRT-LLM has no bitsandbytes format (quant={}; its int8/int4 are weight-only, W8A8 and W4A16): counted at its bytes as if it had",
                q.as_str()
            ),
            _ => return,
        };
        out.push(("quant", why));
    }
    /// `ep > 1` on a mixture of experts as each engine reads it: vLLM's EP size is `t·d`
    /// whatever `ep` says (`--enable-expert-parallel` is a switch; with `t·d = 1` it does
    /// nothing), TensorRT-LLM's and llama.cpp's expert parallelism is not modelled.
    ///
    /// Source: vLLM `model_executor/layers/fused_moe/layer.py` (`ep_size = tp_size ·
    /// dp_size`) and `fused_moe/config.py FusedMoEParallelConfig.make` (the serving
    /// engines' `expert_split`).
    fn serve_ep_problems(&self, arch: &Arch, v: Version, out: &mut Vec<(&'static str, String)>) {
        let ep = self.parallel.ep.get();
        if arch.experts == 0 || ep <= 1 {
            return;
        }
        let l = self.layout();
        let td = l.tp.get() as u64 * l.dp.get() as u64;
        match self.serving.engine {
            Engine::Vllm if v >= VLLM_EP_FROM => {
                if td <= 1 {
                    out.push((
                        "ep",
                        format!("vLLM's expert parallelism spreads the experts over tp·dp = 1 GPU, so it does nothing: ep = {ep} ignored, counted without expert parallelism"),
                    ));
                } else if td != ep as u64 {
                    out.push((
                        "ep",
                        format!("vLLM's EP size is tp·dp = {td} whenever --enable-expert-parallel is on (ep only switches it on): counted with EP = {td}, not ep = {ep}"),
                    ));
                }
            }
            Engine::Trtllm | Engine::Llamacpp => out.push((
                "ep",
                format!("expert parallelism is not modelled for {}: ep = {ep} ignored, every GPU holds every expert ÷ tp", self.serving.engine.label()),
            )),
            _ => {}
        }
    }
}

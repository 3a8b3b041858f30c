//! Ollama's releases (`engine=llamacpp&engine_version=ollama-0.x.y`): what each one does by
//! default with what a launch leaves unset — the context, flash attention, the KV cache
//! type, the sequences it serves — and which llama.cpp it runs.
//!
//! Source: Ollama's git history (github.com/ollama/ollama, read at each release tag, the
//! newest v0.33.0-rc2 of 2026-08-21): `envconfig/config.go`, `llm/server.go`,
//! `fs/ggml/ggml.go`, `server/sched.go`, `server/routes.go`, and the vendored llama.cpp
//! (`llm/llama.cpp`, `llama/vendoring`, `Makefile.sync`, `LLAMA_CPP_VERSION`).

use super::*;

/// The Ollama releases memfit reads: `(oldest, newest)`; outside, the nearest end's rules are
/// used and named.
pub const OLLAMA_MODELLED: (Version, Version) = (Version(0, 1, 0, 0), Version(0, 33, 0, 0));

/// Ollama's first release whose default `num_ctx` is 4,096 (`OLLAMA_CONTEXT_LENGTH`'s
/// default 2,048 before; commit 44b466eeb).
pub const OLLAMA_CTX_4096_FROM: Version = Version(0, 6, 7, 0);
/// Ollama's first release that caps `num_ctx` at the model's `context_length`
/// (`llm/server.go`).
pub const OLLAMA_CAP_FROM: Version = Version(0, 9, 3, 0);
/// Ollama's first release whose default `num_ctx` follows the node's GPU memory (commit
/// 0334ffa62: 4,096, 32,768 from 23 GiB, 262,144 from 47 GiB).
pub const OLLAMA_CTX_BY_VRAM_FROM: Version = Version(0, 15, 5, 0);
/// llama.cpp's first build whose flash attention defaults to `auto` (PR #15434, "use FA +
/// max. GPU layers by default", merged 2025-08-30); before it `common.h` had
/// `flash_attn = false`.
pub const LLAMACPP_FA_AUTO_FROM: Version = Version(6325, 0, 0, 0);
/// Ollama's first release with `OLLAMA_KV_CACHE_TYPE` (PR #6279).
pub const OLLAMA_KV_TYPE_FROM: Version = Version(0, 5, 0, 0);
/// Ollama's first release that turns flash attention on without `OLLAMA_FLASH_ATTENTION`
/// (for gpt-oss, PR #11996).
pub const OLLAMA_FA_LIST_FROM: Version = Version(0, 11, 8, 0);
/// Ollama's first release that leaves flash attention to llama.cpp (`auto`) for every model
/// its llama.cpp runner loads (PR #13052).
pub const OLLAMA_FA_AUTO_FROM: Version = Version(0, 13, 4, 0);
/// Ollama's first release that runs every GGUF model through llama-server, passing
/// `--flash-attn auto` and `--cache-type-k/v` on (commit 9db4bdbad).
pub const OLLAMA_LLAMA_SERVER_FROM: Version = Version(0, 30, 0, 0);

/// The llama.cpp each Ollama release vendors: `(first Ollama release, llama.cpp build)`.
/// Builds whose number was not mapped are given as the build below every rule memfit keys
/// on a build (flash attention's `auto` b6325, `--fit` b7437, the output layer first b8133):
/// those releases vendor commits of mid-2025 or earlier (v0.11.5–v0.12.3: e54d41befc).
/// Mapped from the commit messages: v0.12.4 b6646, v0.12.11 b6840, v0.13.2 b7108; v0.13.5
/// (through v0.24.x) ec98e2002 = b7437; from v0.30.0 the build each tag's
/// `LLAMA_CPP_VERSION` file names (v0.30.0 b9452 … v0.32.15 b10488, read at every tag to
/// v0.33.0). The commits of v0.12.6 and v0.13.3 are between the builds around them and are
/// given the earlier one.
const OLLAMA_VENDORED: &[(Version, u16)] = &[
    (Version(0, 0, 0, 0), 1),
    (Version(0, 12, 4, 0), 6646),
    (Version(0, 12, 11, 0), 6840),
    (Version(0, 13, 2, 0), 7108),
    (Version(0, 13, 5, 0), 7437),
    (Version(0, 30, 0, 0), 9452),
    (Version(0, 30, 1, 0), 9479),
    (Version(0, 30, 4, 0), 9493),
    (Version(0, 30, 5, 0), 9509),
    (Version(0, 30, 9, 0), 9626),
    (Version(0, 30, 10, 0), 9672),
    (Version(0, 30, 11, 0), 9781),
    (Version(0, 31, 0, 0), 9840),
    (Version(0, 31, 2, 0), 9888),
    (Version(0, 32, 2, 0), 10069),
    (Version(0, 32, 3, 0), 10091),
    (Version(0, 32, 6, 0), 10242),
    (Version(0, 32, 8, 0), 10353),
    (Version(0, 32, 10, 0), 10380),
    (Version(0, 32, 14, 0), 10434),
    (Version(0, 32, 15, 0), 10488),
];

/// The llama.cpp build Ollama release `v` runs ([`OLLAMA_VENDORED`]).
///
/// ```
/// use memfit_core::scenario::{ollama_build, Version};
/// assert_eq!(ollama_build(Version(0, 13, 5, 0)), Version(7437, 0, 0, 0));
/// assert_eq!(ollama_build(Version(0, 24, 0, 0)), Version(7437, 0, 0, 0));
/// assert_eq!(ollama_build(Version(0, 11, 10, 0)), Version(1, 0, 0, 0));
/// assert_eq!(ollama_build(Version(0, 30, 7, 0)), Version(9509, 0, 0, 0));
/// assert_eq!(ollama_build(Version(0, 30, 10, 0)), Version(9672, 0, 0, 0));
/// ```
pub fn ollama_build(v: Version) -> Version {
    let b = OLLAMA_VENDORED
        .iter()
        .rev()
        .find(|(from, _)| v >= *from)
        .map_or(1, |(_, b)| *b);
    Version(b, 0, 0, 0)
}

/// The release from which Ollama's list (`fs/ggml/ggml.go` `FlashAttention`) turns flash
/// attention on for the model preset `id` runs on (gptoss v0.11.8; qwen3 and qwen3moe
/// v0.12.4; gemma3 v0.12.6; qwen3vl v0.12.8; mistral3 v0.13.2; lfm2 v0.14.3; qwen3next
/// v0.15.5; nemotron_h v0.17.1).
fn fa_listed_from(id: &str) -> Option<Version> {
    let from = |m: u16, p: u16| Some(Version(0, m, p, 0));
    if id.starts_with("gpt-oss") {
        from(11, 8)
    } else if id.starts_with("qwen3-vl") {
        from(12, 8)
    } else if id.starts_with("qwen3-next") {
        from(15, 5)
    } else if id.starts_with("qwen3-") {
        from(12, 4)
    } else if id.starts_with("gemma-3-") {
        from(12, 6)
    } else if id.starts_with("mistral-small-3") {
        from(13, 2)
    } else if id.starts_with("lfm2") {
        from(14, 3)
    } else if id.starts_with("nemotron-h") {
        from(17, 1)
    } else {
        None
    }
}

/// Whether Ollama release `v` loads the preset `id` on its own engine (`ollamarunner`, which
/// measures its allocations) rather than its llama.cpp runner (`fs/ggml/ggml.go`
/// `OllamaEngineRequired`, read at each tag): gemma3 from v0.6.0, mistral3 v0.6.5, llama4
/// v0.6.7, qwen25vl v0.7.0, gptoss v0.11.0, qwen3 v0.12.0, qwen3moe v0.12.2, qwen3vl v0.12.7,
/// deepseek2 v0.13.0 (DeepSeek-V3/R1's files; V2's fall back), lfm2 v0.14.3, qwen3next v0.15.5,
/// nemotron_h v0.17.1 (qwen3 dense left the list in v0.12.5 alone: not modelled); from v0.30.0 every GGUF model runs
/// through llama-server, and without a named release memfit takes that.
pub fn ollama_engine(id: &str, v: Option<Version>) -> bool {
    let Some(v) = v.filter(|v| *v < OLLAMA_LLAMA_SERVER_FROM) else {
        return false;
    };
    let from: &[(&str, u16, u16)] = &[
        ("gemma-3-", 6, 0),
        ("mistral-small-3.1", 6, 5),
        ("llama-4-", 6, 7),
        ("qwen2.5-vl", 7, 0),
        ("gpt-oss", 11, 0),
        ("qwen3-vl", 12, 7),
        ("qwen3-next", 15, 5),
        ("qwen3-30b", 12, 2),
        ("qwen3-235b", 12, 2),
        ("qwen3-", 12, 0),
        // DeepSeek-V2's files (tokenizer pre `deepseek-llm`) fall back to the llama.cpp runner.
        ("deepseek-v3", 13, 0),
        ("deepseek-r1", 13, 0),
        ("nemotron-h", 17, 1),
        ("lfm2", 14, 3),
    ];
    from.iter()
        .find(|(p, _, _)| id.starts_with(p))
        .is_some_and(|&(_, m, n)| v >= Version(0, m, n, 0))
}

impl Scenario {
    /// Whether llama.cpp's compute graph uses flash attention: `flash_attn`, or with `auto`
    /// the front end's default — Ollama's ([`Scenario::ollama_flash_default`]) where
    /// `engine_version` names an Ollama release, else the build's (off before b6325; from it
    /// `-fa auto`, on where the device runs the op, as CUDA does for the head sizes memfit's
    /// presets have: logged `flash_attn = auto` runs print the flash path's buffer).
    ///
    /// Source: llama.cpp `common/common.h` (`flash_attn = false`, then `flash_attn_type =
    /// LLAMA_FLASH_ATTN_TYPE_AUTO`, PR #15434, b6325), `src/llama-context.cpp` (auto resolves
    /// on when every FA op lands on its layer's device); logged builds b5285 (`flash_attn =
    /// 0`) and b8133/b8179 (`flash_attn = auto`).
    pub fn llamacpp_flash(&self, arch: &Arch) -> bool {
        match (self.serving.flash_attn, self.ollama_used()) {
            (FlashAttn::On, _) => true,
            (FlashAttn::Off, _) => false,
            (FlashAttn::Auto, Some(v)) => self.ollama_flash_default(v, arch),
            (FlashAttn::Auto, None) => self.llamacpp_build() >= LLAMACPP_FA_AUTO_FROM,
        }
    }

    /// The Ollama release whose rules apply, if `engine_version` names one
    /// ([`Scenario::ollama_release`], brought inside [`OLLAMA_MODELLED`]).
    pub fn ollama_used(&self) -> Option<Version> {
        self.ollama_release()
            .map(|_| self.engine_release().unwrap_or_else(|(_, used)| used))
    }

    /// Whether Ollama release `v` runs flash attention with `OLLAMA_FLASH_ATTENTION` unset
    /// (`flash_attn=auto`).
    ///
    /// # Formula
    /// ```text
    /// v < 0.11.8:            off
    /// model on the list:     on from the release that listed it (gpt-oss 0.11.8, qwen3 0.12.4,
    ///                        gemma3 0.12.6, qwen3-vl 0.12.8, mistral3 0.13.2, qwen3-next 0.15.5)
    /// other models:          on from 0.13.4 (llama.cpp's `auto`; from 0.30.0 llama-server's),
    ///                        but off on Ollama's own engine before 0.30.0 ([`ollama_engine`]:
    ///                        llama4, qwen25vl, deepseek2, lfm2 are not on the list)
    /// never:                 gemma2, and K and V heads of different sizes (MLA)
    /// ```
    /// Source: Ollama `fs/ggml/ggml.go` (`FlashAttention`, `SupportsFlashAttention`),
    /// `llm/server.go` (v0.13.5: `flashAttention := ml.FlashAttentionAuto` for the llama.cpp
    /// runner). Logged: v0.11.10 Llama 3.3 70B `flash_attn = 0`; v0.13.5 Llama 3.1 70B
    /// `flash_attn = auto`, its compute buffer the flash path's (266.5 MiB at 4,096 and
    /// 8,192 tokens). On Ollama's own engine `fa = envconfig.FlashAttention(f.FlashAttention())`
    /// stays the list's answer (v0.13.5 `llm/server.go`, the `textProcessor != nil` branch).
    pub fn ollama_flash_default(&self, v: Version, arch: &Arch) -> bool {
        let id = self.preset().id;
        if v < OLLAMA_FA_LIST_FROM || id.starts_with("gemma-2") || arch.mla.is_some() {
            return false;
        }
        match fa_listed_from(id) {
            Some(from) if v >= from => true,
            // Ollama's own engine keeps its list's answer; its llama.cpp runner says `auto`.
            _ => v >= OLLAMA_FA_AUTO_FROM && !ollama_engine(id, Some(v)),
        }
    }

    /// Why Ollama runs an f16 cache where `kv_dtype` asks for another (`None`: it keeps the
    /// type, or the release passes it on to llama-server, 0.30.0+). `fa` is whether flash
    /// attention runs.
    ///
    /// Source: Ollama `llm/server.go` (v0.5.0–v0.13.3: "quantized kv cache requested but
    /// flash attention disabled"; v0.13.4–v0.24.x, the llama.cpp runner: "OLLAMA_FLASH_ATTENTION
    /// must be enabled to use a quantized OLLAMA_KV_CACHE_TYPE" unless it is set to 1),
    /// `fs/ggml/ggml.go` (`SupportsKVCacheType`: f16, q8_0, q4_0).
    pub fn ollama_kv_fallback(&self, fa: bool) -> Option<String> {
        let v = self.ollama_used()?;
        let d = self.numerics.kv_dtype;
        if v >= OLLAMA_LLAMA_SERVER_FROM || matches!(d, Dtype::Auto | Dtype::Fp16) {
            return None;
        }
        let listed = fa_listed_from(self.preset().id).is_some_and(|f| v >= f);
        let why = if v < OLLAMA_KV_TYPE_FROM {
            format!("Ollama {v} has no OLLAMA_KV_CACHE_TYPE (from {OLLAMA_KV_TYPE_FROM})")
        } else if !matches!(d, Dtype::Q8_0 | Dtype::Q4_0) {
            format!(
                "Ollama {v} takes f16, q8_0 and q4_0 as OLLAMA_KV_CACHE_TYPE, not {}",
                d.as_str()
            )
        } else if !fa {
            format!("Ollama {v} logs \"quantized kv cache requested but flash attention disabled\"")
        } else if v >= OLLAMA_FA_AUTO_FROM && !listed && self.serving.flash_attn != FlashAttn::On {
            format!("Ollama {v} logs \"OLLAMA_FLASH_ATTENTION must be enabled to use a quantized OLLAMA_KV_CACHE_TYPE\" (flash attention left to llama.cpp's auto: set flash_attn=on)")
        } else {
            return None;
        };
        Some(format!("{why} and runs an f16 cache: f16 counted"))
    }

    /// What an Ollama release does that the launch's settings do not say, as named warnings
    /// (carried in the serve plan, [`crate::serve::Plan::notes`]):
    /// `ctx_per=total` (llama-server's `-c`; Ollama's `num_ctx` is each sequence's) and the
    /// sequences v0.2.0–v0.9.x serve when `OLLAMA_NUM_PARALLEL` is unset (4, from v0.6.7 2,
    /// where they fit in GPU memory, else 1: `server/sched.go` `pickBestFitGPUs`; 1 from
    /// v0.10.0).
    pub fn ollama_problems(&self, arch: &Arch, out: &mut Vec<(&'static str, String)>) {
        let Some(v) = self.ollama_used() else {
            return;
        };
        if let Some(why) = self.ollama_kv_fallback(self.llamacpp_flash(arch)) {
            out.push(("kv_dtype", why));
        }
        if self.serving.ctx_per == CtxPer::Total {
            out.push(("ctx_per", format!("engine_version names Ollama {v}, whose num_ctx is each sequence's (ctx_per=sequence); ctx_per=total is llama-server's -c: counted as given")));
        }
        let tries = match v {
            v if v < Version(0, 2, 0, 0) || v >= Version(0, 10, 0, 0) => 1,
            v if v < OLLAMA_CTX_4096_FROM => 4,
            _ => 2,
        };
        if tries > 1 && self.serving.parallel.get() == 1 {
            out.push(("parallel", format!("with OLLAMA_NUM_PARALLEL unset, Ollama {v} serves {tries} sequences where they fit in GPU memory ({tries} × num_ctx cells of KV cache), else 1: counted with parallel=1; set parallel={tries} to count that launch")));
        }
    }
}

//! The software stack's choices (fp8 recipe, device, tf32, modules, state-space kernels,
//! framework, schedule, convention, serving engine and llama.cpp's settings), each an enum
//! whose spellings, form labels and notes are declared once ([`spelled!`](crate::spelled)).

use crate::spelled;
use serde::{Deserialize, Serialize};

spelled! {
    /// Transformer Engine's fp8 scaling recipe (Megatron-LM `--fp8-recipe`; Megatron-Bridge's
    /// `ds`, `cs`, `mx`, `sc`): how each GEMM input and output gradient is quantized, and so
    /// the memory traffic fp8 training adds (step time).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Fp8Recipe {
        /// Per-tensor scales from the amax history: one cast pass (Transformer Engine's and Megatron-LM's default).
        #[default]
        Delayed = "delayed", "delayed scaling", "";
        /// Per-tensor scales from the tensor's own amax: an amax pass, then the cast (Megatron-Bridge's default `cs`).
        Tensorwise = "tensorwise", "current scaling (per tensor)", "an amax pass before each cast";
        /// MXFP8: a scale per 32 values, row- and column-wise copies (Blackwell).
        Mxfp8 = "mxfp8", "MXFP8 (Blackwell)", "a scale per 32 values, row- and column-wise copies";
        /// 1×128 and 128×128 block scales, row- and column-wise copies (DeepSeek-V3's recipe).
        Blockwise = "blockwise", "blockwise (1×128)", "a scale per 128 values, row- and column-wise copies";
    }
}

spelled! {
    /// Where PyTorch runs the step's kernels: which attention kernel `scaled_dot_product_attention`
    /// dispatches to, and which ops autocast runs in fp32 (framework=pytorch).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Device {
        /// A CUDA GPU: SDPA picks flash, memory-efficient or the math fallback by dtype, GQA, mask and head size; CUDA autocast runs `pow` in fp32.
        #[default]
        Cuda = "cuda", "CUDA", "";
        /// PyTorch's CPU kernels, as a CPU memory tracker measures them: SDPA's CPU kernel repeats K/V to every head and saves no scores; CPU autocast keeps `pow` in 16 bits.
        Cpu = "cpu", "CPU tracker", "PyTorch's CPU kernels: what a CPU memory tracker measures";
    }
}

spelled! {
    /// Whether fp32 matmuls run on tf32 tensor cores (`torch.backends.cuda.matmul.allow_tf32`):
    /// step time of fp32 training.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Tf32 {
        /// The framework's default: off under PyTorch, DeepSpeed and the HF Trainer (PyTorch's `allow_tf32 = False` since 1.12), on under Megatron.
        #[default]
        Auto = "auto", "framework default", "";
        /// tf32 tensor cores (`allow_tf32 = True`, `--tf32`).
        On = "on", "on", "tf32 tensor cores";
        /// Plain fp32 on the CUDA cores.
        Off = "off", "off", "plain fp32 on the CUDA cores";
    }
}

spelled! {
    /// Which model code runs under framework=pytorch: what the model's own forward holds
    /// beside the layer running (inference's working set).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Modules {
        /// Hugging Face transformers classes: the forward holds the embedding's output and the rotary cos/sin for every layer.
        #[default]
        Hf = "hf", "Hugging Face", "";
        /// A bare stack of PyTorch modules (memfit's own measured harness): nothing beyond the layer's tensors.
        Plain = "plain", "plain modules", "nothing held beyond the layer's tensors";
    }
}

spelled! {
    /// How transformers runs the Mamba, short-convolution and gated-DeltaNet layers: the fused
    /// kernels when `mamba-ssm`, `causal-conv1d` and `flash-linear-attention` are installed
    /// (and on CUDA), else its torch fallback
    /// (`MambaMixer.slow_forward` / `mamba_selective_scan`, `Mamba2Mixer.torch_forward` /
    /// `mamba2_chunk_scan`), whose tensors carry the state size in every token: tens of
    /// GiB where the kernels need a few.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum SsmKernels {
        /// mamba-ssm 2.x, causal-conv1d 1.x (and flash-linear-attention) installed.
        #[default]
        Fused = "fused", "fused kernels (mamba-ssm, causal-conv1d)", "";
        /// The torch fallback of transformers 4.44–5.17 (the stack memfit's CUDA runs were
        /// measured on): Mamba-2's chunk scan broadcasts `C·B` to `(b, c, l, l, H, N)`
        /// before summing.
        Torch = "torch", "torch fallback (transformers ≤ 5.17)", "the scan in PyTorch ops; Mamba-2's naive chunk scan: a (b, c, l, l, H, N) fp32 product";
        /// transformers ≥ 5.18's torch fallback: Mamba-2's chunk scan by einsum.
        TorchEinsum = "torch-einsum", "torch fallback (transformers ≥ 5.18)", "the scan in PyTorch ops, Mamba-2's chunk scan by einsum: its (b, H, c, l, l) tensors";
        /// The earlier spelling of [`SsmKernels::Torch`] (links made before `torch` meant
        /// transformers ≤ 5.17 still open as they were).
        TorchNaive = "torch-naive", "torch fallback (transformers ≤ 5.17; same as torch)", "Mamba-2's naive chunk scan: a (b, c, l, l, H, N) fp32 product";
    }
}

spelled! {
    /// Whose allocations are modelled.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Framework {
        /// DeepSpeed ZeRO: bf16/fp16 params and grads, fp32 partitioned optimizer, communication buckets.
        #[default]
        Deepspeed = "deepspeed", "DeepSpeed", "";
        /// Plain PyTorch (Hugging Face modules, autocast or FSDP2, torch.optim.AdamW foreach).
        Pytorch = "pytorch", "PyTorch / FSDP2", "";
        /// Megatron-LM: fp32 main grads, distributed optimizer, fused kernels, vocab-parallel loss.
        Megatron = "megatron", "Megatron-LM", "";
    }
}

spelled! {
    /// Pipeline schedule.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Schedule {
        /// 1F1B (PipeDream-flush): stage i holds min(p − i, m) micro-batches.
        #[default]
        OneFOneB = "1f1b", "1F1B", "";
        /// GPipe: every micro-batch's forward before any backward: m in flight.
        Gpipe = "gpipe", "GPipe", "";
        /// Interleaved 1F1B with `vpp` virtual stages (Megatron-LM's schedule).
        Interleaved = "interleaved", "interleaved", "with `vpp`";
    }
}

spelled! {
    /// Whose accounting the estimate follows. Sources disagree; memfit names the one it uses.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Convention {
        /// memfit's own model: 2+2+12 B/param mixed-precision Adam (seed 001, ZeRO paper),
        /// ZeRO-3 gathered-layer buffer (seed 000), seed 003's activation term.
        #[default]
        Memfit = "memfit", "memfit", "";
        /// The formulas on DeepSpeed's "Memory Requirements" page (seed 000), applied literally.
        DsDoc = "ds-doc", "DeepSpeed docs", "";
        /// DeepSpeed ≤ 0.14.2's estimator code (ZeRO-2: `4P + 16P/G`).
        Ds014 = "ds-0.14", "DeepSpeed ≤ 0.14.2", "";
        /// DeepSpeed ≥ 0.14.3's estimator code, checked against 0.19.8 (ZeRO-2: `2P + 18P/G`).
        Ds019 = "ds-0.19", "DeepSpeed ≥ 0.14.3", "";
        /// Megatron-LM's theoretical memory formula at HEAD (d98e8a64).
        Megatron = "megatron", "Megatron-LM (HEAD)", "";
        /// Megatron-LM's formula at core_v0.14.0.
        Megatron014 = "megatron-0.14", "Megatron core 0.14", "";
        /// memfit's model states with seed 003's activations `(34·b·s·h + 5·b·s²·a)·L`.
        Seed003 = "seed003", "seed 003 activations", "";
        /// memfit's model states with seed 002's activations `16k·bsh + 2bsh + 2k·bas² + bas²` per layer.
        Seed002 = "seed002", "seed 002 activations", "";
        /// memfit's model states with Korthikanti et al. Table 2 (row chosen by tp, sp, recompute).
        Korthikanti = "korthikanti", "Korthikanti Table 2", "";
    }
}

impl Convention {
    /// Whether this is one of DeepSpeed's model-states estimators.
    pub fn is_deepspeed(self) -> bool {
        matches!(
            self,
            Convention::DsDoc | Convention::Ds014 | Convention::Ds019
        )
    }
    /// Whether this is Megatron-LM's formula.
    pub fn is_megatron(self) -> bool {
        matches!(self, Convention::Megatron | Convention::Megatron014)
    }
}

spelled! {
    /// A serving engine (`mode=serve`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Engine {
        /// vLLM (V1 engine).
        #[default]
        Vllm = "vllm", "vLLM", "";
        /// SGLang.
        Sglang = "sglang", "SGLang", "";
        /// TensorRT-LLM.
        Trtllm = "trtllm", "TensorRT-LLM", "";
        /// llama.cpp (and Ollama: `parallel` = `OLLAMA_NUM_PARALLEL`).
        Llamacpp = "llamacpp", "llama.cpp / Ollama", "Ollama = llamacpp + `parallel`";
    }
}

spelled! {
    /// How llama.cpp's `max_len` meets `parallel`: Ollama gives each of its parallel
    /// sequences the whole context, llama-server splits its `-c` among the slots.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum CtxPer {
        /// Ollama: `max_len` is `num_ctx`, each of the `OLLAMA_NUM_PARALLEL` sequences gets it (`n_ctx = max_len·parallel`).
        #[default]
        Sequence = "sequence", "each sequence (Ollama)", "Ollama: each of the `parallel` sequences gets `max_len`, n_ctx = max_len·parallel";
        /// llama-server: `max_len` is `-c` (n_ctx), split among the `-np` slots (`n_ctx / parallel` each).
        Total = "total", "shared (llama-server)", "llama-server: `max_len` is `-c`, shared by the `-np` slots, n_ctx/parallel each";
    }
}

spelled! {
    /// llama.cpp's flash attention (`-fa auto|on|off`; Ollama's `OLLAMA_FLASH_ATTENTION`):
    /// whether the compute buffer holds the f32 attention scores of a micro-batch.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum FlashAttn {
        /// The front end's default: the build's, off before b6325 (`common.h` `flash_attn = false`), `-fa auto` from b6325 (on where the GPU runs it: every CUDA GPU memfit lists); with `engine_version=ollama-0.x.y`, Ollama's (`Scenario::ollama_flash_default`).
        #[default]
        Auto = "auto", "the default", "";
        /// Flash attention (`-fa on`, `OLLAMA_FLASH_ATTENTION=1`).
        On = "on", "on", "`-fa on`, OLLAMA_FLASH_ATTENTION=1";
        /// The plain attention graph (`-fa off`; Ollama's default before 0.11.8): the f32 scores `n_ctx × n_ubatch × heads` in the compute buffer.
        Off = "off", "off", "`-fa off`: the f32 scores n_ctx × n_ubatch × heads in the compute buffer";
    }
}

spelled! {
    /// llama.cpp's automatic fit (`--fit on|off`, llama-server and llama-cli from b7437):
    /// with the settings the user left unset, shrink the context, then move layers to host
    /// memory, until 1 GiB of the device stays free.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum LlamaFit {
        /// The front end's default: on for llama-server (`ctx_per=total`) from b7437, off for Ollama (`ctx_per=sequence`, which picks its own layers) and older builds.
        #[default]
        Auto = "auto", "llama-server's default", "";
        /// `--fit on`: the unset context and `-ngl` are fitted to the device.
        On = "on", "on", "";
        /// `--fit off`: the settings as given (the context the model was trained with, every layer on the GPUs).
        Off = "off", "off", "";
    }
}

spelled! {
    /// Which code runs vLLM's top-k/top-p step in its dummy sampler pass (the profiling run
    /// asks for both), which sets the bytes a logit holds at the pass's peak.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Sampler {
        /// The release's default: FlashInfer's (0.8–0.11.0, as the Docker images ship it), the PyTorch sort (0.11.1–0.16), the Triton kernel (0.17+, 8 rows or more).
        #[default]
        Auto = "auto", "the release's default", "";
        /// The Triton top-k/top-p kernel (vLLM 0.17+, 8 rows or more): no sort.
        Triton = "triton", "Triton kernel (0.17+)", "vLLM 0.17+: the Triton top-k/top-p kernel, no sort";
        /// FlashInfer's sampling from the probabilities (installed flashinfer; opt-in from 0.11.1 with VLLM_USE_FLASHINFER_SAMPLER=1).
        Flashinfer = "flashinfer", "FlashInfer", "FlashInfer's top-k/top-p sampling (installed flashinfer; from 0.11.1 VLLM_USE_FLASHINFER_SAMPLER=1)";
        /// PyTorch's sort (pip installs without flashinfer before 0.11.1; the default 0.11.1–0.16).
        Sort = "sort", "PyTorch sort", "PyTorch's logits.sort: pip installs without flashinfer before 0.11.1, the default 0.11.1–0.16";
    }
}

/// An engine release, `major.minor[.patch][.postN]`: `Version(0, 4, 7, 1)` is SGLang's
/// `0.4.7.post1` (PEP 440's post release, which orders after `0.4.7`; SGLang changed rules in
/// post releases), `Version(0, 11, 0, 0)` vLLM's `0.11.0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Version(pub u16, pub u16, pub u16, pub u16);

impl Version {
    /// Parses `0.11`, `0.11.2`, `v0.11.2`, `0.4.7.post1` (other letters after the numbers,
    /// as in `0.11.0rc1`, are ignored).
    ///
    /// ```
    /// use memfit_core::scenario::Version;
    /// assert_eq!(Version::parse("0.4.7.post1"), Some(Version(0, 4, 7, 1)));
    /// assert_eq!(Version::parse("v0.11"), Some(Version(0, 11, 0, 0)));
    /// assert_eq!(Version::parse("0.4.7.post1").unwrap().to_string(), "0.4.7.post1");
    /// assert!(Version(0, 4, 7, 1) > Version(0, 4, 7, 0) && Version(0, 4, 7, 1) < Version(0, 4, 8, 0));
    /// ```
    pub fn parse(text: &str) -> Option<Version> {
        let t = text.trim().trim_start_matches(['v', 'V', 'b', 'B']);
        let mut parts = t.split('.').map(|p| {
            let digits: String = p
                .trim_start_matches("post")
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse::<u16>().ok()
        });
        let major = parts.next()??;
        let minor = parts.next().flatten().unwrap_or(0);
        let patch = parts.next().flatten().unwrap_or(0);
        let post = parts.next().flatten().unwrap_or(0);
        Some(Version(major, minor, patch, post))
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)?;
        if self.3 > 0 {
            write!(f, ".post{}", self.3)?;
        }
        Ok(())
    }
}

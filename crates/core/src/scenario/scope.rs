//! Settings of another mode: a training key in inference or serving, a serving engine's key
//! in training or inference, the PyTorch stack's keys in serving. Set away from its default,
//! such a key is named in one warning and ignored: the estimate does not read it in that mode.

use super::*;

/// Whether the estimate of `mode` reads `key`: false for a key bound to other modes (the
/// table of [`Scenario::problems`]' "ignored in …" warnings, with `zero` and `fsdp`, training's,
/// that have their own). The page greys such a field out.
///
/// ```
/// use memfit_core::scenario::{mode_reads, Mode};
/// assert!(!mode_reads("recompute", Mode::Serve) && mode_reads("recompute", Mode::Train));
/// assert!(!mode_reads("max_seqs", Mode::Infer) && mode_reads("max_seqs", Mode::Serve));
/// assert!(!mode_reads("batch", Mode::Serve) && mode_reads("batch", Mode::Infer));
/// assert!(mode_reads("gpu", Mode::Serve) && !mode_reads("zero", Mode::Infer));
/// ```
pub fn mode_reads(key: &str, mode: Mode) -> bool {
    if matches!(key, "zero" | "fsdp") {
        return mode == Mode::Train;
    }
    let d = Scenario::default();
    d.training_keys()
        .into_iter()
        .chain(d.serving_and_stack_keys())
        .find(|(k, _, _)| *k == key)
        .is_none_or(|(_, r, _)| r.reads(mode))
}

/// Every serving engine key, in the order the page's form shows them: the one list the form,
/// the engine presets' reset (`src/serving.rs`) and the scope table below
/// ([`Scenario::serving_and_stack_keys`], checked by a test) agree on.
pub const SERVING_KEYS: [&str; 17] = [
    "engine",
    "engine_version",
    "gpu_util",
    "max_len",
    "max_batched_tokens",
    "max_seqs",
    "sampler",
    "block_size",
    "graph_bs",
    "parallel",
    "ctx_per",
    "flash_attn",
    "fit",
    "ngl",
    "kv_offload",
    "mmap",
    "redundant_experts",
];

/// llama.cpp's own serving keys (`-np`, llama-server's or Ollama's context, `-fa`, `--fit`,
/// `-ngl`, `--no-kv-offload`, `--no-mmap`): [`SERVING_KEYS`]' run from `parallel` to `mmap`.
const LLAMACPP_KEYS: &[&str] = SERVING_KEYS.split_at(9).1.split_at(7).0;
/// The paged engines' (vLLM, SGLang, TensorRT-LLM) keys that llama.cpp has no setting for.
const PAGED_KEYS: [&str; 4] = ["gpu_util", "max_seqs", "block_size", "graph_bs"];

/// Whether engine `e`'s plan reads serving key `key` (any other key: true). llama.cpp's own
/// keys are read only by llama.cpp; the paged engines' `gpu_util`, `max_seqs`, `block_size`
/// (and vLLM's `sampler`, EPLB's `redundant_experts`) not by llama.cpp; `sampler` only by
/// vLLM; `max_seqs` and `redundant_experts` not by TensorRT-LLM's plan; `vision` by vLLM and
/// SGLang (llama.cpp keeps the encoder in a separate mmproj file; TensorRT-LLM builds it as
/// another engine). The warnings of
/// [`Scenario::serve_problems`] and the page's greyed fields both come from it.
///
/// ```
/// use memfit_core::scenario::{engine_reads, Engine};
/// assert!(!engine_reads("parallel", Engine::Vllm) && engine_reads("parallel", Engine::Llamacpp));
/// assert!(!engine_reads("gpu_util", Engine::Llamacpp) && engine_reads("gpu_util", Engine::Sglang));
/// assert!(!engine_reads("sampler", Engine::Sglang) && engine_reads("max_len", Engine::Trtllm));
/// ```
pub fn engine_reads(key: &str, e: Engine) -> bool {
    match e {
        Engine::Llamacpp => {
            !PAGED_KEYS.contains(&key) && !matches!(key, "sampler" | "redundant_experts" | "vision")
        }
        _ if LLAMACPP_KEYS.contains(&key) => false,
        Engine::Vllm => true,
        Engine::Sglang => key != "sampler",
        Engine::Trtllm => !matches!(
            key,
            "sampler" | "max_seqs" | "redundant_experts" | "vision" | "graph_bs"
        ),
    }
}

/// The modes whose estimate reads a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ReadIn {
    /// Training only.
    Train,
    /// Serving only (the engines' start-up).
    Serve,
    /// Training and inference: memfit's own PyTorch-stack model, not an engine's.
    TrainInfer,
}

impl ReadIn {
    fn reads(self, mode: Mode) -> bool {
        match self {
            ReadIn::Train => mode == Mode::Train,
            ReadIn::Serve => mode == Mode::Serve,
            ReadIn::TrainInfer => mode != Mode::Serve,
        }
    }
}

impl Scenario {
    /// One warning per key set away from its default in a mode that does not read it
    /// (`zero`, `fp8_recipe` and `fp8_params` have their own: [`Scenario::problems`]).
    ///
    /// # Example
    /// `mode=serve&recompute=full`: "recompute applies to training; ignored in serving".
    pub(super) fn other_mode_settings(&self, out: &mut Vec<(&'static str, String)>) {
        let mode = self.workload.mode;
        for (key, read_in) in self.set_keys() {
            if read_in.reads(mode) {
                continue;
            }
            let here = match mode {
                Mode::Train => "training",
                Mode::Infer => "inference",
                Mode::Serve => "serving",
            };
            let why = match read_in {
                ReadIn::Train => format!("{key} applies to training; ignored in {here}"),
                ReadIn::Serve => format!("{key} is a serving engine's setting (mode=serve); ignored in {here}"),
                ReadIn::TrainInfer => format!("{key} belongs to memfit's PyTorch model of training and inference; a serving engine's start-up is modelled from its own settings (max_len, max_seqs, max_batched_tokens, gpu_util): ignored in serving"),
            };
            out.push((key, why));
        }
    }

    /// The mode-bound keys set away from their defaults, with the modes that read them.
    fn set_keys(&self) -> Vec<(&'static str, ReadIn)> {
        let mut all = self.training_keys();
        all.extend(self.serving_and_stack_keys());
        all.into_iter()
            .filter(|(_, _, set)| *set)
            .map(|(k, m, _)| (k, m))
            .collect()
    }

    /// Training's keys: `(key, ReadIn::Train, set away from the default)`.
    fn training_keys(&self) -> Vec<(&'static str, ReadIn, bool)> {
        let d = Scenario::default();
        let (a, o, n, r, w, p) = (
            &self.activations,
            &self.offload,
            &self.numerics,
            &self.runtime,
            &self.workload,
            &self.parallel,
        );
        let (da, dn, dr, dw) = (&d.activations, &d.numerics, &d.runtime, &d.workload);
        use ReadIn::Train;
        vec![
            ("recompute", Train, a.recompute != da.recompute),
            ("ckpt_layers", Train, a.ckpt_layers != da.ckpt_layers),
            ("dropout", Train, a.dropout != da.dropout),
            ("cp", Train, p.cp.get() > 1),
            ("sp", Train, p.sp),
            ("vpp", Train, p.vpp.get() > 1),
            ("schedule", Train, p.schedule != d.parallel.schedule),
            ("microbatches", Train, w.microbatches.get() > 1),
            ("loss", Train, w.loss != dw.loss),
            ("finetune", Train, self.finetune != d.finetune),
            ("optimizer", Train, n.optimizer != dn.optimizer),
            ("adam_impl", Train, n.adam_impl != dn.adam_impl),
            ("grad_acc_dtype", Train, n.grad_acc != dn.grad_acc),
            ("offload_opt", Train, o.optimizer != Offload::None),
            ("pin_memory", Train, o.pin_memory),
            ("zero_init", Train, r.zero_init != dr.zero_init),
            ("buffer_factor", Train, r.buffer_factor != dr.buffer_factor),
            ("reduce_bucket", Train, r.reduce_bucket != dr.reduce_bucket),
            (
                "allgather_bucket",
                Train,
                r.allgather_bucket != dr.allgather_bucket,
            ),
            ("overlap_comm", Train, r.overlap_comm != dr.overlap_comm),
            (
                "prefetch_bucket",
                Train,
                r.prefetch_bucket != dr.prefetch_bucket,
            ),
            (
                "max_live_params",
                Train,
                r.max_live_params != dr.max_live_params,
            ),
            ("ep_overlap", Train, r.ep_overlap),
            ("tp_overlap", Train, r.tp_overlap),
            ("ce_fusion", Train, r.ce_fusion != dr.ce_fusion),
        ]
    }

    /// A serving engine's keys (`ReadIn::Serve`) and memfit's PyTorch-stack keys that serving
    /// does not read (`ReadIn::TrainInfer`), with whether each is set.
    pub(super) fn serving_and_stack_keys(&self) -> Vec<(&'static str, ReadIn, bool)> {
        let d = Scenario::default();
        let (a, r, w, v) = (
            &self.activations,
            &self.runtime,
            &self.workload,
            &self.serving,
        );
        let (da, dr, dw, dv) = (&d.activations, &d.runtime, &d.workload, &d.serving);
        use ReadIn::*;
        vec![
            ("engine", Serve, v.engine != dv.engine),
            ("engine_version", Serve, v.version.is_some()),
            ("gpu_util", Serve, v.gpu_util.is_some()),
            ("max_len", Serve, v.max_len.is_some()),
            ("max_batched_tokens", Serve, v.max_batched_tokens.is_some()),
            ("max_seqs", Serve, v.max_seqs.is_some()),
            ("block_size", Serve, v.block_size.is_some()),
            ("parallel", Serve, v.parallel != dv.parallel),
            ("ctx_per", Serve, v.ctx_per != dv.ctx_per),
            ("sampler", Serve, v.sampler != dv.sampler),
            ("flash_attn", Serve, v.flash_attn != dv.flash_attn),
            ("fit", Serve, v.fit != dv.fit),
            ("ngl", Serve, v.ngl.is_some()),
            ("kv_offload", Serve, v.kv_offload != dv.kv_offload),
            ("mmap", Serve, v.mmap != dv.mmap),
            (
                "redundant_experts",
                Serve,
                v.redundant_experts != dv.redundant_experts,
            ),
            ("graph_bs", Serve, v.graph_bs.is_some()),
            ("batch", TrainInfer, w.batch != dw.batch),
            ("logits", TrainInfer, w.logits != dw.logits),
            ("attn", TrainInfer, a.attn != da.attn),
            ("frag", TrainInfer, r.frag_pct != dr.frag_pct),
            ("nccl", TrainInfer, r.nccl_mib.is_some()),
            ("device", TrainInfer, r.device != dr.device),
            ("modules", TrainInfer, r.modules != dr.modules),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The form's list and the scope table name the same serving keys, and every key the
    /// engines read apart (llama.cpp's, the paged engines') is one of them.
    #[test]
    fn serving_keys_agree_with_the_scope_table() {
        let mut table: Vec<&str> = Scenario::default()
            .serving_and_stack_keys()
            .into_iter()
            .filter(|(_, r, _)| *r == ReadIn::Serve)
            .map(|(k, _, _)| k)
            .collect();
        let mut form = SERVING_KEYS.to_vec();
        table.sort_unstable();
        form.sort_unstable();
        assert_eq!(table, form);
        for k in LLAMACPP_KEYS.iter().chain(PAGED_KEYS.iter()) {
            assert!(SERVING_KEYS.contains(k), "{k}");
        }
        assert_eq!(
            LLAMACPP_KEYS,
            [
                "parallel",
                "ctx_per",
                "flash_attn",
                "fit",
                "ngl",
                "kv_offload",
                "mmap"
            ]
        );
    }
}

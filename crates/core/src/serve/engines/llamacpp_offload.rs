//! Where llama.cpp puts each layer (`-ngl`: the last layers on the GPUs, the output layer
//! by release) and what each part of the file weighs, so the GPU and host figures split
//! as its log prints them.

use super::*;

/// llama.cpp's first build that offloads the output layer before the repeating layers
/// (PR #18148, "llama: offload output layer to GPU first", opened 2025-12-17, after b7410):
/// the earliest logged build that shows it, b8133 (`offloaded 40/41 layers`, layer 0 on the
/// CPU, the output on the GPU). Builds between the merge and b8133 are read with the older
/// rule (the merge's build was not looked up).
pub(crate) const LLAMACPP_OUTPUT_FIRST_FROM: Version = Version(8133, 0, 0, 0);

/// `token_embd`'s bytes in the file's format (`W_embd`).
pub(super) fn embd_bytes(s: &Scenario, arch: &crate::model::Arch) -> u64 {
    let k = s.numerics.precision.compute_bytes();
    match s.gguf() {
        Some(ft) => {
            let n = crate::nonzero::count(32);
            quant::shares_in(arch, s.numerics.quant, Some(ft), n).gguf_embd as u64
        }
        None => sat(arch.vocab.get() as u128 * arch.hidden.get() as u128 * k as u128),
    }
}

/// Where `-ngl` puts the layers: how many of the `L` repeating layers (the last ones) are on
/// the GPUs, and whether the output layer is.
///
/// # Formula
/// ```text
/// ngl ≥ L + 1 (or empty):   g = L, output on the GPU
/// before b8133:             g = ngl,            output on the CPU    (i_gpu_start = L − ngl)
/// from b8133:               g = max(ngl − 1, 0), output on the GPU if ngl ≥ 1
///                                                                    (i_gpu_start = L + 1 − ngl)
/// ```
/// Source: llama.cpp `src/llama-model.cpp` `load_tensors` (`i_gpu_start = std::max((int)
/// hparams.n_layer - n_gpu_layers, 0)`, later `n_layer + 1 - n_gpu_layers`; `act_gpu_layers =
/// min(n_gpu_layers, n_layer + 1)`; the output layer is layer `n_layer`).
///
/// # Example
/// Qwen2.5 7B (28 layers), `-ngl 1` under Ollama 0.3.14: layer 27 on the GPU, the output on
/// the CPU (logged: KV 2 MiB on CUDA0, 54 MiB in host memory); b8133, Mistral Nemo (40
/// layers) `-ngl 40`: layers 1–39 and the output on the GPU, layer 0 on the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Placement {
    /// Repeating layers on the GPUs (the last `gpu` of them), `g`.
    pub gpu: u64,
    /// The output layer (final norm and head) on the GPUs.
    pub output_gpu: bool,
    /// GPU layers whose routed experts stay in host memory (the last of the GPU layers,
    /// as llama.cpp's fit overrides them: `blk.N.ffn_(up|down|gate)_exps` to the CPU).
    pub cpu_experts: u64,
    /// Of the first of those layers, the routed projections kept on the GPU all the same
    /// (llama.cpp's last try: 1 = up, 2 = up and gate; 0 = none).
    pub partial: u8,
}

impl Placement {
    /// Every layer on the GPUs.
    pub(super) fn all(self, arch: &crate::model::Arch) -> bool {
        self.output_gpu && self.gpu >= arch.layers.get() as u64
    }
}

/// See [`Placement`].
pub(crate) fn placement(s: &Scenario, arch: &crate::model::Arch, v: Version) -> Placement {
    let layers = arch.layers.get() as u64;
    match s.serving.ngl.map(u64::from) {
        Some(ngl) if ngl <= layers => {
            if v >= LLAMACPP_OUTPUT_FIRST_FROM {
                Placement {
                    gpu: ngl.saturating_sub(1),
                    output_gpu: ngl >= 1,
                    cpu_experts: 0,
                    partial: 0,
                }
            } else {
                Placement {
                    gpu: ngl,
                    output_gpu: false,
                    cpu_experts: 0,
                    partial: 0,
                }
            }
        }
        _ => Placement {
            gpu: layers,
            output_gpu: true,
            cpu_experts: 0,
            partial: 0,
        },
    }
}

/// The full-context and windowed layers among the `g` GPU layers (all GPUs): the most
/// full-context layers the last `g` may hold, `min(g, L − L_local)`.
pub(super) fn gpu_kv_layers(arch: &crate::model::Arch, g: u64) -> (u64, u64) {
    let (full_all, _) = stage_layers(arch, Count::MIN);
    let full = g.min(full_all);
    (full, g - full)
}

/// The KV layers on the most loaded GPU: `⌈g/t⌉` layers, as many full-context as
/// [`gpu_kv_layers`] allows (every layer on the GPUs: [`stage_layers`]); none with
/// `kv_offload=0`.
pub(super) fn kv_stage(
    arch: &crate::model::Arch,
    place: Placement,
    offload: bool,
    t: Count,
) -> (u64, u64) {
    if !offload {
        return (0, 0);
    }
    if place.gpu >= arch.layers.get() as u64 {
        return stage_layers(arch, t);
    }
    let stage = place.gpu.div_ceil(t.get() as u64);
    let (full, _) = gpu_kv_layers(arch, place.gpu);
    let f = stage.min(full);
    (f, stage - f)
}

/// The file's weights split as llama.cpp places them: `token_embd`, each repeating layer,
/// and the output layer (final norm, head).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LayerBytes {
    /// Each repeating layer's routed experts, B (0 for a dense layer; in `layers` too).
    pub routed: Vec<u64>,
    /// Each layer's routed up and gate projections, B (in `routed` too).
    pub up_gate: Vec<(u64, u64)>,
    /// The file's weights, `W_gguf + 4·Ψ_r` (every tensor once).
    pub total: u64,
    /// `token_embd`, `W_embd`.
    pub embd: u64,
    /// Each repeating layer's tensors, `W_i`.
    pub layers: Vec<u64>,
    /// Each repeating layer's largest up or gate matrix and largest down matrix, B (a
    /// mixture's: the routed experts' whole tensor).
    pub ffn_mats: Vec<(u64, u64)>,
}

impl LayerBytes {
    /// # Formula
    /// ```text
    /// W_i   = Σ_{tensors of layer i} rows·row_bytes(T, cols) + 4·(Ψ_r − h)/L    (GGUF)
    ///       = ⌊W · Ψ_i / Ψ⌋                                                  (other formats)
    /// W_out = W − W_embd − Σ W_i                  (final norm and head; a tied head is
    ///                                              token_embd's copy, counted apart)
    /// ```
    /// `T` each tensor's llama.cpp type (`llama_tensor_get_type`), `Ψ_r` the f32 vectors
    /// (norms, biases), shared evenly by the layers but the final norm (`h`).
    ///
    /// Source: llama.cpp `llama_model_loader` (tensor types and offsets); the GGUF rules of
    /// [`crate::quant::gguf`].
    ///
    /// # Example
    /// Llama 3 8B Q4_K_M: W = 4,912,898,048 B, W_embd = 295,501,824 B, 32 layers.
    pub(crate) fn of(s: &Scenario, p: &Prepared) -> LayerBytes {
        use crate::quant::tensors::{tensors, Role};
        let arch = &p.arch;
        let (w, _) = crate::infer::format_weights(s, arch, p.psi);
        let total = w.eval();
        let embd = embd_bytes(s, arch);
        let n = arch.layers.get() as usize;
        let mut layers = vec![0u64; n];
        let mut routed = vec![0u64; n];
        let mut up_gate = vec![(0u64, 0u64); n];
        let mut ffn_mats = vec![(0u64, 0u64); n];
        let (ts, vectors) = tensors(arch);
        let types = s
            .gguf()
            .map(|ft| crate::quant::gguf::tensor_types(ft, arch, &ts));
        let elements: u128 = ts.iter().map(|t| t.elements()).sum::<u128>() + vectors;
        for (i, t) in ts.iter().enumerate() {
            let Some(li) = t.layer.map(|x| x as usize).filter(|&x| x < n) else {
                continue;
            };
            if t.role == Role::TokenEmbd || t.role == Role::Output {
                continue;
            }
            let b = match types.as_ref().and_then(|v| v.get(i).copied().flatten()) {
                Some(ty) => ty.row_bytes(t.cols) as u128 * t.rows as u128 * t.n as u128,
                // A GGUF's untyped tensors (routers) are f32.
                None if types.is_some() => 4 * t.elements(),
                // The tensor table's element total (≥ 1 for any shape: a count of weights, not a type).
                None => t.elements() * total as u128 / elements.max(1),
            };
            layers[li] = sat(layers[li] as u128 + b);
            let (w_in, w_down) = &mut ffn_mats[li];
            match t.role {
                Role::FfnUp | Role::FfnGate => *w_in = (*w_in).max(sat(b)),
                Role::FfnDown => *w_down = (*w_down).max(sat(b)),
                _ => {}
            }
            if t.routed {
                routed[li] = sat(routed[li] as u128 + b);
                let (u, g) = &mut up_gate[li];
                match t.role {
                    Role::FfnUp => *u = sat(*u as u128 + b),
                    Role::FfnGate => *g = sat(*g as u128 + b),
                    _ => {}
                }
            }
        }
        if n > 0 {
            let per = if types.is_some() {
                4 * vectors.saturating_sub(arch.hidden.get() as u128) / n as u128
            } else {
                vectors.saturating_sub(arch.hidden.get() as u128) / n as u128 * total as u128
                    / elements.max(1)
            };
            for x in &mut layers {
                *x = sat(*x as u128 + per);
            }
            // gpt-oss's expert biases (gate, up: f_e each; down: h) move with the experts.
            if arch.expert_bias {
                let e = arch.experts as u128
                    * (2 * arch.expert_ffn() as u128 + arch.hidden.get() as u128);
                let b = match types.is_some() {
                    true => 4 * e,
                    false => (e * total as u128).checked_div(elements).unwrap_or(0),
                };
                for x in routed.iter_mut().filter(|x| **x > 0) {
                    *x = sat(*x as u128 + b);
                }
            }
        }
        LayerBytes {
            routed,
            up_gate,
            ffn_mats,
            total,
            embd,
            layers,
        }
    }

    /// The output layer's bytes, `W_out`.
    pub(super) fn output(&self) -> u64 {
        let sum: u64 = self.layers.iter().fold(0u64, |a, &b| a.saturating_add(b));
        self.total.saturating_sub(self.embd).saturating_sub(sum)
    }

    /// The GPU layers' bytes (the last `g`), all GPUs together.
    pub(super) fn gpu_layers(&self, g: u64) -> u64 {
        let skip = self.layers.len().saturating_sub(g as usize);
        self.layers[skip..]
            .iter()
            .fold(0u64, |a, &b| a.saturating_add(b))
    }

    /// The routed experts the placement keeps in host memory: those of the last
    /// `cpu_experts` of the GPU layers, less the first one's up (and gate) projections with
    /// `partial`, B.
    pub(super) fn cpu_routed(&self, place: Placement) -> u64 {
        let n = self.routed.len();
        let c = (place.cpu_experts.min(place.gpu) as usize).min(n);
        let all = self.routed[n - c..]
            .iter()
            .fold(0u64, |a, &b| a.saturating_add(b));
        // The first of them keeps its up (and gate) projections on the GPU.
        let (up, gate) = match c {
            0 => (0, 0),
            _ => self.up_gate[n - c],
        };
        let kept = match place.partial {
            0 => 0,
            1 => up,
            _ => up.saturating_add(gate),
        };
        all.saturating_sub(kept)
    }

    /// What host memory holds of the file (`serve.host_bytes` less the KV cache on the CPU):
    /// the mapped range ([`Self::mapped`]), or with `--no-mmap` (`mmap=0`) the CPU's tensors
    /// alone, read into host buffers (llama.cpp's `CPU` and `CUDA_Host model buffer`).
    ///
    /// # Formula
    /// ```text
    /// mmap:       W_mapped
    /// --no-mmap:  W − (Σ_{last g} W_i − W_experts,cpu) − [output on the GPU]·W_out
    /// ```
    /// Source: llama.cpp `llama_model_loader::load_all_data` (without mmap every tensor is
    /// read into its buffer; the CPU's into host buffers, pinned when a GPU backend offers them).
    ///
    /// # Example
    /// Llama 3.1 8B Q4_K_M on Ollama 0.21.2 without mmap, 31 of 33 layers (the output layer on
    /// the CPU): the file's 4,685.30 MiB less the GPU's 3,860.00 = 825.30 MiB, logged as
    /// `CPU model buffer` 281.81 (`token_embd`) + `CUDA_Host model buffer` 543.49.
    pub(super) fn host_part(&self, arch: &crate::model::Arch, place: Placement, mmap: bool) -> u64 {
        if mmap {
            return self.mapped(arch, place);
        }
        let out = if place.output_gpu { self.output() } else { 0 };
        let gpu = self.gpu_layers(place.gpu) - self.cpu_routed(place);
        self.total.saturating_sub(gpu.saturating_add(out))
    }

    /// The weights on one GPU under partial offload.
    ///
    /// # Formula
    /// `W_gpu = ⌈(Σ_{last g} W_i + [output on GPU]·(W_out + [tied]·W_embd)) / t⌉`
    pub(super) fn gpu_expr(&self, arch: &crate::model::Arch, place: Placement, t: u32) -> Expr {
        let out = if place.output_gpu {
            let tied = if arch.tied { self.embd } else { 0 };
            self.output().saturating_add(tied)
        } else {
            0
        };
        let layers = self.gpu_layers(place.gpu) - self.cpu_routed(place);
        Expr::new(&[
            Sym("W_layers,gpu", layers as u128),
            Sym("W_out,gpu", out as u128),
            Add,
            Sym("t", t as u128),
            DivCeil,
        ])
    }

    /// What llama.cpp maps from the file for the CPU's tensors (its `CPU_Mapped model
    /// buffer`): the span from the first CPU tensor to the last, in the file's order
    /// (`token_embd`, the layers, the output layer).
    ///
    /// # Formula
    /// ```text
    /// output on the GPU:  W_embd + Σ_{first L − g} W_i      (every layer on the GPU: W_embd)
    ///   experts in host memory: W − W_out                  (the last layer's experts are the
    ///                                                       CPU's; gpt-oss-20b's 10,949.33 MiB)
    /// output on the CPU:  W                                  (the span reaches the file's end)
    /// ```
    /// Source: llama.cpp `llama_model_loader::get_mapping_range` (`first` = the lowest
    /// tensor offset of the buffer's tensors, `last` = the highest end;
    /// `ggml_backend_cpu_buffer_from_ptr(addr + first, last - first)`).
    ///
    /// # Example
    /// Qwen2.5 7B Q4_K_M, Ollama 0.3.14, `-ngl 1` (the output on the CPU): the whole file,
    /// logged `CPU buffer size = 4460.45 MiB`; with every layer offloaded `token_embd`'s
    /// 292.36 MiB.
    pub(super) fn mapped(&self, arch: &crate::model::Arch, place: Placement) -> u64 {
        if !place.output_gpu {
            return self.total;
        }
        if self.cpu_routed(place) > 0 {
            // The last layer's experts are the CPU's: the span reaches the output layer.
            return self.total.saturating_sub(self.output());
        }
        let cpu = (arch.layers.get() as u64).saturating_sub(place.gpu) as usize;
        let head = self.layers[..cpu.min(self.layers.len())]
            .iter()
            .fold(0u64, |a, &b| a.saturating_add(b));
        self.embd.saturating_add(head)
    }
}

impl LayerBytes {
    /// The head matrix the output layer multiplies by: `token_embd` for a tied model, else
    /// the output layer less its f32 final norm.
    ///
    /// # Formula
    /// `W_head = W_embd` (tied)   or   `W_out − 4·Ψ_norm(h)`
    pub(super) fn head(&self, arch: &crate::model::Arch) -> u64 {
        if arch.tied {
            return self.embd;
        }
        let norm = sat(4 * arch.norm.params(arch.hidden.get() as u128));
        self.output().saturating_sub(norm)
    }
}

/// The smallest micro-batch whose matrix products the CUDA backend takes over from the CPU.
///
/// Source: llama.cpp `ggml/src/ggml-cuda/ggml-cuda.cu` `ggml_backend_cuda_device_offload_op`
/// (`const int min_batch_size = 32; return get_op_batch_size(op) >= min_batch_size`).
const OFFLOAD_MIN_BATCH: u64 = 32;

/// The compute buffer when the output layer stays on the CPU: the scheduler runs the head's
/// matrix product on the GPU all the same (op offload) and copies the head's weights into
/// the GPU's compute buffer, beside the product's f32 input and output.
///
/// # Formula
/// ```text
/// C = max(C_graph, W_head + 4·n_out·(V + h))     (output layer on the CPU, n_out ≥ 32)
/// ```
/// `C_graph` [`super::llamacpp::compute_buffer`]'s figure, `W_head` the head matrix in its
/// GGUF type ([`LayerBytes::head`]), `4·n_out·(V + h)` the f32 logits and normed hidden
/// state of the graph's outputs (`n_out` rows: the micro-batch's `n_ub` before b9460, one
/// per sequence from then, when the product is too small to offload); bytes. The CPU
/// layers' matrices are copied in too, one split at a time ([`cpu_layer_copies`]).
///
/// Source: llama.cpp `ggml/src/ggml-backend.cpp` `ggml_backend_sched_backend_id_from_cur`
/// (a weight in host memory: "check if a backend with higher prio wants to offload the op")
/// and `ggml_backend_sched_split_graph` pass 5 (a source on an incompatible backend is
/// duplicated into the split's backend, `ggml_dup_tensor_layout`; "by starting a new split,
/// the memory of the previously offloaded weights can be reused").
///
/// # Example
/// Qwen3 4B Q6_K (tied, V = 151,936, h = 2,560), `-ngl 0`, n_ub 512: W_head =
/// 2,560·151,936/256·210 = 319,065,600 B and 4·512·(151,936 + 2,560) = 316,407,808 B: C =
/// 635,473,408 B = 606.03 MiB, as logged (`CUDA0 compute buffer size = 606.03 MiB`).
pub(super) fn offloaded_head(
    c: Expr,
    arch: &crate::model::Arch,
    place: Placement,
    bytes: &LayerBytes,
    n_out: u64,
) -> Expr {
    if place.output_gpu || n_out < OFFLOAD_MIN_BATCH {
        return c;
    }
    let mut toks = vec![Sym("W_head", bytes.head(arch) as u128)];
    toks.extend(logits_and_hidden(arch, n_out));
    toks.extend([Add, Max]);
    c.then(&toks)
}

/// The compute buffer when repeating layers stay on the CPU: the scheduler runs their
/// matrix products on the GPU (op offload, `n_ub ≥ 32`), copying each weight into the GPU's
/// compute buffer at the start of its own split, freed at the next; the largest of them
/// meets the feed-forward block's activations.
///
/// # Formula
/// ```text
/// C = max(C_graph, P_cpu)
/// P_cpu = m·n_ub·n_m + max(4·n_ub·(h + h + 2·f) + W_in,     (up: residual, normed input,
///                          4·n_ub·(h + h + f) + W_down,      gate, up; down)
///                          4·n_ub·(h + 2·h_q) + KV_l)        (attention)
/// ```
/// `C_graph` the figure so far, `W_in` the CPU layers' largest up or gate matrix and `W_down`
/// their largest down matrix in their GGUF types ([`LayerBytes::ffn_mats`]), `f`, `n_m`, `m`
/// as in [`super::llamacpp::compute_buffer`], `h_q = a·d` the queries' width, `KV_l =
/// n_kv·c_layer` one layer's K and V in host memory, copied in for the flash-attention
/// product that runs on the GPU beside the residual, the roped queries and the product's
/// output; bytes.
///
/// Source: llama.cpp `ggml/src/ggml-backend.cpp` `ggml_backend_sched_split_graph` pass 5
/// ("by starting a new split, the memory of the previously offloaded weights can be
/// reused"; the copies are the split's first nodes, freed by ggml-alloc after their last
/// use), `ggml-cuda.cu` `ggml_backend_cuda_device_offload_op`.
///
/// # Example
/// Qwen2.5 32B Q4_K_M (h = 5,120, f = 27,648), 17 of 64 layers on the CPU, n_ub 512, n_ctx
/// 4,096, flash attention: W_in = 27,648·5,120/256·144 = 79,626,240 B (Q4_K), W_down (Q6_K)
/// 116,121,600 B; 6·512·4,096 + 4·512·(10,240 + 55,296) + 79,626,240 = 226,426,880 B
/// (215.94 MiB; Ollama 0.30.10 logged 225.96). Llama 3.1 8B Q4_0, 18 of 32 layers on the CPU,
/// n_ctx 32,768: the attention's 6·512·32,768 + 32,768·4,096 + 4·512·(4,096 + 8,192) =
/// 260,046,848 B = 248.00 MiB (Ollama on b9672 logged 248.00).
pub(super) fn cpu_layer_copies(
    s: &Scenario,
    c: Expr,
    arch: &crate::model::Arch,
    place: Placement,
    bytes: &LayerBytes,
    m: Micro,
    kv_layer: u64,
) -> Expr {
    let cpu = (arch.layers.get() as u64).saturating_sub(place.gpu) as usize;
    if cpu == 0 || m.n_ub < OFFLOAD_MIN_BATCH || !op_offload(s) {
        return c;
    }
    let (w_in, w_down) = bytes.ffn_mats[..cpu.min(bytes.ffn_mats.len())]
        .iter()
        .fold((0u64, 0u64), |a, b| (a.0.max(b.0), a.1.max(b.1)));
    let f = ffn_width(arch) as u128;
    let h = arch.hidden.get() as u128;
    let q = arch.heads.get() as u128 * arch.head_dim.get() as u128;
    let peak = |width: u128, w: u64| layer_peak(arch, m, width) + w as u128;
    let worst = peak(h + 2 * f, w_in)
        .max(peak(h + f, w_down))
        .max(peak(2 * q, kv_layer));
    c.then(&[Sym("P_cpu", worst), Max])
}

/// One micro-batch as llama.cpp reserves its graph: the counts
/// [`super::llamacpp::compute_buffer`] and
/// [`cpu_layer_copies`] read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Micro {
    /// Tokens per micro-batch (`n_ubatch`), `n_ub`.
    pub n_ub: u64,
    /// Rows of logits the graph reserves, `n_out`: `n_ub`, or from b9460 one per sequence.
    pub n_out: u64,
    /// Cells of the widest attention, `n_kv`.
    pub n_kv: u64,
    /// Cells of every attention mask together (full and windowed), `n_m`.
    pub n_m: u64,
    /// Flash attention.
    pub fa: bool,
}

/// The widest f32 activation of a layer's feed-forward block, in elements per token: `f`
/// in [`super::llamacpp::compute_buffer`] (a dense layer's `ffn`; a mixture's `k` chosen experts of
/// `f_e` each, the larger where both kinds of layer are present).
pub(super) fn ffn_width(arch: &crate::model::Arch) -> u64 {
    let dense = if arch.experts == 0 || arch.first_dense > 0 {
        arch.ffn.get() as u64
    } else {
        0
    };
    let routed = if arch.experts > 0 {
        arch.top_k as u64 * arch.expert_ffn() as u64
    } else {
        0
    };
    dense.max(routed)
}

/// A layer's peak, bytes: `m·n_ub·n_m + 4·n_ub·(h + width)`, `m` 6 with flash attention
/// (the f32 mask's copy and its f16 cast) else 4, `width` the activations alive beside the
/// residual, in elements per token (shown as one symbol, `P_layer`, in the formula).
pub(super) fn layer_peak(arch: &crate::model::Arch, m: Micro, width: u128) -> u128 {
    let masks = if m.fa { 6 } else { 4 } * m.n_ub as u128 * m.n_m as u128;
    masks + 4 * m.n_ub as u128 * (arch.hidden.get() as u128 + width)
}

/// Whether the build runs a CPU layer's products on the GPU (op offload): Ollama from 0.1.30,
/// llama.cpp from b2474 ([`crate::scenario::LLAMACPP_OP_OFFLOAD_FROM`]).
fn op_offload(s: &Scenario) -> bool {
    match s.ollama_used() {
        Some(v) => v >= crate::scenario::OLLAMA_OP_OFFLOAD_FROM,
        None => s.llamacpp_build() >= crate::scenario::LLAMACPP_OP_OFFLOAD_FROM,
    }
}

/// The f32 logits and normed hidden state of the graph's outputs, `4·n_out·(V + h)` bytes,
/// as tokens (beside the head copied in for op offload).
pub(super) fn logits_and_hidden(arch: &crate::model::Arch, n_out: u64) -> [crate::expr::Tok; 7] {
    [
        Num(4),
        Sym("n_out", n_out as u128),
        Mul,
        Sym("V", arch.vocab.get() as u128),
        Sym("h", arch.hidden.get() as u128),
        Add,
        Mul,
    ]
}

//! Activation bytes of one transformer layer: seed 003's and seed 002's closed forms,
//! Korthikanti et al.'s table (with sequence parallelism and recomputation), memfit's
//! term-by-term layer, and operator-level selective checkpointing.

use super::vars::*;
use super::*;
use crate::scenario::{LoraTargets, Tuning};

/// memfit's per-block saved activations, term by term, for one micro-batch.
///
/// # Formula
/// Each term is a constant formula of [`vars`](super::vars) (the symbols' table is
/// there), evaluated with the block's values; the ledger prints the same tokens.
/// ```text
/// attention norm + qkv input            2·T·h·k/r + n_s·T + κ·T·h/r         (NORM; autocast: NORM_AC_ATTN,
///                                       4·T·h/r + n_s·T + κ·T·h/r + c_a·T·h·k/r)
/// q, k, v as the kernel reads them      T·(⌈a/t⌉ + 2·⌈a_kv'/t⌉)·d·k          (QKV)
/// attention output (= o_proj input)     T·⌈a/t⌉·d·k                          (ATTN_OUT)
/// flash/sdpa log-sum-exp                4·T·⌈a/t⌉                            (LSE)
/// eager softmax                         b·⌈a/t⌉·s'·s·k  (Megatron, fp32)     (SOFTMAX)
///                                       b·⌈a/t⌉·s'·s·(4 + k)  (HF: fp32 + cast) (SOFTMAX_HF)
/// attention dropout mask + output       b·⌈a/t⌉·s'·s·(1 + k)                 (ATTN_DROPOUT; dropout only)
/// residual dropout masks                T·h/r, twice                         (DROPOUT_MASK; dropout only)
/// MLP norm + first linear input         as the attention norm with c_m       (NORM / NORM_AC_MLP)
/// dense MLP                             m_s·T·⌈f/t⌉·k  (m_s = 4 SwiGLU, 3 fused SwiGLU, 2 GELU,
///                                       5 gelu_new in ops, 8 under CUDA autocast)   (MLP)
/// MoE                                   ⌈T·m·(h·k + m_s·f_e·k)/t⌉ + 4·T·E     (MOE; PyTorch: ⌈T·w_x·k/t⌉ + 4·T·E, MOE_HF;
///                                                                              routed copies, expert MLPs,
///                                                                              fp32 router logits)
/// per-head q/k norms (Qwen3, Gemma 3)   T·(⌈a/t⌉ + ⌈a_kv/t⌉)·(d·(k + κ) + n_h)   (QK_NORMS)
/// output gate (Qwen3-Next)              T·d·(⌈a/t⌉·(2k + 4 − u) + (⌈a/t⌉ + ⌈a_kv/t⌉)·(4 − k))  (ATTN_GATE)
/// full-width q/k norms (OLMo 2, OLMoE)  T·(⌈a/t⌉ + ⌈a_kv/t⌉)·d·(k + κ) + 2·n_s·T  (QK_NORMS_FULL)
/// sandwich post-norms (Gemma 2, 3)      n_p·(T·h·k/r + n_s·T + κ·T·h/r)       (POST_NORMS)
/// Gemma 2 attention soft-capping        b·⌈a/t⌉·s'·s·k  (eager only: the tanh's output)  (SOFTCAP_SCORES)
/// SDPA's mask bias                      b·s'·s·k  (memory-efficient kernel with a mask)      (MASK_BIAS)
/// ```
/// `attn=sdpa` under PyTorch counts what the kernel CUDA dispatches to saves
/// ([`sdpa_kernel`]): flash's, the memory-efficient kernel's, or the math fallback's (eager's).
/// Selective recompute drops the eager softmax terms (the attention core is recomputed,
/// Korthikanti et al.); under `framework=pytorch` it is torchtitan's op-level SAC
/// (see `op_sac_layer`).
///
/// Source: Korthikanti et al. 2022 §4.1 (the same derivation; with GELU, f = 4h, eager
/// attention, dropout and LayerNorm it gives their 34·s·b·h + 5·a·s²·b exactly, plus the
/// norm statistics); PyTorch autograd saved tensors of Hugging Face `LlamaDecoderLayer`.
///
/// # Example
/// Llama-2-7B, b = 1, s = 4096, flash, no dropout, bf16, DeepSpeed/HF modules: per layer
/// 2·(2·T·h·2 + 4T + 4·T·h) + 3·T·4096·2 + T·4096·2 + 4·T·32 + 4·T·11008·2 = 763,920,384 B
/// (T = 4096).
pub fn memfit_layer(s: &Scenario, arch: &Arch, x: &Shape) -> Terms {
    let mut v = Terms::new(vars(s, arch, x));
    if s.stack.framework == Framework::Pytorch
        && s.activations.recompute == Recompute::Selective
        && arch.mla.is_none()
    {
        op_sac_layer(&mut v);
        return v;
    }
    if let Some(targets) = lora_frozen_block(s, arch) {
        lora_layer(s, arch, x, targets, &mut v);
        return v;
    }
    push_norm(s, &mut v, "attention norm + qkv input", Reader::Attention);
    v.push("q, k, v (as the kernel reads them)", QKV);
    qk_norm_terms(arch, &mut v);
    if arch.gated_attention() {
        v.push("output gate (Qwen3-Next)", ATTN_GATE);
    }
    v.push("attention output", ATTN_OUT);
    attention_core_terms(s, arch, x, &mut v);
    if s.activations.dropout {
        v.push("attention residual dropout mask", DROPOUT_MASK);
    }
    if arch.norms_per_layer > 2 {
        v.push("post-norms (sandwich block)", POST_NORMS);
    }
    push_norm(s, &mut v, MLP_NORM, Reader::Mlp);
    mlp_term(s, arch, &mut v);
    if s.activations.dropout {
        v.push("MLP dropout mask", DROPOUT_MASK);
    }
    v
}

/// The MLP half of a block (its norm and feed-forward terms of [`memfit_layer`]), bytes per
/// micro-batch: what a hybrid's Mamba or convolution block saves beside its mixer
/// (`activations::ssm::hybrid_block_bytes`).
pub(crate) fn mlp_half_bytes(s: &Scenario, arch: &Arch, x: &Shape) -> u128 {
    let mut v = Terms::new(vars(s, arch, x));
    push_norm(s, &mut v, MLP_NORM, Reader::Mlp);
    mlp_term(s, arch, &mut v);
    v.iter().map(|t| t.bytes).sum()
}

/// The first norm of a Mamba, convolution or gated-DeltaNet block, bytes per micro-batch:
/// the same norm term as a transformer block's ([`push_norm`]), read by one linear.
///
/// # Formula
/// `2·T·h·k/r + n_s·T + κ·T·h/r` (`NORM`: its input, statistics, fp32 normalised tensor and
/// output, the in_proj's input; under autocast `NORM_AC_OUT`); symbols as in [`vars`].
/// Source: transformers 5.24 `modeling_lfm2.Lfm2RMSNorm` (`operator_norm`),
/// `modeling_mamba2.MambaRMSNorm`, `modeling_nemotron_h.NemotronHRMSNorm`,
/// `modeling_qwen3_next.Qwen3NextRMSNorm`: the normalised fp32 `x·rsqrt` is saved by the
/// weight's product. Read off the calibration run
/// `train/lfm2/s/fp32/sgd/sdpa/nockpt/loss=model/b2s256` (`tests/data/hf_ssm_measurements.json`):
/// per convolution block the input, `x·rsqrt` and `weight·x` (3 × 524,288 B) and the rsqrt
/// (2,048 B), where memfit counted the input and the output only.
///
/// # Example
/// That run (T = 512, h = 256, fp32, n_s = κ = 4): 2·512·256·4 + 4·512 + 4·512·256 =
/// 1,574,912 B.
pub(crate) fn mixer_norm_bytes(s: &Scenario, arch: &Arch, x: &Shape) -> u128 {
    let mut v = Terms::new(vars(s, arch, x));
    push_norm(s, &mut v, "mixer norm + in_proj input", Reader::Head);
    v.iter().map(|t| t.bytes).sum()
}

/// The adapters' targets when a block is a frozen base under PEFT LoRA (framework=pytorch,
/// a dense block with standard attention); `None` for full training, QLoRA (its
/// dequantised base is modelled as measured on CPU), MoE and MLA blocks.
fn lora_frozen_block(s: &Scenario, arch: &Arch) -> Option<LoraTargets> {
    match s.finetune {
        Tuning::Lora { targets, .. }
            if s.stack.framework == Framework::Pytorch
                && arch.experts == 0
                && arch.mla.is_none()
                && s.activations.recompute != Recompute::Selective =>
        {
            Some(targets)
        }
        _ => None,
    }
}

/// A block of a frozen base with PEFT LoRA adapters: what autograd saves when only the
/// adapters train.
///
/// # Formula
/// ```text
/// each norm (frozen weight)          n_s·T + κ·T·h/r   (RMSNorm)  |  T·h·k/r + n_s·T  (LayerNorm)
/// each adapter on a linear of input  T·(h_in + r_l)·k_a   (A's input cast, B's input)
///   h_in = h (q, k, v, gate, up), ⌈a/t⌉·d (o), ⌈f/t⌉ (down)
/// q, k, v as the kernel reads them   T·(⌈a/t⌉ + 2·⌈a_kv'/t⌉)·d·k   (QKV)
/// kernel output (flash / SDPA)       T·⌈a/t⌉·d·k       (ATTN_OUT; not with eager: o is frozen)
/// attention core                     as full training (log-sum-exp, or eager's scores)
/// frozen MLP                         (m_s − 1)·T·⌈f/t⌉·k   (MLP_FROZEN)
/// ```
/// A frozen linear needs only its weight to pass the gradient on, so it saves no input; the
/// norm's weight is frozen too, so its 16-bit output is saved by no one; the MLP's product
/// (down's input) dies. Each adapter casts its input to the adapters' fp32 (PEFT
/// `_cast_input_dtype`) and, under autocast, back to 16 bits for A: a copy of its own
/// (`k_a = k`); without autocast A runs in fp32 and saves the fp32 copy (`k_a = 4`).
/// Source: PEFT 0.21 `tuners/lora/layer.py` (`Linear.forward`); PyTorch autograd saves a
/// matmul's input only for a weight that requires grad. Found on the CUDA calibration runs
/// C15–C17 (memfit +5.6 %, +14.9 %, +9.8 % counting every input as full training did).
///
/// # Example
/// Llama 3 8B (h = 4,096, a = 32, a_kv = 8, d = 128, f = 14,336), b = 1, s = 4,096, bf16
/// autocast, r = 64 on q and v, flash: per token 2·(4 + 4·4,096) + 2·(4,096 + 64)·2 +
/// (32 + 16)·128·2 + 32·128·2 + 4·32 + 3·14,336·2 = 156,040 B; ×4,096 tokens =
/// 639,139,840 B per layer.
fn lora_layer(s: &Scenario, arch: &Arch, x: &Shape, targets: LoraTargets, v: &mut Terms) {
    let norm = if arch.norm == Norm::Rmsnorm {
        NORM_FROZEN_RMS
    } else {
        NORM_FROZEN_LN
    };
    let (attn, mlp) = match targets {
        LoraTargets::Qv => (&["q", "v"][..], &[][..]),
        LoraTargets::Attn => (&["q", "k", "v", "o"][..], &[][..]),
        LoraTargets::Mlp => (&[][..], &["gate", "up", "down"][..]),
        LoraTargets::All => (&["q", "k", "v", "o"][..], &["gate", "up", "down"][..]),
    };
    v.push("attention norm (frozen)", norm);
    for &t in attn {
        let form = if t == "o" { ADAPTER_O } else { ADAPTER_H };
        v.push(adapter_name(t), form);
    }
    v.push("q, k, v (as the kernel reads them)", QKV);
    qk_norm_terms(arch, v);
    if saved_attn(s, arch, x) != Attn::Eager {
        v.push("attention output (saved by the kernel)", ATTN_OUT);
    }
    attention_core_terms(s, arch, x, v);
    if arch.norms_per_layer > 2 {
        v.push("post-norms (sandwich block)", POST_NORMS);
    }
    v.push(MLP_NORM, norm);
    for &t in mlp {
        let gelu = arch.mlp == Mlp::Gelu;
        let form = match t {
            "down" => ADAPTER_F,
            "up" if gelu => continue,
            _ => ADAPTER_H,
        };
        v.push(adapter_name(t), form);
    }
    v.push(
        "MLP intermediates (frozen: all but down's input)",
        MLP_FROZEN,
    );
}

/// The ledger's name of a LoRA adapter's saved tensors.
fn adapter_name(t: &str) -> &'static str {
    match t {
        "q" => "LoRA adapter on q (input cast + A's output)",
        "k" => "LoRA adapter on k (input cast + A's output)",
        "v" => "LoRA adapter on v (input cast + A's output)",
        "o" => "LoRA adapter on o (input cast + A's output)",
        "gate" => "LoRA adapter on gate / fc (input cast + A's output)",
        "up" => "LoRA adapter on up (input cast + A's output)",
        _ => "LoRA adapter on down (input cast + A's output)",
    }
}

/// The q and k norms' saved tensors: per head (Qwen3, Gemma 3: `QK_NORMS`) or over the
/// whole projected q and k (OLMo 2, OLMoE: `QK_NORMS_FULL`).
///
/// # Formula
/// ```text
/// per head    T·(⌈a/t⌉ + ⌈a_kv/t⌉)·(d·(k + κ) + n_h)
/// full width  T·(⌈a/t⌉ + ⌈a_kv/t⌉)·d·(k + κ) + 2·n_s·T
/// ```
/// Each norm saves its input's fp32 upcast (or, in fp32, the projection's output: `k`
/// counted, the upcast as `κ`) and its 16-bit normalised tensor that the weight's product
/// saves, and its statistics: per head `n_h`, over the full width `n_s` per token. Source:
/// transformers 5.17 `modeling_olmoe.py` (`OlmoeAttention`: `self.q_norm(self.q_proj(x))`,
/// `OlmoeRMSNorm(num_heads·head_dim)`); traced with `tools/trace_alloc.py` on the CUDA
/// calibration run C25 (OLMoE-1B-7B, pure bf16, b = 4, s = 1,024): each layer holds four fp32
/// `T·h` upcasts (two block norms, q's and k's) and four bf16 normalised tensors, 104.8 MB a
/// layer beyond memfit's terms before this one.
///
/// # Example
/// OLMoE (a = a_kv = 16, d = 128), T = 4,096, bf16 (k = 2, κ = 4): 4,096·32·128·6 + 2·4·4,096 =
/// 100,696,064 B per layer.
fn qk_norm_terms(arch: &Arch, v: &mut Terms) {
    if arch.qk_norm_head || arch.gated_attention() {
        v.push("per-head q and k norms", QK_NORMS);
    } else if arch.qk_norm {
        v.push("q and k norms (full width)", QK_NORMS_FULL);
    }
}

/// The name of the MLP norm's term: the first of the MLP's side of a block
/// (`layer_backward` frees from it on).
pub(crate) const MLP_NORM: &str = "MLP norm + first linear input";

/// The attention core's saved tensors: the log-sum-exp of flash/SDPA, or eager
/// attention's softmax (and its dropout) unless selective recomputation drops them.
fn attention_core_terms(s: &Scenario, arch: &Arch, x: &Shape, v: &mut Terms) {
    let selective = s.activations.recompute == Recompute::Selective;
    let kernel = sdpa_kernel(s, arch, x);
    if kernel == Some(SdpaKernel::Efficient { masked: true }) {
        v.push(
            "attention mask as a float bias (SDPA, memory-efficient)",
            MASK_BIAS,
        );
    }
    if partial_rotary_copy(s, arch, kernel) {
        v.push(
            "o_proj's input: the attention output copied out of q's order (partial rotary)",
            ATTN_OUT,
        );
    }
    if arch.fused_qkv && fused_view_saved(arch, kernel) {
        v.push(
            "fused qkv output held by v's view (q, k parts)",
            FUSED_QKV_HELD,
        );
    }
    match saved_attn(s, arch, x) {
        Attn::Flash | Attn::Sdpa | Attn::Flash1 => v.push("log-sum-exp", LSE),
        Attn::Eager if !selective => {
            // Hugging Face eager attention takes the softmax in fp32 and casts back:
            // the fp32 output (softmax backward) and the cast (input of the V matmul) are
            // both saved. Megatron's fused softmax keeps one 16-bit tensor.
            if kernel == Some(SdpaKernel::Math) {
                // attn=sdpa that CUDA runs as its math fallback (fp32 with GQA): say so.
                let name = "s² probabilities (SDPA's math fallback: no fused kernel takes this dtype with GQA)";
                v.push(name, if x.k >= 4 { SOFTMAX } else { SOFTMAX_HF });
            } else if s.stack.framework == Framework::Megatron || x.k >= 4 {
                v.push("softmax", SOFTMAX);
            } else if softmax_in_model_dtype(s, arch) {
                v.push("softmax (in the model's 16-bit dtype: GPT-2)", SOFTMAX);
            } else {
                v.push("softmax (fp32 softmax + its 16-bit cast)", SOFTMAX_HF);
            }
            if arch.softcap {
                v.push("attention soft-capping (the tanh's output)", SOFTCAP_SCORES);
            }
            if s.activations.dropout {
                v.push("attention dropout mask + output", ATTN_DROPOUT);
            }
        }
        Attn::Eager => {}
    }
}

/// Whether eager attention's softmax runs in the model's own 16-bit dtype and saves one
/// `k`-byte tensor: GPT-2's attention (`Arch::softmax_in_dtype`) calls
/// `nn.functional.softmax(attn_weights, dim=-1)` with no `dtype` argument, then
/// `attn_weights.type(value.dtype)`, a no-op when both are 16-bit, so the softmax output is
/// both what softmax's backward and the V matmul save. Under autocast the softmax runs in fp32
/// (CUDA autocast's fp32 list has `softmax`) and the cast back is a second tensor: the
/// `4 + k` of Hugging Face's shared eager attention, which passes `dtype=torch.float32`.
/// `modules=plain` (memfit's own harness, `tools/measure_pytorch.py`) upcasts as well.
///
/// # Formula
/// ```text
/// saved = b·⌈a/t⌉·s'·s·k        if softmax_in_dtype ∧ no autocast ∧ modules = hf   (SOFTMAX)
///         b·⌈a/t⌉·s'·s·(4 + k)  otherwise, k < 4                    (SOFTMAX_HF)
/// ```
/// Source: transformers 5.17 `models/gpt2/modeling_gpt2.py` `eager_attention_forward`
/// (unchanged in 5.24); PyTorch 2.11 `aten/src/ATen/autocast_mode.cpp`
/// (`KERNEL_CUDA(softmax, fp32)`). Found on the CUDA run D08 (GPT-2 124M, pure bf16, eager,
/// b = 32, s = 1,024, no dropout): its allocator trace holds one 805,306,368 B tensor per
/// layer at the peak (`32·12·1,024²·2`), where memfit counted three.
///
/// # Example
/// D08: b = 32, a = 12, s = 1,024, k = 2: 32·12·1,024·1,024·2 = 805,306,368 B per layer
/// instead of ·6 = 2,415,919,104 B; 12 layers: 18.0 GiB less (memfit 62.01 → 44.01 GiB
/// against the measured 44.02 GiB).
fn softmax_in_model_dtype(s: &Scenario, arch: &Arch) -> bool {
    arch.softmax_in_dtype && !autocast(s) && s.runtime.modules == crate::scenario::Modules::Hf
}

/// Whether the attention output is saved twice: as FlashAttention's output and as its
/// `.transpose(1, 2).contiguous()` copy, o_proj's input. With a partial rotary embedding
/// transformers builds q by `torch.cat([q_rot·cos + rotate_half(q_rot)·sin, q_pass], -1)`
/// on the (b, a, s, d) view, a new tensor in that memory order; the flash kernel allocates
/// its output `empty_like(q)` in q's order (PyTorch `mha_fwd`, flash_api.cpp), so the
/// transpose back to (b, s, a·d) is not contiguous and `.contiguous()` copies. A full
/// rotary embedding is elementwise and keeps the projection's (b, s, a, d) order: no copy.
/// The memory-efficient kernel allocates its output in (b, s, a, d) order whatever q's, and
/// the CPU's flash kernel too: CUDA flash only (`sdpa_kernel` is `None` on a CPU).
///
/// # Formula
/// ```text
/// copy = T·⌈a/t⌉·d·k   if rope_partial ∧ rotary ∧ kernel = Flash   (ATTN_OUT)
/// ```
/// # Example
/// Phi-4-mini (`partial_rotary_factor` 0.75, a = 24, d = 128), b = 2, s = 4,096, bf16:
/// 8,192·24·128·2 = 50,331,648 B per layer, 1.5 GiB over 32 layers — the measured peak of
/// H200 run C11 (75.53 GiB) less memfit's before this term (74.03 GiB), found in its traced
/// stream (`tools/trace_alloc.py`: an `aten.clone` of 48 MiB per layer alive at the
/// forward's end).
fn partial_rotary_copy(s: &Scenario, arch: &Arch, kernel: Option<SdpaKernel>) -> bool {
    arch.rope_partial
        && arch.positions == 0
        && s.stack.framework == Framework::Pytorch
        && kernel == Some(SdpaKernel::Flash)
}

/// Whether the kernel saves v as the view of a fused q‖k‖v output that the model gives it,
/// which keeps the whole output alive: flash takes K/V as they are (`enable_gqa`), and
/// without GQA `repeat_kv` returns its input, so the memory-efficient kernel does too; with
/// GQA, `repeat_kv` (and the math fallback's `repeat_interleave`) copy and the view dies.
/// Rotary models only (q and k become new tensors; GPT-2's q, k, v are all views, counted
/// once). CUDA only: found on Phi-4-mini (C11, fused `qkv_proj`, GQA, flash); the CPU
/// tracker's kernel is left as measured.
///
/// # Formula
/// ```text
/// held = T·(⌈a/t⌉ + ⌈a_kv/t⌉)·d·k   if fused ∧ rotary ∧ (Flash ∨ (Efficient ∧ a_kv = a))
/// ```
/// # Example
/// Phi-4-mini (a = 24, a_kv = 8, d = 128), b = 2, s = 4,096, bf16: 8,192·32·128·2 =
/// 67,108,864 B per layer, 2.0 GiB over 32 layers.
fn fused_view_saved(arch: &Arch, kernel: Option<SdpaKernel>) -> bool {
    let rotary = arch.positions == 0;
    let mha = arch.kv_heads == arch.heads;
    rotary
        && match kernel {
            Some(SdpaKernel::Flash) => true,
            Some(SdpaKernel::Efficient { .. }) => mha,
            _ => false,
        }
}

/// The MLP's saved intermediates: dense (SwiGLU, fused under Megatron, or GELU) or a
/// mixture of experts (routed copies, expert MLPs, fp32 router logits).
fn mlp_term(s: &Scenario, arch: &Arch, v: &mut Terms) {
    if arch.experts > 0 && s.stack.framework == Framework::Pytorch {
        let name =
            "MoE (grouped experts): routed inputs, expert MLPs, down outputs + router logits";
        v.push(name, MOE_HF);
        return;
    }
    if arch.experts > 0 {
        v.push("MoE routed inputs + expert MLPs + router logits", MOE);
        return;
    }
    let name = match arch.mlp {
        Mlp::Swiglu if s.stack.framework == Framework::Megatron => {
            "MLP intermediates (fused SwiGLU: gate‖up, output)"
        }
        Mlp::Swiglu => "MLP intermediates (gate, up, silu(gate), product)",
        Mlp::Gelu if arch.gelu_ops && s.stack.framework != Framework::Megatron && cuda_autocast_pow(s) => {
            "MLP intermediates (gelu_new under CUDA autocast: fp32 pow input, tanh, 1 + tanh; 0.5·x; the product's cast)"
        }
        Mlp::Gelu if arch.gelu_ops && s.stack.framework != Framework::Megatron => {
            "MLP intermediates (gelu_new in Python ops: fc1 output, tanh, 0.5·x, 1 + tanh, product)"
        }
        Mlp::Gelu => "MLP intermediates (fc1 output, GELU output)",
    };
    v.push(name, MLP);
}

/// Which linears read a norm's output (autocast casts it once per reader).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reader {
    /// q, k, v (`c_a`).
    Attention,
    /// The MLP's first linears (`c_m`).
    Mlp,
    /// The LM head (`c_o = 1`).
    Head,
}

/// A norm and the linears that read its output, as a block saves them.
///
/// # Formula
/// ```text
/// 16-bit or fp32 modules:  2·T·h·k/r + n·T [+ 4·T·h/r composite RMSNorm]
///                          (the norm's input; its output, one tensor every reader saves)
/// autocast:                4·T·h/r + n·T [+ 4·T·h/r] + c·T·h·k/r
///                          (the fp32 residual is the norm's input and its output is fp32;
///                           each of the c linears reading it saves its own 16-bit cast)
/// ```
/// `T = b·s'` tokens, `r = t` under sequence parallelism else 1, `n` the statistics (4 B
/// per token RMSNorm rstd, 8 B LayerNorm mean + rstd); composite RMSNorm (Hugging Face
/// `LlamaRMSNorm`, `torch.nn.RMSNorm`) also saves the normalised fp32 `x·rsqrt(mean(x²))`,
/// fused kernels (Megatron/Apex) do not. `c` the readers (`attention_readers`,
/// `mlp_readers`).
/// Source: PyTorch autocast (`cached_cast` caches casts of leaf parameters only, so an
/// activation is cast once per op that reads it); measured with saved-tensor hooks on the
/// blocks of `tools/measure_pytorch.py` (torch 2.15, CPU autocast, bf16).
///
/// # Example
/// Llama shape h = 256, b·s = 2·256, autocast bf16, attention norm (q, k, v separate):
/// 4·512·256 + 4·512 + 4·512·256 + 3·512·256·2 = 1,837,056 B, as measured; without
/// autocast (bf16 modules) 2·512·256·2 + 4·512 + 4·512·256 = 1,050,624 B.
pub(crate) fn push_norm(s: &Scenario, v: &mut Terms, name: &'static str, reader: Reader) {
    let form = match (autocast(s), reader) {
        (false, _) => NORM,
        (true, Reader::Attention) => NORM_AC_ATTN,
        (true, Reader::Mlp) => NORM_AC_MLP,
        (true, Reader::Head) => NORM_AC_OUT,
    };
    v.push(name, form);
}

/// PyTorch selective activation checkpointing as torchtitan applies it ("op" policy):
/// inside each block, the outputs of every other matmul and of the attention kernel are
/// saved, everything else is recomputed in backward.
///
/// # Formula
/// ```text
/// block input                         T·h·k_r/r                            (SAC_INPUT)
/// saved matmuls (1st, 3rd, 5th, 7th)  ⌈T·(a·d + a_kv·d + f_a + h)·k/t⌉    (SAC_MATMULS: q, v, gate, down)
/// attention output + log-sum-exp      ⌈(T·a·d·k + 4·T·a)/t⌉               (SAC_ATTN)
/// ```
/// # Example
/// Llama 3 8B shape (h = 4096, a = 32, a_kv = 8, d = 128, f = 14336), b = 1, s = 4096,
/// autocast bf16 (k_r = 4), t = 1: 4096·4096·4 + 4096·(4096 + 1024 + 14336 + 4096)·2 +
/// (4096·4096·2 + 4·4096·32) = 67,108,864 + 192,937,984 + 34,078,720 = 294,125,568 B.
/// Source: torchtitan `apply_ac` with `selective_ac_option = "op"` (`_save_list`: mm,
/// scaled_dot_product_*_attention; "save every other mm").
pub fn op_sac_layer(v: &mut Terms) {
    v.push("block input", SAC_INPUT);
    v.push("saved matmul outputs (q, v, gate, down)", SAC_MATMULS);
    v.push("attention output + log-sum-exp", SAC_ATTN);
}

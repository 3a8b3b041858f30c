//! One layer's backward working set: what PyTorch holds while a layer's gradients are
//! computed (the readers of each saved tensor).

use super::*;

/// What a layer holds at the moments inside its PyTorch backward, relative to the
/// whole-layer moment (every saved tensor alive, every gradient written) that `ActPlan`
/// walks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayerBackward {
    /// Saved bytes of the layer freed before its attention core is differentiated: the
    /// MLP's side and the attention output; eager attention also V and the softmax's
    /// 16-bit cast (`S_f`).
    pub freed: u128,
    /// Eager attention's softmax-backward temporaries (`X`; 0 for fused kernels).
    pub temp: u128,
    /// The layer's parameters whose gradients come last — q, k, v (with biases and q/k
    /// norms) and the attention norm — over the layer's parameters: `(Ψ_qkvn, Ψ_l)`.
    pub grad_part: (u128, u128),
    /// Autocast's copies freed last (q, k, v) over the layer's copied linears:
    /// `(Ψ_qkv, Ψ_attn + Ψ_mlp)` per layer.
    pub copy_part: (u128, u128),
}

impl LayerBackward {
    /// Of a layer's gradient bytes `g` and autocast copy `c`: the gradients written last
    /// (`g·Ψ_qkvn/Ψ_l`) and the copies freed last (`c·Ψ_qkv/(Ψ_attn + Ψ_mlp)`).
    pub fn qkv_parts(&self, g: u128, c: u128) -> (u128, u128) {
        let part = |x: u128, (n, d): (u128, u128)| {
            crate::units::mul_div_u128(x, n, d, false)
                .unwrap_or(x)
                .min(x)
        };
        (part(g, self.grad_part), part(c, self.copy_part))
    }
}

/// The moments inside a PyTorch layer's backward. The residual's gradient reaches the MLP
/// first: its gradients are written and its saved tensors freed, then the attention
/// output's linear's; then the attention core is differentiated — eager attention's P·V
/// matmul (∂P, ∂V; its saved V freed) and softmax (∂scores) while q, k and the fp32
/// probabilities are still saved; q, k, v's and the attention norm's gradients come last.
///
/// # Formula
/// ```text
/// S_f = T·a·d·k/t [attention output] + MLP norm + first linear input + MLP intermediates
///       eager: + [q, k, v separate]·T·a'·d·k/t [V] + [k < 4]·b·a·s'·s·k/t [softmax's cast]
/// X   = eager: (2 + c)·b·a·s'·s·4/t [∂P and ∂scores, fp32: Hugging Face takes the softmax
///       in fp32; c = 1 on CUDA, whose softmax backward allocates a temporary of the
///       gradient's size after it, 0 on a CPU tracker] + T·h·res/r [the residual stream's
///       gradient] + T·a'·d·k/t [∂V];  else 0
/// Ψ_qkvn = Ψ_attn/L − (a·d·h + b_o) + n(h)         Ψ_qkv = Ψ_attn/L − (a·d·h + b_o)
/// ```
/// `T = b·s'` tokens, `a' = a` (eager repeats the KV heads), `d` head width, `k` bytes
/// per activation, `res` bytes per residual element (`Shape::res`), `r = t` under
/// sequence parallelism, `n(h)` the norm's parameters. Only PyTorch's standard pre-norm
/// blocks without dropout (two norms a layer, no MLA, no encoder, not op-level selective
/// checkpointing); other blocks keep the whole-layer moment (`None`).
/// Source: PyTorch autograd; Hugging Face `eager_attention_forward`
/// (`softmax(..., dtype=torch.float32).to(query.dtype)`); measured with MemTracker on
/// full-width Llama-2-7B blocks (`tools/measure_pytorch.py --large-into`): fp32 eager,
/// s = 2048, TEMP 1,140,850,688 B = 2·32·2048²·4 + 2·2048·4096·4 and GRAD = the head's +
/// the MLP's + the MLP norm's + o's gradients, exactly; the 16 full-width runs 0.0 %
/// (were −6.1 … +3.1 %). CUDA's temporary: the real CUDA allocator traces of every eager
/// calibration run (`tests/data/cuda_h200/rerun`, `tests/data/cuda_h200_d`: C02, C08, C21,
/// D05, D08, D25, D31) hold one more fp32 allocation of the scores' size per layer and
/// iteration than the meta-device trace, allocated after the softmax gradient and freed at
/// once, before the saved probabilities are released.
///
/// # Example
/// Llama-2-7B shape, b = 1, s = 2048, fp32, eager: S_f = 33,554,432·2 + 100,671,488 +
/// 360,710,144 = 528,490,496 B; X = 1,073,741,824 + 33,554,432·2 = 1,140,850,688 B;
/// Ψ_qkvn = 3·4096² + 4096 = 50,335,744 of Ψ_l = 202,383,360.
pub fn layer_backward(s: &Scenario, arch: &Arch, x: &Shape) -> Option<LayerBackward> {
    layer_backward_of(s, arch, x, &memfit_layer(s, arch, x))
}

/// [`layer_backward`] from the block's terms already evaluated (`memfit_layer`).
pub fn layer_backward_of(
    s: &Scenario,
    arch: &Arch,
    x: &Shape,
    terms: &Terms,
) -> Option<LayerBackward> {
    let standard = arch.mla.is_none() && arch.encoder_layers == 0 && arch.norms_per_layer == 2;
    if s.stack.framework != Framework::Pytorch
        || s.activations.recompute == Recompute::Selective
        || s.activations.dropout
        || !standard
    {
        return None;
    }
    let eager = super::saved_attn(s, arch, x) == Attn::Eager;
    let (tok, t) = (x.b * x.sl, x.t);
    let r = if s.parallel.sp { t } else { 1 };
    let a_t = x.a.div_ceil(t);
    let probs = x.b * a_t * x.sl * x.s;
    let head_side = tok * a_t * x.d * x.k;
    let mlp_side: u128 = terms
        .iter()
        .skip_while(|t| t.name != MLP_NORM)
        .map(|t| t.bytes)
        .sum();
    let (freed, temp) = if eager {
        let v = if arch.fused_qkv { 0 } else { head_side };
        let cast = if x.k < 4 { probs * x.k } else { 0 };
        let cuda = u128::from(s.runtime.device == crate::scenario::Device::Cuda);
        let temp = (2 + cuda) * probs * 4 + tok * x.h * x.res / r + head_side;
        (head_side + v + cast + mlp_side, temp)
    } else {
        (head_side + mlp_side, 0)
    };
    let c = arch.params();
    let layers = arch.layers.get() as u128;
    let (h, a, d) = (x.h, x.a, x.d);
    let o = a * d * h + if arch.bias == Bias::All { h } else { 0 };
    let attn = c.attention as u128 / layers;
    let qkv = attn.saturating_sub(o);
    Some(LayerBackward {
        freed,
        temp,
        // Denominators of two fractions of plain parameter counts (a block has ≥ 1 weight).
        grad_part: (qkv + arch.norm.params(h), (c.per_layer as u128).max(1)),
        copy_part: (qkv, (attn + c.mlp as u128 / layers).max(1)),
    })
}

/// The linears that read the attention norm's output: q, k and v (3), one fused qkv
/// module (1), or MLA's q_a and kv_a projections (2).
pub(crate) fn attention_readers(arch: &Arch) -> u128 {
    match (arch.mla.is_some(), arch.fused_qkv) {
        (true, _) => 2,
        (false, true) => 1,
        (false, false) => 3,
    }
}

/// The linears that read the MLP norm's output: gate and up (2), one fused gate‖up
/// module or GELU's fc (1); MoE: the router, plus the shared experts' first linears.
pub(crate) fn mlp_readers(arch: &Arch) -> u128 {
    let dense = match arch.mlp {
        Mlp::Swiglu if !arch.fused_gate_up => 2,
        _ => 1,
    };
    if arch.experts == 0 {
        dense
    } else {
        1 + if arch.shared_experts > 0 { dense } else { 0 }
    }
}

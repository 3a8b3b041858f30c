//! PyTorch FSDP2's unsharded buffers: the root group, the current and prefetched
//! blocks, the unsharded gradient block, and the stage kept whole under pipelining.

use super::*;

/// FSDP under pipeline parallelism keeps the stage unsharded across micro-batches
/// (`reshard_after_forward=False`) and accumulates unsharded fp32 gradients until the
/// last micro-batch's reduce-scatter: `k·Ψ_i/t` (forward, backward) + `4·Ψ_i/t`
/// (backward, step).
pub(crate) fn fsdp_pipeline_buffers(c: &StateCtx, ledger: &mut Ledger) {
    let (k, psi, psym, gpu) = (c.k, c.psi, c.psym(), Location::Gpu);
    let src = "PyTorch FSDP2 under pipeline parallelism (torchtitan: reshard_after_forward=False with PP; gradients reduce-scattered after the last micro-batch)";
    let ctx = || c.context(gpu, "");
    let comp = Component::GatheredLayer;
    let e = c.div_expr(k, psym, psi, 1);
    let note = "stage kept unsharded across micro-batches";
    ledger.push_expr(
        &FWD_BWD,
        Mech::FsdpStageParams,
        comp,
        gpu,
        &e,
        note,
        ctx,
        src,
    );
    let e = c.div_expr(4, psym, psi, 1);
    let note = "unsharded fp32 gradients accumulated over micro-batches";
    let phases = bwd_step(c.s, c.st);
    ledger.push_expr(phases, Mech::FsdpStageGrads, comp, gpu, &e, note, ctx, src);
}

/// FSDP2's unsharded buffers without pipeline parallelism: the root group (embedding,
/// final norm, head) for the whole forward and backward, the current block, the
/// prefetched next block, and the unsharded fp32 gradient block before its
/// reduce-scatter.
///
/// # Formula
/// ```text
/// k·P_root/t (fwd, bwd) + k·P_block/t (fwd, bwd) + 4·P_block/t (bwd)
/// prefetched block:  k·P_block/t (bwd);  max(0, k·P_block/t − L_f) (fwd)
/// ```
/// `L_f` the logits and loss of the forward (`logits_forward_bytes`): the last block
/// prefetches nothing, so the forward's moment with the logits holds one block, and the
/// earlier blocks' moments with two blocks hold no logits — the forward phase, which sums
/// every saved activation with the logits, counts the second block only beyond them.
/// Source: PyTorch FSDP2 `fully_shard` (forward prefetch of the next block); measured with
/// FSDPMemTracker on 8 ranks (`tools/measure_pytorch.py --fsdp-into`): the forward's peak
/// holds the shard, the root and one block (PARAM 35,496,192 B = 7,637,248 + 16,779,264 +
/// 11,079,680).
///
/// # Example
/// The measured 8-rank fp32 run (h = 512, 4 layers, V = 4096, b·s = 512): P_block =
/// 2,769,920, k·P_block = 11,079,680 B < L_f = 36,700,160 B: the forward holds one block.
pub(crate) fn fsdp_unsharded_buffers(c: &StateCtx, l: &Layout, ledger: &mut Ledger) {
    let (arch, k, gpu) = (c.arch, c.k, Location::Gpu);
    let counts = arch.params();
    let root =
        counts.embedding + counts.lm_head + arch.norm.params(arch.hidden.get() as u128) as u64;
    let comp = Component::GatheredLayer;
    let none = String::new;
    let e = c.div_expr(k, "P_root", root, 1);
    let note = "root group unsharded: embedding, final norm, head";
    let src = "PyTorch FSDP2 fully_shard(model) root group";
    ledger.push_expr(&FWD_BWD, Mech::FsdpRoot, comp, gpu, &e, note, none, src);
    // One MoE layer's experts padded to the sharding degree (`fsdp_expert_padding`).
    // `L − first_dense` is 0 only on a shape `Arch::check` rejects (`first_dense ≥ L` with
    // experts), which the estimate still runs.
    let moe_layers =
        crate::nonzero::at_least_one(arch.layers.get() - arch.first_dense.min(arch.layers.get()))
            .get() as u64;
    let layer_experts = arch.routed_expert_params() / moe_layers;
    let ns = c.s.shard_degree().get() as u64;
    let pad = fsdp_expert_padding(c.s, arch, layer_experts, ns);
    let p_block = counts.per_layer as u128 + pad;
    let block = c.div_expr_wide(k, "P_block", p_block, 1);
    let note = "the current unsharded block";
    let src = "PyTorch FSDP2 fully_shard";
    ledger.push_expr(
        &FWD_BWD,
        Mech::FsdpBlock,
        comp,
        gpu,
        &block,
        note,
        none,
        src,
    );
    let note = "the prefetched next block";
    let src = "PyTorch FSDP2 fully_shard (backward prefetch of the next block)";
    let bwd = [Phase::Backward];
    ledger.push_expr(&bwd, Mech::FsdpPrefetch, comp, gpu, &block, note, none, src);
    let x = Shape::of(c.s, arch, l);
    let logits = logits_forward_bytes(c.s, arch, &x, c.st, (0, 0));
    let extra = block.then(&[Sym("L_f", logits), Sub]);
    if extra.eval() > 0 {
        let note =
            "the prefetched next block beyond the logits, 0 below: the last block prefetches none";
        let src = "PyTorch FSDP2 fully_shard (forward prefetch of the next block); measured with FSDPMemTracker";
        let (fwd, mech) = ([Phase::Forward], Mech::FsdpPrefetchForward);
        ledger.push_expr(&fwd, mech, comp, gpu, &extra, note, none, src);
    }
    let e = c.div_expr_wide(4, "P_block", p_block, 1);
    let note = "unsharded fp32 gradient block before reduce-scatter";
    let src = "PyTorch FSDP2 MixedPrecisionPolicy(reduce_dtype=float32)";
    ledger.push_expr(&bwd, Mech::FsdpGradBlock, comp, gpu, &e, note, none, src);
}

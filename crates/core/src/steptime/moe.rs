//! Mixture-of-experts blocks outside eager PyTorch (Megatron-Core, and every stack memfit
//! times as fused): the routed experts as grouped GEMMs at each local expert's rows, the
//! busiest expert-parallel rank, and the expert-parallel all-to-all, exposed or overlapped
//! with another micro-batch's compute (`ep_overlap`).

use super::*;

/// The routed experts' GEMMs of one weight family on one rank, seconds: each of the rank's
/// `E_l = E/ep` local experts is one GEMM over the rows routed to it (Transformer Engine's
/// `GroupedLinear` and Megatron-Core's `GroupedMLP` run one GEMM per local expert, in one
/// grouped launch), timed at [`Hw::gemm_mkn_s`]'s rate for its own `M`, times the busiest
/// rank's share ([`busiest_rank`]); the shared experts run over all `T` tokens.
///
/// # Formula
/// ```text
/// M_e = T·k / E_l = T·k·ep / E           (rows per local expert, balanced)
/// t   = E_l · t_gemm(M_e, K, N) · f_max(T·k, ep)  +  t_gemm(T, K, N)·n_shared
/// ```
/// `T` tokens a rank computes per micro-batch, `k` top-k, `E` experts, `ep` the
/// expert-parallel ranks (each receives `T·k` rows from the group when balanced).
///
/// Below the measured table's smallest `M` (2,048 rows: the Llama 3 8B TP 1 shapes of
/// `gemm.jsonl`, e.g. `llama-3-8b/tp1/qkv/M2048` 741.6 TFLOP/s bf16 against 800.6 at
/// `M8192`, `…/down/M2048` 563.7 against 651.9) the rate is [`gemm_table::efficiency`]'s
/// extrapolation: the nearest measured shapes in log `(M, K, N)`, each carried down the size
/// curve `c(F) = F/(F + 4 GFLOP)` to this GEMM's FLOPs. That curve lowers the rate by 2.8 %
/// from `M` 8,192 to 2,048 for the QKV shape where the measurement fell 7.4 %: below the
/// table the estimate is, if anything, fast.
///
/// # Example
/// Qwen3 30B-A3B (`h` 2,048, `f_e` 768, 128 experts, top-8), 4,096 tokens a rank, EP 8:
/// `E_l` = 16 experts of `M_e` = 4,096·8/16 = 2,048 rows each (EP 16: 8 of 4,096; no EP:
/// 128 of 256). Memfit had timed them as 8 GEMMs of 4,096 rows, the FLOPs the same.
pub(super) fn grouped_gemm_s(x: &Ctx, y: &flops::Gemm) -> f64 {
    // `ep_ranks` is at least 1 (`ep` and `dp·cp` are).
    let ep = x.s.ep_ranks() as f64;
    let local = (x.arch.experts as f64 / ep).max(1.0);
    let assigned = y.m * y.routed;
    let rows = assigned / local;
    let routed = local * x.hw.gemm_mkn_s(rows, y.k, y.n, 1.0) * busiest_rank(assigned, ep);
    let shared = (y.count - y.routed).max(0.0);
    if shared > 0.0 {
        routed + x.hw.gemm_mkn_s(y.m, y.k, y.n, shared)
    } else {
        routed
    }
}

/// The busiest expert-parallel rank's rows over the mean, for routing that is uniformly
/// random over the experts: the expected maximum of `n` ranks' loads. Every rank waits for
/// it at the next all-to-all, so it sets the experts' time.
///
/// # Formula
/// ```text
/// f_max = 1 + √(2·ln n) · √((1 − 1/n) / μ)        (1 when n ≤ 1)
/// ```
/// `μ = T·k` rows a rank receives on average, `n` the EP ranks: a rank's load is a sum of
/// `n·T·k` assignments landing on it with probability `1/n` (variance `μ·(1 − 1/n)`, a
/// binomial's; top-k without replacement only lowers it), and the expected maximum of `n`
/// such loads is at most `μ + σ·√(2·ln n)` (the Gaussian maximal inequality).
///
/// This is the floor a router reaches when its choice is random: Megatron-Core's
/// `moe_router_force_load_balancing` ("force override routing to balance token distribution
/// using random logits … for benchmarking purposes only"; `megatron/core/transformer/
/// transformer_config.py`), which Megatron-Bridge's MoE performance tables run ("we
/// force-balance the token distribution among experts and all benchmarks are
/// token-dropless", `docs/performance-summary-archive.md`). A trained router is less even
/// (Wang et al. 2024, "Auxiliary-Loss-Free Load Balancing Strategy for Mixture-of-Experts",
/// arXiv:2408.15664, measure it as MaxVio); memfit has no key for a learned router's
/// imbalance and counts this floor for all.
///
/// # Example
/// Qwen3 30B-A3B, 4,096 tokens a rank, top-8, EP 16: μ = 32,768,
/// `1 + 2.355·√(0.9375/32,768)` = 1.0126.
pub fn busiest_rank(mu: f64, n: f64) -> f64 {
    if n <= 1.0 || mu <= 0.0 {
        return 1.0;
    }
    1.0 + (2.0 * n.ln()).sqrt() * ((1.0 - 1.0 / n) / mu).sqrt()
}

/// Expert parallelism per block and micro-batch: dispatch and combine, forward and
/// backward, on the MoE layers' share ([`all_to_all`] over the EP ranks, TP apart),
/// `(whole, exposed, contention)` seconds.
///
/// # Formula
/// ```text
/// T_ep = 4 · (L_moe/L) · A2A(T_d·k·h·b),   T_d = T/t with sequence parallelism, else T
/// exposed = T_ep                       (ep_overlap off)
///         = max(0, T_ep − (t_fwd + t_bwd))   (ep_overlap on), plus [`contended`]'s share
/// ```
/// `T_d` the tokens a rank dispatches: under sequence parallelism the MoE layer's input is
/// the rank's `1/t` of the sequence and each TP rank sends its own shard (Megatron-Core
/// `megatron/core/transformer/moe/token_dispatcher.py`: "num_local_tokens: S/TP*B"; its
/// `TransformerConfig` refuses EP with TP but without sequence parallelism).
/// With `ep_overlap` (Megatron-Core `overlap_moe_expert_parallel_comm`, Megatron-Bridge's
/// `moe_a2a_overlap`) the schedule pairs one micro-batch's forward with another's backward
/// and runs each one's all-to-all beside the other's compute (Megatron-LM
/// `megatron/core/pipeline_parallel/combined_1f1b.py`; the same idea as DeepSeek-V3's
/// DualPipe, arXiv:2412.19437 §3.2.1): the block's four all-to-alls hide behind its forward
/// and backward compute, and the SMs NCCL holds slow that compute ([`contended`]).
/// Megatron-Core asserts `expert_model_parallel_size > 1` for it; without EP nothing runs.
///
/// # Example
/// 16 ranks over 2 DGX H100 nodes, 64 MB a rank: 0.746 ms an all-to-all ([`all_to_all`]),
/// 2.98 ms a block; beside 5 ms of compute with the overlap on, none of it is exposed and
/// the compute pays 0.182·2.98 = 0.54 ms.
pub(super) fn ep_time(x: &Ctx, blk: &Block) -> (f64, f64, f64) {
    let arch = x.arch;
    let ep = x.s.ep_ranks() as u64;
    if arch.experts == 0 || ep <= 1 {
        return (0.0, 0.0, 0.0);
    }
    let moe_share = (arch.layers.get() - arch.first_dense.min(arch.layers.get())) as f64
        / arch.layers.get() as f64;
    let dispatched = if x.s.parallel.sp {
        x.tokens / x.t
    } else {
        x.tokens
    };
    let bytes = dispatched * arch.top_k as f64 * arch.hidden.get() as f64 * x.k;
    let whole = 4.0 * moe_share * all_to_all(&x.hw, bytes, ep, x.l.tp.into(), x.per_node);
    if !x.s.runtime.ep_overlap {
        return (whole, whole, 0.0);
    }
    let window = blk.fwd + blk.bwd;
    (
        whole,
        (whole - window).max(0.0),
        contended(whole, window, contention_share(&x.hw)),
    )
}

#[cfg(test)]
mod tests {
    use super::super::{block, step_time, Ctx};
    use super::{busiest_rank, ep_time, grouped_gemm_s};
    use crate::contract::query::decode;
    use crate::estimate::Prepared;

    const Q30: &str = "model=qwen3-30b-a3b&gpu=h100-80&precision=bf16&framework=megatron\
                       &gpus_per_node=8&batch=1&seq=4096&time=1";

    /// The doc example of [`grouped_gemm_s`] by hand: Qwen3 30B-A3B on 8 H100s, EP 8, 4,096
    /// tokens a rank: 16 local experts of 4,096·8/16 = 2,048 rows, each fc1 `2,048 × 2,048 ·
    /// 2,048 × 1,536` (gate and up), at the busiest of 8 ranks' share.
    #[test]
    fn grouped_experts_by_hand() {
        let s = decode(&format!("{Q30}&nodes=1&dp=8&ep=8")).0.scenario;
        let p = Prepared::of(&s);
        let x = Ctx::of(&s, &p);
        let w = super::super::flops::block(x.arch, 1.0, 4096.0, 1.0, 1.0, 2.0);
        let fc1 = w
            .gemms()
            .iter()
            .find(|g| g.routed > 0.0)
            .copied()
            .expect("experts");
        assert_eq!(
            (fc1.m, fc1.k, fc1.n, fc1.routed),
            (4096.0, 2048.0, 1536.0, 8.0)
        );
        let f = 1.0 + (2.0 * 8f64.ln()).sqrt() * (0.875f64 / 32_768.0).sqrt();
        let want = 16.0 * x.hw.gemm_mkn_s(2048.0, 2048.0, 1536.0, 1.0) * f;
        assert!((grouped_gemm_s(&x, &fc1) / want - 1.0).abs() < 1e-12);
        // Without EP the rank holds all 128 experts, 256 rows each, and no rank waits.
        let s1 = decode(&format!("{Q30}&nodes=1&dp=8")).0.scenario;
        let p1 = Prepared::of(&s1);
        let x1 = Ctx::of(&s1, &p1);
        let want1 = 128.0 * x1.hw.gemm_mkn_s(256.0, 2048.0, 1536.0, 1.0);
        assert!((grouped_gemm_s(&x1, &fc1) / want1 - 1.0).abs() < 1e-12);
        // Smaller per-expert GEMMs run slower: the same FLOPs take longer.
        assert!(want1 > want);
    }

    /// `ep_overlap` hides the block's all-to-alls behind its forward and backward compute:
    /// the whole volume is the same, the exposed part `max(0, T_ep − (t_fwd + t_bwd))`.
    #[test]
    fn ep_overlap_hides_the_all_to_all() {
        let q = format!("{Q30}&nodes=2&dp=16&ep=16&microbatches=4");
        let (off, on) = (
            decode(&q).0.scenario,
            decode(&format!("{q}&ep_overlap=1")).0.scenario,
        );
        let t = |s| step_time(s, &Prepared::of(s)).expect("train");
        let (a, b) = (t(&off), t(&on));
        assert_eq!(a.breakdown.ep_comm_s, b.breakdown.ep_comm_s);
        let p = Prepared::of(&on);
        let x = Ctx::of(&on, &p);
        let blk = block(&x);
        let (whole, exposed, _) = ep_time(&x, &blk);
        assert!((exposed - (whole - blk.fwd - blk.bwd).max(0.0)).abs() < 1e-15);
        let hidden = 4.0 * 48.0 * (whole - exposed);
        let gained = a.breakdown.exposed_comm_s - b.breakdown.exposed_comm_s;
        assert!((gained / hidden - 1.0).abs() < 1e-9, "{gained} {hidden}");
        assert!(b.step_s < a.step_s);
    }

    /// Under sequence parallelism each TP rank dispatches its own `1/t` of the tokens: TP 2
    /// × EP 8 over 2 nodes (EP ranks 2 apart, 4 a node), 4,096 tokens, top-8, h 2,048, bf16:
    /// 2,048·8·2,048·2 B = 67.1 MB a rank, of which 4/8 leave the node on its own NIC.
    #[test]
    fn sequence_parallel_dispatches_its_shard() {
        let s = decode(&format!("{Q30}&nodes=2&tp=2&sp=1&dp=8&ep=8"))
            .0
            .scenario;
        let p = Prepared::of(&s);
        let x = Ctx::of(&s, &p);
        let (whole, _, _) = ep_time(&x, &block(&x));
        let bytes: f64 = 2048.0 * 8.0 * 2048.0 * 2.0;
        // ALPHA_INTER + max(4/8·S over 50 GB/s·0.92, 3/8·S over 450·0.80).
        let one = 50e-6 + (0.5 * bytes / (50e9 * 0.92)).max(0.375 * bytes / (450e9 * 0.80));
        assert!((whole / (4.0 * one) - 1.0).abs() < 1e-12, "{whole} {one}");
    }

    /// The doc example by hand, and no imbalance without EP.
    #[test]
    fn busiest_rank_by_hand() {
        let f = busiest_rank(32_768.0, 16.0);
        let want = 1.0 + (2.0 * 16f64.ln()).sqrt() * (0.9375f64 / 32_768.0).sqrt();
        assert!((f - want).abs() < 1e-12);
        assert!((f - 1.0126).abs() < 1e-4, "{f}");
        assert_eq!(busiest_rank(32_768.0, 1.0), 1.0);
        assert_eq!(busiest_rank(0.0, 16.0), 1.0);
    }
}

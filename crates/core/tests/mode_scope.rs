//! Keys of another mode are named and ignored: set away from its default in a mode whose
//! estimate does not read it, a key gets exactly one warning naming it, and the estimate is
//! the one without it (every byte, the serving plan and the step time).

use memfit_core::contract::query::decode;
use memfit_core::estimate::estimate;

/// `(mode's base query, key=value)`: training keys in inference and serving, serving keys in
/// training and inference, the PyTorch stack's keys in serving.
const CASES: &[(&str, &[&str])] = &[
    (
        "mode=infer&model=llama-3-8b&gpus_per_node=4&tp=2",
        &[
            "recompute=full",
            "ckpt_layers=4",
            "dropout=1",
            "cp=2",
            "sp=1",
            "vpp=2",
            "schedule=gpipe",
            "microbatches=4",
            "loss=loop",
            "finetune=lora",
            "optimizer=sgd",
            "adam_impl=fused",
            "grad_acc_dtype=fp32",
            "pin_memory=1",
            "zero_init=0",
            "buffer_factor=2",
            "reduce_bucket=1000",
            "allgather_bucket=1000",
            "overlap_comm=1",
            "prefetch_bucket=1000",
            "max_live_params=1000",
            "tp_overlap=1",
            "ce_fusion=native",
            "fp8_recipe=mxfp8",
            "fp8_params=1",
            "engine=sglang",
            "engine_version=0.10.1",
            "gpu_util=0.5",
            "max_len=4096",
            "max_batched_tokens=4096",
            "max_seqs=64",
            "block_size=32",
            "parallel=4",
            "ctx_per=total",
            "sampler=sort",
            "flash_attn=off",
            "ngl=10",
            "kv_offload=0",
            "redundant_experts=8",
        ],
    ),
    (
        "mode=serve&model=llama-3-8b&gpus_per_node=4&tp=2",
        &[
            "recompute=full",
            "dropout=1",
            "cp=2",
            "sp=1",
            "microbatches=4",
            "optimizer=sgd",
            "offload_opt=cpu",
            "zero_init=0",
            "ce_fusion=native",
            "batch=8",
            "logits=all",
            "attn=eager",
            "frag=20",
            "nccl=512",
            "device=cpu",
            "modules=plain",
        ],
    ),
    (
        "model=llama-3-8b&gpus_per_node=2",
        &[
            "engine=sglang",
            "max_len=4096",
            "gpu_util=0.5",
            "max_seqs=64",
            "ngl=10",
            "sampler=sort",
        ],
    ),
];

#[test]
fn keys_of_another_mode_are_named_once_and_ignored() {
    for (base, keys) in CASES {
        let plain = estimate(&decode(base).0.scenario);
        for kv in *keys {
            let key = kv.split('=').next().unwrap();
            // `cp=2` takes two of the GPUs DP had: compare with that DP.
            let (q, same) = if key == "cp" {
                (format!("{base}&{kv}"), format!("{base}&dp=1"))
            } else {
                (format!("{base}&{kv}"), base.to_string())
            };
            let (x, issues) = decode(&q);
            assert!(issues.is_empty(), "{q}: {issues:?}");
            let e = estimate(&x.scenario);
            let named: Vec<_> = e.warnings.iter().filter(|w| w.key == key).collect();
            assert_eq!(named.len(), 1, "{q}: {:?}", e.warnings);
            assert!(
                named[0].message.contains("ignored"),
                "{q}: {}",
                named[0].message
            );
            let want = if key == "cp" {
                estimate(&decode(&same).0.scenario)
            } else {
                plain.clone()
            };
            assert_eq!(
                (e.per_gpu_bytes, &e.serve),
                (want.per_gpu_bytes, &want.serve),
                "{q}"
            );
        }
    }
}

"""Randomised comparison of memfit's exact config.json counts with transformers.

For each family memfit counts module by module (`crates/core/src/hfconfig/hybrid.rs`,
`decoders.rs`), draws small random shapes and flags (biases, q/k norms, layer patterns,
experts, latent sizes, Hub and transformers spellings), builds each with transformers on
the meta device, and writes the config (half in the raw form given, half as the config
class writes it) and `num_parameters()` to OUT/manifest.tsv. Then

    MEMFIT_COUNTS_DIR=OUT cargo test --test hf_import -- --ignored counts_match_a_manifest

fails on any count memfit answers differently (refusals are listed, not failures).

    ~/.cache/memfit-venv/bin/python tools/fuzz_counts.py SEED PER_FAMILY [OUT] [family,...]

transformers 5.24.0 / torch 2.15.0: 315 configs (seeds 2–4, 5 per family) all exact.
"""
import json, random, sys, os, warnings
warnings.filterwarnings("ignore")
import torch
import transformers
transformers.logging.set_verbosity_error()
from transformers import AutoConfig, AutoModelForCausalLM
R = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
N = int(sys.argv[2]) if len(sys.argv) > 2 else 3
out = sys.argv[3] if len(sys.argv) > 3 else "fuzz-counts"
os.makedirs(out, exist_ok=True)
b = lambda: R.random() < 0.5
def ch(*xs): return R.choice(xs)
def lt(n, kinds): return [ch(*kinds) for _ in range(n)]
def gen(mt):
    h = ch(64, 96, 128)
    L = R.randint(2, 7)
    V = ch(100, 257)
    c = {"hidden_size": h, "num_hidden_layers": L, "vocab_size": V, "tie_word_embeddings": b(), "pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0}
    if mt in ("mamba", "falcon_mamba"):
        c.update(expand=ch(1, 2, 3), state_size=ch(4, 16), conv_kernel=ch(2, 4), use_bias=b(), use_conv_bias=b(),
                 time_step_rank=ch("auto", 7, 12))
        if b(): c["intermediate_size"] = ch(100, 200)
    elif mt == "mamba2":
        e = ch(1, 2); hd = ch(16, 32)
        c.update(expand=e, head_dim=hd, num_heads=e * h // hd, n_groups=ch(1, 2, 4), state_size=ch(8, 16),
                 conv_kernel=ch(2, 4), use_bias=b(), use_conv_bias=b())
    else:
        heads = ch(2, 4); kv = ch(1, 2) if heads % 2 == 0 else 1
        c.update(num_attention_heads=heads, num_key_value_heads=kv, intermediate_size=ch(96, 160))
        if b(): c["head_dim"] = ch(16, 32)
    if mt == "jamba":
        c.update(attn_layer_period=ch(2, 3, 8), expert_layer_period=ch(1, 2, 3), num_experts=ch(1, 3, 4), num_experts_per_tok=1,
                 mamba_d_state=ch(4, 8), mamba_d_conv=ch(2, 4), mamba_expand=ch(1, 2), mamba_dt_rank=ch("auto", 5),
                 mamba_conv_bias=b(), mamba_proj_bias=b())
        c["attn_layer_offset"] = R.randrange(c["attn_layer_period"]); c["expert_layer_offset"] = R.randrange(c["expert_layer_period"])
    if mt == "bamba":
        c.update(attn_layer_indices=sorted(R.sample(range(L), R.randint(0, L))) or None, mamba_n_heads=ch(4, 8), mamba_d_state=ch(8, 16),
                 mamba_n_groups=ch(1, 2), mamba_expand=2, mamba_d_conv=ch(2, 4), mamba_conv_bias=b(), mamba_proj_bias=b(),
                 attention_bias=b(), mlp_bias=b())
        c["mamba_d_head"] = 2 * h // c["mamba_n_heads"]
    if mt == "nemotron_h":
        c.pop("num_hidden_layers")
        pat = "".join(ch("M", "*", "-", "E") for _ in range(L))
        if b(): c["hybrid_override_pattern"] = pat; c["num_hidden_layers"] = L
        else: c["layers_block_type"] = [{"M": ch("mamba", "linear_attention"), "*": ch("attention", "full_attention"), "-": "mlp", "E": "moe"}[x] for x in pat]
        c.update(mamba_num_heads=ch(4, 8), mamba_head_dim=ch(8, 16), ssm_state_size=ch(8, 16), n_groups=ch(1, 2), conv_kernel=ch(2, 4),
                 use_bias=b(), use_conv_bias=b(), mlp_bias=b(), n_routed_experts=ch(2, 4), num_experts_per_tok=1,
                 moe_intermediate_size=ch(32, 48), moe_shared_expert_intermediate_size=ch(16, 40), moe_latent_size=ch(None, 24))
        c["head_dim"] = c.get("head_dim", ch(16, 32))
    if mt == "falcon_h1":
        c.update(mamba_d_ssm=ch(None, 64, 128), mamba_n_heads=ch(4, 8), mamba_d_state=ch(8, 16), mamba_n_groups=ch(1, 2), mamba_d_conv=ch(2, 4),
                 mamba_conv_bias=b(), mamba_proj_bias=b(), projectors_bias=b(), mamba_rms_norm=b(), attention_bias=b(), mlp_bias=b(), mamba_expand=ch(1, 2))
        d = c["mamba_d_ssm"] or c["mamba_expand"] * h
        c["mamba_d_head"] = d // c["mamba_n_heads"]
    if mt == "granitemoehybrid":
        c.update(layer_types=lt(L, ["mamba", "attention", "linear_attention", "full_attention"]), num_local_experts=ch(0, 2, 4), num_experts_per_tok=1,
                 shared_intermediate_size=ch(0, 48, 64), mamba_n_heads=ch(4, 8), mamba_d_state=ch(8, 16), mamba_n_groups=ch(1, 2), mamba_expand=2,
                 mamba_d_conv=ch(2, 4), mamba_conv_bias=b(), mamba_proj_bias=b(), attention_bias=b())
        c["mamba_d_head"] = 2 * h // c["mamba_n_heads"]
    if mt == "lfm2":
        if b(): c["layer_types"] = lt(L, ["conv", "full_attention"])
        else: c["full_attn_idxs"] = sorted(R.sample(range(L), R.randint(0, L)))
        c.update(conv_bias=b(), conv_L_cache=ch(2, 3, 4), block_auto_adjust_ff_dim=b(), block_ffn_dim_multiplier=ch(1.0, 1.3),
                 block_multiple_of=ch(16, 64))
        if b(): c["block_ff_dim"] = ch(200, 300)
        c.pop("head_dim", None)
    if mt in ("glm4", "seed_oss", "olmo3", "hunyuan_v1_dense", "hunyuan_v1_moe", "apertus", "exaone4"):
        c.update(attention_bias=b())
        if mt == "seed_oss": c.update(attention_out_bias=b(), mlp_bias=b())
        if mt.startswith("hunyuan"): c["head_dim"] = c.get("head_dim", 16)
        if mt == "hunyuan_v1_moe": c.update(num_experts=ch(1, 2, 4), moe_topk=1)
        if mt == "apertus": c["hidden_act"] = ch("xielu", "silu")
        if mt in ("olmo3", "exaone4"): c["sliding_window"] = 16
        if mt == "exaone4": c["layer_types"] = lt(L, ["sliding_attention", "full_attention"]); c.pop("attention_bias")
    if mt == "glm4_moe":
        c.update(attention_bias=b(), use_qk_norm=b(), n_routed_experts=ch(2, 4), num_experts_per_tok=1, moe_intermediate_size=ch(32, 48),
                 n_shared_experts=ch(0, 1, 2), first_k_dense_replace=R.randint(0, L), num_nextn_predict_layers=ch(0, 1))
    if mt == "ernie4_5_moe":
        c.update(use_bias=b(), moe_num_experts=ch(2, 4), moe_k=1, moe_intermediate_size=ch(32, 48), moe_num_shared_experts=ch(0, 1, 2),
                 moe_layer_start_index=R.randint(0, L - 1), moe_layer_end_index=ch(-1, L - 1, R.randint(0, L - 1)), moe_layer_interval=ch(1, 2))
    if mt == "minimax":
        c.update(layer_types=lt(L, ["full_attention", "linear_attention"]), num_local_experts=ch(2, 4), num_experts_per_tok=1)
    if mt == "qwen3_next":
        c.update(layer_types=lt(L, ["full_attention", "linear_attention"]), attention_bias=b(), linear_num_key_heads=ch(2, 4),
                 linear_key_head_dim=ch(8, 16), linear_value_head_dim=ch(8, 16), linear_conv_kernel_dim=ch(2, 4), num_experts=ch(0, 2, 4),
                 num_experts_per_tok=1, moe_intermediate_size=ch(32, 48), shared_expert_intermediate_size=ch(0, 32),
                 decoder_sparse_step=ch(1, 2), mlp_only_layers=sorted(R.sample(range(L), R.randint(0, 2))))
        c["linear_num_value_heads"] = c["linear_num_key_heads"] * ch(1, 2)
        c["head_dim"] = c.get("head_dim", 16)
    if mt == "gemma3n_text":
        L = R.randint(3, 7); c["num_hidden_layers"] = L
        types = ["sliding_attention", "full_attention"]
        c.update(layer_types=[types[i % 2] for i in range(L)], num_kv_shared_layers=ch(0, 1), hidden_size_per_layer_input=ch(8, 16),
                 vocab_size_per_layer_input=ch(50, 100), altup_num_inputs=ch(2, 4), laurel_rank=ch(4, 8), activation_sparsity_pattern=[0.0] * L,
                 intermediate_size=ch(96, [R.choice([64, 96]) for _ in range(L)]), head_dim=16, num_key_value_heads=1, num_attention_heads=2)
        c["vocab_size"] = 120
    return c
fams = sys.argv[4].split(",") if len(sys.argv) > 4 else "mamba falcon_mamba mamba2 jamba bamba nemotron_h falcon_h1 granitemoehybrid lfm2 glm4 seed_oss olmo3 hunyuan_v1_dense hunyuan_v1_moe apertus exaone4 glm4_moe ernie4_5_moe minimax qwen3_next gemma3n_text".split()
man = open(os.path.join(out, "manifest.tsv"), "a")
for mt in fams:
    for i in range(N):
        c = gen(mt)
        try:
            cfg = AutoConfig.for_model(mt, **c)
            with torch.device("meta"):
                m = AutoModelForCausalLM.from_config(cfg)
        except Exception as e:
            print(mt, "skip", type(e).__name__, str(e)[:100]); continue
        d = cfg.to_dict()
        d["model_type"] = mt
        # half the time the raw (Hub-like) form, half transformers' full form
        form = c if R.random() < 0.5 else d
        form = dict(form); form["model_type"] = mt
        name = f"{mt}-{sys.argv[1]}-{i}.json"
        with open(os.path.join(out, name), "w") as f:
            json.dump(form, f, default=str)
        man.write(f"{name}\t{m.num_parameters()}\n")

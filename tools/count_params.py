"""Parameter counts of the `tests/configs/*.json` shapes, as Hugging Face `transformers` builds them.

Each config is instantiated on PyTorch's meta device (no memory, no download) with the class a
checkpoint of that `model_type` loads into (`AutoModelForCausalLM`, `AutoModelForSeq2SeqLM` for
T5, the text model of multimodal configs such as Llama 4), and `model.num_parameters()` (tied
weights once) is printed. `tests/hf_import.rs` asserts memfit's import against these numbers.

    ~/.cache/memfit-venv/bin/python tools/count_params.py [config.json ...]

Needs `torch` and `transformers` (pip); the figures in the tests were printed by
transformers 5.23.0 and torch 2.15.0, those of the state-space, hybrid and 2024–2025
families (`hybrid_and_new_family_counts_are_exact` in `tests/hf_import.rs`: Mamba, Mamba-2,
Jamba, Bamba, Nemotron-H, Falcon-H1, Granite-4.0-H, LFM2, Qwen3-Next, GLM-4/4.5, Seed-OSS,
OLMo 3, Hunyuan, Apertus, EXAONE 4, ERNIE 4.5, MiniMax, Gemma 3n) by transformers 5.24.0
and torch 2.15.0 (CPU, `pip install torch transformers`). Those configs were written by
transformers' own config class from each checkpoint's published values
(`AutoConfig.for_model(model_type, **published).to_dict()`, a few fields such as token ids
dropped), except `nemotron-h-8b-hub.json` and `lfm2-1.2b.json`, which keep the Hub's own
spellings (`hybrid_override_pattern`, `full_attn_idxs`, `block_ff_dim`).
"""

import glob
import json
import os
import sys

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM


def build(cfg: dict):
    cfg = dict(cfg)
    model_type = cfg.pop("model_type")
    # Multimodal wrappers (Llama 4): memfit models the text decoder.
    if "text_config" in cfg:
        text = dict(cfg["text_config"])
        model_type = text.pop("model_type", model_type + "_text")
        cfg = text
    config = AutoConfig.for_model(model_type, **cfg)
    with torch.device("meta"):
        if model_type in ("t5", "mt5"):
            return AutoModelForSeq2SeqLM.from_config(config)
        return AutoModelForCausalLM.from_config(config)


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    files = sys.argv[1:] or sorted(glob.glob(os.path.join(here, "..", "tests", "configs", "*.json")))
    print(f"# transformers {transformers.__version__}, torch {torch.__version__}")
    for path in files:
        name = os.path.basename(path)
        with open(path) as f:
            cfg = json.load(f)
        if name.startswith("broken") or "model_type" not in cfg:
            continue
        try:
            model = build(cfg)
        except Exception as e:  # noqa: BLE001 - report and go on
            print(f"{name}\terror: {type(e).__name__}: {str(e)[:160]}")
            continue
        print(f"{name}\t{model.num_parameters():,}")


if __name__ == "__main__":
    main()

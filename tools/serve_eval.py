#!/usr/bin/env python3
"""Compares memfit's serving plans with the logged start-ups (tests/data/serve_logs.json).

usage: serve_eval.py <memfit binary> calibration|held_out|all [--markdown]
Runs `memfit --serve-eval`: per entry, the logged and predicted weights, KV memory, KV tokens and
profiling peak, and the median and max |error| of the KV tokens. The queries are built by
`memfit_evidence::serve` (crates/evidence/src/serve.rs), the same code tests/serve_vllm.rs and the
page's accuracy panel use; run it on the calibration part only while modelling.
"""
import subprocess, sys

if len(sys.argv) < 2:
    sys.exit(__doc__)
part = sys.argv[2] if len(sys.argv) > 2 and not sys.argv[2].startswith("--") else "calibration"
args = [sys.argv[1], "--serve-eval", part] + (["--markdown"] if "--markdown" in sys.argv else [])
sys.exit(subprocess.run(args).returncode)

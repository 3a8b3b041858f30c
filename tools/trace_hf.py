"""Re-runs tools/measure_hf.py runs and names every tensor alive at the peak.

usage: python3 tools/trace_hf.py RUN_ID [RUN_ID ...] > live.txt
(needs the venv tools/measure_hf.py uses: torch 2.15, transformers 5.24; CPU only)

A MemTracker subclass with the same accounting records, after every dispatched op, the live
storages whenever the running CPU total exceeds its previous maximum: each tensor's bytes,
category, producing op, shape, dtype and transformers stack frames. Each run reproduces the
recorded peak of tests/data/hf_measurements.json in every category (checked and printed).
This is how the inference mechanisms of 2026-11-24 (evening) were read off calibration runs:
infer::attention_width, infer::mlp_width, infer::eager_probs, Arch::softmax_in_dtype.
Never run it on held-out runs while modelling (crates/evidence/src/hf.rs: MOVED_TO_CALIBRATION).
"""
import json
import sys
import traceback

sys.path.insert(0, __import__("os").path.dirname(__file__))
import measure_hf as M  # noqa: E402
import torch  # noqa: E402
from torch.distributed._tools.mem_tracker import MemTracker, _TOTAL_KEY  # noqa: E402
from torch.distributed._tools.common_utils import get_untyped_storages  # noqa: E402
from torch.utils.weak import WeakIdKeyDictionary  # noqa: E402

CUR = {}


def producer_frames():
    fr = []
    for f in traceback.extract_stack()[:-3]:
        fn = f.filename
        if "/transformers/" in fn or "measure_hf" in fn:
            short = fn.split("site-packages/")[-1]
            fr.append(f"{short}:{f.lineno} {f.name}: {(f.line or '').strip()}")
    return fr


class TraceTracker(MemTracker):
    def __init__(self):
        super().__init__()
        self.info = WeakIdKeyDictionary()
        self.best = -1
        self.best_live = None
        self.best_op = None
        self.opcount = 0
        CUR["mt"] = self

    def _describe_new(self, func, res):
        frames = None
        for t in ([res] if isinstance(res, torch.Tensor) else
                  [x for x in torch.utils._pytree.tree_leaves(res) if isinstance(x, torch.Tensor)]):
            for st in get_untyped_storages(t):
                if st not in self.info:
                    if frames is None:
                        frames = producer_frames()
                    self.info[st] = dict(op=str(func), shape=list(t.shape), dtype=str(t.dtype).replace("torch.", ""),
                                         opidx=self.opcount, mods=list(self._mod_tracker.parents)[-3:],
                                         frames=frames[-4:])

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        res = super().__torch_dispatch__(func, types, args, kwargs)
        self.opcount += 1
        self._describe_new(func, res)
        tot = 0
        for dev, s in self._curr_mem_snap.items():
            if torch.device(dev).type == "cpu":
                tot = s[_TOTAL_KEY]
        if tot > self.best:
            self.best = tot
            live = []
            for st, (winfo, _) in self._WINFO.items():
                inf = self.info.get(st)
                live.append(dict(bytes=winfo.mem_consumed, reftype=str(winfo.reftype).split(".")[-1],
                                 ptr=st.data_ptr(), **(inf or {"op": "(external/untraced)"})))
            self.best_live = live
            self.best_op = dict(op=str(func), opidx=self.opcount, mods=list(self._mod_tracker.parents),
                                frames=producer_frames()[-6:],
                                out=[list(t.shape) for t in torch.utils._pytree.tree_leaves(res)
                                     if isinstance(t, torch.Tensor)])
        return res


M.MemTracker = TraceTracker


def show(d):
    """Prints each run's live set at its peak, parameters and buffers left out."""
    for rid, r in d.items():
        print("=" * 100)
        print(rid, "peak", r["peak"])
        op = r["peak_op"]
        print("PEAK OP:", op["op"], "out", op["out"], "mods", op["mods"][-3:])
        for f in op["frames"]:
            print("    ", f)
        cats, small = {}, 0
        for t in r["live"]:
            cats[t["reftype"]] = cats.get(t["reftype"], 0) + t["bytes"]
        print("by reftype", cats)
        for t in r["live"]:
            if t["reftype"] in ("PARAM", "BUFFER"):
                continue
            if t["bytes"] < 4096:
                small += t["bytes"]
                continue
            print(f"  {t['bytes']:>10} {t['reftype']:4} {t.get('dtype', '')} {t.get('shape', '')} op={t['op']} #{t.get('opidx')}")
            for f in t.get("frames", [])[-2:]:
                print("        ", f)
        print("  small (< 4 KiB) non-parameter bytes:", small)


def main():
    want = sys.argv[1:]
    runs = {r["id"]: r for r in json.load(open(M.RUNS_PATH))["runs"]}
    meas = {r["id"]: r for r in json.load(open(M.OUT_PATH))["runs"]}
    out = {}
    for rid in want:
        r = runs[rid]
        res = M.measure(r)
        mt = CUR["mt"]
        live = sorted(mt.best_live, key=lambda x: -x["bytes"])
        out[rid] = dict(peak=res["peak"], expected=meas[rid]["peak"], trace_max=mt.best, peak_op=mt.best_op,
                        live=live, hf_config=res["hf_config"], info=res["info"])
        print(rid, "mine", res["peak"]["Total"], "trace", mt.best, "file", meas[rid]["peak"]["Total"],
              "match" if res["peak"] == meas[rid]["peak"] else "DIFF", file=sys.stderr, flush=True)
    show(out)


if __name__ == "__main__":
    main()

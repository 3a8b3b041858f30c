#!/usr/bin/env python3
"""What granularity an allocation stream needs for the caching allocator to give the right
`max_memory_reserved`, measured on real CUDA traces (tools/measure_cuda.py --streams).

usage: python3 tools/cuda_trace_study.py [TRACES.txt.gz MEASURED.jsonl] ...
(default: set D and the calibration runs measured again). For each training run: the replay of the
whole trace (tools/sim_alloc.py) against the measured reserved, then the replay's change when the
stream is coarsened: allocations under 1 MiB / 8 MiB / 64 MiB dropped, and every run of
consecutive allocations (no free between them) merged into one block (what an event program
with one event per layer and component gives the allocator).
"""
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import sim_alloc as S  # noqa: E402

MB = 1 << 20
ROOT = os.path.join(os.path.dirname(__file__), "..")
DEFAULT = [("tests/data/cuda_h200_d/streams.txt.gz", "tests/data/cuda_h200_d/train.jsonl"),
           ("tests/data/cuda_h200/rerun/streams.txt.gz", "tests/data/cuda_h200/rerun/train.jsonl")]


def streams(path):
    cur, ev = None, []
    for line in gzip.open(path, "rt"):
        if line.startswith("#"):
            if cur:
                yield cur, ev
            cur, ev = line.split()[1], []
            continue
        p = line.split()
        ev.append((p[0], int(p[1]), int(p[2]) if len(p) > 2 else 0))
    if cur:
        yield cur, ev


def replay(ev):
    a, live = S.Allocator(), {}
    for op, x, y in ev:
        if op == "a":
            live[x] = a.malloc(y)
        elif op == "f" and x in live:
            a.free(live.pop(x))
    return a.max_reserved


def drop(ev, limit):
    gone, out = set(), []
    for op, x, y in ev:
        if op == "a" and y < limit:
            gone.add(x)
        elif not (op == "f" and x in gone):
            out.append((op, x, y))
    return out


def lump(ev):
    out, group, members, cur, gid = [], {}, {}, None, 1 << 40
    for op, x, y in ev:
        if op == "a":
            if cur is None:
                gid += 1
                cur, members[gid] = gid, [0, 0]
            members[cur][0] += y
            members[cur][1] += 1
            group[x] = cur
        elif op == "f":
            if cur is not None:
                out.append(("a", cur, members[cur][0]))
                cur = None
            g = group.pop(x, None)
            if g is not None:
                members[g][1] -= 1
                if members[g][1] == 0:
                    out.append(("f", g, 0))
    if cur is not None:
        out.append(("a", cur, members[cur][0]))
    return out


def main():
    pairs = list(zip(sys.argv[1::2], sys.argv[2::2])) or DEFAULT
    cols = {"whole": [], "<1MiB dropped": [], "<8MiB dropped": [], "<64MiB dropped": [], "lumped": []}
    for sp, mp in pairs:
        meas = {}
        for line in open(os.path.join(ROOT, mp)):
            r = json.loads(line)
            if "error" not in r:
                meas[r["id"]] = r["max_reserved"]
        for rid, ev in streams(os.path.join(ROOT, sp)):
            if rid not in meas or rid.startswith(("J", "DJ")):
                continue
            base = replay(ev)
            row = {"whole": base / meas[rid] - 1}
            for k, e2 in (("<1MiB dropped", drop(ev, MB + 1)), ("<8MiB dropped", drop(ev, 8 * MB)),
                          ("<64MiB dropped", drop(ev, 64 * MB)), ("lumped", lump(ev))):
                row[k] = replay(e2) / base - 1
            for k, v in row.items():
                cols[k].append(abs(v))
            print(rid, "  ".join(f"{k} {v:+.1%}" for k, v in row.items()))
    for k, v in cols.items():
        v.sort()
        print(f"{k:15} n={len(v)} median {100 * v[len(v) // 2]:.2f} % max {100 * v[-1]:.2f} %")


if __name__ == "__main__":
    main()

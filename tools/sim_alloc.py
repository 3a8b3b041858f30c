"""PyTorch's CUDACachingAllocator (default settings), replayed on an allocation stream.

usage: python3 tools/sim_alloc.py STREAM.json [...]   (tools/trace_alloc.py's output; the run's
measurement is read from tests/data/cuda_h200/train.jsonl). memfit_core::allocator is the same
mechanism in Rust (`memfit --alloc-replay STREAM.json`).
Mechanisms (c10/cuda/CUDACachingAllocator.cpp, torch 2.x): sizes rounded up to 512 B; requests
<= 1 MiB from the small pool, in 2 MiB segments; larger requests from the large pool: under 10 MiB
a 20 MiB segment, else the size rounded up to 2 MiB; best fit (smallest free block that fits, then
lowest address) within the pool; a block is split when the remainder is >= 512 B (small pool) or
> 1 MiB (large pool), otherwise handed out whole; a freed block merges with free neighbours in its
segment; segments are never released (no empty_cache, no OOM retry).
"""
import bisect
import json
import os
import sys

KB, MB = 1 << 10, 1 << 20
SMALL, SMALL_SEG, LARGE_SEG, MIN_LARGE, ROUND_LARGE = 1 * MB, 2 * MB, 20 * MB, 10 * MB, 2 * MB


def round_size(n):
    return 512 if n < 512 else (n + 511) // 512 * 512


def seg_size(n):
    if n <= SMALL:
        return SMALL_SEG
    if n < MIN_LARGE:
        return LARGE_SEG
    return (n + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE


class Block:
    __slots__ = ("seg", "addr", "size", "free", "prev", "next", "seg_small")

    def __init__(self, seg, addr, size):
        self.seg, self.addr, self.size, self.free, self.prev, self.next = seg, addr, size, True, None, None


class Allocator:
    def __init__(self, expandable=False):
        self.pools = {True: [], False: []}  # small? -> sorted [(size, addr, block)]
        self.reserved = self.allocated = self.max_reserved = self.max_allocated = 0
        self.next_addr = 0
        self.expandable = expandable

    def _insert(self, b):
        small = b.size <= SMALL if False else b.seg_small
        bisect.insort(self.pools[small], (b.size, b.addr, b))

    def _remove(self, b):
        pool = self.pools[b.seg_small]
        i = bisect.bisect_left(pool, (b.size, b.addr))
        while pool[i][2] is not b:
            i += 1
        pool.pop(i)

    def malloc(self, n):
        size = round_size(n)
        small = size <= SMALL
        pool = self.pools[small]
        i = bisect.bisect_left(pool, (size, -1))
        if i < len(pool):
            b = pool.pop(i)[2]
        else:
            s = seg_size(size)
            b = Block(self.next_addr, self.next_addr, s)
            b.seg_small = small
            self.next_addr += s + (1 << 40)
            self.reserved += s
            self.max_reserved = max(self.max_reserved, self.reserved)
        rem = b.size - size
        if (small and rem >= 512) or (not small and rem > SMALL):
            r = Block(b.seg, b.addr + size, rem)
            r.seg_small = b.seg_small
            r.prev, r.next = b, b.next
            if b.next:
                b.next.prev = r
            b.next = r
            b.size = size
            self._insert(r)
        b.free = False
        self.allocated += b.size
        self.max_allocated = max(self.max_allocated, self.allocated)
        return b

    def free(self, b):
        b.free = True
        self.allocated -= b.size
        for nb in (b.prev, b.next):
            if nb is not None and nb.free:
                self._remove(nb)
                if nb is b.prev:
                    nb.size += b.size
                    nb.next = b.next
                    if b.next:
                        b.next.prev = nb
                    b = nb
                else:
                    b.size += nb.size
                    b.next = nb.next
                    if nb.next:
                        nb.next.prev = b
        b.free = True
        self._insert(b)


def replay(stream, resident_tensors=(), expandable=False):
    a = Allocator(expandable)
    for n in resident_tensors:
        a.malloc(n)
    live = {}
    marks = {}
    for d, k in stream:
        if d == 0:
            marks[k] = (a.allocated, a.reserved)
            continue
        if d > 0:
            live[k] = a.malloc(d)
        else:
            b = live.pop(k, None)
            if b is not None:
                a.free(b)
    return a, marks


def main():
    runs = {}
    for line in open(os.path.join(os.path.dirname(__file__), "..", "tests/data/cuda_h200/train.jsonl")):
        r = json.loads(line)
        runs[r["id"]] = r
    G = 1 << 30
    for path in sys.argv[1:]:
        t = json.load(open(path))
        r = runs[t["id"]]
        a, marks = replay([(d, k) for d, k in t["events"] if d != 0], t["resident"])
        it = r["iters"][1]
        print(f"{t['id']} alloc peak sim {a.max_allocated / G:6.2f} meas {it['peak'] / G:6.2f} | reserved sim "
              f"{a.max_reserved / G:6.2f} meas {r['max_reserved'] / G:6.2f} ({(a.max_reserved - r['max_reserved']) / r['max_reserved']:+.1%})"
              f" | gap sim {(a.max_reserved - a.max_allocated) / a.max_allocated:+.1%} meas {(r['max_reserved'] - it['peak']) / it['peak']:+.1%}")


if __name__ == "__main__":
    main()

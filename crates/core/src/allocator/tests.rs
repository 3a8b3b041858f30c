//! The allocator's unit tests: the doc examples by hand and the pools' rules.

use super::*;
const KIB: u64 = 1 << 10;

#[test]
fn rounding_and_segment_sizes_follow_the_allocator_constants() {
    assert_eq!(block_size(1), 512);
    assert_eq!(block_size(513), 1024);
    assert_eq!(block_size(3 * KIB), 3 * KIB);
    assert_eq!(segment_size(512), 2 * MIB);
    assert_eq!(segment_size(MIB), 2 * MIB);
    assert_eq!(segment_size(MIB + 512), 20 * MIB);
    assert_eq!(segment_size(10 * MIB - 512), 20 * MIB);
    assert_eq!(segment_size(10 * MIB), 10 * MIB);
    assert_eq!(segment_size(11 * MIB), 12 * MIB);
}

#[test]
fn the_doc_example_two_5_mib_then_11_mib() {
    let mut a = CachingAllocator::new();
    a.malloc(5 * MIB);
    a.malloc(5 * MIB);
    assert_eq!((a.reserved, a.allocated), (20 * MIB, 10 * MIB));
    a.malloc(11 * MIB);
    // Its 1 MiB remainder is not split off: the block is the whole 12 MiB.
    assert_eq!((a.reserved, a.allocated), (32 * MIB, 22 * MIB));
}

#[test]
fn small_requests_share_a_2_mib_segment_and_large_ones_do_not_use_it() {
    let mut a = CachingAllocator::new();
    for _ in 0..4 {
        a.malloc(100 * KIB);
    }
    assert_eq!(a.reserved, 2 * MIB);
    // 1.5 MiB is a large-pool request: it opens a 20 MiB segment though 1.6 MiB of the
    // small segment is free.
    a.malloc(3 * MIB / 2);
    assert_eq!(a.reserved, 22 * MIB);
}

#[test]
fn a_remainder_of_at_most_1_mib_is_not_split_off() {
    let mut a = CachingAllocator::new();
    let x = a.malloc(20 * MIB);
    a.free(x);
    // 19.5 MiB from the free 20 MiB block: the 0.5 MiB remainder stays in the block.
    a.malloc(39 * MIB / 2);
    assert_eq!((a.reserved, a.allocated), (20 * MIB, 20 * MIB));
}

#[test]
fn freed_neighbours_merge_and_best_fit_picks_the_smallest_block() {
    let mut a = CachingAllocator::new();
    let small = a.malloc(12 * MIB); // a segment of its own (12 MiB)
    let big = a.malloc(64 * MIB);
    a.free(big);
    let p = a.malloc(16 * MIB);
    let q = a.malloc(16 * MIB);
    let _pin = a.malloc(16 * MIB);
    a.free(small);
    a.free(p);
    a.free(q);
    // p and q merged into one 32 MiB block: a 30 MiB request fits without a new segment.
    assert_eq!(a.reserved, 76 * MIB);
    a.malloc(30 * MIB);
    assert_eq!(a.reserved, 76 * MIB);
    // A 12 MiB request takes the 12 MiB segment (best fit), not the 16 MiB tail.
    a.malloc(12 * MIB);
    assert_eq!(a.reserved, 76 * MIB);
    assert_eq!(a.cached_free(), 76 * MIB - (30 + 16 + 12) * MIB);
}

#[test]
fn a_pinned_block_keeps_the_free_space_around_it_apart() {
    // Fragmentation: 2 × 40 MiB free on either side of a live 20 MiB block cannot serve
    // a 60 MiB request, which opens a new segment.
    let mut a = CachingAllocator::new();
    let seg = a.malloc(100 * MIB);
    a.free(seg);
    let l = a.malloc(40 * MIB);
    let _pin = a.malloc(20 * MIB);
    let r = a.malloc(40 * MIB);
    a.free(l);
    a.free(r);
    a.malloc(60 * MIB);
    assert_eq!(a.reserved, 160 * MIB);
    assert_eq!(a.allocated, 80 * MIB);
}

#[test]
fn capped_doc_example_releases_the_cached_segment_and_retries() {
    let mut a = CachingAllocator::capped(60 * MIB);
    let x = a.malloc(30 * MIB);
    a.free(x);
    assert_eq!(a.reserved, 30 * MIB);
    let _y = a.malloc(40 * MIB);
    assert_eq!(
        (a.reserved, a.max_reserved, a.retries, a.oom),
        (40 * MIB, 40 * MIB, 1, false)
    );
    // Nothing cached to release: 40 MiB live + 30 asked > 60, out of memory.
    let _z = a.malloc(30 * MIB);
    assert!(a.oom);
    assert_eq!(a.retries, 2);
    // Unbounded, the same stream keeps the 30 MiB segment cached and reuses it: 30 + 40.
    let mut u = CachingAllocator::new();
    let x = u.malloc(30 * MIB);
    u.free(x);
    u.malloc(40 * MIB);
    u.malloc(30 * MIB);
    assert_eq!((u.max_reserved, u.retries, u.oom), (70 * MIB, 0, false));
}

#[test]
fn expandable_doc_example_grows_the_segment_end() {
    let mut a = CachingAllocator::expandable();
    a.malloc(5 * MIB);
    assert_eq!((a.reserved, a.allocated), (20 * MIB, 5 * MIB));
    a.malloc(30 * MIB);
    assert_eq!((a.reserved, a.allocated), (40 * MIB, 35 * MIB));
    let mut d = CachingAllocator::new();
    d.malloc(5 * MIB);
    d.malloc(30 * MIB);
    assert_eq!(d.reserved, 50 * MIB);
}

#[test]
fn expandable_splits_small_remainders_and_reuses_holes() {
    let mut a = CachingAllocator::expandable();
    // 19.5 MiB from one 20 MiB page: the 0.5 MiB remainder is split off (≥ 512 B).
    let x = a.malloc(39 * MIB / 2);
    assert_eq!((a.reserved, a.allocated), (20 * MIB, 39 * MIB / 2));
    let _pin = a.malloc(MIB / 2 + MIB); // 1.5 MiB: the free 0.5 MiB tail grows by a page
    assert_eq!(a.reserved, 40 * MIB);
    a.free(x);
    // The 19.5 MiB hole before the pinned block serves a 19.25 MiB request (the free
    // tail, 40 − 21 = 19 MiB, is too small): no new page.
    a.malloc(77 * MIB / 4);
    assert_eq!(a.reserved, 40 * MIB);
    // A 59 MiB request: the free tail grows by 2 pages (19 + 40 ≥ 59).
    a.malloc(59 * MIB);
    assert_eq!(a.reserved, 80 * MIB);
    // The small pool maps 2 MiB pages of its own.
    a.malloc(100 * KIB);
    assert_eq!(a.reserved, 82 * MIB);
}

#[test]
fn parse_stream_reads_the_trace_format_and_names_what_is_wrong() {
    let (r, e) =
        parse_stream(r#"{"resident":[512,1048576],"events":[[2048,1],[0,0],[-2048,1]]}"#).unwrap();
    assert_eq!(r, vec![512, MIB]);
    assert_eq!(e, vec![(2048, 1), (0, 0), (-2048, 1)]);
    assert!(parse_stream("[").unwrap_err().contains("not JSON"));
    assert!(parse_stream(r#"{"events":[]}"#)
        .unwrap_err()
        .contains("`resident`"));
    assert!(parse_stream(r#"{"resident":[-1],"events":[]}"#)
        .unwrap_err()
        .contains("resident[0]"));
    assert!(parse_stream(r#"{"resident":[],"events":[[1.5,2]]}"#)
        .unwrap_err()
        .contains("events[0]"));
    assert!(parse_stream(r#"{"resident":[],"events":[[1]]}"#)
        .unwrap_err()
        .contains("pair"));
}

#[test]
fn replay_ignores_unknown_frees_and_counts_peaks() {
    let ev = [
        (10 * MIB as i64, 1),
        (-(10 * MIB as i64), 1),
        (-5, 7),
        (0, 0),
        (4 * MIB as i64, 2),
    ];
    let a = replay(&[MIB], &ev);
    assert_eq!(a.max_allocated, 11 * MIB);
    assert_eq!(a.max_reserved, 2 * MIB + 10 * MIB);
    assert_eq!(a.allocated, MIB + 4 * MIB);
}

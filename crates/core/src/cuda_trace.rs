//! Real CUDA allocator traces (`torch.cuda.memory._record_memory_history`, as
//! `tools/measure_cuda.py --streams` writes them) read into allocation streams for
//! [`crate::allocator`], with what the real allocator did alongside.
//!
//! Format, one event per line, one block per run (`# RUN_ID` starts it):
//! `a ID SIZE` (an allocation of SIZE bytes, IDs numbered in order of first use), `f ID` (its
//! free completed), `S SIZE` / `s SIZE` (the real allocator's segment `cudaMalloc` /
//! `cudaFree`), `M SIZE` / `U SIZE` (expandable-segment map / unmap), `O SIZE` (out of memory).
//! Anything else is an error with its line number.

use crate::allocator::StreamEvent;

/// One run's trace: the stream to replay and the real allocator's own segment record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CudaTrace {
    /// The run's id (`D01`, `C03`, `J05`, …).
    pub id: String,
    /// `(bytes, id)` pairs as [`crate::allocator::replay`] takes them (frees carry −1).
    pub events: Vec<StreamEvent>,
    /// The real allocator's high-water mark of the segments opened during the trace
    /// (Σ `S` − Σ `s`, maximum over time), bytes. Segments cached before recording began
    /// are not in it.
    pub traced_max_reserved: u64,
    /// `cudaMalloc` calls the real allocator made during the trace.
    pub segments_opened: u64,
}

/// Parses every run of a trace text.
///
/// # Errors
/// The first malformed line, with its number: an unknown letter, a missing or non-integer
/// field, or an event before the first `# RUN_ID`.
pub fn parse_cuda_traces(text: &str) -> Result<Vec<CudaTrace>, String> {
    let mut runs: Vec<CudaTrace> = Vec::new();
    let mut reserved: u64 = 0;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if let Some(id) = line.strip_prefix('#') {
            runs.push(CudaTrace {
                id: id.trim().to_string(),
                ..CudaTrace::default()
            });
            reserved = 0;
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        let Some(run) = runs.last_mut() else {
            return Err(format!(
                "line {n}: an event before the first `# RUN_ID` line"
            ));
        };
        let mut f = line.split_whitespace();
        let op = f.next().unwrap_or_default();
        let mut num = |what: &str| -> Result<i64, String> {
            f.next()
                .and_then(|x| x.parse::<i64>().ok())
                .ok_or_else(|| format!("line {n}: `{line}` lacks its {what} (an integer)"))
        };
        match op {
            "a" => {
                let id = num("id")?;
                let size = num("size")?;
                if id < 0 || size < 0 {
                    return Err(format!("line {n}: `{line}`: negative id or size"));
                }
                // A 0-byte request takes no block (PyTorch returns a null pointer): the replay skips it.
                run.events.push((size, id.unsigned_abs()));
            }
            "f" => {
                let id = num("id")?;
                // -1: the free of a block allocated before recording began: nothing to replay.
                if id >= 0 {
                    run.events.push((-1, id.unsigned_abs()));
                }
            }
            "S" | "M" => {
                reserved += num("size")?.unsigned_abs();
                run.segments_opened += u64::from(op == "S");
                run.traced_max_reserved = run.traced_max_reserved.max(reserved);
            }
            "s" | "U" => reserved = reserved.saturating_sub(num("size")?.unsigned_abs()),
            "O" => {
                num("size")?;
            }
            _ => {
                return Err(format!(
                    "line {n}: unknown event `{op}` (a, f, S, s, M, U, O)"
                ))
            }
        }
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocator::replay;

    #[test]
    fn a_hand_written_trace_parses_and_replays() {
        // Two 5 MiB tensors share one 20 MiB segment; the real allocator opened it once.
        let t = "# X1\nS 20971520\na 0 5242880\na 1 5242880\nf 0\nf -1\n# X2\na 0 512\n";
        let runs = parse_cuda_traces(t).unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].id, "X1");
        assert_eq!(runs[0].events, vec![(5 << 20, 0), (5 << 20, 1), (-1, 0)]);
        assert_eq!(
            (runs[0].traced_max_reserved, runs[0].segments_opened),
            (20 << 20, 1)
        );
        let a = replay(&[], &runs[0].events);
        assert_eq!((a.max_reserved, a.max_allocated), (20 << 20, 10 << 20));
    }

    #[test]
    fn malformed_lines_are_named() {
        assert!(parse_cuda_traces("a 0 5\n").unwrap_err().contains("line 1"));
        assert!(parse_cuda_traces("# R\nx 1\n")
            .unwrap_err()
            .contains("unknown event `x`"));
        assert!(parse_cuda_traces("# R\na 1\n")
            .unwrap_err()
            .contains("size"));
    }
}

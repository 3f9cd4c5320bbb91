//! Longest queue first (LQF): the free input with the most packets waiting for this output,
//! its oldest packet; ties go to the input whose oldest waiting packet is oldest. The classic
//! maximum-weight heuristic (McKeown, Anantharam and Walrand, "Achieving 100% throughput in an
//! input-queued switch", INFOCOM 1996, which shows LQF stable under admissible uniform load),
//! applied per output decision. It counts the packets of the scan only; no pointer state.

use super::{CrossbarArbiter, Output, Waiting};

/// Packets of a queue looked at (and counted).
pub const SCAN_MAX: usize = 1024;

#[derive(Clone, Copy, Debug, Default)]
pub struct LongestQueueFirst;

impl CrossbarArbiter for LongestQueueFirst {
    fn scan_len(&self) -> usize {
        SCAN_MAX
    }
    fn pick(&self, _out: Output, waiting: &[Waiting]) -> Option<usize> {
        // (count, first position) per free input seen, in order of first appearance.
        let mut inputs: Vec<(u32, usize, usize)> = Vec::new();
        for (k, w) in waiting.iter().enumerate() {
            if !w.free {
                continue;
            }
            match inputs.iter_mut().find(|e| e.0 == w.input) {
                Some(e) => e.1 += 1,
                None => inputs.push((w.input, 1, k)),
            }
        }
        // Most waiting first; among equals the earliest first position (max_by_key keeps the
        // last maximum, so compare with the position reversed).
        inputs.iter().max_by_key(|e| (e.1, std::cmp::Reverse(e.2))).map(|e| e.2)
    }
}

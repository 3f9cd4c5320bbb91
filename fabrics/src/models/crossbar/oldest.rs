//! Oldest first: the oldest packet whose input is free (a greedy output-first matching; with
//! unlimited speed-up simply the oldest packet). The default, and the model before arbitration
//! became configurable.

use super::{CrossbarArbiter, Output, Waiting};

/// Packets of a queue looked at for a free input: a bound on the work per decision.
pub const SCAN_MAX: usize = 64;

#[derive(Clone, Copy, Debug, Default)]
pub struct OldestFirst;

impl CrossbarArbiter for OldestFirst {
    fn scan_len(&self) -> usize {
        SCAN_MAX
    }
    fn oldest_when_all_free(&self) -> bool {
        true
    }
    fn pick(&self, _out: Output, waiting: &[Waiting]) -> Option<usize> {
        waiting.iter().position(|w| w.free)
    }
}

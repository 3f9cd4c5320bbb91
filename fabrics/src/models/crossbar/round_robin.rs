//! Round-robin over the node's input ports: each output keeps a pointer and takes the oldest
//! eligible packet of the first input at or after it, then moves the pointer one past that
//! input.

use super::{CrossbarArbiter, Output, Waiting};

/// Packets of a queue looked at: every input with a packet queued must be seen (short packets
/// of one input would otherwise hide the others).
pub const SCAN_MAX: usize = 1024;

#[derive(Clone, Debug)]
pub struct RoundRobin {
    /// Per output port: its grant pointer, a node-local input port index.
    pub(super) grant_ptr: Vec<u32>,
}

impl RoundRobin {
    pub fn new(n_ports: usize) -> Self {
        RoundRobin {
            grant_ptr: vec![0; n_ports],
        }
    }
}

/// The oldest packet of the free input nearest `ptr` (ties: the oldest).
pub(super) fn nearest_free(out: Output, ptr: u32, waiting: &[Waiting]) -> Option<usize> {
    let mut best: Option<(u32, usize)> = None;
    for (k, w) in waiting.iter().enumerate() {
        if !w.free {
            continue;
        }
        let d = out.dist(ptr, w.input);
        if best.is_none_or(|b| d < b.0) {
            best = Some((d, k));
        }
    }
    best.map(|(_, k)| k)
}

impl CrossbarArbiter for RoundRobin {
    fn scan_len(&self) -> usize {
        SCAN_MAX
    }
    fn pick(&self, out: Output, waiting: &[Waiting]) -> Option<usize> {
        nearest_free(out, self.grant_ptr[out.port as usize], waiting)
    }
    fn granted(&mut self, out: Output, waiting: &[Waiting], k: usize, _input_port: u32) {
        self.grant_ptr[out.port as usize] = (waiting[k].input + 1) % out.n_ports;
    }
}

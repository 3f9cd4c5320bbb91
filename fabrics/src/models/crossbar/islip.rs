//! iSLIP (McKeown, IEEE/ACM ToN 1999) applied per output decision in an asynchronous engine
//! (outputs free up one at a time, not in slots): request = every input with a packet in the
//! output's queue; grant = the first requester at or after the output's grant pointer; the
//! input accepts if it is free (with one output deciding at a time no competing grant exists,
//! so the accept pointer is kept but decides nothing); a refused grant goes on to the next
//! requester (iSLIP's later iterations), so the packet taken is the one round-robin takes. The
//! grant pointer moves one past the input, and that input's accept pointer one past the output,
//! only when the first grant was accepted (pointers move in the first iteration only: the rule
//! that desynchronises the outputs). Not modelled: slots, a bounded number of iterations,
//! request/grant/accept latency.

use super::round_robin::{SCAN_MAX, nearest_free};
use super::{CrossbarArbiter, Output, Waiting};

#[derive(Clone, Debug)]
pub struct Islip {
    /// Per output port: its grant pointer (node-local input index).
    pub(super) grant_ptr: Vec<u32>,
    /// Per input port: its accept pointer (node-local output index).
    pub(super) accept_ptr: Vec<u32>,
}

impl Islip {
    pub fn new(n_ports: usize) -> Self {
        Islip {
            grant_ptr: vec![0; n_ports],
            accept_ptr: vec![0; n_ports],
        }
    }
    /// The grant pointer of output port `p`.
    pub fn grant_pointer(&self, p: u32) -> u32 {
        self.grant_ptr[p as usize]
    }
    /// The accept pointer of input port `x`.
    pub fn accept_pointer(&self, x: u32) -> u32 {
        self.accept_ptr[x as usize]
    }
}

impl CrossbarArbiter for Islip {
    fn scan_len(&self) -> usize {
        SCAN_MAX
    }
    fn pick(&self, out: Output, waiting: &[Waiting]) -> Option<usize> {
        nearest_free(out, self.grant_ptr[out.port as usize], waiting)
    }
    fn granted(&mut self, out: Output, waiting: &[Waiting], k: usize, input_port: u32) {
        let ptr = self.grant_ptr[out.port as usize];
        let d = out.dist(ptr, waiting[k].input);
        // The first grant went to the requester nearest the pointer, busy or not.
        if waiting.iter().any(|w| out.dist(ptr, w.input) < d) {
            return;
        }
        self.accept_ptr[input_port as usize] = (out.local + 1) % out.n_ports;
        self.grant_ptr[out.port as usize] = (waiting[k].input + 1) % out.n_ports;
    }
}

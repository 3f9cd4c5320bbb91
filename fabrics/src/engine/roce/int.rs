//! In-band network telemetry (INT) for HPCC: the records a data packet collects at the switch
//! egresses it leaves, kept beside the packet arena (indexed by packet id) rather than in
//! `Packet`, so that a run without INT carries nothing and every packet stays one cache line.
//! The receiver copies a data packet's records to the ACK it sends.

use crate::models::IntHop;
use crate::models::cc::hpcc::MAX_INT_HOPS;

/// The records of one packet, in path order (at most [`MAX_INT_HOPS`]; later hops add none,
/// as HPCC-sim's `IntHeader::PushHop`).
#[derive(Clone, Copy, Debug, Default)]
pub(in crate::engine) struct IntStack {
    hops: [IntHop; MAX_INT_HOPS],
    n: u8,
}

impl IntStack {
    pub(super) fn hops(&self) -> &[IntHop] {
        &self.hops[..self.n as usize]
    }
}

/// INT stacks by packet id; grows with the packet arena's high-water mark.
#[derive(Default)]
pub(super) struct IntTable {
    stacks: Vec<IntStack>,
}

impl IntTable {
    fn slot(&mut self, id: u32) -> &mut IntStack {
        let i = id as usize;
        if i >= self.stacks.len() {
            self.stacks.resize(i + 1, IntStack::default());
        }
        &mut self.stacks[i]
    }

    /// Packet `id` starts with no records (a data packet just cut, whatever id it reuses).
    pub(super) fn clear(&mut self, id: u32) {
        self.slot(id).n = 0;
    }

    /// A switch egress stamps packet `id`.
    pub(super) fn push(&mut self, id: u32, hop: IntHop) {
        let st = self.slot(id);
        if (st.n as usize) < MAX_INT_HOPS {
            st.hops[st.n as usize] = hop;
            st.n += 1;
        }
    }

    /// The records of packet `id`.
    pub(super) fn get(&self, id: u32) -> IntStack {
        self.stacks.get(id as usize).copied().unwrap_or_default()
    }

    /// Packet `id` (an ACK or NACK) carries `stack`.
    pub(super) fn set(&mut self, id: u32, stack: IntStack) {
        *self.slot(id) = stack;
    }
}

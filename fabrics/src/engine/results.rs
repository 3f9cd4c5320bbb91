//! What a run produces: per-flow records and whole-run totals (plain data).

use crate::traffic::FlowSpec;
use sim_core::SimTime;

/// One flow's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowRecord {
    pub id: u32,
    pub src: u32,
    pub dst: u32,
    pub size_bytes: u64,
    pub start: SimTime,
    /// When its first packet started on the wire.
    pub first_sent: Option<SimTime>,
    /// When its last payload byte was delivered; `None` if it never completed.
    pub finish: Option<SimTime>,
    /// When its most recent packet was delivered.
    pub last_delivery: Option<SimTime>,
    pub packets_sent: u64,
    pub packets_delivered: u64,
    pub packets_dropped: u64,
    pub packets_marked: u64,
    pub bytes_delivered: u64,
}

impl FlowRecord {
    pub fn new(id: u32, f: &FlowSpec) -> Self {
        FlowRecord {
            id,
            src: f.src,
            dst: f.dst,
            size_bytes: f.size.get(),
            start: f.start,
            first_sent: None,
            finish: None,
            last_delivery: None,
            packets_sent: 0,
            packets_delivered: 0,
            packets_dropped: 0,
            packets_marked: 0,
            bytes_delivered: 0,
        }
    }

    /// Flow completion time in ps.
    pub fn fct_ps(&self) -> Option<u64> {
        self.finish.map(|f| f.since(self.start).ps())
    }

    /// Goodput in bits per second: payload delivered over the time from the flow's start to
    /// its last delivery (its completion, for a completed flow). `None` before any delivery.
    pub fn goodput_bps(&self) -> Option<f64> {
        let last = self.last_delivery?;
        let ps = last.since(self.start).ps();
        (ps > 0).then(|| self.bytes_delivered as f64 * 8.0 * 1e12 / ps as f64)
    }
}

/// Whole-run counters. Conservation: `packets_injected == packets_delivered +
/// packets_dropped + packets in the network`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunTotals {
    /// Packets placed on a link, all kinds (the performance figure "link-hops").
    pub link_hops: u64,
    pub packets_injected: u64,
    pub packets_delivered: u64,
    pub packets_dropped: u64,
    pub payload_bytes_injected: u64,
    pub payload_bytes_delivered: u64,
    pub payload_bytes_dropped: u64,
    pub flows_started: u64,
    pub flows_completed: u64,
}

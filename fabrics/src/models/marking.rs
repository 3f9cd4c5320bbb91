//! Congestion marking at switch egress queues: ECN (RED-style Kmin/Kmax/Pmax, RFC 3168 and
//! the DCQCN paper), InfiniBand FECN (IBA Annex A10). The plain variant, [`NoMarking`],
//! never marks.

/// Hooks of a marking scheme.
pub trait Marking {
    /// Fires when a packet leaves an egress queue with `queued_bytes` still waiting behind it
    /// (HPCC-sim marks at dequeue, `switch-node.cc: SwitchNotifyDequeue`): `true` marks it.
    fn mark_on_dequeue(&mut self, port: u32, queued_bytes: u64) -> bool {
        let _ = (port, queued_bytes);
        false
    }
}

/// Never marks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoMarking;

impl Marking for NoMarking {}

/// The closed set of marking schemes.
#[derive(Clone, Debug, Default)]
pub enum AnyMarking {
    #[default]
    None,
}

impl AnyMarking {
    pub fn name(&self) -> &'static str {
        match self {
            AnyMarking::None => "none",
        }
    }
}

impl Marking for AnyMarking {
    #[inline]
    fn mark_on_dequeue(&mut self, port: u32, queued_bytes: u64) -> bool {
        match self {
            AnyMarking::None => NoMarking.mark_on_dequeue(port, queued_bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_never_marks() {
        let mut m = AnyMarking::None;
        assert!(!m.mark_on_dequeue(0, 0));
        assert!(!m.mark_on_dequeue(0, u64::MAX));
    }
}

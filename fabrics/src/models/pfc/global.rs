//! IEEE 802.3x link-level PAUSE (IEEE 802.3 Annex 31B, MAC Control opcode 0x0001), the
//! pausing side: the link has one pause state, so the first lossless priority of an ingress
//! port to cross XOFF stops *every* priority of the upstream port, and the link resumes only
//! when the last congested priority is back at XON. This is what Ethernet offered before
//! 802.1Qbb, and what a switch falls back to on a port without PFC: the classic case for why
//! PFC exists (a congested lossless class stops lossy and control traffic too; models.md §2.2).
//!
//! The frame is represented as a PFC frame naming all eight priorities with the same quanta,
//! which the common [`super::PfcReceiver`] applies exactly as an 802.3x receiver does (one
//! timer for the whole link). Size and quanta are those of 802.1Qbb (64 B, 512 bit times).
//! Frames are counted against the priority whose edge caused them.

use super::{N_PRIORITIES, PauseSender, PfcEdge, PfcFrame};
use sim_core::{Duration, SimTime};

/// Every priority of the link at once.
const ALL: u8 = u8::MAX;

/// The pausing side of 802.3x PAUSE on one ingress port.
#[derive(Clone, Debug)]
pub struct GlobalPauseSender {
    pause_quanta: u16,
    refresh_after: Duration,
    /// Priorities whose buffer is past XOFF (the link is paused while any is set).
    congested_mask: u8,
    /// The priority whose XOFF paused the link (refreshes are counted against it).
    cause: u8,
    refresh_at: SimTime,
    pauses_sent: [u64; N_PRIORITIES],
    resumes_sent: [u64; N_PRIORITIES],
}

impl GlobalPauseSender {
    /// PAUSE frames carry `pause_quanta` (> 0) and are refreshed every `refresh_after` while
    /// any priority stays congested.
    pub fn new(pause_quanta: u16, refresh_after: Duration) -> Self {
        assert!(pause_quanta > 0, "a PAUSE needs quanta > 0 (0 is RESUME)");
        assert!(refresh_after.ps() > 0, "refresh period must be > 0");
        GlobalPauseSender {
            pause_quanta,
            refresh_after,
            congested_mask: 0,
            cause: 0,
            refresh_at: SimTime::MAX,
            pauses_sent: [0; N_PRIORITIES],
            resumes_sent: [0; N_PRIORITIES],
        }
    }

    fn frame(quanta: u16) -> PfcFrame {
        PfcFrame {
            enable_mask: ALL,
            quanta: [quanta; N_PRIORITIES],
        }
    }
}

impl PauseSender for GlobalPauseSender {
    /// PAUSE (all priorities) when the first priority becomes congested; RESUME (all) when
    /// the last one clears; nothing for the edges in between.
    fn on_edge(&mut self, now: SimTime, prio: u8, edge: PfcEdge) -> Option<PfcFrame> {
        let bit = 1u8 << prio;
        let was_paused = self.congested_mask != 0;
        match edge {
            PfcEdge::Xoff => self.congested_mask |= bit,
            PfcEdge::Xon => self.congested_mask &= !bit,
        }
        match (was_paused, self.congested_mask != 0) {
            (false, true) => {
                self.cause = prio;
                self.refresh_at = now + self.refresh_after;
                self.pauses_sent[prio as usize] += 1;
                Some(Self::frame(self.pause_quanta))
            }
            (true, false) => {
                self.refresh_at = SimTime::MAX;
                self.resumes_sent[prio as usize] += 1;
                Some(Self::frame(0))
            }
            _ => None,
        }
    }

    fn next_timer(&self) -> Option<SimTime> {
        (self.refresh_at != SimTime::MAX).then_some(self.refresh_at)
    }

    fn on_timer(&mut self, now: SimTime) -> Option<PfcFrame> {
        if self.congested_mask == 0 || self.refresh_at > now {
            return None;
        }
        self.refresh_at = now + self.refresh_after;
        self.pauses_sent[self.cause as usize] += 1;
        Some(Self::frame(self.pause_quanta))
    }

    fn is_asserted(&self, prio: u8) -> bool {
        self.congested_mask & (1 << prio) != 0
    }

    fn frames_sent(&self, prio: u8) -> (u64, u64) {
        (self.pauses_sent[prio as usize], self.resumes_sent[prio as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::pfc::{PfcReceiver, PfcSender, pause_duration};
    use sim_core::BitsPerSec;

    const T0: SimTime = SimTime(1_000);

    #[test]
    fn first_xoff_pauses_every_priority_and_last_xon_resumes() {
        let mut g = GlobalPauseSender::new(0xffff, Duration::from_us(10));
        let f = g.on_edge(T0, 3, PfcEdge::Xoff).expect("the first XOFF pauses the link");
        assert_eq!(f.enable_mask, 0xff);
        assert!((0..8).all(|p| f.get(p) == Some(0xffff)));
        // A second congested priority changes nothing on the wire.
        assert_eq!(g.on_edge(T0, 5, PfcEdge::Xoff), None);
        // Priority 3 clears, 5 still congested: the link stays paused.
        assert_eq!(g.on_edge(T0, 3, PfcEdge::Xon), None);
        assert!(g.is_asserted(5) && !g.is_asserted(3));
        let r = g.on_edge(T0, 5, PfcEdge::Xon).expect("the last XON resumes the link");
        assert!((0..8).all(|p| r.get(p) == Some(0)));
        assert_eq!(g.frames_sent(3), (1, 0));
        assert_eq!(g.frames_sent(5), (0, 1));
        assert_eq!(g.next_timer(), None);
    }

    #[test]
    fn refreshes_one_frame_per_period_while_congested() {
        let period = Duration::from_us(10);
        let mut g = GlobalPauseSender::new(100, period);
        g.on_edge(T0, 2, PfcEdge::Xoff);
        g.on_edge(T0, 6, PfcEdge::Xoff);
        assert_eq!(g.next_timer(), Some(T0 + period));
        assert_eq!(g.on_timer(T0), None, "not due yet");
        let f = g.on_timer(T0 + period).expect("refresh due");
        assert_eq!(f.enable_mask, 0xff);
        assert_eq!(g.next_timer(), Some(T0 + period + period));
        assert_eq!(
            g.frames_sent(2),
            (2, 0),
            "refreshes count against the priority that paused"
        );
    }

    /// The same congestion of one priority: 802.1Qbb stops that priority only, 802.3x stops
    /// the other seven as well, at the receiver, for the same pause time.
    #[test]
    fn receiver_stops_only_the_congested_priority_under_pfc_and_all_under_global() {
        let rate = BitsPerSec::from_gbps(100);
        let mut pfc = PfcSender::new(1000, Duration::from_us(1));
        let mut global = GlobalPauseSender::new(1000, Duration::from_us(1));
        let mut rx_pfc = PfcReceiver::new(rate);
        let mut rx_global = PfcReceiver::new(rate);
        rx_pfc.on_frame(T0, &pfc.on_edge(T0, 3, PfcEdge::Xoff).expect("pause"));
        rx_global.on_frame(T0, &global.on_edge(T0, 3, PfcEdge::Xoff).expect("pause"));
        let until = T0 + pause_duration(1000, rate);
        for prio in 0..8u8 {
            assert_eq!(rx_pfc.may_send(prio, T0), prio != 3, "PFC, priority {prio}");
            assert!(!rx_global.may_send(prio, T0), "802.3x, priority {prio}");
            assert_eq!(rx_global.paused_until(prio), until);
        }
    }
}

//! IEEE 802.1Qbb priority flow control, the pausing side: a PAUSE stops only the priority whose
//! (ingress port, priority) buffer crossed XOFF, and a RESUME (quanta 0) follows its XON
//! (models.md §2.2; practice: XOFF = maximum quanta, refreshed while congested).

use super::{MAX_PAUSE_QUANTA, N_PRIORITIES, PauseSender, PfcEdge, PfcFrame, pause_duration};
use sim_core::{BitsPerSec, Duration, SimTime};

/// The pausing side of PFC on one ingress port: which priorities it holds paused upstream,
/// and when each PAUSE must be refreshed (one timer per priority).
#[derive(Clone, Debug)]
pub struct PfcSender {
    pause_quanta: u16,
    refresh_after: Duration,
    asserted_mask: u8,
    refresh_at: [SimTime; N_PRIORITIES],
    pauses_sent: [u64; N_PRIORITIES],
    resumes_sent: [u64; N_PRIORITIES],
}

impl PfcSender {
    /// PAUSE frames carry `pause_quanta` (> 0; practice: [`MAX_PAUSE_QUANTA`]) and are
    /// refreshed every `refresh_after` while the priority stays congested; it must be
    /// shorter than the pause minus the link's round trip. [`PfcSender::with_defaults`]
    /// uses half the pause time (an assumption: models.md gives no refresh period).
    pub fn new(pause_quanta: u16, refresh_after: Duration) -> Self {
        assert!(pause_quanta > 0, "a PAUSE needs quanta > 0 (0 is RESUME)");
        assert!(refresh_after.ps() > 0, "refresh period must be > 0");
        PfcSender {
            pause_quanta,
            refresh_after,
            asserted_mask: 0,
            refresh_at: [SimTime::MAX; N_PRIORITIES],
            pauses_sent: [0; N_PRIORITIES],
            resumes_sent: [0; N_PRIORITIES],
        }
    }

    /// Maximum quanta, refreshed at half the pause time at `link_rate`.
    pub fn with_defaults(link_rate: BitsPerSec) -> Self {
        let half = Duration(pause_duration(MAX_PAUSE_QUANTA, link_rate).ps() / 2);
        PfcSender::new(MAX_PAUSE_QUANTA, half)
    }
}

impl PauseSender for PfcSender {
    /// PAUSE on XOFF while not yet asserted, RESUME on XON while asserted.
    fn on_edge(&mut self, now: SimTime, prio: u8, edge: PfcEdge) -> Option<PfcFrame> {
        let bit = 1u8 << prio;
        match edge {
            PfcEdge::Xoff if self.asserted_mask & bit == 0 => {
                self.asserted_mask |= bit;
                self.refresh_at[prio as usize] = now + self.refresh_after;
                self.pauses_sent[prio as usize] += 1;
                Some(PfcFrame::single(prio, self.pause_quanta))
            }
            PfcEdge::Xon if self.asserted_mask & bit != 0 => {
                self.asserted_mask &= !bit;
                self.refresh_at[prio as usize] = SimTime::MAX;
                self.resumes_sent[prio as usize] += 1;
                Some(PfcFrame::single(prio, 0))
            }
            _ => None,
        }
    }

    fn next_timer(&self) -> Option<SimTime> {
        let t = self.refresh_at.iter().copied().min().unwrap_or(SimTime::MAX);
        (t != SimTime::MAX).then_some(t)
    }

    /// Refreshes every asserted priority whose refresh is due at `now`, in one frame.
    fn on_timer(&mut self, now: SimTime) -> Option<PfcFrame> {
        let mut frame = PfcFrame::default();
        for prio in 0..N_PRIORITIES as u8 {
            let i = prio as usize;
            if self.is_asserted(prio) && self.refresh_at[i] <= now {
                frame.set(prio, self.pause_quanta);
                self.refresh_at[i] = now + self.refresh_after;
                self.pauses_sent[i] += 1;
            }
        }
        (frame.enable_mask != 0).then_some(frame)
    }

    fn is_asserted(&self, prio: u8) -> bool {
        self.asserted_mask & (1 << prio) != 0
    }

    fn frames_sent(&self, prio: u8) -> (u64, u64) {
        (self.pauses_sent[prio as usize], self.resumes_sent[prio as usize])
    }
}

//! Every change of the receive buffer is advertised at once, at most one flow-control packet
//! per `min_interval` per lane (zero: no limit; updates waiting for the transmitter merge).
//! IBA sends FCPs "when credits change" (`models.md` §1.2); the Mellanox flit model rate-limits
//! them with `credMinTime` = 4.096 µs (`hcyang99/ib_model:modules.ini`).

use super::{CreditUpdate, LaneView, Update};
use sim_core::Duration;

/// The default policy: per change, rate-limited by `min_interval`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerChange {
    /// At most one flow-control packet per lane per this interval (default 0).
    pub min_interval: Duration,
}

impl CreditUpdate for PerChange {
    fn decide(&self, lane: &LaneView) -> Update {
        match lane.last_sent {
            Some(last) if self.min_interval > Duration::ZERO && last + self.min_interval > lane.now => {
                Update::At(last + self.min_interval)
            }
            _ => Update::Now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_core::SimTime;

    fn lane(now_ps: u64, last_ps: Option<u64>) -> LaneView {
        LaneView {
            now: SimTime(now_ps),
            last_sent: last_ps.map(SimTime),
            unadvertised_blocks: 65,
        }
    }

    #[test]
    fn sends_at_once_unless_within_the_interval() {
        let eager = PerChange::default();
        assert_eq!(eager.decide(&lane(10, Some(9))), Update::Now);
        let limited = PerChange {
            min_interval: Duration(4_096_000),
        };
        assert_eq!(
            limited.decide(&lane(10, None)),
            Update::Now,
            "the first update goes at once"
        );
        assert_eq!(limited.decide(&lane(1_000, Some(500))), Update::At(SimTime(4_096_500)));
        assert_eq!(limited.decide(&lane(4_096_500, Some(500))), Update::Now);
    }
}

//! The outcome of a run: one vocabulary for every fabric (issue 15), in `summary.json`
//! (`run.outcome`), the terminal table and the exit status of `fabricsim run`.
//!
//! `sim_core` says why its loop stopped (`RunOutcome`: no event left, the model said it was
//! done, end time, a budget, the progress callback). That is the kernel's view and differs by
//! fabric: a RoCEv2 deadlock ends the loop by the model's `finished` (its detector), an
//! InfiniBand credit deadlock by an empty queue (nothing can ever move), a lossy base fabric
//! that lost packets by an empty queue too. [`Outcome::of`] adds the fabric's state (flows
//! completed, packets still held, a detected deadlock) and names what happened:
//!
//! | outcome | `complete` | exit | meaning |
//! |---|---|---|---|
//! | `completed` | true | 0 | every flow completed |
//! | `deadlocked` | true | 3 | the fabric can never move again: a detected cycle (RoCEv2 pause cycle), or no event left while packets are still held in the network |
//! | `stalled` | true | 0 | no event left and no packet in the network, but flows unfinished (packets lost with no recovery) |
//! | `end_time` | true | 0 | `run.end_time` reached with flows unfinished or not started |
//! | `event_budget` | false | 0 | `run.max_events` ran out (partial results) |
//! | `wall_clock_budget` | false | 0 | `run.wall_clock_s` ran out (partial results) |
//! | `interrupted` | false | 130 | SIGINT/SIGTERM during the simulation (partial results) |

use fabrics::engine::Fabric;
use sim_core::{RunOutcome, RunReport};

/// Exit status of `fabricsim run` when the run ended `deadlocked` (results written).
pub const EXIT_DEADLOCKED: i32 = 3;

/// What happened in a run, for every fabric alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Completed,
    Deadlocked,
    Stalled,
    EndTime,
    EventBudget,
    WallClockBudget,
    Interrupted,
}

impl Outcome {
    /// Every outcome, in the documented order.
    pub const ALL: [Outcome; 7] = [
        Outcome::Completed,
        Outcome::Deadlocked,
        Outcome::Stalled,
        Outcome::EndTime,
        Outcome::EventBudget,
        Outcome::WallClockBudget,
        Outcome::Interrupted,
    ];

    /// Names the outcome of a run from the kernel's stop reason and the fabric's state.
    pub fn of(report: &RunReport, fabric: &Fabric) -> Outcome {
        let all_done = fabric.totals().flows_completed as usize == fabric.flow_records().len();
        Outcome::classify(
            report.outcome,
            all_done,
            fabric.packets_in_network() > 0,
            fabric.roce().is_some_and(|r| r.deadlock.is_some()),
        )
    }

    /// [`Outcome::of`] on plain facts: the kernel's stop reason, whether every flow
    /// completed, whether packets are still held in the network, whether the fabric's
    /// deadlock detector found a cycle.
    pub fn classify(stop: RunOutcome, all_done: bool, held: bool, detected: bool) -> Outcome {
        match stop {
            RunOutcome::Stopped => Outcome::Interrupted,
            RunOutcome::EventBudget => Outcome::EventBudget,
            RunOutcome::WallClock => Outcome::WallClockBudget,
            _ if detected => Outcome::Deadlocked,
            _ if all_done => Outcome::Completed,
            RunOutcome::EndTime => Outcome::EndTime,
            RunOutcome::Drained | RunOutcome::Finished if held => Outcome::Deadlocked,
            RunOutcome::Drained | RunOutcome::Finished => Outcome::Stalled,
        }
    }

    /// The name in `summary.json` and the terminal.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Deadlocked => "deadlocked",
            Outcome::Stalled => "stalled",
            Outcome::EndTime => "end_time",
            Outcome::EventBudget => "event_budget",
            Outcome::WallClockBudget => "wall_clock_budget",
            Outcome::Interrupted => crate::report::OUTCOME_INTERRUPTED,
        }
    }

    /// The outcome named `s` (as written in `summary.json`).
    pub fn parse(s: &str) -> Option<Outcome> {
        Outcome::ALL.into_iter().find(|o| o.as_str() == s)
    }

    /// `false` when a budget or a signal cut the run short: the results are partial.
    pub fn complete(self) -> bool {
        !matches!(
            self,
            Outcome::EventBudget | Outcome::WallClockBudget | Outcome::Interrupted
        )
    }

    /// Exit status of `fabricsim run` (results written in every case).
    pub fn exit_code(self) -> i32 {
        match self {
            Outcome::Deadlocked => EXIT_DEADLOCKED,
            Outcome::Interrupted => crate::interrupt::EXIT_INTERRUPTED,
            _ => 0,
        }
    }

    /// What the terminal table adds after the run line.
    pub fn note(self) -> &'static str {
        match self {
            Outcome::Completed => "",
            Outcome::Deadlocked => "  (DEADLOCK: the fabric can never move again)",
            Outcome::Stalled => "  (STALLED: flows unfinished, nothing left to move)",
            Outcome::EndTime => "  (end time reached with flows unfinished)",
            Outcome::EventBudget | Outcome::WallClockBudget => "  (PARTIAL: a budget ran out)",
            Outcome::Interrupted => "  (PARTIAL: interrupted)",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_vocabulary_for_every_stop() {
        use RunOutcome::*;
        let c = Outcome::classify;
        // A RoCEv2 deadlock ends by the model's `finished`; an IB one by an empty queue.
        assert_eq!(c(Finished, false, true, true), Outcome::Deadlocked);
        assert_eq!(c(Drained, false, true, false), Outcome::Deadlocked);
        assert_eq!(c(Drained, false, false, false), Outcome::Stalled);
        assert_eq!(c(Finished, true, false, false), Outcome::Completed);
        assert_eq!(c(Drained, true, false, false), Outcome::Completed);
        assert_eq!(c(EndTime, true, false, false), Outcome::Completed);
        assert_eq!(c(EndTime, false, true, false), Outcome::EndTime);
        assert_eq!(c(EndTime, false, true, true), Outcome::Deadlocked);
        assert_eq!(c(EventBudget, true, false, true), Outcome::EventBudget);
        assert_eq!(c(WallClock, false, false, false), Outcome::WallClockBudget);
        assert_eq!(c(Stopped, false, false, false), Outcome::Interrupted);
        for o in Outcome::ALL {
            assert_eq!(Outcome::parse(o.as_str()), Some(o));
        }
        assert_eq!(Outcome::Deadlocked.exit_code(), EXIT_DEADLOCKED);
        assert!(!Outcome::Interrupted.complete() && Outcome::Stalled.complete());
    }
}

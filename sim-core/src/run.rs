//! Run control: end time, event budget, wall-clock budget and a progress callback.
//!
//! Every run ends with a [`RunOutcome`]; running out of a budget is a reported outcome with
//! the model's partial state intact, never a hang and never a panic.

use crate::queue::EventQueue;
use crate::sched::Scheduler;
use crate::time::SimTime;
use std::ops::ControlFlow;

/// A simulation model: it owns all state and reacts to one event at a time.
pub trait Model {
    /// The model's event record: small and `Copy` (ids into arenas, never a `Box`).
    type Event: Copy;

    /// Handles one event; `sched.now()` is the event's time.
    fn handle<Q: EventQueue<Self::Event>>(&mut self, sched: &mut Scheduler<Self::Event, Q>, ev: Self::Event);

    /// Called after each event: `true` ends the run with [`RunOutcome::Finished`]
    /// (for models whose timers would otherwise keep the queue busy forever).
    fn finished(&self) -> bool {
        false
    }

    /// A hint before `handle`: `upcoming[k]` is likely the event `k + 1` pops after the one
    /// being handled. A model may bring their state into the cache, the farthest first in
    /// the line of what each needs (a software pipeline: what event `k + 1` reads first was
    /// asked for when it was `k + 2` ahead); it must not change anything (the hint can be
    /// wrong).
    #[inline]
    fn prefetch(&self, _upcoming: [Option<&Self::Event>; PREFETCH_AHEAD]) {}

    /// Whether [`Model::prefetch`] does anything in this run, asked once before the first
    /// event: a model that answers `false` costs the loop nothing per event (the call and
    /// the peeks were 2 % of a small fabric's instructions).
    fn prefetches(&self) -> bool {
        true
    }
}

/// How many upcoming events [`Model::prefetch`] sees.
pub const PREFETCH_AHEAD: usize = 3;

/// Limits of one run. `None` means unlimited for that budget.
#[derive(Clone, Debug)]
pub struct RunLimits {
    /// No event later than this time is handled; the run's clock stops here.
    pub end_time: Option<SimTime>,
    /// Largest number of events handled.
    pub max_events: Option<u64>,
    /// Largest wall-clock time spent (checked at every progress tick).
    pub wall_clock: Option<std::time::Duration>,
    /// Events between two progress callbacks (and wall-clock checks); at least 1.
    pub progress_every_events: u64,
}

impl Default for RunLimits {
    fn default() -> Self {
        RunLimits {
            end_time: None,
            max_events: None,
            wall_clock: None,
            progress_every_events: 1 << 20,
        }
    }
}

/// Why a run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunOutcome {
    /// No events were left.
    Drained,
    /// The model said it was done.
    Finished,
    /// The next event was after the end time.
    EndTime,
    /// The event budget ran out.
    EventBudget,
    /// The wall-clock budget ran out.
    WallClock,
    /// The progress callback asked to stop.
    Stopped,
}

impl RunOutcome {
    /// `true` when the run ended on its own rather than by a budget.
    pub fn is_complete(self) -> bool {
        matches!(self, RunOutcome::Drained | RunOutcome::Finished | RunOutcome::EndTime)
    }
    pub fn as_str(self) -> &'static str {
        match self {
            RunOutcome::Drained => "drained",
            RunOutcome::Finished => "finished",
            RunOutcome::EndTime => "end_time",
            RunOutcome::EventBudget => "event_budget",
            RunOutcome::WallClock => "wall_clock_budget",
            RunOutcome::Stopped => "stopped",
        }
    }
}

/// What the progress callback sees.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub now: SimTime,
    pub events: u64,
    pub pending: usize,
    pub wall_elapsed: std::time::Duration,
}

/// Summary of a finished run.
#[derive(Clone, Copy, Debug)]
pub struct RunReport {
    pub outcome: RunOutcome,
    pub events: u64,
    pub end: SimTime,
    /// Wall-clock time of the run; for performance reports only, never for results.
    pub wall_elapsed: std::time::Duration,
}

/// A wall-clock stopwatch: the one place the kernel reads the real clock, and only to
/// enforce the wall-clock budget and report speed. No simulated behaviour depends on it. The
/// scenario runner starts one too, so that `run.wall_clock_s` also covers building the fabric.
#[derive(Clone, Copy, Debug)]
pub struct Stopwatch(std::time::Instant);

impl Stopwatch {
    #[allow(clippy::disallowed_methods, reason = "wall-clock budget and speed report only")]
    pub fn start() -> Self {
        Stopwatch(std::time::Instant::now())
    }
    /// Wall-clock time since [`Stopwatch::start`].
    pub fn elapsed(&self) -> std::time::Duration {
        self.0.elapsed()
    }
}

/// Runs `model` until the queue drains, the model finishes, or a limit is reached.
pub fn run<M, Q>(
    model: &mut M,
    sched: &mut Scheduler<M::Event, Q>,
    limits: &RunLimits,
    mut progress: impl FnMut(&Progress) -> ControlFlow<()>,
) -> RunReport
where
    M: Model,
    Q: EventQueue<M::Event>,
{
    let clock = Stopwatch::start();
    let every = limits.progress_every_events.max(1);
    let end_time = limits.end_time.unwrap_or(SimTime::MAX);
    let max_events = limits.max_events.unwrap_or(u64::MAX);
    let mut events: u64 = 0;
    let mut next_tick = every;
    let prefetching = model.prefetches();
    let outcome = loop {
        if events >= max_events {
            break RunOutcome::EventBudget;
        }
        let Some(ev) = sched.pop_until(end_time) else {
            if sched.pending() == 0 {
                break RunOutcome::Drained;
            }
            sched.advance_to(end_time);
            break RunOutcome::EndTime;
        };
        if prefetching {
            model.prefetch(std::array::from_fn(|k| sched.peek_ahead(k)));
        }
        model.handle(sched, ev);
        events += 1;
        if model.finished() {
            break RunOutcome::Finished;
        }
        if events == next_tick {
            next_tick += every;
            let p = Progress {
                now: sched.now(),
                events,
                pending: sched.pending(),
                wall_elapsed: clock.elapsed(),
            };
            if limits.wall_clock.is_some_and(|w| p.wall_elapsed >= w) {
                break RunOutcome::WallClock;
            }
            if progress(&p).is_break() {
                break RunOutcome::Stopped;
            }
        }
    };
    RunReport {
        outcome,
        events,
        end: sched.now(),
        wall_elapsed: clock.elapsed(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::Origin;
    use crate::time::Duration;

    /// A ticker that re-arms itself every 10 ps forever, counting ticks.
    struct Ticker {
        ticks: u64,
        stop_after: Option<u64>,
    }
    impl Model for Ticker {
        type Event = ();
        fn handle<Q: EventQueue<()>>(&mut self, s: &mut Scheduler<(), Q>, _ev: ()) {
            self.ticks += 1;
            s.schedule_in(Duration(10), Origin(0), ());
        }
        fn finished(&self) -> bool {
            self.stop_after.is_some_and(|n| self.ticks >= n)
        }
    }

    fn start() -> (Ticker, Scheduler<()>) {
        let mut s = Scheduler::new(1);
        s.schedule(SimTime(0), Origin(0), ());
        (
            Ticker {
                ticks: 0,
                stop_after: None,
            },
            s,
        )
    }

    #[test]
    fn end_time_stops_cleanly() {
        let (mut m, mut s) = start();
        let lim = RunLimits {
            end_time: Some(SimTime(95)),
            ..Default::default()
        };
        let r = run(&mut m, &mut s, &lim, |_| ControlFlow::Continue(()));
        assert_eq!(r.outcome, RunOutcome::EndTime);
        assert_eq!(m.ticks, 10); // t = 0, 10, ..., 90
        assert_eq!(r.end, SimTime(95));
    }

    #[test]
    fn event_budget_is_an_outcome() {
        let (mut m, mut s) = start();
        let lim = RunLimits {
            max_events: Some(1000),
            ..Default::default()
        };
        let r = run(&mut m, &mut s, &lim, |_| ControlFlow::Continue(()));
        assert_eq!(r.outcome, RunOutcome::EventBudget);
        assert_eq!(r.events, 1000);
        assert!(!r.outcome.is_complete());
    }

    #[test]
    fn progress_can_stop_and_model_can_finish() {
        let (mut m, mut s) = start();
        let lim = RunLimits {
            progress_every_events: 7,
            ..Default::default()
        };
        let mut calls = 0;
        let r = run(&mut m, &mut s, &lim, |p| {
            calls += 1;
            assert_eq!(p.events % 7, 0);
            if calls == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        assert_eq!(r.outcome, RunOutcome::Stopped);
        assert_eq!(r.events, 21);

        let (mut m, mut s) = start();
        m.stop_after = Some(5);
        let r = run(&mut m, &mut s, &RunLimits::default(), |_| ControlFlow::Continue(()));
        assert_eq!(r.outcome, RunOutcome::Finished);
        assert_eq!(r.events, 5);
    }

    #[test]
    fn wall_clock_budget_zero_stops_at_first_tick() {
        let (mut m, mut s) = start();
        let lim = RunLimits {
            wall_clock: Some(std::time::Duration::ZERO),
            progress_every_events: 100,
            ..Default::default()
        };
        let r = run(&mut m, &mut s, &lim, |_| ControlFlow::Continue(()));
        assert_eq!(r.outcome, RunOutcome::WallClock);
        assert_eq!(r.events, 100);
    }
}

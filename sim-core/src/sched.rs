//! The scheduler: one future-event queue plus the current time and per-origin counters.

use crate::queue::{Entry, EventQueue, Key, MAX_ORIGINS, SEQ_BITS, WheelQueue};
use crate::time::{Duration, SimTime};

/// Who scheduled an event: a component (a port, a link direction, a host, a timer owner).
/// Same-time events are ordered by origin, then FIFO within one origin (see the crate docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Origin(pub u32);

/// The scheduler. `E` is the model's small `Copy` event record; `Q` the queue structure.
pub struct Scheduler<E, Q = WheelQueue<E>> {
    now: SimTime,
    /// Origin of the event being handled (of the last one popped).
    cur_origin: u32,
    queue: Q,
    /// Next sequence number of each origin.
    next_seq: Vec<u64>,
    /// Events popped so far.
    n_popped: u64,
    _ev: std::marker::PhantomData<E>,
}

impl<E: Copy, Q: EventQueue<E> + Default> Scheduler<E, Q> {
    /// A scheduler at time zero for components numbered `0..n_origins`.
    ///
    /// Panics if `n_origins` exceeds [`MAX_ORIGINS`] (2^24), which the fabric builder checks first.
    pub fn new(n_origins: u32) -> Self {
        assert!(
            n_origins <= MAX_ORIGINS,
            "Scheduler::new: {n_origins} origins exceed the limit of {MAX_ORIGINS}"
        );
        Scheduler {
            now: SimTime::ZERO,
            cur_origin: 0,
            queue: Q::default(),
            next_seq: vec![0; n_origins as usize],
            n_popped: 0,
            _ev: std::marker::PhantomData,
        }
    }
}

impl<E: Copy, Q: EventQueue<E>> Scheduler<E, Q> {
    /// The time of the event being handled (or of the last one handled).
    #[inline]
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Whether an event at `at` from `origin` would come before the event being handled, had
    /// it been scheduled: for a model that leaves out an event nothing may need, to take its
    /// effect as of its place in the order when something turns out to need it. Exact for
    /// an origin with at most one event per time (ties within an origin go by sequence, which
    /// an event never scheduled does not have).
    #[inline]
    pub fn precedes_current(&self, at: SimTime, origin: Origin) -> bool {
        at < self.now || (at == self.now && origin.0 < self.cur_origin)
    }

    /// Events waiting.
    pub fn pending(&self) -> usize {
        self.queue.len()
    }

    /// Events handed out by [`Scheduler::pop`] so far.
    /// A likely upcoming event (see [`EventQueue::peek_ahead`]): for prefetching only.
    #[inline]
    pub fn peek_ahead(&self, ahead: usize) -> Option<&E> {
        self.queue.peek_ahead(ahead)
    }

    pub fn events_popped(&self) -> u64 {
        self.n_popped
    }

    /// Schedules `ev` at `at` on behalf of `origin`.
    ///
    /// Panics if `at` is earlier than `now` (a model bug: the past cannot change) or if
    /// `origin` is out of range.
    // Always inlined: every event goes through here, and a call would spill registers on
    // both sides; the panics live in cold functions so the inlined body stays a few
    // instructions (session 8, `docs/performance.md`).
    #[inline(always)]
    pub fn schedule(&mut self, at: SimTime, origin: Origin, ev: E) {
        if at < self.now {
            scheduled_in_the_past(at, origin, self.now);
        }
        let n_origins = self.next_seq.len();
        let Some(slot) = self.next_seq.get_mut(origin.0 as usize) else {
            origin_out_of_range(origin, n_origins);
        };
        let seq = *slot;
        if seq >= 1 << SEQ_BITS {
            sequence_exhausted(origin);
        }
        *slot = seq + 1;
        self.queue.push(Entry {
            key: Key::new(at, origin.0, seq),
            ev,
        });
    }

    /// Schedules `ev` after `delay` from now.
    #[inline]
    pub fn schedule_in(&mut self, delay: Duration, origin: Origin, ev: E) {
        let at = self.now + delay;
        self.schedule(at, origin, ev);
    }

    /// Removes the next event, advances `now` to its time and returns it.
    #[inline]
    pub fn pop(&mut self) -> Option<E> {
        let e = self.queue.pop()?;
        debug_assert!(e.key.time >= self.now, "queue returned an event out of order");
        self.now = e.key.time;
        self.cur_origin = e.key.origin();
        self.n_popped += 1;
        Some(e.ev)
    }

    /// Removes the next event only if its time is at or before `limit`.
    #[inline(always)]
    pub fn pop_until(&mut self, limit: SimTime) -> Option<E> {
        let e = self.queue.pop()?;
        if e.key.time > limit {
            // Put it back untouched: keys are unique, so order is unchanged.
            self.queue.push(e);
            return None;
        }
        self.now = e.key.time;
        self.cur_origin = e.key.origin();
        self.n_popped += 1;
        Some(e.ev)
    }

    /// Moves `now` forward to `t` without an event (used when a run stops at its end time).
    pub fn advance_to(&mut self, t: SimTime) {
        if t > self.now {
            self.now = t;
        }
    }
}

#[cold]
#[inline(never)]
fn scheduled_in_the_past(at: SimTime, origin: Origin, now: SimTime) -> ! {
    panic!(
        "scheduling into the past: event for {at} from origin {} while now is {now}",
        origin.0
    )
}

#[cold]
#[inline(never)]
fn origin_out_of_range(origin: Origin, n_origins: usize) -> ! {
    panic!(
        "origin {} out of range (scheduler built for {n_origins} origins)",
        origin.0
    )
}

#[cold]
#[inline(never)]
fn sequence_exhausted(origin: Origin) -> ! {
    panic!("origin {} scheduled 2^40 events", origin.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::HeapQueue;

    fn drain<Q: EventQueue<u32> + Default>() -> Vec<(u64, u32)> {
        let mut s: Scheduler<u32, Q> = Scheduler::new(4);
        // Same time, different origins: origin order. Same origin: FIFO.
        s.schedule(SimTime(10), Origin(2), 1);
        s.schedule(SimTime(10), Origin(1), 2);
        s.schedule(SimTime(10), Origin(2), 3);
        s.schedule(SimTime(5), Origin(3), 4);
        s.schedule(SimTime(10), Origin(1), 5);
        let mut out = vec![];
        while let Some(e) = s.pop() {
            out.push((s.now().ps(), e));
        }
        out
    }

    #[test]
    fn ordering_contract_time_origin_fifo() {
        let want = vec![(5, 4), (10, 2), (10, 5), (10, 1), (10, 3)];
        assert_eq!(drain::<HeapQueue<u32>>(), want);
        assert_eq!(drain::<WheelQueue<u32>>(), want);
    }

    #[test]
    #[should_panic(expected = "scheduling into the past")]
    fn past_panics_with_context() {
        let mut s: Scheduler<u32> = Scheduler::new(1);
        s.schedule(SimTime(10), Origin(0), 1);
        s.pop();
        s.schedule(SimTime(9), Origin(0), 2);
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn unknown_origin_panics() {
        let mut s: Scheduler<u32> = Scheduler::new(1);
        s.schedule(SimTime(10), Origin(1), 1);
    }

    #[test]
    fn precedes_current_follows_the_ordering_contract() {
        let mut s: Scheduler<u32> = Scheduler::new(4);
        s.schedule(SimTime(10), Origin(2), 1);
        assert_eq!(s.pop(), Some(1));
        assert!(s.precedes_current(SimTime(9), Origin(3)), "earlier time");
        assert!(s.precedes_current(SimTime(10), Origin(1)), "same time, smaller origin");
        assert!(!s.precedes_current(SimTime(10), Origin(2)), "same origin: would follow");
        assert!(!s.precedes_current(SimTime(10), Origin(3)), "same time, larger origin");
        assert!(!s.precedes_current(SimTime(11), Origin(0)), "later time");
    }

    #[test]
    fn pop_until_leaves_later_events() {
        let mut s: Scheduler<u32> = Scheduler::new(1);
        s.schedule(SimTime(10), Origin(0), 1);
        s.schedule(SimTime(20), Origin(0), 2);
        assert_eq!(s.pop_until(SimTime(15)), Some(1));
        assert_eq!(s.pop_until(SimTime(15)), None);
        assert_eq!(s.pending(), 1);
        assert_eq!(s.pop(), Some(2));
    }
}

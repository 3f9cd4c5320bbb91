//! The scheduler: one future-event queue plus the current time and the sequence counter.

use crate::queue::{Entry, EventQueue, Key, MAX_ORIGINS, SEQ_BITS, WheelQueue};
use crate::time::{Duration, SimTime};

/// Who scheduled an event: a component (a port, a link direction, a host, a timer owner).
/// Same-time events are ordered by origin, then FIFO within one origin (see the crate docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Origin(pub u32);

/// The scheduler. `E` is the model's small `Copy` event record; `Q` the queue structure.
pub struct Scheduler<E, Q = WheelQueue<E>> {
    now: SimTime,
    /// The largest origin among the events popped at time `now` so far: the keys popped at
    /// one time are not increasing (an event scheduled for `now` with a small origin pops
    /// after larger ones that were already handled), and this is what `precedes_current`
    /// must compare with.
    high_origin: u32,
    queue: Q,
    /// Number of origins the scheduler was built for.
    n_origins: u32,
    /// Next sequence number (one counter for every origin: the crate docs, rule 6).
    next_seq: u64,
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
            high_origin: 0,
            queue: Q::default(),
            n_origins,
            next_seq: 0,
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

    /// Whether an event at `at` from `origin`, had it been scheduled before `now`, would
    /// have been handled by now (before the event being handled): for a model that leaves
    /// out an event nothing may need, to take its effect at its place in the order when
    /// something turns out to need it. Such an event pops at the first pop whose key is
    /// larger, so at `at == now` it is handled iff some event popped at `now` so far has a
    /// larger origin. Exact for an event left out before `now` whose origin differs from
    /// those popped at `now` (within one origin the order is by sequence number, which an
    /// event never scheduled does not have; this answers "not yet").
    #[inline]
    pub fn precedes_current(&self, at: SimTime, origin: Origin) -> bool {
        at < self.now || (at == self.now && origin.0 < self.high_origin)
    }

    /// The origin of the event being handled (of the last one handled): with [`Scheduler::now`],
    /// where in the order of the run something happens, for a partition of a run on several
    /// threads to place it against another partition's events (origins never tie across
    /// partitions: each origin's events run in one).
    #[inline]
    pub fn current_origin(&self) -> Origin {
        Origin(self.high_origin)
    }

    /// Time of the next event, if any (popped and put back: keys are unique, so the order
    /// is unchanged).
    pub fn next_time(&mut self) -> Option<SimTime> {
        let e = self.queue.pop()?;
        let t = e.key.time;
        self.queue.push(e);
        Some(t)
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
        if origin.0 >= self.n_origins {
            origin_out_of_range(origin, self.n_origins);
        }
        let seq = self.next_seq;
        if seq >= 1 << SEQ_BITS {
            sequence_exhausted();
        }
        self.next_seq = seq + 1;
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
        self.note_popped(e.key);
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
        self.note_popped(e.key);
        self.n_popped += 1;
        Some(e.ev)
    }

    #[inline(always)]
    fn note_popped(&mut self, key: Key) {
        let origin = key.origin();
        self.high_origin = if key.time == self.now {
            self.high_origin.max(origin)
        } else {
            origin
        };
        self.now = key.time;
    }

    /// Takes every event pending in `other`, a scheduler of another part of the same run
    /// (a partition of a fabric run on several threads), with its key unchanged, leaving out
    /// those `keep` refuses (events every part holds a copy of). The order stays exact: the
    /// parts share the origin numbering and each origin's events come from one part, so
    /// keys never tie and, within an origin, keep their scheduling order; events scheduled
    /// from now on get sequence numbers above every part's. The time is the later of the
    /// two; the events popped are summed.
    pub fn absorb(&mut self, mut other: Scheduler<E, Q>, mut keep: impl FnMut(&E) -> bool) {
        assert_eq!(self.n_origins, other.n_origins, "parts of one run share their origins");
        while let Some(e) = other.queue.pop() {
            if keep(&e.ev) {
                self.queue.push(e);
            }
        }
        match other.now.cmp(&self.now) {
            std::cmp::Ordering::Greater => (self.now, self.high_origin) = (other.now, other.high_origin),
            std::cmp::Ordering::Equal => self.high_origin = self.high_origin.max(other.high_origin),
            std::cmp::Ordering::Less => {}
        }
        self.next_seq = self.next_seq.max(other.next_seq);
        self.n_popped += other.n_popped;
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
fn origin_out_of_range(origin: Origin, n_origins: u32) -> ! {
    panic!(
        "origin {} out of range (scheduler built for {n_origins} origins)",
        origin.0
    )
}

#[cold]
#[inline(never)]
fn sequence_exhausted() -> ! {
    panic!("2^40 events scheduled in one run")
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
        // An event scheduled for now with a small origin pops after larger ones already
        // handled: an event of origin 1 at 10, had it been there, was handled before it.
        s.schedule(SimTime(10), Origin(0), 2);
        assert_eq!(s.pop(), Some(2));
        assert!(
            s.precedes_current(SimTime(10), Origin(1)),
            "handled before the late one"
        );
        assert!(!s.precedes_current(SimTime(10), Origin(3)));
        // Time moves on: only this time's pops count.
        s.schedule(SimTime(20), Origin(1), 3);
        assert_eq!(s.pop(), Some(3));
        assert!(!s.precedes_current(SimTime(20), Origin(2)));
        assert!(s.precedes_current(SimTime(20), Origin(0)));
    }

    #[test]
    fn precedes_current_agrees_with_a_queue_that_holds_the_event() {
        // Random schedules: an event left out answers "handled" exactly when the same run
        // with the event in the queue has popped it (origins unique to it, as required).
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for _ in 0..200 {
            let ghost = (SimTime(rng.random_range(5..40)), Origin(rng.random_range(0..8) * 2 + 1));
            let mut with: Scheduler<u32> = Scheduler::new(32);
            let mut without: Scheduler<u32> = Scheduler::new(32);
            with.schedule(ghost.0, ghost.1, u32::MAX);
            let mut n = 0u32;
            for _ in 0..6 {
                let (t, o) = (SimTime(rng.random_range(0..40)), Origin(rng.random_range(0..16) * 2));
                with.schedule(t, o, n);
                without.schedule(t, o, n);
                n += 1;
            }
            let mut ghost_seen = false;
            while let Some(e) = with.pop() {
                if e == u32::MAX {
                    ghost_seen = true;
                    continue;
                }
                assert_eq!(without.pop(), Some(e));
                assert_eq!(without.precedes_current(ghost.0, ghost.1), ghost_seen, "at event {e}");
                // Handlers schedule events for now and soon (the ghost was scheduled before
                // all of them, at time 0, as the rule requires).
                if rng.random_bool(0.5) && n < 40 {
                    let o = Origin(rng.random_range(0..16) * 2);
                    let at = with.now() + Duration(rng.random_range(0..3));
                    with.schedule(at, o, n);
                    without.schedule(at, o, n);
                    n += 1;
                }
            }
            assert!(without.pop().is_none());
        }
    }

    /// Two parts of one run, each with its own origins, fold into the order one scheduler
    /// holding every event would pop; a refused event is left out, and events scheduled
    /// after the fold come after those of their time and origin.
    #[test]
    fn absorb_keeps_the_order_of_one_scheduler() {
        type S = Scheduler<(u32, u32), HeapQueue<(u32, u32)>>;
        let (mut whole, mut a, mut b): (S, S, S) = (Scheduler::new(4), Scheduler::new(4), Scheduler::new(4));
        let mut evs: Vec<(u64, u32)> = vec![(9, 3); 10];
        evs.extend([(5, 1), (5, 0), (3, 2), (5, 1), (5, 2), (3, 0), (5, 2)]);
        for (i, &(t, o)) in evs.iter().enumerate() {
            let ev = (o, i as u32);
            whole.schedule(SimTime(t), Origin(o), ev);
            // Origins 0 and 1 are part a's, 2 and 3 part b's.
            if o < 2 { &mut a } else { &mut b }.schedule(SimTime(t), Origin(o), ev);
        }
        // An event both parts hold, which only one may keep.
        b.schedule(SimTime(4), Origin(3), (99, 99));
        a.absorb(b, |e| e.0 != 99);
        // Scheduled after the fold: after the events of its time and origin that part b
        // scheduled with more sequence numbers than part a had used.
        whole.schedule(SimTime(5), Origin(2), (2, 100));
        a.schedule(SimTime(5), Origin(2), (2, 100));
        let drain = |s: &mut S| std::iter::from_fn(|| s.pop()).collect::<Vec<_>>();
        assert_eq!(drain(&mut a), drain(&mut whole));
        assert_eq!(a.events_popped(), whole.events_popped());
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

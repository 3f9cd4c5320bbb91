//! Pipes: per-link FIFO rings whose head alone sits in the scheduler (htsim's `Pipe` trick).
//!
//! A link direction is serial: items leave it in the order they entered, so their arrival
//! times never decrease and the ring stays sorted for free. Keeping only the head in the
//! future-event set shrinks it from "every packet in flight" to "every busy link", measured
//! 6x fewer cache misses at 10^6 in flight (`shared/reference/rust-ecosystem.md` §1.3).
//!
//! Use: `if pipe.push(t, x) { sched.schedule(t, origin, Ev::PipeHead(id)) }`; on that event,
//! `pipe.pop_due(now)` and, if [`Pipe::head_time`] is `Some(t2)`, schedule the next head at `t2`.

use crate::time::SimTime;
use std::collections::VecDeque;

/// A FIFO of `(arrival time, item)` with non-decreasing arrival times.
#[derive(Clone, Debug)]
pub struct Pipe<T> {
    ring: VecDeque<(SimTime, T)>,
    /// Arrival time of the newest item ever pushed (kept when the ring empties): what
    /// [`Pipe::push_fifo`] orders against, held beside the ring's pointers so a push does not
    /// read the ring's tail slot, a cache miss at scale (`docs/performance.md`, session 10).
    last: SimTime,
}

impl<T> Default for Pipe<T> {
    fn default() -> Self {
        Pipe {
            ring: VecDeque::new(),
            last: SimTime::ZERO,
        }
    }
}

impl<T> Pipe<T> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends an item arriving at `arrive`. Returns `true` when the pipe was empty, i.e. the
    /// caller must schedule the new head. Panics if `arrive` is before the current tail's
    /// arrival (items cannot overtake one another on a link).
    #[inline]
    pub fn push(&mut self, arrive: SimTime, item: T) -> bool {
        if !self.ring.is_empty() {
            let last = self.last;
            assert!(
                arrive >= last,
                "pipe: item arriving at {arrive} would overtake one arriving at {last}"
            );
        }
        self.last = arrive;
        self.ring.push_back((arrive, item));
        self.ring.len() == 1
    }

    /// Appends an item that would arrive at `arrive` but, the link being FIFO, arrives no
    /// earlier than the items already on it. Returns its arrival time and whether the pipe
    /// was empty (the caller must schedule the new head).
    #[inline]
    pub fn push_fifo(&mut self, arrive: SimTime, item: T) -> (SimTime, bool) {
        // `last` is at most now once the ring is empty, and arrivals are never in the past,
        // so it needs no emptiness check.
        let arrive = arrive.max(self.last);
        self.last = arrive;
        self.ring.push_back((arrive, item));
        (arrive, self.ring.len() == 1)
    }

    /// Takes the newest item back off (it crosses to another partition of the run,
    /// `fabrics::engine::partition`); the arrival time later pushes order against stays.
    pub fn take_last(&mut self) -> Option<(SimTime, T)> {
        self.ring.pop_back()
    }

    /// Takes every item off, oldest first (the arrival time later pushes order against stays).
    pub fn drain_items(&mut self) -> impl Iterator<Item = (SimTime, T)> + '_ {
        self.ring.drain(..)
    }

    /// Removes the head, which must be due at `now` (the head event fired).
    #[inline]
    pub fn pop_due(&mut self, now: SimTime) -> T {
        match self.ring.pop_front() {
            Some((t, item)) => {
                assert_eq!(t, now, "pipe head fired at the wrong time");
                item
            }
            None => panic!("pipe head event fired on an empty pipe at {now}"),
        }
    }

    /// Arrival times of the items, head first.
    pub fn times(&self) -> impl Iterator<Item = SimTime> + '_ {
        self.ring.iter().map(|&(t, _)| t)
    }

    /// Arrival time of the current head, if any.
    #[inline]
    pub fn head_time(&self) -> Option<SimTime> {
        self.ring.front().map(|&(t, _)| t)
    }

    /// The current head, if any (for prefetching: the item the next arrival hands over).
    #[inline]
    pub fn head(&self) -> Option<&T> {
        self.ring.front().map(|(_, item)| item)
    }

    /// Arrival time of the newest item, if any: the earliest an item pushed now may arrive.
    #[inline]
    pub fn tail_time(&self) -> Option<SimTime> {
        self.ring.back().map(|&(t, _)| t)
    }

    pub fn len(&self) -> usize {
        self.ring.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }

    /// Items in flight, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &(SimTime, T)> {
        self.ring.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_scheduling_protocol() {
        let mut p = Pipe::new();
        assert!(p.push(SimTime(10), 'a'));
        assert!(!p.push(SimTime(10), 'b'));
        assert!(!p.push(SimTime(12), 'c'));
        assert_eq!(p.pop_due(SimTime(10)), 'a');
        assert_eq!(p.head_time(), Some(SimTime(10)));
        assert_eq!(p.pop_due(SimTime(10)), 'b');
        assert_eq!(p.pop_due(SimTime(12)), 'c');
        assert!(p.is_empty());
    }

    #[test]
    fn fifo_push_waits_for_the_tail() {
        let mut p = Pipe::new();
        assert_eq!(p.push_fifo(SimTime(10), 'a'), (SimTime(10), true));
        // Would overtake 'a': arrives with it instead.
        assert_eq!(p.push_fifo(SimTime(7), 'b'), (SimTime(10), false));
        assert_eq!(p.push_fifo(SimTime(15), 'c'), (SimTime(15), false));
        assert_eq!(p.times().collect::<Vec<_>>(), [SimTime(10), SimTime(10), SimTime(15)]);
        for t in [10, 10, 15] {
            p.pop_due(SimTime(t));
        }
        // Empty again: a later item is not held back by the old tail.
        assert_eq!(p.push_fifo(SimTime(20), 'd'), (SimTime(20), true));
    }

    #[test]
    #[should_panic(expected = "overtake")]
    fn overtaking_is_a_bug() {
        let mut p = Pipe::new();
        p.push(SimTime(10), 1);
        p.push(SimTime(9), 2);
    }
}

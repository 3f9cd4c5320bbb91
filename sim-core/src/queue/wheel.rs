//! Timing-wheel future-event queue.
//!
//! # Design
//!
//! A one-level wheel of `BUCKETS` buckets, each `2^SHIFT` ps wide, covering a horizon of
//! `BUCKETS << SHIFT` ps ahead of a cursor slot `cur`. An entry's place depends on its
//! absolute slot `time >> SHIFT`:
//!
//! - `slot == cur`: the slot being drained. When the cursor reaches a bucket, the bucket's
//!   `Vec` is sorted (smallest key last) and popped from the end; entries that arrive for this
//!   slot afterwards go to a small `late` heap, and `pop` takes the smaller of the two heads.
//!   The drained `Vec` is swapped back into the bucket, so steady state allocates nothing.
//! - `cur < slot < cur + BUCKETS`: bucket `slot % BUCKETS`, an unsorted `Vec` (push is O(1)).
//!   A two-level bitmap (one bit per bucket, one summary bit per 64 buckets) finds the next
//!   occupied bucket with two or three `trailing_zeros`, however sparse the wheel is.
//! - `slot >= cur + BUCKETS`: the *overflow* heap. Whenever the cursor moves, entries that
//!   have come within the horizon migrate to their buckets; when the wheel is empty the cursor
//!   jumps straight to the overflow's first slot, so long idle gaps cost nothing.
//!
//! Within the current slot, order comes from the sort and the heap, both on the full [`Key`],
//! so keys that share a time (or a bucket) still come out in exact `(time, origin, seq)` order.
//!
//! The cursor moves only inside `pop`, to the slot of the entry about to be returned, so it
//! never passes the last popped time: an entry pushed at or after that time (the scheduler's
//! guarantee), including the entry just popped, lands in the current slot or ahead of it.
//! An entry pushed earlier than the cursor would go to the `late` heap and pop first, which
//! is still the right order.
//!
//! # Tuning (measured with `benches/hold.rs`, see `docs/performance.md`)
//!
//! - Sorting the bucket instead of heapifying it (`BinaryHeap::from`) and popping the heap:
//!   a sort is a few fast, predictable passes and each pop is then O(1), whereas each heap pop
//!   sifts through log2(n) levels. With hundreds of entries per bucket (10^5 to 10^6 pending)
//!   the sorted variant held 1.5-2 times as many events per second as the heapified one;
//!   with about one entry per bucket (10^3 pending) they tie. The `late` heap stays nearly
//!   empty: few events are scheduled less than one bucket ahead.
//! - 4096 buckets of 1.024 ns (horizon 4.19 us): network events land within a few
//!   microseconds of `now` (an MTU serializes in 82 ns at 400 Gb/s, cables add 5 ns/m), and
//!   4096 buckets keep the bitmap to 64 words under a single summary word. Widths of 0.5, 2
//!   and 4 ns measured within the machine's noise of 1 ns, except that 0.5 ns (horizon 2.1 us)
//!   lost on exponential increments, whose tail then spills into the overflow heap; 0.25 ns
//!   was clearly slower.

use super::{Entry, EventQueue, Key, MinFirst};
use std::collections::BinaryHeap;

/// log2 of the bucket width in picoseconds: 2^10 ps = 1.024 ns.
const SHIFT: u32 = 10;
/// Number of buckets; a power of two, at most 64 * 64 so one summary word covers the bitmap.
const BUCKETS: usize = 4096;
const MASK: usize = BUCKETS - 1;
const WORDS: usize = BUCKETS / 64;
const _: () = assert!(BUCKETS.is_power_of_two() && WORDS >= 1 && WORDS <= 64);
/// Capacity (entries) a drained bucket may keep for reuse; larger buffers are released.
const MAX_IDLE_BUCKET_CAPACITY: usize = 64;

#[inline]
fn slot_of(k: Key) -> u64 {
    k.time.0 >> SHIFT
}

/// A timing wheel ordered by [`Key`]; see the module docs.
pub struct WheelQueue<E> {
    /// Absolute slot (`time >> SHIFT`) being drained. Never decreases.
    cur: u64,
    /// Entries of slot `cur` taken from its bucket, sorted so that the smallest key is last.
    current: Vec<MinFirst<E>>,
    /// Entries of slot `cur` that arrived after it was sorted (pushes, overflow migrants).
    late: BinaryHeap<MinFirst<E>>,
    /// Entries of slots `cur + 1 .. cur + BUCKETS`, at index `slot % BUCKETS`, unsorted.
    buckets: Vec<Vec<MinFirst<E>>>,
    /// Bit `i` set iff `buckets[i]` is non-empty.
    occupied: [u64; WORDS],
    /// Bit `w` set iff `occupied[w] != 0`.
    summary: u64,
    /// Entries of slots `cur + BUCKETS` and later.
    overflow: BinaryHeap<MinFirst<E>>,
    len: usize,
}

impl<E> Default for WheelQueue<E> {
    fn default() -> Self {
        WheelQueue {
            cur: 0,
            current: Vec::new(),
            late: BinaryHeap::new(),
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            occupied: [0; WORDS],
            summary: 0,
            overflow: BinaryHeap::new(),
            len: 0,
        }
    }
}

impl<E> WheelQueue<E> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Puts an entry where the invariants on `cur` say it belongs.
    #[inline(always)]
    fn place(&mut self, m: MinFirst<E>) {
        let slot = slot_of(m.0.key);
        if slot <= self.cur {
            self.late.push(m);
        } else if slot - self.cur < BUCKETS as u64 {
            let i = slot as usize & MASK;
            self.buckets[i].push(m);
            self.occupied[i >> 6] |= 1 << (i & 63);
            self.summary |= 1 << (i >> 6);
        } else {
            self.overflow.push(m);
        }
    }

    /// Absolute slot of the first non-empty bucket after `cur`, if any, scanning the wheel
    /// circularly from `cur + 1`.
    #[inline]
    fn next_occupied(&self) -> Option<u64> {
        if self.summary == 0 {
            return None;
        }
        let p = (self.cur as usize).wrapping_add(1) & MASK;
        let w = p >> 6;
        let here = self.occupied[w] & (!0u64 << (p & 63));
        let i = if here != 0 {
            (w << 6) | here.trailing_zeros() as usize
        } else {
            // Words after `w`, else wrap around to the first occupied word (which may be `w`
            // itself: its bits at or after `p` are zero, so we then find one before `p`).
            let later = self.summary & (!1u64 << w);
            let w2 = if later != 0 { later } else { self.summary }.trailing_zeros() as usize;
            (w2 << 6) | self.occupied[w2].trailing_zeros() as usize
        };
        Some(self.cur + 1 + (i.wrapping_sub(p) & MASK) as u64)
    }

    /// Called with slot `cur` drained: moves the cursor to the next occupied slot, sorts its
    /// bucket and migrates overflow entries that are now within the horizon. Returns `false`
    /// if the queue is empty.
    #[cold]
    fn advance(&mut self) -> bool {
        let next = match self.next_occupied() {
            Some(slot) => slot,
            // Wheel empty: jump over the idle gap to the overflow's first entry.
            None => match self.overflow.peek() {
                Some(m) => slot_of(m.0.key),
                None => return false,
            },
        };
        self.cur = next;
        let i = next as usize & MASK;
        if self.occupied[i >> 6] & (1 << (i & 63)) != 0 {
            self.occupied[i >> 6] &= !(1 << (i & 63));
            if self.occupied[i >> 6] == 0 {
                self.summary &= !(1 << (i >> 6));
            }
            // Swap, not move: the bucket keeps the drained `current`'s buffer, so steady
            // state allocates nothing.
            std::mem::swap(&mut self.current, &mut self.buckets[i]);
            // But a burst must not pin its peak capacity in every bucket it passed through:
            // 4096 buckets each keeping a burst-sized buffer cost ~200 MiB at k=32.
            let bucket = &mut self.buckets[i];
            if bucket.capacity() > MAX_IDLE_BUCKET_CAPACITY {
                bucket.shrink_to(MAX_IDLE_BUCKET_CAPACITY);
            }
            // `MinFirst` order is reversed, so ascending puts the smallest key last.
            self.current.sort_unstable();
        }
        // Overflow entries all have slot >= old cur + BUCKETS > old cur, so none belongs
        // before `next`; those now within the horizon go to their buckets (or `late`).
        let horizon = next + BUCKETS as u64;
        while let Some(top) = self.overflow.peek()
            && slot_of(top.0.key) < horizon
        {
            if let Some(m) = self.overflow.pop() {
                self.place(m);
            }
        }
        true
    }
}

impl<E> EventQueue<E> for WheelQueue<E> {
    #[inline(always)]
    fn push(&mut self, entry: Entry<E>) {
        self.len += 1;
        self.place(MinFirst(entry));
    }

    #[inline(always)]
    fn pop(&mut self) -> Option<Entry<E>> {
        if self.current.is_empty() && self.late.is_empty() && !self.advance() {
            return None;
        }
        self.len -= 1;
        // Slot `cur` is split between `current` and `late`: take the smaller of their heads
        // (`late` is usually empty: few events are scheduled less than a bucket ahead).
        let from_late = match (self.current.last(), self.late.peek()) {
            (Some(c), Some(l)) => l > c,
            (None, _) => true,
            (Some(_), None) => false,
        };
        let m = if from_late { self.late.pop() } else { self.current.pop() };
        m.map(|m| m.0)
    }

    fn len(&self) -> usize {
        self.len
    }

    /// From the current bucket only (sorted, popped from its end); the late heap is ignored.
    #[inline]
    fn peek_ahead(&self, ahead: usize) -> Option<&E> {
        let n = self.current.len();
        if ahead < n {
            Some(&self.current[n - 1 - ahead].0.ev)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::HeapQueue;
    use crate::time::SimTime;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    const WIDTH: u64 = 1 << SHIFT;
    const HORIZON: u64 = (BUCKETS as u64) << SHIFT;

    fn entry(time: u64, seq: u64) -> Entry<u64> {
        Entry {
            key: Key {
                time: SimTime(time),
                origin_seq: seq,
            },
            ev: seq ^ 0xABCD,
        }
    }

    /// Pops one entry from each queue and checks they agree (key and payload) and keep len.
    fn pop_both(w: &mut WheelQueue<u64>, h: &mut HeapQueue<u64>) -> Option<Entry<u64>> {
        let (a, b) = (w.pop(), h.pop());
        assert_eq!(a.map(|e| (e.key, e.ev)), b.map(|e| (e.key, e.ev)));
        assert_eq!(w.len(), h.len());
        a
    }

    /// Random offsets past `now`, mixing every case the wheel distinguishes.
    fn offset(rng: &mut ChaCha8Rng) -> u64 {
        match rng.random_range(0..100) {
            0..10 => 0,                                                           // same time as now
            10..20 => rng.random_range(0..WIDTH),                                 // same or next bucket
            20..70 => rng.random_range(0..HORIZON),                               // within the wheel
            70..85 => rng.random_range(HORIZON - 2 * WIDTH..HORIZON + 2 * WIDTH), // the edge
            85..97 => rng.random_range(HORIZON..50 * HORIZON),                    // overflow
            _ => rng.random_range(1_000 * HORIZON..1 << 50),                      // long idle gap
        }
    }

    #[test]
    fn differential_against_heap() {
        for seed in 0..40 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let (mut w, mut h) = (WheelQueue::new(), HeapQueue::new());
            let mut now = rng.random_range(0..1u64 << 40);
            let mut seq = 0;
            // Alternate phases that grow and shrink the queue, so it is sometimes empty,
            // sometimes only has far-future entries, sometimes thousands of entries.
            let push_pct = [80, 20, 50, 95, 5][seed as usize % 5];
            for step in 0..20_000 {
                let pct = if (step / 2_000) % 2 == 0 {
                    push_pct
                } else {
                    100 - push_pct
                };
                if rng.random_range(0..100) < pct {
                    let t = now + offset(&mut rng);
                    seq += 1;
                    w.push(entry(t, seq));
                    h.push(entry(t, seq));
                } else if let Some(e) = pop_both(&mut w, &mut h) {
                    assert!(e.key.time.0 >= now);
                    now = e.key.time.0;
                    if rng.random_range(0..8) == 0 {
                        // What `Scheduler::pop_until` does past its limit: push it back.
                        w.push(e);
                        h.push(e);
                    }
                }
            }
            while pop_both(&mut w, &mut h).is_some() {}
            assert!(w.is_empty() && w.pop().is_none());
        }
    }

    #[test]
    fn hold_model_matches_heap() {
        // Steady state with many entries per bucket and a tail beyond the horizon.
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let (mut w, mut h) = (WheelQueue::new(), HeapQueue::new());
        for seq in 0..5_000 {
            let t = rng.random_range(0..2 * HORIZON);
            w.push(entry(t, seq));
            h.push(entry(t, seq));
        }
        for seq in 5_000..200_000 {
            let e = pop_both(&mut w, &mut h).unwrap();
            let inc = if rng.random_range(0..100) == 0 {
                rng.random_range(0..100 * HORIZON)
            } else {
                rng.random_range(0..HORIZON / 2)
            };
            w.push(entry(e.key.time.0 + inc, seq));
            h.push(entry(e.key.time.0 + inc, seq));
        }
        while pop_both(&mut w, &mut h).is_some() {}
    }

    #[test]
    fn many_entries_for_the_slot_being_drained() {
        // A lockstep burst: hundreds of entries scheduled for the slot being drained, more
        // than `late` holds, in an order unrelated to their keys.
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let (mut w, mut h) = (WheelQueue::new(), HeapQueue::new());
        for seq in 0..50 {
            w.push(entry(10 * WIDTH + seq, seq));
            h.push(entry(10 * WIDTH + seq, seq));
        }
        let mut seq = 50;
        for _ in 0..40 {
            let e = pop_both(&mut w, &mut h).unwrap();
            for _ in 0..rng.random_range(0..12) {
                let t = e.key.time.0 + rng.random_range(0..WIDTH / 4);
                let s = rng.random_range(0..1_000_000);
                seq += 1;
                w.push(entry(t, s * 1_000 + seq));
                h.push(entry(t, s * 1_000 + seq));
            }
        }
        while pop_both(&mut w, &mut h).is_some() {}
    }

    #[test]
    fn empty_and_push_back() {
        let mut w = WheelQueue::<u64>::new();
        assert!(w.pop().is_none());
        assert!(w.is_empty());
        w.push(entry(5 * WIDTH, 2));
        w.push(entry(5 * WIDTH, 1));
        let e = w.pop().unwrap();
        assert_eq!(e.key.origin_seq, 1);
        w.push(e); // the just-popped entry goes back in front
        assert_eq!(w.pop().unwrap().key.origin_seq, 1);
        let e = w.pop().unwrap();
        assert_eq!(e.key.origin_seq, 2);
        assert!(w.pop().is_none());
        w.push(e); // push-back after the queue emptied
        assert_eq!(w.len(), 1);
        assert_eq!(w.pop().unwrap().key.origin_seq, 2);
        assert!(w.pop().is_none());
    }

    #[test]
    fn huge_times_and_gaps() {
        let mut w = WheelQueue::<u64>::new();
        let times = [
            u64::MAX,
            u64::MAX - 1,
            u64::MAX - HORIZON,
            1 << 62,
            3,
            0,
            u64::MAX - WIDTH,
        ];
        for (seq, &t) in times.iter().enumerate() {
            w.push(entry(t, seq as u64));
        }
        w.push(entry(u64::MAX, 100)); // equal time, larger seq
        let mut want: Vec<(u64, u64)> = times.iter().enumerate().map(|(s, &t)| (t, s as u64)).collect();
        want.push((u64::MAX, 100));
        want.sort();
        let mut got = vec![];
        while let Some(e) = w.pop() {
            got.push((e.key.time.0, e.key.origin_seq));
            if e.key.time.0 == u64::MAX - 1 {
                w.push(entry(u64::MAX, 50)); // pushed late, still ordered
                want.push((u64::MAX, 50));
                want.sort();
            }
        }
        assert_eq!(got, want);
    }
}

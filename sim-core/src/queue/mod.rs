//! Future-event queues behind one small trait, so the structure can be swapped.
//!
//! Two implementations:
//! - [`HeapQueue`]: `std::collections::BinaryHeap`, the simple baseline.
//! - [`WheelQueue`]: a one-level timing wheel with a bitmap of occupied buckets, a small heap
//!   for the active bucket and an overflow heap beyond the horizon. Network events land within
//!   a few microseconds of `now` (an MTU at 400 Gb/s serializes in 82 ns, cables add 5 ns/m),
//!   which is what a wheel is good at. See `docs/performance.md` for the hold-model figures.
//!
//! Both pop entries in exactly the order of their [`Key`]; the kernel never relies on anything
//! else, so swapping queues cannot change a result.

mod heap;
mod wheel;

pub use heap::HeapQueue;
pub use wheel::WheelQueue;

use crate::time::SimTime;
use std::cmp::Ordering;

/// Total order of scheduled events: `(time, origin, seq)`, see the crate docs for the rules.
///
/// `origin` and `seq` are packed into one `u64` (origin in the high 24 bits, the scheduler's
/// sequence number in the low 40 bits) so that a key is 16 bytes and compares in two steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    pub time: SimTime,
    pub origin_seq: u64,
}

/// Number of bits of [`Key::origin_seq`] that hold the sequence number.
pub const SEQ_BITS: u32 = 40;
/// Largest number of distinct origins a scheduler supports (2^24).
pub const MAX_ORIGINS: u32 = 1 << (64 - SEQ_BITS);

impl Key {
    pub fn new(time: SimTime, origin: u32, seq: u64) -> Self {
        debug_assert!(origin < MAX_ORIGINS);
        debug_assert!(seq < (1 << SEQ_BITS));
        Key {
            time,
            origin_seq: ((origin as u64) << SEQ_BITS) | seq,
        }
    }
    pub fn origin(self) -> u32 {
        (self.origin_seq >> SEQ_BITS) as u32
    }
    pub fn seq(self) -> u64 {
        self.origin_seq & ((1 << SEQ_BITS) - 1)
    }
}

/// One entry of the future-event set: its ordering key and a small `Copy` event record.
#[derive(Clone, Copy, Debug)]
pub struct Entry<E> {
    pub key: Key,
    pub ev: E,
}

/// Heap item ordered so that `BinaryHeap` (a max-heap) pops the smallest key first. The key
/// is compared as one `u128`, the same order as `Key`'s derived `(time, origin_seq)` order
/// but without the branch between the two fields.
pub(crate) struct MinFirst<E>(pub(crate) Entry<E>);

#[inline]
fn packed(k: Key) -> u128 {
    ((k.time.0 as u128) << 64) | k.origin_seq as u128
}

impl<E> PartialEq for MinFirst<E> {
    fn eq(&self, other: &Self) -> bool {
        self.0.key == other.0.key
    }
}
impl<E> Eq for MinFirst<E> {}
impl<E> PartialOrd for MinFirst<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for MinFirst<E> {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        packed(other.0.key).cmp(&packed(self.0.key))
    }
}

/// A future-event set. `pop` must return entries in increasing [`Key`] order given that no
/// entry is pushed with a time earlier than the last popped time (the scheduler guarantees it).
pub trait EventQueue<E> {
    fn push(&mut self, entry: Entry<E>);
    fn pop(&mut self) -> Option<Entry<E>>;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// A likely upcoming event, `ahead` pops from now (0 = the next), for prefetching only:
    /// it may be wrong (events scheduled meanwhile can come first) or `None`.
    fn peek_ahead(&self, _ahead: usize) -> Option<&E> {
        None
    }
}

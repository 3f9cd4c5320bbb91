//! Timing-wheel event queue (to be written).
use super::{Entry, EventQueue, HeapQueue};

/// Placeholder delegating to the heap until the wheel lands.
#[derive(Default)]
pub struct WheelQueue<E> {
    inner: HeapQueue<E>,
}

impl<E> WheelQueue<E> {
    pub fn new() -> Self {
        WheelQueue { inner: HeapQueue::new() }
    }
}

impl<E> EventQueue<E> for WheelQueue<E> {
    fn push(&mut self, entry: Entry<E>) {
        self.inner.push(entry)
    }
    fn pop(&mut self) -> Option<Entry<E>> {
        self.inner.pop()
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
}

//! The baseline queue: a binary min-heap on [`Key`].

use super::{Entry, EventQueue, Key, MinFirst};
use std::collections::BinaryHeap;

/// `std::collections::BinaryHeap` ordered by [`Key`].
pub struct HeapQueue<E> {
    heap: BinaryHeap<MinFirst<E>>,
}

impl<E> Default for HeapQueue<E> {
    fn default() -> Self {
        HeapQueue {
            heap: BinaryHeap::new(),
        }
    }
}

impl<E> HeapQueue<E> {
    pub fn new() -> Self {
        Self::default()
    }
    /// Smallest key currently held, if any.
    pub fn peek_key(&self) -> Option<Key> {
        self.heap.peek().map(|m| m.0.key)
    }
}

impl<E> EventQueue<E> for HeapQueue<E> {
    fn push(&mut self, entry: Entry<E>) {
        self.heap.push(MinFirst(entry));
    }
    fn pop(&mut self) -> Option<Entry<E>> {
        self.heap.pop().map(|m| m.0)
    }
    fn len(&self) -> usize {
        self.heap.len()
    }
}

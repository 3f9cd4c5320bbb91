//! A cache hint for the model's prefetch pipeline ([`crate::Model::prefetch`]).
//!
//! A plain load of the value a coming event will read also brings its line in, but the core
//! cannot retire past a load that misses: at scale the pipeline's own loads were a fifth of a
//! run's cycles (`docs/performance.md`, session 10). A prefetch instruction asks for the line
//! and goes on. It never changes a result: it is only a hint, and on targets without one it
//! does nothing.

/// Asks for the cache line holding `r` in every level of the hierarchy, without waiting for
/// it (x86 `PREFETCHT0`; nothing elsewhere).
#[inline(always)]
pub fn prefetch<T>(r: &T) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse"))]
    safe_arch::prefetch_t0(r);
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse")))]
    let _ = r;
}

/// [`prefetch`] of `v[i]`, if it exists (out of range: nothing, as a hint may be stale).
#[inline(always)]
pub fn prefetch_at<T>(v: &[T], i: usize) {
    if let Some(r) = v.get(i) {
        prefetch(r);
    }
}

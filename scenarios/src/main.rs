//! The `fabricsim` binary: [`scenarios::cli::main`] (logging set-up around
//! [`scenarios::cli::run`]), on the mimalloc allocator with transparent huge pages.

/// mimalloc instead of the system allocator: the engine keeps a few small queues per port
/// (packet rings, priority queues, pipes), allocated one by one at build time. glibc's
/// allocator interleaves them with its chunk headers and everything else of their size;
/// mimalloc keeps each size class on its own pages. With huge pages on top
/// ([`allow_huge_pages`]) a k=32 fat-tree's hop costs about a third less CPU
/// (docs/performance.md, session 23). Results do not depend on the allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    allow_huge_pages();
    scenarios::cli::main()
}

/// Lets mimalloc ask for transparent huge pages (`madvise(MADV_HUGEPAGE)`) on the memory
/// it maps from now on. Linux's default THP mode, `madvise`, gives them only to memory that
/// asks; a fabric of thousands of switches then touches its state through a few hundred
/// 2 MiB pages instead of tens of thousands of 4 KiB ones. Where the kernel has none to
/// give, mimalloc falls back to ordinary pages by itself.
#[allow(unsafe_code)]
fn allow_huge_pages() {
    // SAFETY: `mi_option_set` only stores an option value; it is not thread-safe, and this
    // runs first in `main`, before the program starts any thread.
    unsafe { libmimalloc_sys::mi_option_set(libmimalloc_sys::mi_option_large_os_pages, 1) };
}

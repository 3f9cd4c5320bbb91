//! The `fabricsim` binary: [`scenarios::cli::main`] (logging set-up around
//! [`scenarios::cli::run`]), on the mimalloc allocator.

/// mimalloc instead of the system allocator, for its transparent huge pages: mimalloc (v3)
/// maps its arenas 2 MiB-aligned and asks for huge pages on them (`madvise(MADV_HUGEPAGE)`,
/// which Linux's THP mode `madvise`, this machine's and many distributions' default, waits
/// for: glibc's allocator never asks), so a fabric of thousands of switches
/// keeps its per-port state on a few hundred 2 MiB pages instead of tens of thousands of
/// 4 KiB ones, and its scattered reads stop missing the TLB. A k=32 fat-tree's hop costs
/// about 30 % less CPU than on glibc's allocator (docs/performance.md, session 23). Where the
/// kernel has no huge pages to give, mimalloc uses ordinary ones. Results never depend on
/// the allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    scenarios::cli::main()
}

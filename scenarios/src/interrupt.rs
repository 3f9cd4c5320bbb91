//! SIGINT and SIGTERM: a count of the signals received, which the run loop and the results
//! writer poll.
//!
//! The `fabricsim` binary calls [`install`]. Then the first Ctrl-C (or SIGTERM) during a
//! simulation ends it as a budget does: the results are written, marked `interrupted`. A signal
//! while results are written stops the writing and removes the partial directory, so the
//! previous results stay whole. A third signal exits at once (status 130); the next run with
//! the same `--out` removes what was left.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Signals received by this process since [`install`].
static RECEIVED: AtomicUsize = AtomicUsize::new(0);

/// Exit status of a run ended by a signal (128 + SIGINT, the shell convention).
pub const EXIT_INTERRUPTED: i32 = 130;

/// Counts SIGINT and SIGTERM from now on (instead of dying at once), on a background thread.
pub fn install() -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    std::thread::Builder::new().name("signals".into()).spawn(move || {
        for _ in signals.forever() {
            if RECEIVED.fetch_add(1, Ordering::SeqCst) + 1 >= 3 {
                eprintln!("fabricsim: interrupted three times: exiting now");
                std::process::exit(EXIT_INTERRUPTED);
            }
        }
    })?;
    Ok(())
}

/// Where a run reads its interruptions: the process's signals (the default), or a counter of
/// its own (tests raise it by hand).
#[derive(Clone, Debug, Default)]
pub struct Interrupt(Option<Arc<AtomicUsize>>);

impl Interrupt {
    /// A counter of its own, not fed by signals.
    pub fn manual() -> Self {
        Interrupt(Some(Arc::new(AtomicUsize::new(0))))
    }

    /// Counts one interruption (on a [`Interrupt::manual`] counter, or as if a signal came).
    pub fn raise(&self) {
        self.counter().fetch_add(1, Ordering::SeqCst);
    }

    /// Interruptions so far.
    pub fn count(&self) -> usize {
        self.counter().load(Ordering::SeqCst)
    }

    fn counter(&self) -> &AtomicUsize {
        self.0.as_deref().unwrap_or(&RECEIVED)
    }
}

//! # sim-core: fabricsim's discrete-event kernel
//!
//! Time, the scheduler, run control, random-number streams and statistics. This crate knows
//! nothing of networks: no packets, ports or links appear here.
//!
//! ## The event-ordering contract
//!
//! Events are totally ordered by the key `(time, origin, seq)`:
//!
//! 1. An event with an earlier `time` (picoseconds) runs first.
//! 2. Among events at the same time, the one whose `origin` (the scheduling component's id,
//!    [`Origin`]) is smaller runs first.
//! 3. Among events at the same time from the same origin, the one scheduled first runs first
//!    (FIFO): `seq` is the scheduler's counter, incremented on every `schedule` call.
//! 4. Keys are unique, so the order is total and no queue structure can change it: swapping
//!    [`HeapQueue`] for [`WheelQueue`] gives identical runs.
//! 5. Scheduling an event earlier than `now` panics with the time, the origin and `now`.
//! 6. `seq` only ever orders the events of one origin (rule 3), so the order of two origins'
//!    events never depends on how many events a third origin scheduled. One counter for the
//!    whole scheduler gives the same order as a counter per origin (within an origin both
//!    count its `schedule` calls in the order they were made), without a random access to a
//!    table of counters on every `schedule` (session 15, `docs/performance.md`). A run split
//!    later across threads or ranks keeps its order with a counter per rank, as long as each
//!    origin schedules on one rank only.
//!
//! ## Pieces
//! - [`time`]: [`SimTime`], [`Duration`] (u64 ps), [`Bytes`], [`BitsPerSec`], [`serialization_time`].
//! - [`queue`]: the [`EventQueue`] trait, [`HeapQueue`] and [`WheelQueue`].
//! - [`sched`]: [`Scheduler`], the queue plus `now` and the sequence counter.
//! - [`pipe`]: [`Pipe`], a per-link FIFO whose head alone is scheduled.
//! - [`prefetch`](mod@prefetch): a cache hint for the model's prefetch pipeline.
//! - [`run`](mod@run): [`Model`], [`run()`](run::run), budgets and outcomes.
//! - [`rng`]: [`RngStreams`], one ChaCha8 stream per component.
//! - [`stats`]: [`LatencyHistogram`], [`Counter`], [`TimeWeightedGauge`].

pub mod pipe;
pub mod prefetch;
pub mod queue;
pub mod rng;
pub mod run;
pub mod sched;
pub mod stats;
pub mod time;

pub use pipe::Pipe;
pub use prefetch::{prefetch, prefetch_at};
pub use queue::{EventQueue, HeapQueue, WheelQueue};
pub use rng::{RngStreams, SimRng};
pub use run::{Model, PREFETCH_AHEAD, Progress, RunLimits, RunOutcome, RunReport, Stopwatch, run};
pub use sched::{Origin, Scheduler};
pub use stats::{Counter, LatencyHistogram, TimeWeightedGauge, UnitHistogram};
pub use time::{BitsPerSec, Bytes, Duration, SimTime, bytes_in, serialization_time};

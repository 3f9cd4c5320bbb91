//! The extension points fabric models plug into, one small file each.
//!
//! Each extension point is a trait whose hooks say *when* they fire (with empty defaults where
//! that makes sense) plus one closed enum that selects the implementation: smoltcp's
//! `Controller`/`AnyController` pattern. The engine only ever holds the enum, so dispatch is a
//! `match` the compiler can inline, with no `Box<dyn>` on the hot path.
//!
//! | extension point | file | variants today |
//! |---|---|---|
//! | link-level flow control | [`flow_control`] | `None` |
//! | switch buffer model | [`buffer`] | `PerPortTailDrop`; [`buffer::SharedBuffer`] (per-switch MMU, inherent API) |
//! | congestion marking | [`marking`] | `None`, `Red` (RED/ECN at enqueue or dequeue) |
//! | sender congestion control | [`cc`] | `FixedRate`, `Dcqcn`, `Timely` |
//! | crossbar arbitration | [`crossbar`] | `OldestFirst`, `RoundRobin`, `Islip`, `LongestQueueFirst` |
//! | credit update policy | [`credit`] | `PerChange`, `Coalesced` |
//! | PFC pausing side | [`pfc`] | `Priority` (802.1Qbb), `Global` (802.3x) |
//!
//! [`pfc`] also holds the parts common to its variants (frames, quanta, the receiver, the
//! watchdog, headroom formulas), used by the engine together with [`buffer::SharedBuffer`].
//!
//! Adding a variant (as done for TIMELY): write one file with a struct implementing the trait, add one
//! variant to the enum and one arm to each `match` in the enum's impl, add its unit tests and
//! one shipped scenario. `docs/models/extending.md` walks through it.

pub mod buffer;
pub mod cc;
pub mod credit;
pub mod crossbar;
pub mod flow_control;
pub mod marking;
pub mod pfc;

pub use buffer::{AnyBuffer, BufferModel, PerPortTailDrop, SharedBuffer, SharedBufferConfig};
pub use cc::{AnyCc, CongestionControl, Dcqcn, DcqcnParams, FixedRate, Hpcc, HpccParams, IntHop, Timely, TimelyParams};
pub use flow_control::{AnyFlowControl, LinkFlowControl, NoFlowControl};
pub use marking::{AnyMarking, MarkPoint, Marking, NoMarking, RedEcn, RedParams};
pub use pfc::{AnyPauseSender, GlobalPauseSender, PauseKind, PauseSender, PfcEdge, PfcFrame, PfcReceiver, PfcSender};

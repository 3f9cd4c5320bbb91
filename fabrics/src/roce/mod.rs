//! RoCE (RDMA over Converged Ethernet, v1 and v2) fabric parts that are not generic extension
//! points: frame format and overhead, Ethernet link presets.
//!
//! The RoCEv2 models that plug into the engine live with the other extension points in
//! [`crate::models`]: PFC ([`crate::models::pfc`]), the shared-buffer MMU
//! ([`crate::models::buffer::SharedBuffer`]), RED/ECN marking ([`crate::models::marking`]),
//! and DCQCN / TIMELY ([`crate::models::cc`]). What is modelled and where every number comes
//! from: `docs/models/rocev2.md`; facts: `shared/reference/models.md` §2.

pub mod frame;

pub use frame::{ETHERNET_PRESETS, IpVersion, RoceFrame, RoceHeader, RoceVersion};

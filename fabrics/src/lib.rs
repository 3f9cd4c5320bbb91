//! # fabrics: topologies, routing, the packet engine and the fabric models
//!
//! - [`topology`]: petgraph topologies and their builders (fat-tree, leaf-spine, sizing).
//! - [`routing`]: ECMP next-hop tables computed from the graph, frozen flat.
//! - [`engine`]: the packet engine ([`engine::Fabric`]), a `sim_core::Model`.
//! - [`models`]: the extension points (flow control, buffers, marking, congestion control).
//! - [`roce`]: RoCEv2 frame overhead and Ethernet link presets (pure).
//! - [`ib`]: InfiniBand link presets, VL arbitration and congestion control; the engine runs them.
//! - [`traffic`]: workloads (flow lists, permutation, incast, Poisson with a size CDF).

pub mod engine;
pub mod ib;
pub mod models;
pub mod roce;
pub mod routing;
pub mod topology;
pub mod traffic;

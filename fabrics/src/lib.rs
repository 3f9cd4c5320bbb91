//! # fabrics: topologies, routing, the packet engine and the fabric models
//!
//! - [`topology`]: petgraph topologies and their builders (fat-tree, leaf-spine, sizing, HGX
//!   servers, NVLink shapes, GPU clusters).
//! - [`routing`]: ECMP next-hop tables computed from the graph, frozen flat.
//! - [`engine`]: the packet engine ([`engine::Fabric`]), a `sim_core::Model`.
//! - [`models`]: the extension points (flow control, buffers, marking, congestion control).
//! - [`ib`]: InfiniBand link presets, VL arbitration and congestion control; the engine runs them.
//! - [`roce`]: RoCEv2 frame overhead and Ethernet link presets (pure).
//! - [`nvlink`], [`pcie`]: NVLink/NVSwitch and PCIe link parameters and framing (pure).
//! - [`collectives`]: collectives as message DAGs, their generators, analytic costs and an
//!   idle-network evaluator.
//! - [`traffic`]: workloads (flow lists, permutation, incast, Poisson with a size CDF).

pub mod collectives;
pub mod engine;
pub mod ib;
pub mod models;
pub mod nvlink;
pub mod pcie;
pub mod roce;
pub mod routing;
pub mod topology;
pub mod traffic;

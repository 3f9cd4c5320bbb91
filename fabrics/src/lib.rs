//! # fabrics: topologies, routing, the packet engine and the fabric models
pub mod topology;

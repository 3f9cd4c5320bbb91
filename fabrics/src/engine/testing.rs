//! Traffic shared by the engine's unit tests.

use crate::traffic::FlowSpec;
use sim_core::Bytes;

/// The mixed traffic of the pass-through tests on 16 hosts (a k=4 fat-tree): a permutation
/// (h -> h + 5) of 400 kB on class `classes[0]`, another (h -> h + 3) of 250 kB on
/// `classes[1]`, and an incast of 300 kB to host 0 from hosts `incast_from..16` on
/// `classes[0]`.
pub(super) fn mixed_flows(classes: [u8; 2], incast_from: u32) -> Vec<FlowSpec> {
    let flow = |src: u32, dst: u32, size: u64, class: u8| FlowSpec {
        src,
        dst,
        size: Bytes(size),
        class,
        ..Default::default()
    };
    let mut flows: Vec<FlowSpec> = (0..16u32).map(|h| flow(h, (h + 5) % 16, 400_000, classes[0])).collect();
    flows.extend((0..16u32).map(|h| flow(h, (h + 3) % 16, 250_000, classes[1])));
    flows.extend((incast_from..16u32).map(|h| flow(h, 0, 300_000, classes[0])));
    flows
}

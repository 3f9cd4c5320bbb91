//! Collective communication as message DAGs: the pure part (representation, generators,
//! analytic costs, an idle-network evaluator). The engine integration (a collective runner
//! that injects each message when its dependencies are delivered) is the lead's and pending.
//!
//! ## The representation
//! A collective is a [`MessageDag`]: a list of [`Message`]s, each "send `bytes` from `src` to
//! `dst` once every message in `deps` has been fully delivered, plus `gap`" (the gap is local
//! compute after the last dependency, e.g. the reduction of the data just received).
//! Endpoints are numbered `0..n_ranks` for the ranks, then `n_ranks..n_ranks + n_switches`
//! for in-network reduction endpoints (NVLink SHARP, see [`mod@generate`]'s NVLS). A rank is an
//! index, not a host: the caller maps rank `r` to a host index (for the GPU builders, rank
//! `r` = host `r`, server-major; see `crate::topology::cluster`).
//!
//! Invariants checked by [`MessageDag::validate`]: every dependency is an existing message, no
//! message depends on itself, the dependency graph is acyclic, endpoints are in range,
//! `src != dst`, switch endpoints talk only to ranks, and the sizes stay under [`DagLimits`].
//! Generators emit messages in a topological order (every dependency has a smaller index),
//! which [`MessageDag::is_topologically_ordered`] checks.
//!
//! Message sizes may be 0 when a collective's buffer is smaller than its number of pieces
//! (e.g. 4 bytes over 8 ranks): such a message is a pure synchronisation (a flag write).
//!
//! ## Modules
//! - [`mod@generate`]: AllReduce (ring, double binary tree, halving-doubling, NVLS,
//!   hierarchical), ReduceScatter, AllGather, Broadcast, AllToAll, with chunks and channels.
//! - [`eval`]: the idle-network evaluator (dependencies + per-sender FIFO serialization).
//! - [`cost`]: alpha-beta cost formulas, nccl-tests algbw/busbw, NCCL's latency model.
//!
//! See `docs/collectives.md` for what is and is not modelled.

pub mod cost;
pub mod eval;
pub mod flows;
pub mod generate;
pub mod training;

use std::fmt;

use sim_core::Duration;

pub use eval::{Timeline, evaluate, evaluate_with};
pub use generate::{Algorithm, CollectiveKind, CollectiveSpec, generate};

/// Default limit on the number of messages of one DAG.
pub const MAX_MESSAGES: u64 = 10_000_000;
/// Default limit on the number of dependencies of one message.
pub const MAX_DEPS_PER_MESSAGE: u64 = 1 << 16;
/// Most ranks (plus switch endpoints) a DAG may have.
pub const MAX_ENDPOINTS: u32 = 1 << 20;

/// One point-to-point transfer of a collective.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// Sending endpoint (a rank, or a switch endpoint; see the module docs).
    pub src: u32,
    /// Receiving endpoint.
    pub dst: u32,
    /// Payload bytes (0 = a synchronisation only).
    pub bytes: u64,
    /// Indices of the messages that must be fully delivered before this one may start.
    pub deps: Vec<u32>,
    /// Local compute delay after the last dependency is delivered (e.g. a reduction).
    pub gap: Duration,
    /// The channel (NCCL's parallel rings/trees; the engine may map it to a flow id / QP).
    pub channel: u16,
    /// The algorithm step this message belongs to, from 0 within its [`Stage`] (a ring
    /// step, a tree level, a halving-doubling round, an NVLS phase; see
    /// [`mod@generate`]). A label for reports and traces: it never changes timing.
    pub step: u32,
    /// The stage of a hierarchical collective ([`Stage::Flat`] for the others).
    pub stage: Stage,
}

/// Which stage of a collective a message belongs to (a label; see [`Message::step`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// A single-stage algorithm.
    #[default]
    Flat,
    /// Hierarchical: the intra-server ring ReduceScatter.
    IntraReduceScatter,
    /// Hierarchical: the inter-server ring AllReduce of each shard.
    InterAllReduce,
    /// Hierarchical: the intra-server ring AllGather.
    IntraAllGather,
}

impl Stage {
    /// The hierarchical stages in execution order.
    pub const HIERARCHICAL: [Stage; 3] = [Stage::IntraReduceScatter, Stage::InterAllReduce, Stage::IntraAllGather];

    /// A short name for tables and trace slices (`""` for [`Stage::Flat`]).
    pub fn name(self) -> &'static str {
        match self {
            Stage::Flat => "",
            Stage::IntraReduceScatter => "intra_reduce_scatter",
            Stage::InterAllReduce => "inter_all_reduce",
            Stage::IntraAllGather => "intra_all_gather",
        }
    }
}

/// Resource limits on a DAG.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DagLimits {
    /// Most messages.
    pub max_messages: u64,
    /// Most dependencies of one message.
    pub max_deps: u64,
}

impl DagLimits {
    /// [`MAX_MESSAGES`], [`MAX_DEPS_PER_MESSAGE`].
    pub const DEFAULT: DagLimits = DagLimits {
        max_messages: MAX_MESSAGES,
        max_deps: MAX_DEPS_PER_MESSAGE,
    };
}

impl Default for DagLimits {
    fn default() -> Self {
        DagLimits::DEFAULT
    }
}

/// Who an endpoint is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// Rank `r` (a GPU).
    Rank(u32),
    /// In-network reduction endpoint `s` (an NVSwitch domain doing NVLink SHARP).
    Switch(u32),
}

/// A collective as a message DAG (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageDag {
    /// Ranks: endpoints `0..n_ranks`.
    pub n_ranks: u32,
    /// Switch endpoints: `n_ranks..n_ranks + n_switches`.
    pub n_switches: u32,
    pub messages: Vec<Message>,
}

/// Why a DAG or a collective specification is invalid.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DagError {
    /// More messages than the limit.
    TooManyMessages { count: u64, limit: u64 },
    /// A message with more dependencies than the limit.
    TooManyDeps { message: u32, count: u64, limit: u64 },
    /// A dependency index that names no message (or the message itself).
    BadDep { message: u32, dep: u32 },
    /// An endpoint out of range, a message to itself, or a switch-to-switch message.
    BadEndpoint { message: u32, src: u32, dst: u32 },
    /// The dependencies form a cycle through `message`.
    Cycle { message: u32 },
    /// A collective specification the generators refuse (`reason` says why).
    InvalidSpec { reason: String },
}

impl fmt::Display for DagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DagError::TooManyMessages { count, limit } => {
                write!(f, "collective needs {count} messages, over the limit of {limit}")
            }
            DagError::TooManyDeps { message, count, limit } => {
                write!(
                    f,
                    "message {message} has {count} dependencies, over the limit of {limit}"
                )
            }
            DagError::BadDep { message, dep } => {
                write!(f, "message {message} depends on {dep}, which is not another message")
            }
            DagError::BadEndpoint { message, src, dst } => {
                write!(
                    f,
                    "message {message} from endpoint {src} to {dst} is not a valid transfer"
                )
            }
            DagError::Cycle { message } => write!(f, "dependency cycle through message {message}"),
            DagError::InvalidSpec { reason } => write!(f, "invalid collective: {reason}"),
        }
    }
}

impl std::error::Error for DagError {}

impl MessageDag {
    /// Number of endpoints (ranks + switch endpoints).
    pub fn n_endpoints(&self) -> u32 {
        self.n_ranks + self.n_switches
    }

    /// Who endpoint `e` is.
    pub fn endpoint(&self, e: u32) -> Endpoint {
        if e < self.n_ranks {
            Endpoint::Rank(e)
        } else {
            Endpoint::Switch(e - self.n_ranks)
        }
    }

    /// Checks the invariants of the module docs against `limits`.
    pub fn validate(&self, limits: &DagLimits) -> Result<(), DagError> {
        let n = self.messages.len() as u64;
        if n > limits.max_messages {
            return Err(DagError::TooManyMessages {
                count: n,
                limit: limits.max_messages,
            });
        }
        let n_ep = self.n_endpoints();
        for (i, m) in self.messages.iter().enumerate() {
            let i = i as u32;
            if m.deps.len() as u64 > limits.max_deps {
                return Err(DagError::TooManyDeps {
                    message: i,
                    count: m.deps.len() as u64,
                    limit: limits.max_deps,
                });
            }
            let switch_pair = m.src >= self.n_ranks && m.dst >= self.n_ranks;
            if m.src >= n_ep || m.dst >= n_ep || m.src == m.dst || switch_pair {
                return Err(DagError::BadEndpoint {
                    message: i,
                    src: m.src,
                    dst: m.dst,
                });
            }
            for &d in &m.deps {
                if d as u64 >= n || d == i {
                    return Err(DagError::BadDep { message: i, dep: d });
                }
            }
        }
        self.topological_order().map(|_| ())
    }

    /// A topological order of the messages (Kahn's algorithm, smallest ready index first), or
    /// the cycle error. Dependencies must be in range (see [`MessageDag::validate`]).
    pub fn topological_order(&self) -> Result<Vec<u32>, DagError> {
        let n = self.messages.len();
        let (dependents_off, dependents) = self.dependents();
        let mut remaining: Vec<u32> = self.messages.iter().map(|m| m.deps.len() as u32).collect();
        let mut heap: std::collections::BinaryHeap<std::cmp::Reverse<u32>> = (0..n as u32)
            .filter(|&i| remaining[i as usize] == 0)
            .map(std::cmp::Reverse)
            .collect();
        let mut order = Vec::with_capacity(n);
        while let Some(std::cmp::Reverse(i)) = heap.pop() {
            order.push(i);
            for &j in &dependents[dependents_off[i as usize] as usize..dependents_off[i as usize + 1] as usize] {
                remaining[j as usize] -= 1;
                if remaining[j as usize] == 0 {
                    heap.push(std::cmp::Reverse(j));
                }
            }
        }
        if order.len() < n {
            let stuck = (0..n).find(|&i| remaining[i] > 0).unwrap_or(0);
            return Err(DagError::Cycle { message: stuck as u32 });
        }
        Ok(order)
    }

    /// The reverse adjacency in CSR form: the dependents of `i` are
    /// `dependents[off[i]..off[i + 1]]` (a duplicated dependency appears twice).
    pub(crate) fn dependents(&self) -> (Vec<u32>, Vec<u32>) {
        let n = self.messages.len();
        let mut off = vec![0u32; n + 1];
        for m in &self.messages {
            for &d in &m.deps {
                off[d as usize + 1] += 1;
            }
        }
        for i in 0..n {
            off[i + 1] += off[i];
        }
        let mut fill = off.clone();
        let mut out = vec![0u32; off[n] as usize];
        for (j, m) in self.messages.iter().enumerate() {
            for &d in &m.deps {
                out[fill[d as usize] as usize] = j as u32;
                fill[d as usize] += 1;
            }
        }
        (off, out)
    }

    /// True if every dependency has a smaller index than its message (what generators emit).
    pub fn is_topologically_ordered(&self) -> bool {
        self.messages
            .iter()
            .enumerate()
            .all(|(i, m)| m.deps.iter().all(|&d| (d as usize) < i))
    }

    /// Bytes sent by each endpoint (indexed by endpoint).
    pub fn bytes_sent(&self) -> Vec<u64> {
        let mut v = vec![0u64; self.n_endpoints() as usize];
        for m in &self.messages {
            v[m.src as usize] += m.bytes;
        }
        v
    }

    /// Bytes received by each endpoint (indexed by endpoint).
    pub fn bytes_received(&self) -> Vec<u64> {
        let mut v = vec![0u64; self.n_endpoints() as usize];
        for m in &self.messages {
            v[m.dst as usize] += m.bytes;
        }
        v
    }

    /// Total payload bytes of all messages.
    pub fn total_bytes(&self) -> u128 {
        self.messages.iter().map(|m| m.bytes as u128).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(src: u32, dst: u32, deps: Vec<u32>) -> Message {
        Message {
            src,
            dst,
            bytes: 8,
            deps,
            gap: Duration::ZERO,
            channel: 0,
            step: 0,
            stage: Stage::Flat,
        }
    }

    #[test]
    fn validate_catches_each_defect() {
        let ok = MessageDag {
            n_ranks: 2,
            n_switches: 0,
            messages: vec![msg(0, 1, vec![]), msg(1, 0, vec![0])],
        };
        ok.validate(&DagLimits::DEFAULT).unwrap();
        assert!(ok.is_topologically_ordered());
        let mut cyc = ok.clone();
        cyc.messages[0].deps = vec![1];
        assert!(matches!(cyc.validate(&DagLimits::DEFAULT), Err(DagError::Cycle { .. })));
        assert!(!cyc.is_topologically_ordered());
        let mut bad = ok.clone();
        bad.messages[1].deps = vec![7];
        assert_eq!(
            bad.validate(&DagLimits::DEFAULT),
            Err(DagError::BadDep { message: 1, dep: 7 })
        );
        bad.messages[1].deps = vec![1];
        assert!(matches!(
            bad.validate(&DagLimits::DEFAULT),
            Err(DagError::BadDep { .. })
        ));
        let mut ep = ok.clone();
        ep.messages[0].dst = 0;
        assert!(matches!(
            ep.validate(&DagLimits::DEFAULT),
            Err(DagError::BadEndpoint { .. })
        ));
        ep.messages[0].dst = 2;
        assert!(matches!(
            ep.validate(&DagLimits::DEFAULT),
            Err(DagError::BadEndpoint { .. })
        ));
        let small = DagLimits {
            max_messages: 1,
            max_deps: 0,
        };
        assert!(matches!(ok.validate(&small), Err(DagError::TooManyMessages { .. })));
        let deps = DagLimits {
            max_messages: 9,
            max_deps: 0,
        };
        assert!(matches!(ok.validate(&deps), Err(DagError::TooManyDeps { .. })));
        // Switch endpoints: rank <-> switch is fine, switch <-> switch is not.
        let sw = MessageDag {
            n_ranks: 1,
            n_switches: 2,
            messages: vec![msg(0, 1, vec![]), msg(1, 2, vec![])],
        };
        assert!(matches!(
            sw.validate(&DagLimits::DEFAULT),
            Err(DagError::BadEndpoint { message: 1, .. })
        ));
        assert_eq!(sw.endpoint(2), Endpoint::Switch(1));
        assert!(DagError::Cycle { message: 3 }.to_string().contains("cycle"));
    }
}

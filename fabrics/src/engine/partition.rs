//! One run as several partitions of the fabric, each on its own thread (`fabricsim run
//! --threads N`), with results equal to the run on one thread.
//!
//! The method is conservative synchronous windows (Lubachevsky's bounded lag, the YAWNS
//! scheme; Fujimoto, *Parallel and Distributed Simulation Systems*, 2000, ch. 3): every link
//! between two partitions takes at least `lookahead` to cross ([`Fabric::lookahead`], the
//! shortest such link delay), so nothing a partition does in a window `[t0, t0 + lookahead)`
//! reaches another partition before the window ends. Each partition handles its own events
//! of the window; then each hands the others what it put on links towards them
//! ([`Fabric::take_outbox`]), in the order it sent them, and each takes that in
//! ([`Fabric::take_in`]) before the next window starts at the earliest event anywhere.
//!
//! Why the results are the single-threaded run's: a partition holds all the state of its
//! nodes (ports, queues, MMUs, PFC, NICs, the ends of flows at its hosts) and touches no
//! other node's, so it handles the same events as the whole run would at its nodes, in the
//! same order. Events are ordered by `(time, origin, sequence number)`, and the sequence
//! number (the order of scheduling) only decides between events of one time and origin. The
//! only events a partition does not schedule itself are the arrivals over links from another
//! partition: a link's packets and its control frames each have an origin of their own
//! (`Fabric::pipe_origin`, `Fabric::ctrl_origin`) that no other event has, and at most one
//! arrival of each is pending at a time, so their order needs no sequence number. Flow
//! arrivals (`Ev::FlowArrival`) are handled by every partition, which starts its own
//! sources' flows; counted once. `tests/tests/partitions.rs` compares every output file of
//! runs on one thread and on two and four.
//!
//! Credit links (InfiniBand, and NVLink and PCIe inside servers, which never lie between
//! partitions) need two more things. A flow-control packet from another partition joins its
//! link's control pipe at the hand-over and is then taken in lazily like any other
//! (`ib_fc_on_its_way`: its arrival is after the window, so no look at the credits missed
//! it). And a credit stall names as its cause what the head of the downstream input buffer
//! waits for, a read of another partition's switch where the link crosses: the question goes
//! over with the hand-over and the answer comes back with the next (`ib/partition.rs`).
//!
//! Flows that start on other flows' completion split when each starts in the partition
//! where its dependencies complete ([`Fabric::partition_refusal_for`]: a closed loop's next
//! request, a collective's send-after-receive); a completion starts its dependents with no
//! delay to look ahead over, so a dependency between partitions is refused, naming the two
//! hosts. Their starts share the workload's origin, so a fold that meets starts of two
//! partitions at one instant cannot order them and the run is run again on one thread
//! (`Fabric::fold_may_go_on`). A dependent flow's completion time enters the histogram at the
//! fold, where its start (known to its source's partition) and its finish (to its
//! destination's) meet (`Fabric::settle_fold`).
//!
//! What cannot be split this way is refused ([`Fabric::partition_refusal`]): rate samples and
//! packet capture (both in whole-fabric time order); the runner also refuses, on RoCEv2,
//! topologies whose routes could close a loop of PAUSE frames across partitions (links within
//! a tier), which no partition's deadlock search would see whole.
//!
//! The partitions fold into one fabric ([`Fabric::absorb`], with `Scheduler::absorb` for
//! their events) at a window boundary, exactly the single-threaded run at that point: at the
//! end time, or before the run could end at an event only the whole fabric can place (every
//! flow finished: [`Fabric::may_all_end_within_lookahead`]), after which it goes on on one
//! thread. A run that stops at a deadlock or on the event budget is run again on one thread.

use super::*;
use sim_core::{Duration, Pipe};

/// A partition's part of the run: which partition each node is in and which is this one.
pub(super) struct PartState {
    part_of_node: Vec<u8>,
    me: u8,
    /// What this partition put on links towards other partitions since the last hand-over:
    /// (partition, item), in the order it sent them.
    outbox: Vec<(u8, Crossing)>,
    /// Events this partition handled that the whole run handles once for all partitions
    /// (the workload's flow arrivals): counted by partition 0 only.
    shared_events: u64,
    /// Per flow from another partition's host to one of this partition's: the payload bytes
    /// of its data packets still to be taken in before it may complete (retransmissions
    /// counted again); 0 for every other flow. One array read per packet taken in.
    bytes_to_cross: Vec<u64>,
    /// Such flows with bytes still to cross ([`Fabric::may_all_end_within_lookahead`]).
    short_of_bytes: u64,
    /// InfiniBand: each change of what a stall feeding an input lane fed from another
    /// partition would name as its cause, in this window, in event order (`ib/partition.rs`).
    heads: Vec<HeadChange>,
    /// That cause now, per input lane (`port * VLs + vl`; empty without InfiniBand).
    cause_now: Vec<u32>,
    /// What counting the virtual output queues would find, kept as they change
    /// (`ib/partition.rs`; `None` without them).
    pub(super) voq_held: Option<super::ib::VoqHeld>,
    /// The last window's, sorted by lane when first asked, for the answers.
    heads_asked: Vec<HeadChange>,
    heads_sorted: bool,
    /// Questions asked so far (the counter of the tokens, `ib::partition::cause_token`).
    asked: u32,
    /// Dependent flows' starts pending, by time (ps): a fold that meets two partitions'
    /// starts at one instant cannot order them (they share the workload's origin, and their
    /// sequence numbers come from different counters).
    starts_pending: std::collections::BTreeMap<u64, u32>,
    /// A fold met such a tie: the run cannot go on from it on one thread.
    fold_tied: bool,
    /// Flows completed here whose completion time is yet to enter the histogram: a
    /// dependent flow's start is known only where its source is (`Fabric::settle_fold`).
    fct_pending: Vec<u32>,
}

/// What a stall feeding input lane (`x`, `vl`) would name as its cause changed at the event
/// at (`at`, `origin`), from `old` to `new` (`u32::MAX`: nothing).
#[derive(Clone, Copy, Debug)]
struct HeadChange {
    x: u32,
    vl: u8,
    at: SimTime,
    origin: u32,
    old: u32,
    new: u32,
}

/// Something put on port `port`'s link towards another partition, arriving at the far end
/// at `at`: the packet itself (its id is only meaningful in the sender's arena) or a
/// link-level control frame.
#[derive(Clone, Debug)]
pub struct Crossing {
    port: u32,
    at: SimTime,
    what: Carried,
}

#[derive(Clone, Debug)]
enum Carried {
    /// With its HPCC in-band telemetry, when the run keeps it (by packet id, so it travels
    /// with the packet).
    Packet {
        lane: OnWire,
        packet: Packet,
        int: Option<Box<roce::int::IntStack>>,
    },
    Frame(CtrlFrame),
    /// InfiniBand: what did the head of the input at the far end of the port's link, lane
    /// `vl`, wait for at (`Crossing::at`, `origin`)? (`ib/partition.rs`)
    Ask {
        vl: u8,
        origin: u32,
        token: u32,
    },
    /// The answer to the question `token` about the port's lane `vl`.
    Tell {
        vl: u8,
        token: u32,
        cause: u32,
    },
}

impl Crossing {
    /// When it reaches the far end of its link (`None`: a question or an answer between
    /// partitions, which sets off no event).
    pub fn arrives_at(&self) -> Option<SimTime> {
        match self.what {
            Carried::Packet { .. } | Carried::Frame(_) => Some(self.at),
            Carried::Ask { .. } | Carried::Tell { .. } => None,
        }
    }
}

/// The cause one lane's changes in a window (in event order) say held just before the event
/// at (`at`, `origin`): events at one time run in the order of their origins (the origin
/// `Scheduler::current_origin` gives, which never ties across partitions); `now` is the
/// value at the window's end.
fn cause_before(lane: &[HeadChange], at: SimTime, origin: u32, now: u32) -> u32 {
    let before = lane.partition_point(|h| (h.at, h.origin) < (at, origin));
    match (before, lane.first()) {
        (0, Some(first)) => first.old,
        (0, None) => now,
        (n, _) => lane[n - 1].new,
    }
}

/// Most partitions a run can have (a node's partition is a byte).
pub const MAX_PARTITIONS: usize = 64;

impl Fabric {
    /// The work each node is likely to do, for splitting the run so that the partitions'
    /// threads get equal shares (`scenarios/src/partitioned.rs`): for every flow, its packets
    /// (its size over the MTU, at least one) at each node along its path, once where a hop
    /// leaves and once where it arrives. Replies (ACKs, CNPs, flow-control packets) follow
    /// the data nearly hop by hop, so they add about the same at the same nodes and are left
    /// out. An estimate that decides only how fast a run goes, never its results: a
    /// partition's events are the whole run's at its nodes, however the nodes are split.
    /// Counted saturating, so no workload overflows it.
    pub fn node_load_estimate(&self) -> Vec<u64> {
        let mut load = vec![0u64; self.port_base.len() - 1];
        let mtu_bytes = u64::from(self.cfg.mtu_bytes.max(1));
        for (f, spec) in self.flows.iter().enumerate() {
            let packets = spec.size.get().div_ceil(mtu_bytes).max(1);
            for p in self.try_flow_path(f as u32).unwrap_or_default() {
                let port = &self.ports[p as usize];
                for node in [port.node, port.peer_node] {
                    load[node as usize] = load[node as usize].saturating_add(packets);
                }
            }
        }
        load
    }

    /// Why this run cannot be split into partitions, or `None` if it can (module docs).
    pub fn partition_refusal(&self) -> Option<String> {
        if self.capture.is_some() {
            return Some("packet capture ([output] pcap) records the whole fabric in time order".into());
        }
        if let Some(why) = self.roce.as_deref().and_then(|r| r.partition_refusal()) {
            return Some(why.into());
        }
        None
    }

    /// Why this run cannot be split by `part_of_node` (a partition per node), or `None`: a
    /// flow that starts on other flows' completion must start in the partition where each of
    /// them completes (a flow completes where its last byte is delivered, an empty one at its
    /// source as it starts), since a completion starts its dependents with no delay to look
    /// ahead over. Collectives ("send after receive") keep to this.
    pub fn partition_refusal_for(&self, part_of_node: &[u8]) -> Option<String> {
        if self.deps.is_empty() {
            return None;
        }
        let part_of_host = |h: u32| part_of_node[self.ports[self.nics[h as usize].port as usize].node as usize];
        let completes_in = |f: usize| {
            let spec = &self.flows[f];
            part_of_host(if spec.size.get() == 0 { spec.src } else { spec.dst })
        };
        let d = &self.deps;
        for f in 0..self.flows.len() {
            for k in d.off[f]..d.off[f + 1] {
                let j = d.dependents[k as usize] as usize;
                if completes_in(f) != part_of_host(self.flows[j].src) {
                    let (a, b) = (&self.flows[f], &self.flows[j]);
                    return Some(format!(
                        "a flow from host {} starts when a flow to host {} completes, and the two hosts are in different \
                         partitions",
                        b.src,
                        if a.size.get() == 0 { a.src } else { a.dst }
                    ));
                }
            }
        }
        None
    }

    /// Makes this fabric partition `me` of a run split by `part_of_node` (a partition per
    /// node): it handles its own nodes' events only.
    pub fn set_partition(&mut self, part_of_node: Vec<u8>, me: u8) {
        assert_eq!(part_of_node.len(), self.port_base.len() - 1, "a partition per node");
        let part_of_host = |h: u32| part_of_node[self.ports[self.nics[h as usize].port as usize].node as usize];
        let bytes_to_cross: Vec<u64> = self
            .flows
            .iter()
            .map(|f| {
                let crosses_in = part_of_host(f.src) != me && part_of_host(f.dst) == me;
                if crosses_in { f.size.get() } else { 0 }
            })
            .collect();
        let short_of_bytes = bytes_to_cross.iter().filter(|&&b| b > 0).count() as u64;
        self.part = Some(Box::new(PartState {
            part_of_node,
            me,
            outbox: Vec::new(),
            shared_events: 0,
            bytes_to_cross,
            short_of_bytes,
            heads: Vec::new(),
            // Empty buffers everywhere at time zero: no cause.
            cause_now: vec![u32::MAX; self.ib.as_ref().map_or(0, |ib| self.ports.len() * ib.n_vls() as usize)],
            voq_held: None,
            heads_asked: Vec::new(),
            heads_sorted: true,
            asked: 0,
            starts_pending: std::collections::BTreeMap::new(),
            fold_tied: false,
            fct_pending: Vec::new(),
        }));
        let held = self.voq_held_now();
        self.part.as_mut().expect("set above").voq_held = held;
    }

    /// Whether every flow could end within one lookahead of now as far as this partition
    /// knows: every flow from another partition's host to one of its own has had at least
    /// its size in payload handed over to it. The runner folds the partitions into one
    /// fabric at the first window boundary where this holds for all
    /// (`scenarios/src/partitioned.rs`), because the run may then end inside the next
    /// window, at an event only the whole fabric can place.
    ///
    /// Why it comes in time: a flow ends when its last byte is delivered. Fewer bytes handed
    /// over than its size (retransmissions count again, so the distinct bytes are fewer
    /// still) means some byte has yet to be sent towards this partition, over a link between
    /// partitions that takes at least the lookahead. The runner asks before taking in a
    /// window's hand-overs, so the answer is a window old: the bytes handed over in the
    /// window just run reach the destination's host (one link further) after the next
    /// window unless that link is shorter than the window; when the run does end first, it
    /// is run again on one thread (exact, only slower). Folding is exact at any boundary:
    /// this decides only when. Flows within one partition and empty flows can end at any
    /// time: they never hold the fold back.
    pub fn may_all_end_within_lookahead(&self) -> bool {
        self.part.as_ref().is_none_or(|ps| ps.short_of_bytes == 0)
    }

    /// After the folds: whether the run may go on from here on one thread (no two partitions'
    /// pending flow starts fell on one instant; otherwise it is run again).
    pub fn fold_may_go_on(&self) -> bool {
        self.part.as_ref().is_none_or(|ps| !ps.fold_tied)
    }

    /// Flow `f` completed in this partition (see `PartState::fct_pending`).
    pub(super) fn note_fct(&mut self, f: u32) {
        let ps = self.part.as_mut().expect("partitioned");
        ps.fct_pending.push(f);
    }

    /// Whether input port `x`'s link comes from another partition's node (never on one thread).
    #[inline(always)]
    pub(super) fn fed_from_another_partition(&self, x: u32) -> bool {
        self.part
            .as_ref()
            .is_some_and(|ps| ps.part_of_node[self.ports[x as usize].peer_node as usize] != ps.me)
    }

    /// The virtual output queues' counters, kept for input port `x` (fed from another
    /// partition, at a node with such queues).
    #[inline(always)]
    pub(super) fn voq_held_for(&self, x: u32) -> Option<&super::ib::VoqHeld> {
        let held = self.part.as_ref()?.voq_held.as_ref()?;
        self.fed_from_another_partition(x).then_some(held)
    }

    #[inline(always)]
    pub(super) fn voq_held_mut(&mut self) -> Option<&mut super::ib::VoqHeld> {
        self.part.as_mut()?.voq_held.as_mut()
    }

    /// After the last [`Fabric::absorb`]: the completion times of the flows completed in
    /// the partitions go into the histogram, each flow's start now known (a histogram does
    /// not depend on the order of its values).
    pub fn settle_fold(&mut self) {
        let Some(ps) = self.part.as_mut() else { return };
        for f in std::mem::take(&mut ps.fct_pending) {
            let rec = &self.records[f as usize];
            let finish = rec.finish.expect("a completed flow has its finish");
            self.fct.record(finish.since(rec.start));
        }
    }

    /// A dependent flow's start was scheduled at `at` (partitions only).
    pub(super) fn note_start_scheduled(&mut self, at: SimTime) {
        if let Some(ps) = self.part.as_mut() {
            *ps.starts_pending.entry(at.ps()).or_insert(0) += 1;
        }
    }

    /// A dependent flow's start scheduled at `at` is handled.
    pub(super) fn note_start_handled(&mut self, at: SimTime) {
        if let Some(ps) = self.part.as_mut()
            && let std::collections::btree_map::Entry::Occupied(mut e) = ps.starts_pending.entry(at.ps())
        {
            *e.get_mut() -= 1;
            if *e.get() == 0 {
                e.remove();
            }
        }
    }

    /// After the last [`Fabric::absorb`]: this fabric is the whole run again, on one thread.
    pub fn end_partitions(&mut self) {
        debug_assert!(
            self.part.as_ref().is_none_or(|ps| ps.outbox.is_empty()),
            "an answer for a partition never folded in"
        );
        self.part = None;
    }

    /// The partition that runs port `p` (0 when the run is not split).
    pub fn partition_of_port(&self, p: u32) -> usize {
        self.part
            .as_ref()
            .map_or(0, |ps| ps.part_of_node[self.ports[p as usize].node as usize] as usize)
    }

    /// The partition that runs host `h` (0 when the run is not split).
    pub fn partition_of_host(&self, h: u32) -> usize {
        self.partition_of_port(self.nics[h as usize].port)
    }

    /// Whether this fabric runs `node` (always, unless it is one partition of several).
    #[inline(always)]
    pub(super) fn runs_node(&self, node: u32) -> bool {
        self.part
            .as_ref()
            .is_none_or(|ps| ps.part_of_node[node as usize] == ps.me)
    }

    /// The shortest delay of a link between two partitions: how far ahead every partition
    /// may run alone. `None` when no link crosses.
    pub fn lookahead(&self) -> Option<Duration> {
        let ps = self.part.as_ref()?;
        self.ports
            .iter()
            .filter(|p| ps.part_of_node[p.node as usize] != ps.part_of_node[p.peer_node as usize])
            .map(|p| p.delay)
            .min()
    }

    /// Port `p` has just put a packet on its link, arriving at `at`, and the far end is in
    /// another partition: the packet leaves this fabric (its place on the link is kept, so
    /// the next one still arrives after it). Not inlined: the one-thread path stays small.
    #[inline(never)]
    pub(super) fn send_across(&mut self, p: u32, at: SimTime) {
        let (_, lane) = self.ports[p as usize].pipe.take_last().expect("just pushed");
        let packet = *self.packets.get(lane.id);
        let int = self.roce.as_deref().and_then(|r| r.int_of(lane.id)).map(Box::new);
        self.packets.free(lane.id);
        let ps = self.part.as_mut().expect("partitioned");
        let to = ps.part_of_node[self.ports[p as usize].peer_node as usize];
        let what = Carried::Packet { lane, packet, int };
        ps.outbox.push((to, Crossing { port: p, at, what }));
    }

    /// [`Fabric::send_across`] for a control frame: the pipe is the far port `x`'s.
    #[inline(never)]
    pub(super) fn send_frame_across(&mut self, p: u32, x: u32, at: SimTime) {
        let (_, frame) = self.ctrl_links[x as usize].pipe.take_last().expect("just pushed");
        let ps = self.part.as_mut().expect("partitioned");
        let to = ps.part_of_node[self.ports[p as usize].peer_node as usize];
        let what = Carried::Frame(frame);
        ps.outbox.push((to, Crossing { port: p, at, what }));
    }

    /// What this partition sent towards other partitions since the last call, appended to
    /// `to[partition]` in sending order. The outbox keeps its buffer and the caller its
    /// vectors, so a run's windows allocate nothing for the hand-over once they are sized.
    pub fn take_outbox(&mut self, to: &mut [Vec<Crossing>]) {
        let Some(ps) = self.part.as_mut() else {
            return;
        };
        // The window is over: its heads answer the questions that come with the hand-over.
        std::mem::swap(&mut ps.heads, &mut ps.heads_asked);
        ps.heads.clear();
        ps.heads_sorted = false;
        for (part, item) in ps.outbox.drain(..) {
            to[part as usize].push(item);
        }
    }

    /// Takes in what another partition sent to this one, in its sending order: each packet
    /// joins its link's pipe here, as if it had been put on it locally.
    pub fn take_in<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, items: impl IntoIterator<Item = Crossing>) {
        for Crossing { port, at, what } in items {
            match what {
                Carried::Packet { mut lane, packet, int } => {
                    if packet.kind == PacketKind::Data {
                        self.count_crossed_in(packet.flow, packet.payload_bytes);
                    }
                    lane.id = self.packets.alloc(packet);
                    if let (Some(stack), Some(r)) = (int, self.roce.as_deref_mut()) {
                        r.set_int(lane.id, *stack);
                    }
                    let (arrive, first) = self.ports[port as usize].pipe.push_fifo(at, lane);
                    debug_assert_eq!(arrive, at, "a link's items arrive in sending order");
                    if first {
                        let o = self.pipe_origin(port);
                        s.schedule(arrive, o, Ev::Arrive(port));
                    }
                }
                Carried::Frame(frame) => {
                    let x = self.ports[port as usize].peer_port;
                    let (arrive, first) = self.ctrl_links[x as usize].pipe.push_fifo(at, frame);
                    debug_assert_eq!(arrive, at, "a link's frames arrive in sending order");
                    if self.ports[port as usize].fc_out_lazy {
                        // A flow-control packet the sender takes in when it looks: as if sent
                        // now (its arrival is after the window, so nothing missed it).
                        self.ib_fc_on_its_way(s, x, port, arrive, first);
                    } else if first {
                        let o = self.ctrl_origin(port);
                        s.schedule(arrive, o, Ev::CtrlArrive(port));
                    }
                }
                Carried::Ask { vl, origin, token } => {
                    let x = self.ports[port as usize].peer_port;
                    let cause = self.head_waited_for(x, vl, at, origin);
                    let ps = self.part.as_mut().expect("partitioned");
                    let to = ps.part_of_node[self.ports[port as usize].node as usize];
                    let what = Carried::Tell { vl, token, cause };
                    ps.outbox.push((to, Crossing { port, at, what }));
                }
                Carried::Tell { vl, token, cause } => {
                    let told = self
                        .ib
                        .as_deref_mut()
                        .is_some_and(|ib| ib.resolve_cause(port, vl, token, cause));
                    debug_assert!(told, "an answer to no question");
                }
            }
        }
    }

    /// A stall of (`p`, `vl`) starts at the event at (`now`, `origin`), and the far end is
    /// another partition's: asks it what the head there waits for; returns the token that
    /// stands for the answer (`ib/partition.rs`).
    #[inline(never)]
    pub(super) fn ask_cause(&mut self, now: SimTime, origin: Origin, p: u32, vl: u8) -> u32 {
        let ps = self.part.as_mut().expect("partitioned");
        let token = ib::cause_token(ps.me, ps.asked);
        ps.asked = ps.asked.wrapping_add(1);
        let to = ps.part_of_node[self.ports[p as usize].peer_node as usize];
        let what = Carried::Ask {
            vl,
            origin: origin.0,
            token,
        };
        ps.outbox.push((to, Crossing { port: p, at: now, what }));
        token
    }

    /// Records what a stall feeding input lane (`x`, `vl`) would name as its cause, if another
    /// partition feeds it and it changed.
    #[inline(never)]
    pub(super) fn note_cause(&mut self, now: SimTime, origin: Origin, x: u32, vl: u8) {
        if !self.fed_from_another_partition(x) {
            return;
        }
        let new = self.cause_at_input(x, vl);
        let lane = x as usize * self.ib.as_ref().map_or(1, |ib| ib.n_vls() as usize) + vl as usize;
        let ps = self.part.as_mut().expect("partitioned");
        let old = std::mem::replace(&mut ps.cause_now[lane], new);
        if old != new {
            ps.heads.push(HeadChange {
                x,
                vl,
                at: now,
                origin: origin.0,
                old,
                new,
            });
        }
    }

    /// What a stall feeding input lane (`x`, `vl`) would have named as its cause at the event
    /// at (`at`, `origin`) of the window just run: the value after the last change before
    /// that event; before the window's first change; or, unchanged all window, now.
    fn head_waited_for(&mut self, x: u32, vl: u8, at: SimTime, origin: u32) -> u32 {
        let now = self.cause_at_input(x, vl);
        let ps = self.part.as_mut().expect("partitioned");
        if !ps.heads_sorted {
            // Stable: each lane's changes stay in event order.
            ps.heads_asked.sort_by_key(|h| (h.x, h.vl));
            ps.heads_sorted = true;
        }
        let heads = &ps.heads_asked;
        let from = heads.partition_point(|h| (h.x, h.vl) < (x, vl));
        let to = heads.partition_point(|h| (h.x, h.vl) <= (x, vl));
        cause_before(&heads[from..to], at, origin, now)
    }

    /// Payload of flow `f`'s data taken in from another partition.
    fn count_crossed_in(&mut self, f: u32, payload_bytes: u32) {
        let ps = self.part.as_mut().expect("partitioned");
        let left = &mut ps.bytes_to_cross[f as usize];
        if *left > 0 {
            *left = left.saturating_sub(payload_bytes as u64);
            if *left == 0 {
                ps.short_of_bytes -= 1;
            }
        }
    }

    /// Events this partition handled that partition 0 also handled (the run counts them once).
    pub fn shared_events(&self) -> u64 {
        self.part.as_ref().map_or(0, |ps| ps.shared_events)
    }

    /// Counts a whole-run event handled by a partition other than the first.
    pub(super) fn note_shared_event(&mut self) {
        if let Some(ps) = self.part.as_mut()
            && ps.me != 0
        {
            ps.shared_events += 1;
        }
    }

    /// Folds partition `other` (of the same run, at the same window boundary, everything sent
    /// between partitions taken in) into this one, which then is what the single-threaded
    /// run would be at that point, to report on or to run on ([`Fabric::end_partitions`]
    /// after the last fold): each port, node and NIC from the partition that ran it, each
    /// flow's sender state from its source's partition and receiver state from its
    /// destination's, flow records, counters and histograms summed, every packet in flight
    /// moved into this fabric's arena. A link's pipe is the far end's (the packets on a link
    /// between partitions were handed to the partition they arrive in). The events pending
    /// in the partitions' schedulers fold with `Scheduler::absorb`.
    pub fn absorb(&mut self, mut other: Fabric) {
        let theirs = other.part.as_ref().expect("partitioned").me;
        let ps = self.part.take().expect("partitioned");
        let theirs_node: Vec<bool> = ps.part_of_node.iter().map(|&q| q == theirs).collect();
        let theirs_port: Vec<bool> = self.ports.iter().map(|p| theirs_node[p.node as usize]).collect();
        let theirs_host: Vec<bool> = self.nics.iter().map(|n| theirs_port[n.port as usize]).collect();
        // Every packet id in a structure taken from `other` is moved into this arena.
        let (mut arena, from) = (std::mem::take(&mut self.packets), &other.packets);
        // (old id, new id) of each packet moved, for what is kept by packet id (INT).
        let mut rehomed: Vec<(u32, u32)> = Vec::new();
        let mut rehome = |id: u32| {
            let new = arena.alloc(*from.get(id));
            rehomed.push((id, new));
            new
        };
        for p in 0..self.ports.len() {
            if theirs_port[p] {
                std::mem::swap(&mut self.ports[p], &mut other.ports[p]);
                // The pipe is the far end's (below), not the sender's.
                std::mem::swap(&mut self.ports[p].pipe, &mut other.ports[p].pipe);
                for id in self.ports[p].queue.iter_mut() {
                    *id = rehome(*id);
                }
            }
            if theirs_node[self.ports[p].peer_node as usize] {
                let mut moved = Pipe::new();
                for (at, mut w) in other.ports[p].pipe.drain_items() {
                    w.id = rehome(w.id);
                    moved.push_fifo(at, w);
                }
                self.ports[p].pipe = moved;
                let x = self.ports[p].peer_port as usize;
                self.ctrl_links[x] = std::mem::take(&mut other.ctrl_links[x]);
            }
        }
        // Senders' state is at the source's host, receivers' at the destination's.
        let theirs_src: Vec<bool> = self.flows.iter().map(|f| theirs_host[f.src as usize]).collect();
        let theirs_dst: Vec<bool> = self.flows.iter().map(|f| theirs_host[f.dst as usize]).collect();
        if let (Some(r), Some(o)) = (self.roce.as_deref_mut(), other.roce.as_deref_mut()) {
            r.absorb(o, &theirs_port, &theirs_node, &theirs_host, &mut rehome);
            r.absorb_flows(o, &theirs_src, &theirs_dst);
        }
        if let (Some(ib), Some(o)) = (self.ib.as_deref_mut(), other.ib.as_deref_mut()) {
            ib.absorb(o, &theirs_port, &theirs_host, &mut rehome);
        }
        self.packets = arena;
        if let (Some(r), Some(o)) = (self.roce.as_deref_mut(), other.roce.as_deref()) {
            for &(old, new) in &rehomed {
                if let Some(stack) = o.int_of(old) {
                    r.set_int(new, stack);
                }
            }
        }
        for (h, _) in theirs_host.iter().enumerate().filter(|(_, t)| **t) {
            std::mem::swap(&mut self.nics[h], &mut other.nics[h]);
        }
        // A flow's sending state, its start (a dependent flow's is set where it starts) and
        // its dependencies still pending (they complete beside its source) are its source's.
        for (f, _) in theirs_src.iter().enumerate().filter(|(_, t)| **t) {
            std::mem::swap(&mut self.flow_state[f], &mut other.flow_state[f]);
            self.records[f].start = other.records[f].start;
            if !self.deps.is_empty() {
                self.deps.pending[f] = other.deps.pending[f];
            }
        }
        // A memo of routes: either partition's entry is the route.
        for (mine, theirs) in self.path_cache.iter_mut().zip(&other.path_cache) {
            if *mine == u32::MAX {
                *mine = *theirs;
            }
        }
        for (rec, o) in self.records.iter_mut().zip(&other.records) {
            rec.first_sent = rec.first_sent.or(o.first_sent);
            rec.finish = rec.finish.or(o.finish);
            rec.last_delivery = rec.last_delivery.max(o.last_delivery);
            rec.packets_sent += o.packets_sent;
            rec.packets_delivered += o.packets_delivered;
            rec.packets_dropped += o.packets_dropped;
            rec.packets_marked += o.packets_marked;
            rec.bytes_delivered += o.bytes_delivered;
        }
        if let (AnyMarking::Red(a), AnyMarking::Red(b)) = (&mut self.marking, &mut other.marking) {
            a.absorb(b, &theirs_port);
        }
        self.pkt_latency.merge(&other.pkt_latency);
        self.fct.merge(&other.fct);
        self.totals.absorb(&other.totals);
        // Dependent flows' starts: the workload's next arrival (partition 0's, kept) and each
        // partition's starts must all lie at different instants for the fold to order them.
        let mut ps = ps;
        if let Some(o) = other.part.as_ref() {
            let arrival = self.flows.get(self.next_flow).filter(|_| self.next_flow < self.n_timed);
            let tied = |t: &u64| ps.starts_pending.contains_key(t) || arrival.is_some_and(|f| f.start.ps() == *t);
            ps.fold_tied |= o.fold_tied || o.starts_pending.keys().any(tied);
            ps.fct_pending.extend_from_slice(&o.fct_pending);
            for (&t, &n) in &o.starts_pending {
                *ps.starts_pending.entry(t).or_insert(0) += n;
            }
        }
        // InfiniBand: the answers given at the last hand-over, not yet delivered, settle the
        // stalls they are for; those for a partition not folded in yet wait for it.
        let tells = std::mem::take(&mut ps.outbox).into_iter().chain(
            other
                .part
                .as_mut()
                .map(|o| std::mem::take(&mut o.outbox))
                .unwrap_or_default(),
        );
        for (to, c) in tells {
            let Carried::Tell { vl, token, cause } = c.what else {
                unreachable!("only answers are left to send at a window's end")
            };
            let told = self
                .ib
                .as_deref_mut()
                .is_some_and(|ib| ib.resolve_cause(c.port, vl, token, cause));
            if !told {
                ps.outbox.push((to, c));
            }
        }
        self.part = Some(ps);
    }
}

impl RunTotals {
    /// Adds another partition's counters.
    fn absorb(&mut self, o: &RunTotals) {
        // Destructured so that a new counter cannot be forgotten here.
        let RunTotals {
            link_hops: _,
            packets_injected: _,
            packets_delivered: _,
            packets_dropped: _,
            payload_bytes_injected: _,
            payload_bytes_delivered: _,
            payload_bytes_dropped: _,
            flows_started: _,
            flows_completed: _,
        } = o;
        self.link_hops += o.link_hops;
        self.packets_injected += o.packets_injected;
        self.packets_delivered += o.packets_delivered;
        self.packets_dropped += o.packets_dropped;
        self.payload_bytes_injected += o.payload_bytes_injected;
        self.payload_bytes_delivered += o.payload_bytes_delivered;
        self.payload_bytes_dropped += o.payload_bytes_dropped;
        self.flows_started += o.flows_started;
        self.flows_completed += o.flows_completed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_is_read_just_before_the_asking_event() {
        let change = |ns: u64, origin: u32, old: u32, new: u32| HeadChange {
            x: 9,
            vl: 0,
            at: SimTime(ns * 1000),
            origin,
            old,
            new,
        };
        // Empty until 10 ns (origin 5), port 3 until 20 ns (origin 2), then port 4.
        let lane = [change(10, 5, u32::MAX, 3), change(20, 2, 3, 4)];
        let ask = |ns: u64, origin: u32| cause_before(&lane, SimTime(ns * 1000), origin, 4);
        assert_eq!(ask(1, 0), u32::MAX, "before the window's first change: its old value");
        assert_eq!(ask(10, 4), u32::MAX, "same time, smaller origin: runs first");
        assert_eq!(ask(10, 6), 3, "same time, larger origin: runs after");
        assert_eq!(ask(15, 0), 3);
        assert_eq!(ask(20, 1), 3);
        assert_eq!(ask(20, 3), 4);
        assert_eq!(ask(30, 0), 4);
        assert_eq!(cause_before(&[], SimTime(5), 0, 7), 7, "no change: the value now");
    }

    /// Two partitions of a k=4 fat-tree (pods 0-1 and 2-3, the core switches split), with
    /// dependent flows' starts pending at the given instants in each (in ns); whether the fold
    /// may go on.
    fn folded(mine: &[u64], theirs: &[u64]) -> bool {
        use crate::topology::{LinkInfo, LinkKind, fat_tree};
        use sim_core::{BitsPerSec, Bytes, Duration};
        let link = LinkInfo {
            rate: BitsPerSec::from_gbps(100),
            delay: Duration::from_ns(500),
            kind: LinkKind::Network,
        };
        let topo = fat_tree::build(4, link, link).expect("a k=4 fat-tree");
        let flows = vec![FlowSpec {
            src: 0,
            dst: 9,
            size: Bytes(1000),
            ..Default::default()
        }];
        let build = || Fabric::new(&topo, Routes::ecmp(&topo), EngineConfig::default(), flows.clone()).unwrap();
        let parts: Vec<u8> = topo
            .graph
            .node_indices()
            .map(|v| topo.graph[v].pod.map_or(v.index() % 2, |p| (p / 2) as usize) as u8)
            .collect();
        let (mut a, mut b) = (build(), build());
        a.set_partition(parts.clone(), 0);
        b.set_partition(parts, 1);
        for (f, times) in [(&mut a, mine), (&mut b, theirs)] {
            for &ns in times {
                f.note_start_scheduled(SimTime::ZERO + Duration::from_ns(ns));
            }
        }
        a.absorb(b);
        a.fold_may_go_on()
    }

    #[test]
    fn a_fold_cannot_go_on_from_two_partitions_starting_flows_at_one_instant() {
        assert!(folded(&[10, 20], &[30]), "different instants");
        assert!(folded(&[10, 10], &[]), "one partition's ties keep their order");
        assert!(!folded(&[10, 20], &[20]), "two partitions at 20 ns");
        // Nothing has run: the workload's next arrival is the first flow's, at 0.
        assert!(!folded(&[], &[0]), "a start beside the workload's next arrival");
        assert!(folded(&[], &[50]));
    }
}

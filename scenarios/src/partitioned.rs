//! `fabricsim run --threads N`: one run split into partitions of the fabric by pod (runs of
//! whole pods with equal shares of the expected work, [`groups_of_nodes`]), one partition per
//! thread, in conservative windows (`fabrics::engine::partition`), with
//! every output equal to the single-threaded run's (the time series too: the windows end at
//! its sample times, where partition 0 samples them all). The partitions fold into one fabric at
//! the end time, or earlier when the run could end within the next window or the windows
//! hold too little or too uneven work (`Pace`); the run then goes on on one thread (the
//! runner's loop).

use fabrics::engine::{Crossing, Ev, Fabric, MAX_PARTITIONS};
use fabrics::topology::Topology;
use sim_core::{Model, RunLimits, RunOutcome, RunReport, Scheduler, SimTime, Stopwatch, WheelQueue};
use std::ops::ControlFlow;
use std::sync::{RwLock, mpsc};

use crate::interrupt::Interrupt;
use crate::timeseries::{Sampler, View};

/// The partition of each node for `n` partitions, with equal shares of the work each node is
/// expected to do (`load`, per node: `Fabric::node_load_estimate`) as far as whole groups
/// ([`groups`]) allow. The groups go in order, `n` runs whose heaviest is as light as it can
/// be (each run at least one group); the nodes in no group (core or spine switches) then
/// go one by one, heaviest first, each to the partition with the least work so far. Every
/// node counts one more than its load, so a run with no flows is split by node count.
///
/// Equal shares matter most where the work is uneven: a 512-to-1 incast's senders and
/// receiver fill the first half of a k=16 fat-tree's pods, and halving the pods gave one
/// thread 95 % of the events. Runs of groups keep neighbours together (a collective's ring,
/// a pod's servers); which partition a node is in changes how fast a run goes, never its
/// results. `Err` says why the topology cannot be split so.
pub fn groups_of_nodes(topo: &Topology, n: usize, pause_search: bool, load: &[u64]) -> Result<Vec<u8>, String> {
    if !(2..=MAX_PARTITIONS).contains(&n) {
        return Err(format!("--threads must be between 1 and {MAX_PARTITIONS}"));
    }
    let (group, groups) = groups(topo, pause_search)?;
    if groups < n {
        return Err(format!(
            "a run is split by pod (or by leaf switch with its hosts), and this topology has {groups} for {n} threads"
        ));
    }
    let work = |v: usize| load.get(v).copied().unwrap_or(0).saturating_add(1);
    let mut group_work = vec![0u64; groups];
    for (v, g) in group.iter().enumerate() {
        if let Some(g) = *g {
            group_work[g] = group_work[g].saturating_add(work(v));
        }
    }
    let part_of_group = runs_of_least_peak(&group_work, n);
    let mut part_work = vec![0u64; n];
    for (g, &w) in group_work.iter().enumerate() {
        let p = part_of_group[g] as usize;
        part_work[p] = part_work[p].saturating_add(w);
    }
    let mut part: Vec<u8> = group.iter().map(|g| g.map_or(0, |g| part_of_group[g])).collect();
    let mut ungrouped: Vec<usize> = (0..group.len()).filter(|&v| group[v].is_none()).collect();
    // Heaviest first; equal ones in node order (a stable sort), so the split is deterministic.
    ungrouped.sort_by_key(|&v| std::cmp::Reverse(work(v)));
    for v in ungrouped {
        let (least, _) = part_work
            .iter()
            .enumerate()
            .min_by_key(|&(i, &w)| (w, i))
            .expect("n >= 2 partitions");
        part[v] = least as u8;
        part_work[least] = part_work[least].saturating_add(work(v));
    }
    Ok(part)
}

/// The partition of each of `work.len()` items kept in order: `n` non-empty runs (there are
/// at least `n` items) whose heaviest run is as light as possible. The least peak is found
/// by bisection over what a greedy fill can hold (runs filled up to a peak, in order, need
/// fewer runs the higher the peak); the fill at that peak then also starts a run whenever
/// the items left are just enough for one per run still empty.
fn runs_of_least_peak(work: &[u64], n: usize) -> Vec<u8> {
    let runs_needed = |peak: u64| {
        let (mut runs, mut acc) = (1usize, 0u64);
        for &w in work {
            if acc > 0 && acc.saturating_add(w) > peak {
                runs += 1;
                acc = 0;
            }
            acc = acc.saturating_add(w);
        }
        runs
    };
    let (mut lo, mut hi) = (
        work.iter().copied().max().unwrap_or(0),
        work.iter().fold(0u64, |a, &w| a.saturating_add(w)),
    );
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if runs_needed(mid) <= n { hi = mid } else { lo = mid + 1 }
    }
    let peak = lo;
    let (mut run, mut acc, mut taken) = (0usize, 0u64, 0usize);
    work.iter()
        .enumerate()
        .map(|(i, &w)| {
            let left = work.len() - i;
            if taken > 0 && (acc.saturating_add(w) > peak || left == n - 1 - run) {
                run += 1;
                (acc, taken) = (0, 0);
            }
            acc = acc.saturating_add(w);
            taken += 1;
            run as u8
        })
        .collect()
}

/// The group of each node, and how many groups: a group is a pod of a fat-tree or, in a
/// topology without pods (leaf-spine), a leaf switch with the hosts on it; core and spine
/// switches are in none. `Err` says why the topology cannot be split at all.
/// `pause_search`: the run searches for PFC deadlocks as it goes (RoCEv2).
pub fn groups(topo: &Topology, pause_search: bool) -> Result<(Vec<Option<usize>>, usize), String> {
    use fabrics::topology::NodeKind;
    let g = &topo.graph;
    // Shortest paths through tiers go up, then down: their buffers wait on one another in no
    // cycle, so no PFC deadlock can form. A link within a tier (a ring) could close one
    // across partitions, which none of their deadlock searches sees whole. (A credit loop of
    // InfiniBand is looked for after the run, in the folded fabric.)
    let tier = |v| match g[v] {
        fabrics::topology::NodeInfo {
            kind: NodeKind::Switch { tier },
            ..
        } => Some(tier),
        _ => None,
    };
    if let Some(e) = g.edge_indices().filter(|_| pause_search).find(|&e| {
        let (a, b) = g.edge_endpoints(e).expect("an edge has ends");
        tier(a).is_some() && tier(a) == tier(b)
    }) {
        let (a, b) = g.edge_endpoints(e).expect("an edge has ends");
        return Err(format!(
            "switches {} and {} of one tier are linked: routes may close a loop of PAUSE frames that only the whole \
             fabric can detect",
            g[a].name, g[b].name
        ));
    }
    let pods = g
        .node_indices()
        .filter_map(|v| g[v].pod)
        .max()
        .map_or(0, |m| m as usize + 1);
    let group: Vec<Option<usize>> = if pods > 0 {
        g.node_indices().map(|v| g[v].pod.map(|p| p as usize)).collect()
    } else {
        let leaves: Vec<_> = g
            .node_indices()
            .filter(|&v| matches!(g[v].kind, NodeKind::Switch { tier: 0 }))
            .collect();
        let leaf_of = |v| leaves.iter().position(|&l| l == v);
        g.node_indices()
            .map(|v| match g[v].kind {
                NodeKind::Switch { tier: 0 } => leaf_of(v),
                NodeKind::Host => g.neighbors(v).find_map(leaf_of),
                _ => None,
            })
            .collect()
    };
    let group = with_their_servers(topo, group);
    let count = group.iter().flatten().max().map_or(0, |&m| m + 1);
    Ok((group, count))
}

/// Every node inside a GPU server (GPUs, their hubs, NVSwitch and PCIe switches, root
/// complexes, NICs) goes with its whole server, so that no link inside a server (nanoseconds
/// long) lies between partitions and a collective's steps ("send after receive", often to
/// another GPU of the server) stay in one: a server (what is connected without passing a
/// network switch) joins a group of the switches it hangs from (a rail-optimised server hangs
/// from several: the one given the fewest server nodes so far, so that servers spread).
fn with_their_servers(topo: &Topology, mut group: Vec<Option<usize>>) -> Vec<Option<usize>> {
    use fabrics::topology::NodeKind;
    let g = &topo.graph;
    let switch = |info: &fabrics::topology::NodeInfo| matches!(info.kind, NodeKind::Switch { .. });
    let mut seen = vec![false; g.node_count()];
    // Server nodes given to each group so far.
    let mut load: Vec<usize> = Vec::new();
    for start in g.node_indices().filter(|&v| !switch(&g[v])) {
        if seen[start.index()] {
            continue;
        }
        // The server: `start` and what it reaches without passing a network switch.
        let mut server = vec![start];
        seen[start.index()] = true;
        let mut next = 0;
        while next < server.len() {
            let v = server[next];
            next += 1;
            for w in g.neighbors(v) {
                if !switch(&g[w]) && !seen[w.index()] {
                    seen[w.index()] = true;
                    server.push(w);
                }
            }
        }
        if server.len() == 1 && group[start.index()].is_some() {
            continue; // a host that is its own server, grouped already
        }
        // Among the groups it hangs from, the one with the fewest server nodes so far.
        let candidates: std::collections::BTreeSet<usize> = server
            .iter()
            .flat_map(|&v| std::iter::once(v).chain(g.neighbors(v)))
            .filter_map(|v| group[v.index()])
            .collect();
        let chosen = candidates
            .into_iter()
            .min_by_key(|&c| (load.get(c).copied().unwrap_or(0), c));
        if let Some(c) = chosen {
            if load.len() <= c {
                load.resize(c + 1, 0);
            }
            load[c] += server.len();
        }
        for v in server {
            group[v.index()] = chosen;
        }
    }
    group
}

/// Polls of a partition's inbox before it sleeps on it (about 20 us of spinning).
const SPINS_BEFORE_SLEEP: u32 = 20_000;

/// How a partitioned run ended.
pub enum Outcome {
    /// At its end time, or stopped by the wall-clock budget or an interruption: the
    /// partitions folded into one fabric, and the run's report.
    Done(Box<Fabric>, RunReport),
    /// Every flow may end within the next window, at an event only the whole fabric can
    /// place (or nothing is left to happen): the partitions folded into one fabric and its
    /// scheduler, to run on on one thread; `RunReport` is the partitioned part (its outcome
    /// meaningless).
    Continue(Box<Fabric>, Box<Scheduler<Ev, WheelQueue<Ev>>>, RunReport),
    /// It ended at an event only the whole fabric can place (a deadlock, the event budget
    /// spent): run it again on one thread. Says which, and the wall time the partitions
    /// spent finding out (part of the run's).
    NeedsOneThread(&'static str, std::time::Duration),
}

/// What a partition tells the others after each window.
#[derive(Clone)]
struct Status {
    /// Its fabric says the run is over (a deadlock found, or every flow completed here).
    finished: bool,
    completed: u64,
    events: u64,
    /// Its next event, before taking in what the others sent.
    next: Option<SimTime>,
    /// The earliest arrival of what it sent.
    first_sent: Option<SimTime>,
    stop: Option<RunOutcome>,
    /// Every flow may end within the next window as far as it knows
    /// (`Fabric::may_all_end_within_lookahead`).
    may_end: bool,
}

struct Message {
    from: usize,
    /// The window it ends: a partition may be a window ahead of another (it had every
    /// message it needed), so a message can come before those of the window at hand.
    window: u64,
    items: Vec<Crossing>,
    status: Status,
}

/// Set when a partition's thread fails, so that the others stop waiting for its messages.
struct Failed<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for Failed<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// What every partition decides after a window, from the same statuses.
enum Next {
    Window(SimTime),
    End(RunOutcome),
    /// Fold into one fabric and go on on one thread.
    Fold,
    OneThread(&'static str),
}

/// Windows between two looks at how much work a window holds ([`Pace`]).
const PACE_WINDOWS: u64 = 256;
/// Fewest events a partition must handle per window, on average over [`PACE_WINDOWS`], for
/// the partitions to go on: below, the meeting at every window's end (about a microsecond,
/// and the waits of windows that are uneven by chance) costs more than the split saves. How
/// many events that takes depends on what an event costs. On a fabric whose state fits in
/// the caches (fewer than [`AT_SCALE_PORTS`] ports), about 60 ns: a k=4 fat-tree whose partitions
/// handled 43 events per 1 us window ran no faster on two threads than on one, with 62 it ran
/// 1.3 times as fast.
const MIN_EVENTS_PER_WINDOW_CACHED: u64 = 50;
/// [`MIN_EVENTS_PER_WINDOW_CACHED`] on a fabric that outgrows the caches, where an event costs
/// about 100 ns: the 512-to-1 incast mirror on a k=16 fat-tree, split by load, handles 25 to
/// 40 events per partition in each 1 us window and ran 1.2 times as fast on two threads.
const MIN_EVENTS_PER_WINDOW_AT_SCALE: u64 = 25;
/// Ports from which a fabric's events cost about twice as much as in the caches: a k=8
/// fat-tree has 768, a k=16 one 6,144 (where the engine's prefetch pipeline, which counts the
/// ports the flows use instead, starts at the same number, `PREFETCH_MIN_PORTS`).
const AT_SCALE_PORTS: usize = 2048;
/// Least gain, in percent, the split must promise to go on: the events of all partitions
/// over those of the busiest, since the last look. Below, one partition does nearly all the
/// work and the others wait for it at every window's end: the 512-to-1 incast mirror split
/// by pod number (before the split went by load) handled 301,012 and 16,691 events before
/// its fold (a gain of 5 % at most), and two threads ran it 6 % slower than one.
const MIN_GAIN_PERCENT: u64 = 25;
/// Looks in a row that must find the windows too thin or too uneven before the partitions
/// fold (a fold cannot be undone): a run's first stretches are often unlike the rest. The
/// incast's 512 senders start at line rate together: in its first 256 windows the senders'
/// partition handled 86 % of the events, in the next 256 there were 23 events per partition
/// and window, and from then on 30 to 40, evenly split.
const SLOW_LOOKS_TO_FOLD: u32 = 4;

/// Each partition's events at the last look at the pace, and how many looks in a row found
/// the windows too thin or too uneven.
struct Pace {
    events: Vec<u64>,
    slow_looks: u32,
    min_events_per_window: u64,
}

impl Pace {
    /// The pace of a run on a fabric of `ports` ports.
    fn for_ports(ports: usize) -> Self {
        Pace {
            events: Vec::new(),
            slow_looks: 0,
            min_events_per_window: if ports >= AT_SCALE_PORTS {
                MIN_EVENTS_PER_WINDOW_AT_SCALE
            } else {
                MIN_EVENTS_PER_WINDOW_CACHED
            },
        }
    }

    /// After window `window` (counted from 0), with `events` handled by each partition so
    /// far: whether the windows since each of the last [`SLOW_LOOKS_TO_FOLD`] looks held too
    /// little work, or work so uneven that the split cannot pay. Every partition computes it
    /// from the same numbers, so they all decide alike.
    fn too_slow(&mut self, window: u64, events: &[u64]) -> bool {
        if !(window + 1).is_multiple_of(PACE_WINDOWS) {
            return false;
        }
        self.events.resize(events.len(), 0);
        let since: Vec<u64> = events.iter().zip(&self.events).map(|(now, then)| now - then).collect();
        self.events.copy_from_slice(events);
        let all: u64 = since.iter().sum();
        let busiest = since.iter().copied().max().unwrap_or(0);
        let per_window = all / PACE_WINDOWS / events.len() as u64;
        let slow = per_window < self.min_events_per_window || all * 100 < busiest * (100 + MIN_GAIN_PERCENT);
        self.slow_looks = if slow { self.slow_looks + 1 } else { 0 };
        self.slow_looks >= SLOW_LOOKS_TO_FOLD
    }
}

/// Folding is exact at any window boundary, so when to fold is a matter of speed only.
fn decide(
    statuses: &[&Status],
    window_end: SimTime,
    end_time: SimTime,
    n_flows: u64,
    max_events: u64,
    slow: bool,
) -> Next {
    let completed: u64 = statuses.iter().map(|s| s.completed).sum();
    let events: u64 = statuses.iter().map(|s| s.events).sum();
    // Every flow finished: the fold usually comes first (`may_end`), unless a flow's last
    // bytes reached its destination within a window of crossing over.
    if completed == n_flows || statuses.iter().any(|s| s.finished) {
        return Next::OneThread("the run ends before its end time (every flow finished, or a deadlock)");
    }
    if events > max_events {
        return Next::OneThread("the event budget ran out");
    }
    if let Some(stop) = statuses.iter().find_map(|s| s.stop) {
        return Next::End(stop);
    }
    if window_end >= end_time {
        return Next::End(RunOutcome::EndTime);
    }
    if slow || statuses.iter().all(|s| s.may_end) {
        return Next::Fold;
    }
    let next = statuses.iter().flat_map(|s| [s.next, s.first_sent]).flatten().min();
    match next {
        Some(t) => Next::Window(t.max(SimTime(window_end.ps() + 1))),
        // Nothing left anywhere: the fold's queue is empty, and the run on one thread ends
        // at once, at the last event's time, as the single-threaded run would.
        None => Next::Fold,
    }
}

/// Where the threads wait for one another around a sample of the time series (the others'
/// messages order everything else): the last to arrive lets them all go on. A thread that
/// failed (panicked) makes the others fail instead of waiting for ever.
struct Meeting {
    arrived: std::sync::atomic::AtomicUsize,
    generation: std::sync::atomic::AtomicUsize,
    n: usize,
}

impl Meeting {
    fn new(n: usize) -> Self {
        Meeting {
            arrived: 0.into(),
            generation: 0.into(),
            n,
        }
    }

    fn wait(&self, failed: &std::sync::atomic::AtomicBool) {
        use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
        let generation = self.generation.load(Acquire);
        if self.arrived.fetch_add(1, AcqRel) + 1 == self.n {
            self.arrived.store(0, Relaxed);
            self.generation.fetch_add(1, Release);
            return;
        }
        while self.generation.load(Acquire) == generation {
            assert!(!failed.load(Relaxed), "another partition's thread failed");
            std::thread::yield_now();
        }
    }
}

/// Runs `fabrics` (one per partition, `set_partition` done, in partition order) to `limits`,
/// each on its own thread; with `progress`, partition 0 prints a line on stderr every 2 s.
/// With `sampler`, the windows end at its sample times, where partition 0 samples every
/// partition (each port from the one that runs it) while the others wait.
pub fn run(
    mut fabrics: Vec<Fabric>,
    limits: &RunLimits,
    interrupt: &Interrupt,
    progress: bool,
    sampler: Option<&mut Sampler>,
) -> Outcome {
    let clock = Stopwatch::start();
    let n = fabrics.len();
    let end_time = limits.end_time.unwrap_or(SimTime::MAX);
    let max_events = limits.max_events.unwrap_or(u64::MAX);
    let n_flows = fabrics[0].flows().len() as u64;
    // Every partition sees the same links, so the same lookahead; none crossing: one window.
    let lookahead_ps = fabrics[0].lookahead().map_or(u64::MAX, |d| d.ps());
    if lookahead_ps == 0 {
        return Outcome::NeedsOneThread("a link between partitions has no delay", clock.elapsed());
    }
    // Every flow may end in the first window already: no partitioning to do.
    if fabrics.iter().all(|f| f.may_all_end_within_lookahead()) {
        let parts = fabrics
            .into_iter()
            .map(|f| {
                let s = f.scheduler();
                (f, s, 0)
            })
            .collect();
        let (mut fabric, sched, _) = fold(parts);
        if !fabric.fold_may_go_on() {
            return Outcome::NeedsOneThread(FOLD_TIED, clock.elapsed());
        }
        fabric.end_partitions();
        let report = RunReport {
            outcome: RunOutcome::EndTime,
            events: 0,
            end: SimTime::ZERO,
            wall_elapsed: clock.elapsed(),
        };
        return Outcome::Continue(Box::new(fabric), Box::new(sched), report);
    }
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..n).map(|_| mpsc::channel::<Message>()).unzip();
    let failed = std::sync::atomic::AtomicBool::new(false);
    // Each partition's fabric, written by its thread and read by partition 0's at samples.
    let locks: Vec<RwLock<Fabric>> = fabrics.drain(..).map(RwLock::new).collect();
    let period = sampler.as_ref().map(|s| s.period());
    let mut sampler = sampler;
    let (meeting, sampling) = (Meeting::new(n), std::sync::atomic::AtomicBool::new(period.is_some()));
    let results: Vec<(Sched, Next, u64)> = std::thread::scope(|scope| {
        let handles: Vec<_> = receivers
            .into_iter()
            .enumerate()
            .map(|(me, inbox)| {
                let senders = senders.clone();
                let (clock, failed, locks, meeting, sampling) = (&clock, &failed, &locks, &meeting, &sampling);
                let mut my_sampler = if me == 0 { sampler.take() } else { None };
                scope.spawn(move || {
                    let _guard = Failed(failed);
                    let lock = &locks[me];
                    let mut fabric = lock.write().expect("a partition's lock");
                    let mut s: Sched = fabric.scheduler();
                    // The next sample time (none without a time series or once it stopped).
                    let mut next_sample = period.map(|p| SimTime::ZERO + p);
                    let mut start = SimTime::ZERO;
                    let mut events = 0u64;
                    // Messages of the next window, from partitions a window ahead; this one's.
                    let (mut early, mut got): (Vec<Message>, Vec<Message>) = (Vec::new(), Vec::new());
                    let mut pace = Pace::for_ports(fabric.ports().len());
                    // What goes to each partition at the window's end: the vectors the others
                    // sent, emptied by the taking in, go back to them at the next window's end,
                    // so the hand-over allocates nothing once they are sized.
                    let mut to: Vec<Vec<Crossing>> = (0..n).map(|_| Vec::new()).collect();
                    // Wall time spent waiting for the others at windows' ends (`--log info`).
                    let mut waited = std::time::Duration::ZERO;
                    // Wall time spent handling events (`--log info`, read only then: two clock
                    // reads per window); the rest of `wall_s` is the hand-over and the waits.
                    let timed = tracing::enabled!(tracing::Level::INFO);
                    let mut handling = std::time::Duration::ZERO;
                    let mut last_print = std::time::Duration::ZERO;
                    for window in 0u64.. {
                        let mut window_end = SimTime(start.ps().saturating_add(lookahead_ps - 1)).min(end_time);
                        if let Some(t) = next_sample {
                            window_end = window_end.min(t);
                        }
                        let window_limits = RunLimits {
                            end_time: Some(window_end),
                            ..RunLimits::default()
                        };
                        let began = timed.then(|| clock.elapsed());
                        let r = sim_core::run(&mut *fabric, &mut s, &window_limits, |_| ControlFlow::Continue(()));
                        if let Some(t) = began {
                            handling += clock.elapsed().saturating_sub(t);
                        }
                        events += r.events;
                        fabric.take_outbox(&mut to);
                        let first_sent = to.iter().flatten().filter_map(Crossing::arrives_at).min();
                        // The wall clock every 16 windows (a read costs tens of nanoseconds, a
                        // window's work a few microseconds at the least).
                        let stop = if interrupt.count() > 0 {
                            Some(RunOutcome::Stopped)
                        } else if window % 16 == 0 && limits.wall_clock.is_some_and(|w| clock.elapsed() >= w) {
                            Some(RunOutcome::WallClock)
                        } else {
                            None
                        };
                        // Before taking in what the others sent: every partition's `next`
                        // covers its own events only, their `first_sent` the rest.
                        let own = Status {
                            finished: fabric.finished(),
                            completed: fabric.totals().flows_completed,
                            events: events - fabric.shared_events(),
                            next: s.next_time(),
                            first_sent,
                            stop,
                            may_end: fabric.may_all_end_within_lookahead(),
                        };
                        for (other, items) in to.iter_mut().enumerate() {
                            if other != me {
                                let (status, items) = (own.clone(), std::mem::take(items));
                                // A partition that stopped early has dropped its inbox: nothing to do.
                                let _ = senders[other].send(Message {
                                    from: me,
                                    window,
                                    items,
                                    status,
                                });
                            }
                        }
                        let mut k = 0;
                        while k < early.len() {
                            if early[k].window == window {
                                got.push(early.swap_remove(k));
                            } else {
                                k += 1;
                            }
                        }
                        let mut spins = 0u32;
                        // Read only if the messages are not all in yet.
                        let mut wait_start = None;
                        while got.len() < n - 1 {
                            // Spin a little first: the others usually end their window within
                            // microseconds, and waking a parked thread costs tens of them on
                            // every window (a third of an incast's time, with 40,000 windows).
                            let m = match inbox.try_recv() {
                                Ok(m) => m,
                                Err(mpsc::TryRecvError::Empty) if spins < SPINS_BEFORE_SLEEP => {
                                    if spins == 0 {
                                        wait_start = Some(clock.elapsed());
                                    }
                                    spins += 1;
                                    std::hint::spin_loop();
                                    continue;
                                }
                                Err(mpsc::TryRecvError::Empty) => {
                                    match inbox.recv_timeout(std::time::Duration::from_millis(50)) {
                                        Ok(m) => m,
                                        Err(mpsc::RecvTimeoutError::Timeout) => {
                                            let failed = failed.load(std::sync::atomic::Ordering::Relaxed);
                                            assert!(!failed, "another partition's thread failed");
                                            continue;
                                        }
                                        Err(mpsc::RecvTimeoutError::Disconnected) => {
                                            panic!("a partition's thread ended early")
                                        }
                                    }
                                }
                                Err(mpsc::TryRecvError::Disconnected) => panic!("a partition's thread ended early"),
                            };
                            if m.window == window {
                                got.push(m);
                            } else {
                                early.push(m);
                            }
                        }
                        if let Some(w) = wait_start {
                            waited += clock.elapsed().saturating_sub(w);
                        }
                        got.sort_by_key(|m| m.from);
                        // In partition order, so that every partition decides alike.
                        let statuses: Vec<&Status> = got[..me]
                            .iter()
                            .map(|m| &m.status)
                            .chain(std::iter::once(&own))
                            .chain(got[me..].iter().map(|m| &m.status))
                            .collect();
                        let each: Vec<u64> = statuses.iter().map(|st| st.events).collect();
                        let events_all: u64 = each.iter().sum();
                        let slow = pace.too_slow(window, &each);
                        let next = decide(&statuses, window_end, end_time, n_flows, max_events, slow);
                        for mut m in got.drain(..) {
                            fabric.take_in(&mut s, m.items.drain(..));
                            // Emptied, it carries this partition's crossings back next time.
                            to[m.from] = m.items;
                        }
                        // A sample time (or the end): every partition has handled its events up
                        // to it; partition 0 samples them all while the others wait. (Not on a
                        // run that starts again: its sampler starts again too.)
                        let at_sample = next_sample.is_some_and(|t| window_end == t || window_end == end_time);
                        if at_sample && !matches!(next, Next::OneThread(_)) {
                            drop(fabric);
                            meeting.wait(failed);
                            if let Some(sampler) = my_sampler.as_deref_mut() {
                                let guards: Vec<_> =
                                    locks.iter().map(|l| l.read().expect("a partition's lock")).collect();
                                let parts: Vec<&Fabric> = guards.iter().map(|g| &**g).collect();
                                let go_on = sampler.sample(&View::new(&parts), window_end);
                                sampling.store(go_on, std::sync::atomic::Ordering::Relaxed);
                            }
                            meeting.wait(failed);
                            next_sample = period
                                .filter(|_| sampling.load(std::sync::atomic::Ordering::Relaxed))
                                .map(|p| window_end + p);
                            fabric = lock.write().expect("a partition's lock");
                        }
                        match next {
                            Next::Window(t) => {
                                let wall = (progress && me == 0).then(|| clock.elapsed());
                                if let Some(wall) =
                                    wall.filter(|&w| w >= last_print + std::time::Duration::from_secs(2))
                                {
                                    last_print = wall;
                                    eprintln!(
                                        "  ... simulated {:.3} ms, {events_all} events ({:.1} M/s) on {n} threads",
                                        window_end.ps() as f64 / 1e9,
                                        events_all as f64 / wall.as_secs_f64().max(1e-9) / 1e6,
                                    );
                                }
                                // Through an idle stretch too: one window at each sample time.
                                start = next_sample.map_or(t, |ns| t.min(ns))
                            }
                            done => {
                                let counted = events - fabric.shared_events();
                                crate::proc_stats::note_thread_cpu();
                                tracing::info!(
                                    partition = me,
                                    windows = window + 1,
                                    events = counted,
                                    handling_s = handling.as_secs_f64(),
                                    waited_s = waited.as_secs_f64(),
                                    wall_s = clock.elapsed().as_secs_f64(),
                                    "partition done"
                                );
                                return (s, done, counted);
                            }
                        }
                    }
                    unreachable!("windows never run out")
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a partition's thread panicked"))
            .collect()
    });
    let fabrics = locks.into_iter().map(|l| l.into_inner().expect("a partition's lock"));
    let mut outcome = None;
    let mut parts = Vec::with_capacity(n);
    for ((s, next, counted), fabric) in results.into_iter().zip(fabrics) {
        match next {
            Next::OneThread(why) => return Outcome::NeedsOneThread(why, clock.elapsed()),
            Next::End(o) => outcome = Some(o),
            Next::Fold => {}
            Next::Window(_) => unreachable!("threads return when the run ends"),
        }
        parts.push((fabric, s, counted));
    }
    let (mut fabric, sched, events) = fold(parts);
    let report = RunReport {
        outcome: outcome.unwrap_or(RunOutcome::EndTime),
        events,
        end: sched.now(),
        wall_elapsed: clock.elapsed(),
    };
    if outcome.is_some() {
        return Outcome::Done(Box::new(fabric), report);
    }
    if !fabric.fold_may_go_on() {
        return Outcome::NeedsOneThread(FOLD_TIED, clock.elapsed());
    }
    fabric.end_partitions();
    Outcome::Continue(Box::new(fabric), Box::new(sched), report)
}

type Sched = Scheduler<Ev, WheelQueue<Ev>>;

/// Why a fold cannot go on: flows of two partitions start at one instant, and their order
/// (the single-threaded run's: the order their last dependencies completed in) is not
/// known to the fold.
const FOLD_TIED: &str = "flows of two partitions were to start at one instant when the partitions folded";

/// Folds the partitions (in partition order, each with its scheduler and the events it
/// counted) into one fabric and one scheduler; returns them and the events counted.
fn fold(parts: Vec<(Fabric, Sched, u64)>) -> (Fabric, Sched, u64) {
    let mut parts = parts.into_iter();
    let (mut fabric, mut sched, mut events) = parts.next().expect("at least two partitions");
    for (f, s, counted) in parts {
        fabric.absorb(f);
        // Every partition holds the workload's next arrival: partition 0's stays.
        sched.absorb(s, |ev| !matches!(ev, Ev::FlowArrival));
        events += counted;
    }
    fabric.settle_fold();
    (fabric, sched, events)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What each look at `p` says, given the events each partition handled in each stretch
    /// between looks.
    fn looks(mut p: Pace, stretches: &[&[u64]]) -> Vec<bool> {
        let mut total = vec![0; stretches[0].len()];
        let mut said = Vec::new();
        for (k, since) in stretches.iter().enumerate() {
            for (t, s) in total.iter_mut().zip(since.iter()) {
                *t += s;
            }
            // Between looks, never.
            assert!(!p.too_slow(k as u64 * PACE_WINDOWS + PACE_WINDOWS / 2, &total));
            said.push(p.too_slow((k as u64 + 1) * PACE_WINDOWS - 1, &total));
        }
        said
    }

    /// The pace is looked at every `PACE_WINDOWS` windows, on the events since the last look;
    /// it folds after `SLOW_LOOKS_TO_FOLD` thin stretches in a row.
    #[test]
    fn pace_folds_only_after_thin_stretches() {
        let n = SLOW_LOOKS_TO_FOLD as usize;
        let enough = PACE_WINDOWS * MIN_EVENTS_PER_WINDOW_CACHED;
        let full: &[u64] = &[enough, enough];
        // One event short of the fewest per window.
        let thin: &[u64] = &[enough, enough - 1];
        let mut expected = vec![false; n - 1];
        expected.push(true);
        assert_eq!(looks(Pace::for_ports(0), &vec![thin; n]), expected);
        assert_eq!(looks(Pace::for_ports(0), &vec![full; n + 2]), vec![false; n + 2]);
        // A full stretch starts the count again.
        let mut stretches = vec![thin; n - 1];
        stretches.push(full);
        stretches.extend(vec![thin; n - 1]);
        assert_eq!(looks(Pace::for_ports(0), &stretches), vec![false; 2 * n - 1]);
        // Events cost more on a fabric that outgrows the caches: fewer of them pay.
        let fewer = PACE_WINDOWS * MIN_EVENTS_PER_WINDOW_AT_SCALE;
        let scale = AT_SCALE_PORTS;
        assert_eq!(
            looks(Pace::for_ports(scale), &vec![&[fewer, fewer][..]; n]),
            vec![false; n]
        );
        assert_eq!(
            looks(Pace::for_ports(scale - 1), &vec![&[fewer, fewer][..]; n]),
            expected
        );
    }

    /// ... and after stretches where one partition did nearly all the work.
    #[test]
    fn pace_folds_when_one_partition_does_the_work() {
        let n = SLOW_LOOKS_TO_FOLD as usize;
        let busy = 10 * PACE_WINDOWS * MIN_EVENTS_PER_WINDOW_CACHED;
        // The others' share at the least gain: go on; just below it: fold.
        let share = busy * MIN_GAIN_PERCENT / 100;
        let even: &[u64] = &[busy, share / 2, share / 2];
        let uneven: &[u64] = &[busy, share / 2, share / 2 - 1];
        assert_eq!(looks(Pace::for_ports(0), &vec![even; n + 1]), vec![false; n + 1]);
        assert_eq!(looks(Pace::for_ports(0), &vec![uneven; n]).last(), Some(&true));
        // Counted since the last look: uneven starts, then even stretches, go on.
        let (lopsided, level) = ([busy, 0], [busy, busy]);
        let mut stretches = vec![&lopsided[..]; n - 1];
        stretches.extend(vec![&level[..]; n + 1]);
        assert_eq!(looks(Pace::for_ports(0), &stretches), vec![false; 2 * n]);
    }
}

#[cfg(test)]
mod split_tests {
    use super::*;
    use fabrics::topology::{LinkInfo, LinkKind, fat_tree};
    use sim_core::{BitsPerSec, Duration};

    /// The least peak of `work` in `n` runs, by trying every way to cut it.
    fn least_peak_by_search(work: &[u64], n: usize) -> u64 {
        let cuts = work.len() - 1;
        (0u32..1 << cuts)
            .filter(|m| m.count_ones() as usize == n - 1)
            .map(|m| {
                let (mut peak, mut acc) = (0, 0);
                for (i, &w) in work.iter().enumerate() {
                    acc += w;
                    if i == cuts || m & (1 << i) != 0 {
                        peak = peak.max(acc);
                        acc = 0;
                    }
                }
                peak
            })
            .min()
            .expect("n <= len")
    }

    #[test]
    fn runs_are_in_order_non_empty_and_as_light_as_any_cut() {
        assert_eq!(runs_of_least_peak(&[1; 8], 3), [0, 0, 0, 1, 1, 1, 2, 2]);
        assert_eq!(
            runs_of_least_peak(&[10, 1, 1, 1, 1, 1, 1, 1], 2),
            [0, 1, 1, 1, 1, 1, 1, 1]
        );
        // The peak alone would leave the third run empty: the last items start runs of their own.
        assert_eq!(runs_of_least_peak(&[1, 1, 1, 100], 3), [0, 0, 1, 2]);
        assert_eq!(runs_of_least_peak(&[0, 0, 0], 3), [0, 1, 2]);
        // Against every cut of small random lists (a fixed linear congruential sequence).
        let mut x = 12345u64;
        for _ in 0..400 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let len = 2 + (x >> 60) as usize % 9;
            let work: Vec<u64> = (0..len)
                .map(|i| (x.rotate_left(7 * i as u32) >> 56) % if i % 3 == 0 { 200 } else { 20 })
                .collect();
            for n in 2..=len.min(5) {
                let runs = runs_of_least_peak(&work, n);
                assert!(
                    runs.windows(2).all(|r| r[1] == r[0] || r[1] == r[0] + 1),
                    "{work:?} {runs:?}"
                );
                assert_eq!((runs[0], runs[len - 1] as usize), (0, n - 1), "{work:?} {runs:?}");
                let mut peak = vec![0; n];
                for (r, w) in runs.iter().zip(&work) {
                    peak[*r as usize] += w;
                }
                let peak = peak.into_iter().max().unwrap();
                assert_eq!(peak, least_peak_by_search(&work, n), "{work:?} {runs:?}");
            }
        }
    }

    fn k4() -> Topology {
        let link = LinkInfo {
            rate: BitsPerSec::from_gbps(100),
            delay: Duration::from_ns(1000),
            kind: LinkKind::Network,
        };
        fat_tree::build(4, link, link).expect("a k=4 fat-tree")
    }

    /// An incast into pod 0 from pod 1: pod 0 (receiver) alone in one partition, the senders'
    /// pod with the idle ones in the other, and the core switches filling the lighter one.
    #[test]
    fn a_skewed_load_is_split_by_work_and_no_load_by_node_count() {
        let topo = k4();
        let (group, _) = groups(&topo, true).unwrap();
        let group = &group;
        let pod = |p: usize| (0..group.len()).filter(move |&v| group[v] == Some(p));
        let cores: Vec<usize> = (0..group.len()).filter(|&v| group[v].is_none()).collect();
        assert_eq!(cores.len(), 4);
        let mut load = vec![0u64; group.len()];
        for v in pod(0) {
            load[v] = 1000;
        }
        for v in pod(1) {
            load[v] = 400;
        }
        for &c in &cores {
            load[c] = 100;
        }
        let part = groups_of_nodes(&topo, 2, true, &load).unwrap();
        assert!(pod(0).all(|v| part[v] == 0), "{part:?}");
        assert!((1..4).flat_map(pod).all(|v| part[v] == 1), "{part:?}");
        // Pod 0 weighs 8 x 1001, the rest 8 x 401 + 16: all four cores go to the second.
        assert!(cores.iter().all(|&c| part[c] == 1), "{part:?}");
        // No load: pods by halves, cores shared alike.
        let part = groups_of_nodes(&topo, 2, true, &vec![0; group.len()]).unwrap();
        assert!((0..2).flat_map(pod).all(|v| part[v] == 0), "{part:?}");
        assert!((2..4).flat_map(pod).all(|v| part[v] == 1), "{part:?}");
        assert_eq!(cores.iter().filter(|&&c| part[c] == 0).count(), 2, "{part:?}");
        // Loads at the top of the range saturate instead of overflowing: still a split.
        let part = groups_of_nodes(&topo, 3, true, &vec![u64::MAX; group.len()]).unwrap();
        assert_eq!(part.iter().copied().max(), Some(2), "{part:?}");
    }
}

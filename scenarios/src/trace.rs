//! `trace.json` (`[output] trace = true`): collectives and training steps in the Chrome Trace
//! Event Format, which ui.perfetto.dev and chrome://tracing open.
//!
//! ## Layout
//! - A process per server (the part of a host's name before its first `.`, e.g. `s0` for
//!   `s0.gpu3`; one process `GPUs` when names have no `.`), a thread (track) per GPU host
//!   named `GPU <rank> (<host name>)` (`thread_name` metadata), ordered by host index. An
//!   NVLS switch endpoint gets a track named `NVSwitch (<host name>)`.
//! - A complete event (`ph: "X"`) per (instance, sending endpoint, stage, step): the sender's
//!   messages of one ring step / tree level / halving-doubling round / NVLS phase /
//!   hierarchical stage step, from the earliest start of those flows (their release: every
//!   dependency delivered plus the reduction gap, `start_ns` of `flows.csv`) to their latest
//!   delivery (`finish_ns`). Named `<op> <size> <algorithm> [<stage>] step <k>/<steps>`, with
//!   `args` workload, iteration, step, stage, bytes, messages, channels and peers.
//! - Flow events (`ph: "s"` then `ph: "f"`, `bp: "e"`, one id per pair) from a slice to each
//!   slice of another track that depends on one of its messages (a ring step's send to the
//!   receiver's next send): `s` at the latest delivery among those dependencies, `f` at the
//!   dependent slice's start.
//! - Training steps (`training_step` workloads): a process `training`, per workload a track of
//!   step slices, one of compute-phase slices and one of bucket-AllReduce slices (each
//!   bucket's instance span); the buckets' messages appear on the GPU tracks as above.
//!
//! Times are microseconds (`ts`, `dur`) written exactly from picoseconds (6 decimals);
//! `displayTimeUnit` is `ns`. Output is deterministic: events in a fixed order (metadata,
//! then instance by instance, slices by (endpoint, stage, step), then flows), no maps with
//! random order. Unfinished messages are left out. With several channels or chunks, a
//! rank's slices of consecutive steps may overlap (the channels run out of step); the viewer
//! then nests or stacks them.
//!
//! Size bound: at most `[output] trace_max_events` (default [`MAX_TRACE_EVENTS`]) slice and
//! flow events; an instance (or training step) that would pass it and everything after it are
//! left out, `summary.json` says so (`trace.truncated`) and the terminal prints a WARNING.

use std::collections::{BTreeMap, BTreeSet};

use fabrics::collectives::flows::{Instance, instance_span};
use fabrics::collectives::training::step_span;
use fabrics::collectives::{Algorithm, MessageDag, Stage};
use fabrics::engine::Fabric;
use fabrics::topology::Topology;
use serde::Serialize;

use crate::build::TrainingRun;

/// Default bound on the slice and flow events of one `trace.json` (`[output]
/// trace_max_events`; about 200 bytes each: ~200 MB).
pub const MAX_TRACE_EVENTS: u64 = 1_000_000;
/// Largest `[output] trace_max_events` (~2 GB of JSON).
pub const MAX_TRACE_EVENTS_LIMIT: u64 = 10_000_000;
/// The process of the training tracks (away from the servers' 1, 2, ...; 0 is avoided since
/// trace viewers may treat it as the idle process).
pub const TRAINING_PID: u32 = 1_000_000;

/// What `summary.json` says about the trace.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TraceInfo {
    pub file: &'static str,
    /// Slice (`X`) and flow (`s`, `f`) events written.
    pub events: u64,
    pub limit: u64,
    /// True when the limit cut the trace (later instances left out).
    pub truncated: bool,
    /// Collective instances (including training buckets) in the trace, and in the run.
    pub instances_written: u64,
    pub instances: u64,
}

/// The encoded trace and what it holds.
pub struct Trace {
    pub json: Vec<u8>,
    pub info: TraceInfo,
}

/// Picoseconds as microseconds with 6 exact decimals.
pub fn us(ps: u64) -> String {
    format!("{}.{:06}", ps / 1_000_000, ps % 1_000_000)
}

/// A JSON string literal.
fn js(s: &str) -> String {
    serde_json::to_string(s).expect("a string encodes")
}

/// `1048576` -> `1MiB`, `1536` -> `1536B`.
pub fn size_label(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (u, name) in UNITS {
        if bytes >= u && bytes.is_multiple_of(u) {
            return format!("{}{name}", bytes / u);
        }
    }
    format!("{bytes}B")
}

/// One step slice being accumulated.
struct Slice {
    start: u64,
    end: u64,
    bytes: u64,
    messages: u32,
    channels: BTreeSet<u16>,
    peers: BTreeSet<u32>,
}

/// (sending endpoint, stage, step).
type SliceKey = (u32, Stage, u32);

struct Writer {
    events: Vec<String>,
    n_timed: u64,
    limit: u64,
    next_flow: u64,
}

impl Writer {
    fn room(&self, n: u64) -> bool {
        self.n_timed + n <= self.limit
    }
    fn timed(&mut self, e: String) {
        self.events.push(e);
        self.n_timed += 1;
    }
}

/// Builds `trace.json`. `names[w]` names workload `w`; `limit` bounds the timed events.
pub fn encode(
    fabric: &Fabric,
    topology: &Topology,
    collectives: &[(usize, Instance)],
    training: &[TrainingRun],
    names: &[String],
    limit: u64,
) -> Trace {
    let host_name = |h: u32| -> String {
        topology
            .hosts
            .get(h as usize)
            .map(|&n| topology.graph[n].name.clone())
            .unwrap_or_else(|| format!("host{h}"))
    };
    // Every instance with its workload and a label of its origin.
    let mut all: Vec<(usize, &Instance)> = collectives.iter().map(|(w, i)| (*w, i)).collect();
    for r in training {
        all.extend(r.buckets.iter().map(|b| (r.workload, b)));
    }
    let mut w = Writer {
        events: Vec::new(),
        n_timed: 0,
        limit,
        next_flow: 0,
    };
    // Track names: host -> (label, rank) from the first instance naming it.
    let mut tracks: BTreeMap<u32, String> = BTreeMap::new();
    let mut written = 0u64;
    let mut truncated = false;
    let mut cache: Option<(fabrics::collectives::CollectiveSpec, Option<MessageDag>)> = None;
    for &(wl, inst) in &all {
        if cache.as_ref().is_none_or(|(s, _)| *s != inst.spec) {
            cache = Some((inst.spec, crate::collective_stages::dag_of(inst)));
        }
        let Some((_, Some(dag))) = &cache else { continue };
        let wname = names.get(wl).map(String::as_str).unwrap_or("workload");
        let before = (w.events.len(), w.n_timed, w.next_flow);
        if !instance_events(&mut w, fabric, inst, dag, wname, &mut tracks, &host_name) {
            w.events.truncate(before.0);
            w.n_timed = before.1;
            w.next_flow = before.2;
            truncated = true;
            break;
        }
        written += 1;
    }
    let mut training_tracks: Vec<(u32, String)> = Vec::new();
    if !truncated {
        for (k, r) in training.iter().enumerate() {
            let wname = names.get(r.workload).map(String::as_str).unwrap_or("workload");
            let base = 3 * k as u32;
            training_tracks.push((base, format!("{wname} steps")));
            training_tracks.push((base + 1, format!("{wname} compute")));
            training_tracks.push((base + 2, format!("{wname} bucket all_reduce")));
            if !training_events(&mut w, fabric, r, wname, base) {
                truncated = true;
                break;
            }
        }
    }
    // Metadata: processes per server prefix, in host order.
    let mut meta: Vec<String> = Vec::new();
    let mut pids: BTreeMap<String, u32> = BTreeMap::new();
    let mut pid_order: Vec<String> = Vec::new();
    let pid_of = |h: u32, pids: &mut BTreeMap<String, u32>, order: &mut Vec<String>| -> u32 {
        let name = host_name(h);
        let p = match name.split_once('.') {
            Some((server, _)) => server.to_string(),
            None => "GPUs".to_string(),
        };
        let next = pids.len() as u32 + 1;
        *pids.entry(p.clone()).or_insert_with(|| {
            order.push(p);
            next
        })
    };
    let mut thread_meta = Vec::new();
    for (&h, label) in &tracks {
        let pid = pid_of(h, &mut pids, &mut pid_order);
        thread_meta.push(format!(
            r#"{{"ph":"M","name":"thread_name","pid":{pid},"tid":{h},"args":{{"name":{}}}}}"#,
            js(label)
        ));
        thread_meta.push(format!(
            r#"{{"ph":"M","name":"thread_sort_index","pid":{pid},"tid":{h},"args":{{"sort_index":{h}}}}}"#
        ));
    }
    for (i, p) in pid_order.iter().enumerate() {
        meta.push(format!(
            r#"{{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}}}}"#,
            i + 1,
            js(p)
        ));
        meta.push(format!(
            r#"{{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}}"#,
            i + 1,
            i + 1
        ));
    }
    if !training_tracks.is_empty() {
        meta.push(format!(
            r#"{{"ph":"M","name":"process_name","pid":{TRAINING_PID},"tid":0,"args":{{"name":"training"}}}}"#
        ));
        for (tid, name) in &training_tracks {
            meta.push(format!(
                r#"{{"ph":"M","name":"thread_name","pid":{TRAINING_PID},"tid":{tid},"args":{{"name":{}}}}}"#,
                js(name)
            ));
        }
    }
    meta.extend(thread_meta);
    // Slices carry pid placeholders (the host's pid is known only now).
    let pid_map: BTreeMap<u32, u32> = tracks
        .keys()
        .map(|&h| (h, pid_of(h, &mut pids, &mut pid_order)))
        .collect();
    let mut out = String::with_capacity(64 * (meta.len() + w.events.len()) + 256);
    out.push_str("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"fabricsim\",\"truncated\":");
    out.push_str(if truncated { "true" } else { "false" });
    out.push_str("},\"traceEvents\":[\n");
    let mut first = true;
    for e in meta.iter().chain(w.events.iter()) {
        if !first {
            out.push_str(",\n");
        }
        first = false;
        out.push_str(&resolve_pid(e, &pid_map));
    }
    out.push_str("\n]}\n");
    Trace {
        json: out.into_bytes(),
        info: TraceInfo {
            file: "trace.json",
            events: w.n_timed,
            limit,
            truncated,
            instances_written: written,
            instances: all.len() as u64,
        },
    }
}

/// Slices are written with `"pid":"H<host>"`; this puts the host's process id there.
fn resolve_pid(e: &str, pid_map: &BTreeMap<u32, u32>) -> String {
    let Some(at) = e.find("\"pid\":\"H") else {
        return e.to_string();
    };
    let rest = &e[at + 8..];
    let end = rest.find('"').unwrap_or(0);
    let host: u32 = rest[..end].parse().unwrap_or(0);
    let pid = pid_map.get(&host).copied().unwrap_or(0);
    format!("{}\"pid\":{pid}{}", &e[..at], &rest[end + 1..])
}

fn step_word(a: Algorithm) -> &'static str {
    match a {
        Algorithm::Ring | Algorithm::Hierarchical { .. } => "step",
        Algorithm::DoubleBinaryTree => "level",
        Algorithm::HalvingDoubling => "round",
        Algorithm::Nvls => "phase",
        Algorithm::Direct => "step",
    }
}

/// The step slices and flows of one instance; false (nothing kept) if over the limit.
fn instance_events(
    w: &mut Writer,
    fabric: &Fabric,
    inst: &Instance,
    dag: &MessageDag,
    wname: &str,
    tracks: &mut BTreeMap<u32, String>,
    host_name: &dyn Fn(u32) -> String,
) -> bool {
    let recs = fabric.flow_records();
    let rec = |i: usize| &recs[fabric.flow_of_input(inst.first_flow as usize + i) as usize];
    let key = |i: usize| {
        let m = &dag.messages[i];
        (m.src, m.stage, m.step)
    };
    let mut slices: BTreeMap<SliceKey, Slice> = BTreeMap::new();
    let mut steps_of: BTreeMap<Stage, u32> = BTreeMap::new();
    let mut host_of_ep: BTreeMap<u32, u32> = BTreeMap::new();
    for (i, m) in dag.messages.iter().enumerate() {
        let r = rec(i);
        let n = steps_of.entry(m.stage).or_insert(0);
        *n = (*n).max(m.step + 1);
        host_of_ep.insert(m.src, r.src);
        host_of_ep.insert(m.dst, r.dst);
        let Some(finish) = r.finish else { continue };
        let s = slices.entry(key(i)).or_insert(Slice {
            start: u64::MAX,
            end: 0,
            bytes: 0,
            messages: 0,
            channels: BTreeSet::new(),
            peers: BTreeSet::new(),
        });
        s.start = s.start.min(r.start.ps());
        s.end = s.end.max(finish.ps());
        s.bytes += m.bytes;
        s.messages += 1;
        s.channels.insert(m.channel);
        s.peers.insert(m.dst);
    }
    // Flows between slices of different tracks: (from, to) -> latest dependency delivery.
    let mut flows: BTreeMap<(SliceKey, SliceKey), u64> = BTreeMap::new();
    for (i, m) in dag.messages.iter().enumerate() {
        let to = key(i);
        if !slices.contains_key(&to) {
            continue;
        }
        for &d in &m.deps {
            let from = key(d as usize);
            if from.0 == to.0 || !slices.contains_key(&from) {
                continue;
            }
            let Some(t) = rec(d as usize).finish else { continue };
            let e = flows.entry((from, to)).or_insert(0);
            *e = (*e).max(t.ps());
        }
    }
    if !w.room(slices.len() as u64 + 2 * flows.len() as u64) {
        return false;
    }
    let spec = &inst.spec;
    let op = crate::collective_report::op_name(spec.kind);
    let algo = crate::collective_report::algo_name(spec.algorithm);
    let size = size_label(spec.bytes);
    for (ep, &h) in &host_of_ep {
        tracks.entry(h).or_insert_with(|| {
            if *ep < dag.n_ranks {
                format!("GPU {ep} ({})", host_name(h))
            } else {
                format!("NVSwitch ({})", host_name(h))
            }
        });
    }
    let tid = |ep: u32| host_of_ep.get(&ep).copied().unwrap_or(0);
    for (&(ep, stage, step), s) in &slices {
        let n_steps = steps_of.get(&stage).copied().unwrap_or(1);
        let stage_part = if stage == Stage::Flat {
            String::new()
        } else {
            format!(" {}", stage.name())
        };
        let name = format!(
            "{op} {size} {algo}{stage_part} {} {}/{n_steps}",
            step_word(spec.algorithm),
            step + 1
        );
        let chans: Vec<String> = s.channels.iter().map(|c| c.to_string()).collect();
        let peers: Vec<String> = s.peers.iter().map(|&p| js(&host_name(tid(p)))).collect();
        let h = tid(ep);
        w.timed(format!(
            r#"{{"ph":"X","name":{},"cat":{},"pid":"H{h}","tid":{h},"ts":{},"dur":{},"args":{{"workload":{},"iteration":{},"stage":{},"step":{step},"bytes":{},"messages":{},"channels":[{}],"peers":[{}]}}}}"#,
            js(&name),
            js(op),
            us(s.start),
            us(s.end - s.start),
            js(wname),
            inst.iteration,
            js(if stage == Stage::Flat { "flat" } else { stage.name() }),
            s.bytes,
            s.messages,
            chans.join(","),
            peers.join(","),
        ));
    }
    for ((from, to), t) in &flows {
        let id = w.next_flow;
        w.next_flow += 1;
        let (hf, ht) = (tid(from.0), tid(to.0));
        let to_start = slices[to].start;
        w.timed(format!(
            r#"{{"ph":"s","name":"dep","cat":"dep","id":{id},"pid":"H{hf}","tid":{hf},"ts":{}}}"#,
            us(*t)
        ));
        w.timed(format!(
            r#"{{"ph":"f","bp":"e","name":"dep","cat":"dep","id":{id},"pid":"H{ht}","tid":{ht},"ts":{}}}"#,
            us(to_start)
        ));
    }
    true
}

/// A training workload's step, compute and bucket slices ([`TRAINING_PID`], tracks
/// `base..base+3`).
fn training_events(w: &mut Writer, fabric: &Fabric, r: &TrainingRun, wname: &str, base: u32) -> bool {
    let recs = fabric.flow_records();
    let of = |i: usize| fabric.flow_of_input(i);
    let compute = r.step.compute.ps();
    for (k, s) in r.steps.iter().enumerate() {
        let Some((a, b)) = step_span(s, recs, of) else { continue };
        let buckets: Vec<(usize, (u64, u64))> = r.buckets[s.buckets.clone()]
            .iter()
            .enumerate()
            .filter_map(|(j, inst)| instance_span(inst, recs, of).map(|(x, y)| (j, (x.ps(), y.ps()))))
            .collect();
        if !w.room(2 + buckets.len() as u64) {
            return false;
        }
        let slice = |tid: u32, name: String, t0: u64, t1: u64, args: String| {
            format!(
                r#"{{"ph":"X","name":{},"cat":"training","pid":{TRAINING_PID},"tid":{tid},"ts":{},"dur":{},"args":{{"workload":{},"step":{k}{args}}}}}"#,
                js(&name),
                us(t0),
                us(t1 - t0),
                js(wname)
            )
        };
        w.timed(slice(base, format!("step {}", k + 1), a.ps(), b.ps(), String::new()));
        w.timed(slice(
            base + 1,
            format!("compute (step {})", k + 1),
            a.ps(),
            a.ps() + compute,
            String::new(),
        ));
        for (j, (x, y)) in buckets {
            let bytes = r.buckets[s.buckets.start + j].spec.bytes;
            w.timed(slice(
                base + 2,
                format!("bucket {} all_reduce {}", j, size_label(bytes)),
                x,
                y,
                format!(r#","bucket":{j},"bytes":{bytes}"#),
            ));
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds_are_exact() {
        assert_eq!(us(0), "0.000000");
        assert_eq!(us(1), "0.000001");
        assert_eq!(us(1_234_567_891), "1234.567891");
    }

    #[test]
    fn sizes_read_as_binary_units() {
        assert_eq!(size_label(1 << 20), "1MiB");
        assert_eq!(size_label(4 << 30), "4GiB");
        assert_eq!(size_label(1536), "1536B");
        assert_eq!(size_label(3 << 10), "3KiB");
        assert_eq!(size_label(0), "0B");
    }

    #[test]
    fn pid_placeholders_resolve() {
        let mut m = BTreeMap::new();
        m.insert(7, 2);
        let e = r#"{"ph":"X","pid":"H7","tid":7}"#;
        assert_eq!(resolve_pid(e, &m), r#"{"ph":"X","pid":2,"tid":7}"#);
        let e = r#"{"ph":"X","pid":0,"tid":7}"#;
        assert_eq!(resolve_pid(e, &m), e);
    }

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(js("a\"b"), r#""a\"b""#);
        let v: serde_json::Value = serde_json::from_str(&format!("{{\"x\":{}}}", js("s0.gpu1\n"))).unwrap();
        assert_eq!(v["x"], "s0.gpu1\n");
    }
}

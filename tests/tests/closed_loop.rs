//! Closed-loop request/response traffic (`kind = "closed_loop"`, issue 14): each request
//! starts when the client's previous response was delivered, plus the think time, and each
//! response when its request was delivered. Checked against the hop-by-hop timing formula of
//! the base fabric (`docs/models/ethernet-base.md`, exact to the picosecond) and against the
//! defining property of a closed loop: the offered load follows the fabric.

use fabricsim_tests::{fabricsim, s};
use std::path::Path;

/// A client-server pair (or `clients` clients) behind one switch, 100 Gb/s, 10 m cables (50 ns),
/// 500 ns switch latency, no transport (so the chain's timing is the formula's alone).
fn scenario(dir: &Path, clients: u32, requests: u32, think: &str) -> std::path::PathBuf {
    let mut links = String::new();
    for h in 0..=clients {
        links.push_str(&format!(
            "  {{ a = \"h{h}\", b = \"s0\", rate = \"100Gbps\", cable_m = 10 }},\n"
        ));
    }
    let text = format!(
        r#"[scenario]
name = "closed_loop"
seed = 1

[topology]
kind = "custom"
hosts = {hosts}
switches = 1
links = [
{links}]

[fabric]
kind = "ethernet"
ethernet = {{ loss_recovery = "none" }}

[[workload]]
kind = "closed_loop"
server = 0
n_clients = {clients}
request_size = "1000B"
response_size = "8000B"
requests = {requests}
think_time = "{think}"
start = "1us"
"#,
        hosts = clients + 1,
    );
    let path = dir.join(format!("cl_{clients}_{requests}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// `flows.csv` rows as (src, dst, size, start_ps, finish_ps).
fn flows(out: &Path) -> Vec<(u32, u32, u64, u64, u64)> {
    let text = std::fs::read_to_string(out.join("flows.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (src, dst, size, start, finish) = (
        col("src"),
        col("dst"),
        col("size_bytes"),
        col("start_ns"),
        col("finish_ns"),
    );
    let ps = |v: &str| (v.parse::<f64>().unwrap() * 1000.0).round() as u64;
    lines
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            (
                c[src].parse().unwrap(),
                c[dst].parse().unwrap(),
                c[size].parse().unwrap(),
                ps(c[start]),
                ps(c[finish]),
            )
        })
        .collect()
}

/// Serialization of `wire` bytes at 100 Gb/s, ps.
fn ser_ps(wire: u64) -> u64 {
    (wire * 8 * 1000).div_ceil(100)
}

/// FCT of a flow alone on host -> switch -> host (82-B header, 4096-B MTU): the sending NIC's
/// processing, the packets back to back on the first link; each leaves the switch `switch`
/// after its last bit arrived, or when the second link is free, whichever is later
/// (store-and-forward); the receiving NIC's processing.
fn fct_ps(size: u64) -> u64 {
    let nic = fabrics::engine::ETHERNET_NIC_LATENCY;
    nic.tx.ps() + wire_fct_ps(size) + nic.rx.ps()
}

/// [`fct_ps`] from the first bit sent to the last received.
fn wire_fct_ps(size: u64) -> u64 {
    let (mtu, header, delay, switch) = (4096, 82, 50_000, 500_000);
    let (mut sent, mut link2_free, mut left) = (0, 0, size);
    while left > 0 {
        let w = left.min(mtu) + header;
        left -= left.min(mtu);
        sent += ser_ps(w);
        let depart = (sent + delay + switch).max(link2_free);
        link2_free = depart + ser_ps(w);
    }
    link2_free + delay
}

#[test]
fn each_request_follows_the_previous_response_plus_think_time() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), 1, 5, "2us");
    let out = dir.path().join("out");
    let r = fabricsim(&["run", s(&file), "--out", s(&out), "--quiet"]);
    assert_eq!(r.code, 0, "{r:?}");
    let f = flows(&out);
    assert_eq!(f.len(), 10, "5 requests and 5 responses");
    let mut t = 1_000_000; // start = 1 us
    for (i, &(src, dst, size, start, finish)) in f.iter().enumerate() {
        let request = i % 2 == 0;
        assert_eq!(
            (src, dst, size),
            if request { (1, 0, 1000) } else { (0, 1, 8000) },
            "flow {i}"
        );
        assert_eq!(
            start, t,
            "flow {i} starts when its predecessor is delivered (+ think time)"
        );
        assert_eq!(finish - start, fct_ps(size), "flow {i} runs alone: the formula's FCT");
        t = finish + if request { 0 } else { 2_000_000 };
    }
    let resolved = std::fs::read_to_string(out.join("scenario.resolved.toml")).unwrap();
    assert!(resolved.contains("kind = \"closed_loop\""), "{resolved}");
}

#[test]
fn offered_load_follows_the_fabric() {
    // Eight clients share the server's link: each response waits for the others, so each
    // client completes its requests later than a client alone would, and the server's link
    // is what paces them (an open-loop generator would keep sending regardless).
    let dir = tempfile::tempdir().unwrap();
    let last_finish = |clients: u32| {
        let file = scenario(dir.path(), clients, 20, "0s");
        let out = dir.path().join(format!("out{clients}"));
        let r = fabricsim(&["run", s(&file), "--out", s(&out), "--quiet"]);
        assert_eq!(r.code, 0, "{r:?}");
        let f = flows(&out);
        assert_eq!(f.len() as u32, clients * 40);
        f.iter().map(|x| x.4).max().unwrap()
    };
    let alone = last_finish(1);
    let shared = last_finish(8);
    // Alone: 20 x (request FCT + response FCT) after the 1 us start.
    assert_eq!(alone, 1_000_000 + 20 * (fct_ps(1000) + fct_ps(8000)));
    // Shared: the server's link carries 8 x 20 responses of two packets; it cannot finish
    // before their serialization, and it is what paces the clients: they end within 10 % of
    // that bound, later than a client alone.
    let responses_ps = 160 * (ser_ps(4096 + 82) + ser_ps(3904 + 82));
    assert!(shared >= 1_000_000 + responses_ps, "{shared} < {responses_ps}");
    assert!(
        (shared as f64) < 1.1 * (1_000_000 + responses_ps) as f64,
        "{shared} ps: not paced by the server's link ({responses_ps} ps)"
    );
    assert!(shared > alone, "shared {shared} ps vs alone {alone} ps");
}

#[test]
fn bad_closed_loop_is_refused_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), 2, 3, "1us");
    let text = std::fs::read_to_string(&file).unwrap();
    for (from, to, key) in [
        ("n_clients = 2", "clients = [1, 0]", "workload[0]"),
        ("requests = 3", "requests = 0", "workload[0].requests"),
        ("n_clients = 2", "n_clients = 2\nclients = [1]", "workload[0]"),
        ("n_clients = 2", "n_clients = 3", "workload[0].n_clients"),
        ("n_clients = 2", "clients = []", "workload[0].clients"),
        (
            "response_size = \"8000B\"",
            "response_size = \"0B\"",
            "workload[0].response_size",
        ),
    ] {
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, text.replace(from, to)).unwrap();
        let r = fabricsim(&["validate", s(&bad)]);
        assert_eq!(r.code, 2, "{from} -> {to}: {r:?}");
        assert!(r.stderr.contains(key), "{from} -> {to}: expected {key} in {r:?}");
    }
}

//! `[output] pcap`: the capture of chosen ports agrees with the run's own counters, changes
//! nothing else, is deterministic, is bounded by `max_packets` with a message, refuses bad
//! ports at their key, and decodes in `tshark` as RoCEv2, PFC and InfiniBand.
//!
//! The tshark tests FAIL when `tshark` is missing (`.ci/install-tshark` installs it).

use fabricsim_tests::{catalogue, fabricsim, s};
use pcap_file::DataLink;
use pcap_file::pcap::PcapReader;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const INCAST: &str = "roce_incast_16to1_dcqcn.toml";
const IB_CC: &str = "ib_ndr_congestion_tree_cc.toml";

/// `catalogue/<name>` with `output` as its `[output]` table and `extra` replacing `[run]`'s
/// end time when given, in a temporary directory.
fn scenario(name: &str, output: &str, end_time: Option<&str>) -> (tempfile::TempDir, PathBuf) {
    let mut text = std::fs::read_to_string(catalogue(name)).unwrap();
    assert!(!text.contains("[output]"), "{name} has an [output] table already");
    if let Some(t) = end_time {
        let i = text.find("end_time = ").unwrap();
        let j = i + text[i..].find('\n').unwrap();
        text.replace_range(i..j, &format!("end_time = \"{t}\""));
    }
    let text = if text.contains("\n[run]") {
        text.replacen("\n[run]", &format!("\n[output]\n{output}\n\n[run]"), 1)
    } else {
        format!("{text}\n[output]\n{output}\n")
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.toml");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

fn run(path: &Path, out: &Path) -> String {
    let o = fabricsim(&["run", s(path), "--out", s(out)]);
    assert_eq!(o.code, 0, "{o:?}");
    o.stdout
}

#[derive(Debug, PartialEq)]
struct Frame {
    ts_ns: u64,
    orig_len: u32,
    data: Vec<u8>,
}

fn read_pcap(path: &Path) -> (DataLink, Vec<Frame>) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut r = PcapReader::new(&bytes[..]).unwrap();
    let link = r.header().datalink;
    assert_eq!(r.header().ts_resolution, pcap_file::TsResolution::NanoSecond);
    let mut frames = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        frames.push(Frame {
            ts_ns: p.timestamp.as_nanos() as u64,
            orig_len: p.orig_len,
            data: p.data.into_owned(),
        });
    }
    (link, frames)
}

/// A pcapng interface: link type, `if_name`, `if_tsresol`.
#[derive(Debug, PartialEq)]
struct Iface {
    link: DataLink,
    name: String,
    tsresol: Option<u8>,
}

/// A pcapng file's application name, interfaces and (interface id, frame) in file order.
fn read_pcapng(path: &Path) -> (String, Vec<Iface>, Vec<(u32, Frame)>) {
    use pcap_file::pcapng::Block;
    use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption as Opt;
    use pcap_file::pcapng::blocks::section_header::SectionHeaderOption;
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut r = pcap_file::pcapng::PcapNgReader::new(&bytes[..]).unwrap();
    let app = r
        .section()
        .options
        .iter()
        .find_map(|o| match o {
            SectionHeaderOption::UserApplication(a) => Some(a.to_string()),
            _ => None,
        })
        .unwrap_or_default();
    let mut frames = Vec::new();
    while let Some(b) = r.next_block() {
        if let Block::EnhancedPacket(p) = b.unwrap() {
            let frame = Frame {
                ts_ns: p.timestamp.as_nanos() as u64,
                orig_len: p.original_len,
                data: p.data.into_owned(),
            };
            frames.push((p.interface_id, frame));
        }
    }
    let ifaces = r
        .interfaces()
        .iter()
        .map(|i| Iface {
            link: i.linktype,
            name: i
                .options
                .iter()
                .find_map(|o| match o {
                    Opt::IfName(n) => Some(n.to_string()),
                    _ => None,
                })
                .unwrap_or_default(),
            tsresol: i.options.iter().find_map(|o| match o {
                Opt::IfTsResol(t) => Some(*t),
                _ => None,
            }),
        })
        .collect();
    (app, ifaces, frames)
}

/// `ports.csv` as port id -> column -> value.
fn port_counters(out: &Path) -> BTreeMap<u32, BTreeMap<String, String>> {
    let text = std::fs::read_to_string(out.join("ports.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            let row: BTreeMap<String, String> = header
                .iter()
                .zip(&cells)
                .map(|(h, c)| (h.to_string(), c.to_string()))
                .collect();
            (row["port"].parse().unwrap(), row)
        })
        .collect()
}

fn count(rows: &BTreeMap<u32, BTreeMap<String, String>>, port: u32, col: &str) -> u64 {
    rows[&port][col].parse().unwrap_or_else(|_| panic!("port {port} {col}"))
}

fn summary(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

/// What an Ethernet frame is, from its bytes.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Eth {
    Pause,
    Resume,
    Data { ce: bool },
    Ack,
    Nak,
    Cnp,
}

fn classify(f: &[u8]) -> Eth {
    match u16::from_be_bytes([f[12], f[13]]) {
        0x8808 => {
            assert_eq!(&f[14..16], &[1, 1], "PFC opcode");
            if f[18..34].iter().any(|&b| b != 0) {
                Eth::Pause
            } else {
                Eth::Resume
            }
        }
        0x0800 => {
            assert_eq!(f[23], 17, "UDP");
            assert_eq!(u16::from_be_bytes([f[36], f[37]]), 4791);
            match f[42] {
                0x06..=0x0a => Eth::Data { ce: f[15] & 3 == 3 },
                0x11 if f[54] == 0x1f => Eth::Ack,
                0x11 => Eth::Nak,
                0x81 => Eth::Cnp,
                op => panic!("opcode {op:#x}"),
            }
        }
        t => panic!("EtherType {t:#x}"),
    }
}

/// Capture of the incast's receiver link both ways, a congested spine-to-leaf link and a
/// leaf-to-spine link that sends PAUSE frames (port ids from `ports.csv`).
const INCAST_PCAP: &str = r#"pcap = { ports = [0, "leaf0 -> h0", 76, 224], payload_bytes = 16 }"#;
const INCAST_PORTS: [u32; 4] = [0, 64, 76, 224];

#[test]
fn roce_capture_agrees_with_the_port_counters_and_changes_nothing_else() {
    let (dir, path) = scenario(INCAST, INCAST_PCAP, None);
    let (plain_dir, plain) = scenario(INCAST, "", None);
    let (out, plain_out) = (dir.path().join("out"), plain_dir.path().join("out"));
    run(&path, &out);
    run(&plain, &plain_out);
    for f in ["flows.csv", "ports.csv", "roce_ports.csv"] {
        assert_eq!(
            std::fs::read(out.join(f)).unwrap(),
            std::fs::read(plain_out.join(f)).unwrap(),
            "{f} changed by the capture"
        );
    }
    let rows = port_counters(&out);
    let sm = summary(&out);
    assert_eq!(sm["pcap"]["packets_beyond_max"], 0);
    let mut total = 0;
    let mut pauses_seen = 0;
    for p in INCAST_PORTS {
        let (link, frames) = read_pcap(&out.join(format!("pcap_port{p}.pcap")));
        assert_eq!(link, DataLink::ETHERNET);
        assert_eq!(frames.len() as u64, count(&rows, p, "packets_tx"), "port {p}: frames");
        total += frames.len() as u64;
        assert!(
            frames.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns),
            "port {p}: time order"
        );
        let mut kinds: BTreeMap<Eth, u64> = BTreeMap::new();
        for f in &frames {
            assert!(
                f.data.len() >= 60 && f.data.len() as u32 <= f.orig_len,
                "port {p}: lengths"
            );
            *kinds.entry(classify(&f.data)).or_default() += 1;
        }
        let n = |k: Eth| kinds.get(&k).copied().unwrap_or(0);
        assert_eq!(n(Eth::Pause), count(&rows, p, "pause_frames_tx"), "port {p}: {kinds:?}");
        assert_eq!(
            n(Eth::Resume),
            count(&rows, p, "resume_frames_tx"),
            "port {p}: {kinds:?}"
        );
        // `cnps_tx` counts the CNPs a NIC sends (switch ports forward others' CNPs).
        if rows[&p]["node"].starts_with('h') {
            assert_eq!(n(Eth::Cnp), count(&rows, p, "cnps_tx"), "port {p}: {kinds:?}");
        }
        // CE marks made here, plus those made upstream.
        assert!(
            n(Eth::Data { ce: true }) >= count(&rows, p, "ecn_marked"),
            "port {p}: {kinds:?}"
        );
        pauses_seen += n(Eth::Pause);
    }
    assert!(pauses_seen > 0, "the capture must include PAUSE frames to test them");
    assert_eq!(sm["pcap"]["packets"], total);
    // The receiver's own port carries its CNPs; the link into it the marked data.
    assert!(count(&rows, 0, "cnps_tx") > 0);
    assert!(count(&rows, 64, "ecn_marked") > 0);
    // A whole data frame of 4 KiB is captured as headers plus 16 payload bytes.
    let (_, frames) = read_pcap(&out.join("pcap_port64.pcap"));
    let mid = frames
        .iter()
        .find(|f| f.data[42] == 0x07)
        .expect("a WRITE MIDDLE packet");
    assert_eq!(mid.data.len(), 14 + 20 + 8 + 12 + 16);
    assert_eq!(mid.orig_len, 14 + 20 + 8 + 12 + 4096 + 4);
}

#[test]
fn the_capture_is_the_same_bytes_run_after_run() {
    let (dir, path) = scenario(INCAST, INCAST_PCAP, None);
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    run(&path, &a);
    run(&path, &b);
    for p in INCAST_PORTS {
        let f = format!("pcap_port{p}.pcap");
        assert_eq!(
            std::fs::read(a.join(&f)).unwrap(),
            std::fs::read(b.join(&f)).unwrap(),
            "{f}"
        );
    }
}

/// `format = "pcapng"`: one `capture.pcapng` with an interface per captured port (port
/// order, Ethernet link type, `if_name` = `node->peer`, nanosecond `if_tsresol`), holding
/// exactly the packets of the per-port pcap files, in time order across ports, the same
/// bytes run after run.
#[test]
fn pcapng_holds_the_pcap_files_packets_in_one_file_in_time_order() {
    let ng = INCAST_PCAP.replace(" }", r#", format = "pcapng" }"#);
    let (dir, path) = scenario(INCAST, &ng, None);
    let (pcap_dir, pcap_path) = scenario(INCAST, INCAST_PCAP, None);
    let (out, again, pcap_out) = (
        dir.path().join("out"),
        dir.path().join("again"),
        pcap_dir.path().join("out"),
    );
    run(&path, &out);
    run(&path, &again);
    run(&pcap_path, &pcap_out);
    let file = out.join("capture.pcapng");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        std::fs::read(again.join("capture.pcapng")).unwrap(),
        "deterministic bytes"
    );
    assert!(!out.join("pcap_port0.pcap").exists());
    let rows = port_counters(&out);
    let (app, ifaces, frames) = read_pcapng(&file);
    assert_eq!(app, "fabricsim");
    let want: Vec<Iface> = INCAST_PORTS
        .iter()
        .map(|p| Iface {
            link: DataLink::ETHERNET,
            name: format!("{}->{}", rows[p]["node"], rows[p]["peer"]),
            tsresol: Some(9),
        })
        .collect();
    assert_eq!(ifaces, want);
    assert!(
        frames.windows(2).all(|w| w[0].1.ts_ns <= w[1].1.ts_ns),
        "time order across interfaces"
    );
    let sm = summary(&out);
    assert_eq!(sm["pcap"]["packets"], frames.len());
    for (i, p) in INCAST_PORTS.into_iter().enumerate() {
        let mine: Vec<&Frame> = frames.iter().filter(|f| f.0 == i as u32).map(|f| &f.1).collect();
        assert_eq!(mine.len() as u64, count(&rows, p, "packets_tx"), "port {p}");
        let (_, pcap) = read_pcap(&pcap_out.join(format!("pcap_port{p}.pcap")));
        assert!(
            mine.iter().copied().eq(pcap.iter()),
            "port {p}: the pcap file's packets"
        );
        let f = &sm["pcap"]["files"][i];
        assert_eq!(
            (&f["file"], &f["port"], &f["interface"], &f["link_type"]),
            (
                &serde_json::json!("capture.pcapng"),
                &serde_json::json!(p),
                &serde_json::json!(i),
                &serde_json::json!("ethernet")
            )
        );
        assert_eq!(f["packets"], mine.len());
    }
}

#[test]
fn max_packets_cuts_the_capture_with_a_message() {
    let (dir, path) = scenario(INCAST, "pcap = { ports = [64, 224], max_packets = 100 }", None);
    let out = dir.path().join("out");
    let stdout = run(&path, &out);
    let sm = summary(&out);
    assert_eq!(sm["pcap"]["packets"], 100);
    assert_eq!(sm["pcap"]["max_packets"], 100);
    let beyond = sm["pcap"]["packets_beyond_max"].as_u64().unwrap();
    let rows = port_counters(&out);
    assert_eq!(
        100 + beyond,
        count(&rows, 64, "packets_tx") + count(&rows, 224, "packets_tx")
    );
    assert!(
        stdout.contains("WARNING: pcap capture stopped at max_packets = 100"),
        "{stdout}"
    );
    let n: usize = [64, 224]
        .iter()
        .map(|p| read_pcap(&out.join(format!("pcap_port{p}.pcap"))).1.len())
        .sum();
    assert_eq!(n, 100);
}

#[test]
fn bad_pcap_ports_are_refused_at_their_key() {
    for (ports, key, words) in [
        ("[0, 99999]", "output.pcap.ports[1]", "does not exist"),
        (r#"["leaf0 -> spine2"]"#, "output.pcap.ports[0]", "parallel ports"),
        (r#"["h0 -> nowhere"]"#, "output.pcap.ports[0]", "no port"),
        ("[3, 3]", "output.pcap.ports[1]", "twice"),
        (
            r#"[0], format = "pcap-ng""#,
            "output.pcap.format",
            "expected `pcap` or `pcapng`",
        ),
        (r#"[0], fromat = "pcapng""#, "output.pcap.fromat", "unknown field"),
    ] {
        let (dir, path) = scenario(INCAST, &format!("pcap = {{ ports = {ports} }}"), None);
        let o = fabricsim(&["run", s(&path), "--out", s(&dir.path().join("out"))]);
        assert_eq!(o.code, 2, "{ports}: {o:?}");
        assert!(o.stderr.contains(key) && o.stderr.contains(words), "{ports}: {o:?}");
        assert!(!dir.path().join("out").exists(), "{ports}: nothing written");
        let o = fabricsim(&["validate", s(&path)]);
        assert_eq!(o.code, 2, "validate {ports}: {o:?}");
        assert!(o.stderr.contains(key), "validate {ports}: {o:?}");
    }
    let (dir, path) = scenario(INCAST, "pcap = { ports = [0], max_packets = 0 }", None);
    let o = fabricsim(&["run", s(&path), "--out", s(&dir.path().join("out"))]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(o.stderr.contains("output.pcap.max_packets"), "{o:?}");
}

/// The IB congestion-tree run: hot flows into host 5 (leaf1 port 0 is `leaf1 -> h5`).
fn ib_run(dir: &Path) -> (PathBuf, Vec<u32>) {
    let out = dir.join("out");
    let probe = dir.join("probe");
    let (_d, plain) = scenario(IB_CC, "", Some("50us"));
    run(&plain, &probe);
    let rows = port_counters(&probe);
    let find = |node: &str, peer: &str| {
        *rows
            .iter()
            .find(|(_, r)| r["node"] == node && r["peer"] == peer)
            .unwrap_or_else(|| panic!("{node} -> {peer}"))
            .0
    };
    let ports = vec![find("leaf1", "h5"), find("h5", "leaf1")];
    let (_d2, path) = scenario(
        IB_CC,
        &format!("pcap = {{ ports = [\"leaf1 -> h5\", {}] }}", ports[1]),
        Some("50us"),
    );
    run(&path, &out);
    (out, ports)
}

#[test]
fn ib_capture_agrees_with_the_port_counters() {
    let dir = tempfile::tempdir().unwrap();
    let (out, ports) = ib_run(dir.path());
    let rows = port_counters(&out);
    let sm = summary(&out);
    let mut written = 0;
    let mut tx = 0;
    let (mut fecn, mut becn) = (0, 0);
    for &p in &ports {
        let (link, frames) = read_pcap(&out.join(format!("pcap_port{p}.pcap")));
        assert_eq!(link, DataLink::INFINIBAND);
        assert!(frames.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns));
        for f in &frames {
            assert_eq!(f.data[1] & 3, 2, "LNH: BTH follows");
            fecn += u64::from(f.data[12] & 0x80 != 0);
            becn += u64::from(f.data[8] == 0x81 && f.data[12] & 0x40 != 0);
        }
        written += frames.len() as u64;
        tx += count(&rows, p, "packets_tx");
    }
    assert_eq!(sm["pcap"]["packets"], written);
    let omitted = sm["pcap"]["flow_control_omitted"].as_u64().unwrap();
    assert!(omitted > 0, "flow-control packets flow both ways");
    assert_eq!(written + omitted, tx);
    assert!(fecn > 0 && becn > 0, "FECN {fecn} BECN {becn}");
}

// ---- tshark ----------------------------------------------------------------------------

/// `tshark <args>` as text; panics (never skips) when tshark is missing.
fn tshark(args: &[&str]) -> String {
    let o = std::process::Command::new("tshark")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("tshark is needed by this test ({e}): run .ci/install-tshark"));
    assert!(
        o.status.success(),
        "tshark {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn fields(file: &Path, fields: &[&str], extra: &[&str]) -> Vec<Vec<String>> {
    let mut args = vec!["-n", "-r", s(file), "-T", "fields", "-E", "separator=|"];
    args.extend_from_slice(extra);
    for f in fields {
        args.push("-e");
        args.push(f);
    }
    tshark(&args)
        .lines()
        .map(|l| l.split('|').map(str::to_owned).collect())
        .collect()
}

#[test]
fn tshark_decodes_rocev2_and_pfc() {
    let (dir, path) = scenario(INCAST, INCAST_PCAP, None);
    let out = dir.path().join("out");
    run(&path, &out);
    let rows = port_counters(&out);
    // Receiver to leaf: ACKs and CNPs from 10.0.0.1 (host 0).
    let f = fields(
        &out.join("pcap_port0.pcap"),
        &[
            "eth.type",
            "ip.src",
            "udp.dstport",
            "infiniband.bth.opcode",
            "infiniband.aeth.syndrome",
            "_ws.malformed",
        ],
        &[],
    );
    assert_eq!(f.len() as u64, count(&rows, 0, "packets_tx"));
    let cnps = f.iter().filter(|r| r[3] == "129").count() as u64;
    assert_eq!(cnps, count(&rows, 0, "cnps_tx"));
    for r in &f {
        assert_eq!(
            (&r[0][..], &r[1][..], &r[2][..]),
            ("0x0800", "10.0.0.1", "4791"),
            "{r:?}"
        );
        assert!(r[3] == "17" || r[3] == "129", "{r:?}");
        if r[3] == "17" {
            assert_eq!(r[4], "0x1f", "ACK syndrome {r:?}");
        }
        assert_eq!(r[5], "", "malformed {r:?}");
    }
    // Leaf to receiver: RC RDMA WRITE data, some CE-marked, with RETH on first packets.
    let f = fields(
        &out.join("pcap_port64.pcap"),
        &[
            "infiniband.bth.opcode",
            "ip.dsfield.ecn",
            "ip.dsfield.dscp",
            "infiniband.reth.dmalen",
            "ip.dst",
            "_ws.malformed",
        ],
        &[],
    );
    assert!(f.iter().any(|r| r[0] == "6" && r[3] == "262144"), "WRITE FIRST + RETH");
    let ce = f.iter().filter(|r| r[0] != "17" && r[1] == "3").count() as u64;
    assert!(ce >= count(&rows, 64, "ecn_marked") && ce > 0);
    assert!(
        f.iter()
            .filter(|r| r[0] == "7")
            .all(|r| r[2] == "24" && r[4] == "10.0.0.1")
    );
    assert!(f.iter().all(|r| r[5].is_empty()), "malformed");
    // Leaf to spine: PFC frames on priority 3.
    let f = fields(
        &out.join("pcap_port76.pcap"),
        &["eth.dst", "macc.opcode", "macc.cbfc.enbv.c3", "macc.cbfc.pause_time.c3"],
        &["-Y", "macc"],
    );
    let pauses = f.iter().filter(|r| r[3] != "0").count() as u64;
    assert_eq!(pauses, count(&rows, 76, "pause_frames_tx"));
    assert_eq!(f.len() as u64 - pauses, count(&rows, 76, "resume_frames_tx"));
    for r in &f {
        assert_eq!(
            (&r[0][..], &r[1][..], &r[2][..]),
            ("01:80:c2:00:00:01", "0x0101", "1"),
            "{r:?}"
        );
    }
}

#[test]
fn tshark_decodes_infiniband_lrh_and_bth() {
    let dir = tempfile::tempdir().unwrap();
    let (out, ports) = ib_run(dir.path());
    // Wireshark 4.0 (Debian 12) has no mapping for link type 247: hand the same bytes to
    // its InfiniBand dissector as user link type 147 (docs/results.md).
    let src = out.join(format!("pcap_port{}.pcap", ports[0]));
    let mut bytes = std::fs::read(&src).unwrap();
    assert_eq!(u32::from_le_bytes(bytes[20..24].try_into().unwrap()), 247);
    bytes[20..24].copy_from_slice(&147u32.to_le_bytes());
    let f = ib_fields(
        &dir.path().join("user0.pcap"),
        &bytes,
        &[
            "infiniband.lrh.lnh",
            "infiniband.lrh.dlid",
            "infiniband.lrh.slid",
            "infiniband.bth.opcode",
            "infiniband.bth.destqp",
            "_ws.malformed",
        ],
        &[],
    );
    assert!(!f.is_empty());
    // Leaf to host 5: data to LID 6 (host 5 + 1) from the hot senders, RDMA WRITE opcodes.
    for r in &f {
        assert_eq!((&r[0][..], &r[1][..]), ("0x02", "6"), "{r:?}");
        assert!(["6", "7", "8", "10"].contains(&&r[3][..]), "{r:?}");
        assert_eq!(r[5], "", "malformed {r:?}");
    }
    let senders: std::collections::BTreeSet<&str> = f.iter().map(|r| &r[2][..]).collect();
    assert!(senders.len() > 1, "{senders:?}");
}

/// `fields` of `bytes` (a capture whose InfiniBand link type was changed to 147), written to
/// `user`, with user link type 147 mapped to tshark's InfiniBand dissector.
fn ib_fields(user: &Path, bytes: &[u8], names: &[&str], extra: &[&str]) -> Vec<Vec<String>> {
    std::fs::write(user, bytes).unwrap();
    let mut args = vec!["-o", r#"uat:user_dlts:"User 0 (DLT=147)","infiniband","0","","0","""#];
    args.extend_from_slice(extra);
    fields(user, names, &args)
}

/// Changes every Interface Description Block of link type 247 to user link type 147 (see
/// `tshark_decodes_infiniband_lrh_and_bth`); returns how many it changed.
fn pcapng_ib_as_user_dlt(bytes: &mut [u8]) -> usize {
    let (mut at, mut changed) = (0, 0);
    while at + 12 <= bytes.len() {
        let word = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
        let (kind, len) = (word(at), word(at + 4) as usize);
        if kind == 1 && u16::from_le_bytes([bytes[at + 8], bytes[at + 9]]) == 247 {
            bytes[at + 8..at + 10].copy_from_slice(&147u16.to_le_bytes());
            changed += 1;
        }
        at += len;
    }
    changed
}

/// A RoCEv2 GPU cluster in one pcapng: the NIC's network port and the edge switch's port
/// to it are Ethernet interfaces (PFC links) decoding as RoCEv2, the PCIe hop inside the
/// server an InfiniBand interface (a credit link) decoding as LRH/BTH; tshark names each
/// packet's interface, and the per-interface counts are the ports' `packets_tx` (less the
/// credit link's flow-control packets, counted as omitted).
#[test]
fn tshark_decodes_a_pcapng_of_ethernet_and_infiniband_interfaces() {
    let ports = r#"["s0.pcie0 -> s0.nic0", "s0.nic0 -> edge0.0", "edge0.0 -> s0.nic0"]"#;
    let (dir, path) = scenario(
        "cluster16_hgx_roce400_allreduce.toml",
        &format!("pcap = {{ ports = {ports}, format = \"pcapng\" }}"),
        None,
    );
    let out = dir.path().join("out");
    run(&path, &out);
    let rows = port_counters(&out);
    let sm = summary(&out);
    let files = sm["pcap"]["files"].as_array().unwrap();
    let links: Vec<&str> = files.iter().map(|f| f["link_type"].as_str().unwrap()).collect();
    // Port order: the PCIe port (lowest id), the NIC's network port, the edge's port.
    assert_eq!(links, ["infiniband", "ethernet", "ethernet"]);
    let id = |i: usize| files[i]["port"].as_u64().unwrap() as u32;
    let f = fields(
        &out.join("capture.pcapng"),
        &[
            "frame.interface_id",
            "frame.interface_name",
            "eth.type",
            "udp.dstport",
            "infiniband.bth.opcode",
            "_ws.malformed",
        ],
        &[],
    );
    for i in 1..3 {
        let mine: Vec<&Vec<String>> = f.iter().filter(|r| r[0] == i.to_string()).collect();
        let p = id(i);
        assert_eq!(mine.len() as u64, count(&rows, p, "packets_tx"), "port {p}");
        let name = format!("{}->{}", rows[&p]["node"], rows[&p]["peer"]);
        for r in &mine {
            assert_eq!((&r[1], &r[2][..], &r[3][..]), (&name, "0x0800", "4791"), "{r:?}");
            assert!(["6", "7", "8", "10", "17", "129"].contains(&&r[4][..]), "{r:?}");
            assert_eq!(r[5], "", "malformed {r:?}");
        }
        assert!(mine.iter().any(|r| r[4] == "7"), "port {p}: data");
    }
    // The PCIe interface, as InfiniBand (user link type 147 for Wireshark 4.0).
    let mut bytes = std::fs::read(out.join("capture.pcapng")).unwrap();
    assert_eq!(pcapng_ib_as_user_dlt(&mut bytes), 1);
    let ib = ib_fields(
        &dir.path().join("user0.pcapng"),
        &bytes,
        &[
            "frame.interface_id",
            "infiniband.lrh.lnh",
            "infiniband.bth.opcode",
            "_ws.malformed",
        ],
        &["-Y", "frame.interface_id == 0"],
    );
    assert!(!ib.is_empty());
    for r in &ib {
        assert_eq!(&r[1][..], "0x02", "{r:?}");
        assert!(["6", "7", "8", "10"].contains(&&r[2][..]), "{r:?}");
        assert_eq!(r[3], "", "malformed {r:?}");
    }
    let omitted = sm["pcap"]["flow_control_omitted"].as_u64().unwrap();
    assert_eq!(ib.len() as u64 + omitted, count(&rows, id(0), "packets_tx"));
    assert_eq!(sm["pcap"]["packets"], f.len());
}

//! `fabricsim-bench`: the speed benchmark of `docs/performance.md`.
//!
//! Runs the fabricsim side of the htsim speed mirrors (`scenarios/bench/roce_mirror_*.toml`),
//! a size ladder (fat-trees of k = 8, 16, 24, 32 under a permutation of long flows) on the
//! Ethernet, InfiniBand and RoCEv2 fabrics, and the paths inside GPU servers (an 8 MiB
//! all-to-all on an HGX H100 board and on an NVL72 rack over NVLink, and on a PCIe Gen5
//! server), each run a child `fabricsim run` process, and prints link-hops per wall second,
//! CPU microseconds per link-hop (of the whole process, and of the simulation alone: the
//! run's cost without the fabric's build) and peak resident memory; then, for each fabric of
//! the ladder, how much more the simulation's link-hop costs at its largest k than at its
//! smallest (the speed issue asks for at most 1.5x from k = 8 to k = 32).
//!
//! ```text
//! cargo build --release && target/release/fabricsim-bench [--quick] [--ladder 8,16,24,32]
//!     [--fabrics ethernet,infiniband,rocev2,nvlink,pcie] [--no-mirrors] [--no-ladder]
//!     [--reps N] [--threads N]   (every run split in N partitions, `fabricsim run --threads N`)
//! ```
//!
//! The server runs answer the speed issue's question whether the NVLink and PCIe paths cost
//! per link-hop within 1.5x of the RoCEv2 path; compare them with the ladder's k = 8 rung,
//! whose state fits the caches as theirs does. `--fabrics` chooses them as it chooses the
//! ladder's fabrics (`--no-ladder` leaves them in; `--fabrics rocev2 --no-ladder` runs the
//! mirrors alone).
//!
//! The figures are wall-clock measurements of a shared machine: compare runs made together,
//! never put them into tests.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const USAGE: &str = "usage: fabricsim-bench [--quick] [--ladder K,K,..] [--fabrics ethernet,infiniband,rocev2,nvlink,pcie] [--no-mirrors] [--no-ladder] [--reps N] [--threads N] [--bench-dir DIR]";

/// Fabrics the ladder runs on (fat-trees of hosts).
const NETWORKS: [&str; 3] = ["ethernet", "infiniband", "rocev2"];
/// Fabrics inside a GPU server: one or two fixed servers each, not a ladder.
const SERVER_FABRICS: [&str; 2] = ["nvlink", "pcie"];

struct Options {
    ladder: Vec<u32>,
    fabrics: Vec<String>,
    mirrors: bool,
    reps: u32,
    bench_dir: PathBuf,
    quick: bool,
    threads: u32,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        ladder: vec![8, 16, 24, 32],
        fabrics: NETWORKS.iter().chain(&SERVER_FABRICS).map(|f| f.to_string()).collect(),
        mirrors: true,
        reps: 1,
        bench_dir: Path::new(env!("CARGO_MANIFEST_DIR")).join("bench"),
        quick: false,
        threads: 1,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value\n{USAGE}"));
        match a.as_str() {
            "--quick" => o.quick = true,
            "--no-mirrors" => o.mirrors = false,
            "--no-ladder" => o.ladder.clear(),
            "--ladder" => {
                o.ladder = value("--ladder")?
                    .split(',')
                    .map(|k| match k.trim().parse::<u32>() {
                        Ok(k) if k >= 4 && k % 2 == 0 && k <= 64 => Ok(k),
                        _ => Err(format!("--ladder: '{k}' is not an even fat-tree arity from 4 to 64")),
                    })
                    .collect::<Result<_, _>>()?
            }
            "--fabrics" => {
                o.fabrics = value("--fabrics")?.split(',').map(|f| f.trim().to_string()).collect();
                if let Some(bad) = o
                    .fabrics
                    .iter()
                    .find(|f| !NETWORKS.contains(&f.as_str()) && !SERVER_FABRICS.contains(&f.as_str()))
                {
                    return Err(format!(
                        "--fabrics: '{bad}' is not one of ethernet, infiniband, rocev2, nvlink, pcie"
                    ));
                }
            }
            "--reps" => {
                o.reps = match value("--reps")?.parse::<u32>() {
                    Ok(n) if (1..=20).contains(&n) => n,
                    _ => return Err("--reps: expected a whole number from 1 to 20".into()),
                }
            }
            "--threads" => {
                o.threads = match value("--threads")?.parse::<u32>() {
                    Ok(n) if (1..=64).contains(&n) => n,
                    _ => return Err("--threads: expected a whole number from 1 to 64".into()),
                }
            }
            "--bench-dir" => o.bench_dir = PathBuf::from(value("--bench-dir")?),
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument '{other}'\n{USAGE}")),
        }
    }
    Ok(o)
}

/// Simulated time of a ladder run: long enough for queues to reach their steady state (the
/// RTT is about 14 us), short enough that k = 32 (8,192 hosts) takes about a minute.
fn ladder_end_time_us(k: u32, quick: bool) -> u32 {
    let full = match k {
        0..=8 => 1000,
        9..=16 => 200,
        _ => 100,
    };
    if quick { (full / 10).max(30) } else { full }
}

/// The ladder scenario: a k-ary fat-tree of 100 Gb/s links with 1 us of propagation (the
/// htsim mirrors' links), every host sending one long flow of a random permutation.
fn ladder_scenario(fabric: &str, k: u32, end_us: u32) -> String {
    let fabric_table = match fabric {
        "ethernet" => "[fabric]\nkind = \"ethernet\"\nmtu = \"4000B\"\nbuffer = { kind = \"per_port_tail_drop\", size = \"1MiB\" }\n".to_string(),
        "infiniband" => "[fabric]\nkind = \"infiniband\"\nmtu = \"4KiB\"\n".to_string(),
        _ => "[fabric]\nkind = \"rocev2\"\nmtu = \"4000B\"\nheader = \"64B\"\nswitch_latency = \"0s\"\n\n[fabric.roce]\nbuffer = \"1GiB\"\nlossless = [3]\nlossy = [0, 6]\nalpha_shift = 12\nreserve = \"4096B\"\nresume_offset = \"13600B\"\nacks = true\n".to_string(),
    };
    let class = if fabric == "rocev2" { "class = 3\n" } else { "" };
    format!(
        "[scenario]\nname = \"bench_{fabric}_k{k}\"\ndescription = \"speed ladder: {fabric}, k={k} permutation, 100G, 1 us links\"\nseed = 13\n\n\
         [topology]\nkind = \"fat_tree\"\nk = {k}\nhost_link = {{ rate = \"100Gbps\", delay = \"1us\" }}\nfabric_link = {{ rate = \"100Gbps\", delay = \"1us\" }}\n\n\
         {fabric_table}\n[[workload]]\nkind = \"permutation\"\nsize = \"1GB\"\n{class}\n[run]\nend_time = \"{end_us}us\"\n"
    )
}

/// The server runs of a fabric inside GPU servers (`nvlink`, `pcie`): (name, topology table)
/// pairs, each loaded with an all-to-all of `size` per GPU (nccl-tests' convention).
fn server_runs(fabric: &str) -> Vec<(&'static str, &'static str)> {
    match fabric {
        "nvlink" => vec![("hgx_h100", "kind = \"hgx_h100\"\n"), ("nvl72", "kind = \"nvl72\"\n")],
        _ => vec![("pcie_gen5", "kind = \"pcie_server\"\ngeneration = \"gen5\"\n")],
    }
}

/// A server run's scenario: `topology` (a `[topology]` table's body) on `fabric`, every GPU
/// sending `size` in all to the others at once.
fn server_scenario(fabric: &str, name: &str, topology: &str, size: &str) -> String {
    format!(
        "[scenario]\nname = \"bench_{fabric}_{name}\"\ndescription = \"speed: {fabric}, {name}, {size} all-to-all\"\nseed = 13\n\n\
         [topology]\n{topology}\n[fabric]\nkind = \"{fabric}\"\n\n\
         [[workload]]\nkind = \"collective\"\nname = \"a2a\"\nop = \"all_to_all\"\nsizes = [\"{size}\"]\n"
    )
}

struct Measured {
    link_hops: u64,
    wall_s: f64,
    cpu_us_per_hop: Option<f64>,
    run_cpu_us_per_hop: Option<f64>,
    peak_rss: Option<u64>,
}

fn read_json(path: &Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Runs `scenario` with the `fabricsim` beside this binary, best wall time of `reps`.
fn measure(fabricsim: &Path, scenario: &Path, work: &Path, reps: u32, threads: u32) -> Result<Measured, String> {
    let mut best: Option<Measured> = None;
    for rep in 0..reps {
        let out = work.join(format!("out-{rep}"));
        let _ = std::fs::remove_dir_all(&out);
        let status = Command::new(fabricsim)
            .arg("run")
            .arg(scenario)
            .arg("--out")
            .arg(&out)
            .arg("-q")
            .args(["--threads", &threads.to_string()])
            .stdout(std::process::Stdio::null())
            .status()
            .map_err(|e| format!("cannot start {}: {e}", fabricsim.display()))?;
        if !status.success() {
            return Err(format!("fabricsim run {} failed ({status})", scenario.display()));
        }
        let summary = read_json(&out.join("summary.json"))?;
        let timing = read_json(&out.join("timing.json"))?;
        let m = Measured {
            link_hops: summary["run"]["link_hops"]
                .as_u64()
                .ok_or("summary.json: no run.link_hops")?,
            wall_s: timing["wall_seconds"].as_f64().ok_or("timing.json: no wall_seconds")?,
            cpu_us_per_hop: timing["cpu_us_per_link_hop"].as_f64(),
            run_cpu_us_per_hop: timing["run_cpu_us_per_link_hop"].as_f64(),
            peak_rss: timing["peak_rss_bytes"].as_u64(),
        };
        let _ = std::fs::remove_dir_all(&out);
        if best.as_ref().is_none_or(|b| m.wall_s < b.wall_s) {
            best = Some(m);
        }
    }
    best.ok_or_else(|| "no repetition ran".into())
}

fn print_row(name: &str, m: &Measured) {
    let opt = |v: Option<f64>, scale: f64| v.map_or("-".to_string(), |v| format!("{:.3}", v * scale));
    println!(
        "{name:<34} {:>12} {:>9.2} {:>10.3} {:>10} {:>10} {:>9}",
        m.link_hops,
        m.wall_s,
        m.link_hops as f64 / m.wall_s.max(1e-9) / 1e6,
        opt(m.cpu_us_per_hop, 1.0),
        opt(m.run_cpu_us_per_hop, 1.0),
        opt(m.peak_rss.map(|b| b as f64), 1.0 / (1024.0 * 1024.0)),
    );
}

fn main() -> ExitCode {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let fabricsim = match std::env::current_exe() {
        Ok(me) => me.with_file_name("fabricsim"),
        Err(e) => {
            eprintln!("cannot locate this binary: {e}");
            return ExitCode::from(2);
        }
    };
    if !fabricsim.is_file() {
        eprintln!(
            "{} not found: build it first (cargo build --release)",
            fabricsim.display()
        );
        return ExitCode::from(2);
    }
    let work = std::env::temp_dir().join(format!("fabricsim-bench-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&work) {
        eprintln!("{}: {e}", work.display());
        return ExitCode::from(2);
    }
    println!(
        "{:<34} {:>12} {:>9} {:>10} {:>10} {:>10} {:>9}",
        "run", "link-hops", "wall s", "M hops/s", "CPU us/hop", "run us/hop", "RSS MiB"
    );
    let mut failed = false;
    let mut jobs: Vec<Job> = Vec::new();
    if o.mirrors {
        for m in [
            "roce_mirror_k8_perm",
            "roce_mirror_k16_perm",
            "roce_mirror_k16_incast512",
        ] {
            jobs.push(Job {
                name: m.to_string(),
                scenario: o.bench_dir.join(format!("{m}.toml")),
                threads: o.threads,
                rung: None,
            });
        }
    }
    for fabric in o.fabrics.iter().filter(|f| NETWORKS.contains(&f.as_str())) {
        for &k in &o.ladder {
            let end_us = ladder_end_time_us(k, o.quick);
            let path = work.join(format!("bench_{fabric}_k{k}.toml"));
            if let Err(e) = std::fs::write(&path, ladder_scenario(fabric, k, end_us)) {
                eprintln!("{}: {e}", path.display());
                return ExitCode::from(2);
            }
            jobs.push(Job {
                name: format!("{fabric} k={k} {end_us}us"),
                scenario: path,
                threads: o.threads,
                rung: Some((fabric.as_str(), k)),
            });
        }
    }
    let size = if o.quick { "1MiB" } else { "8MiB" };
    for fabric in o.fabrics.iter().filter(|f| SERVER_FABRICS.contains(&f.as_str())) {
        for (name, topology) in server_runs(fabric) {
            let path = work.join(format!("bench_{fabric}_{name}.toml"));
            if let Err(e) = std::fs::write(&path, server_scenario(fabric, name, topology, size)) {
                eprintln!("{}: {e}", path.display());
                return ExitCode::from(2);
            }
            jobs.push(Job {
                name: format!("{fabric} {name} a2a {size}"),
                scenario: path,
                threads: o.threads,
                rung: None,
            });
        }
    }
    // The ladder's rungs by fabric: (k, the simulation's CPU us per link-hop).
    let mut rungs: Vec<(&str, Vec<(u32, f64)>)> = Vec::new();
    for Job {
        name,
        scenario,
        threads,
        rung,
    } in jobs
    {
        match measure(&fabricsim, &scenario, &work, o.reps, threads) {
            Ok(m) => {
                print_row(&name, &m);
                if let (Some((fabric, k)), Some(us)) = (rung, m.run_cpu_us_per_hop) {
                    match rungs.iter_mut().find(|(f, _)| *f == fabric) {
                        Some((_, r)) => r.push((k, us)),
                        None => rungs.push((fabric, vec![(k, us)])),
                    }
                }
            }
            Err(e) => {
                eprintln!("{name}: {e}");
                failed = true;
            }
        }
    }
    for (fabric, r) in &rungs {
        if let Some((k_lo, k_hi, ratio)) = growth(r) {
            println!("{fabric}: the simulation's CPU per link-hop at k={k_hi} is {ratio:.2}x that at k={k_lo}");
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    if failed { ExitCode::from(1) } else { ExitCode::SUCCESS }
}

/// One run of the benchmark.
struct Job<'a> {
    name: String,
    scenario: PathBuf,
    threads: u32,
    /// A rung of the ladder: its fabric and k.
    rung: Option<(&'a str, u32)>,
}

/// How the cost per link-hop grows over a fabric's ladder: (smallest k, largest k, the cost
/// at the largest over that at the smallest), from (k, CPU us per link-hop) of its rungs;
/// `None` with fewer than two sizes or a cost of zero.
fn growth(rungs: &[(u32, f64)]) -> Option<(u32, u32, f64)> {
    let lo = rungs.iter().min_by_key(|r| r.0)?;
    let hi = rungs.iter().max_by_key(|r| r.0)?;
    (hi.0 > lo.0 && lo.1 > 0.0).then(|| (lo.0, hi.0, hi.1 / lo.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_is_the_largest_rung_over_the_smallest() {
        let (lo, hi, ratio) = growth(&[(16, 0.3), (32, 0.5), (8, 0.2), (24, 0.4)]).expect("four sizes");
        assert_eq!((lo, hi), (8, 32));
        assert!((ratio - 2.5).abs() < 1e-12, "{ratio}");
        assert_eq!(growth(&[(8, 0.2)]), None);
        assert_eq!(growth(&[(8, 0.0), (32, 0.5)]), None);
        assert_eq!(growth(&[]), None);
    }

    #[test]
    fn ladder_scenarios_name_their_fabric_and_size() {
        for f in ["ethernet", "infiniband", "rocev2"] {
            let s = ladder_scenario(f, 16, 200);
            assert!(s.contains(&format!("kind = \"{f}\"")), "{s}");
            assert!(s.contains("k = 16") && s.contains("end_time = \"200us\""), "{s}");
        }
        assert!(ladder_end_time_us(32, false) >= 100);
        assert!(ladder_end_time_us(8, true) < ladder_end_time_us(8, false));
    }

    /// Every scenario the bench writes is one `fabricsim run` accepts and builds: the ladder's
    /// (at its smallest arity, to keep the test short) and every server run.
    #[test]
    fn bench_scenarios_load_and_build() {
        let mut texts: Vec<String> = NETWORKS.iter().map(|f| ladder_scenario(f, 4, 30)).collect();
        for f in SERVER_FABRICS {
            let runs = server_runs(f);
            assert!(!runs.is_empty(), "{f}");
            for (name, topology) in runs {
                texts.push(server_scenario(f, name, topology, "1MiB"));
            }
        }
        for text in texts {
            let loaded = scenarios::build::load_str("bench.toml".into(), std::env::temp_dir(), text.clone())
                .unwrap_or_else(|e| panic!("{e}\n{text}"));
            let built = loaded.build().unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert!(!built.flows.is_empty(), "{text}");
        }
    }
}

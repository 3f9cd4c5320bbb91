//! The DCQCN victim case (`scenarios/catalogue/roce_dcqcn_victim.toml`; issue 14): a flow V
//! whose path shares only its leaf's uplink with an 8-to-1 burst, under DCQCN with the
//! DCQCN-validation parameters (T = 50 µs, Kmin 5 KB, Kmax 100 KB, Pmax 1%).
//!
//! Analytic oracle: once V's CNPs stop and its F fast-recovery steps are over, DCQCN's
//! additive increase raises the target rate by R_AI at every rate-increase event, and the
//! current rate follows it (R_C ← (R_T + R_C)/2 at every event, so R_C lags R_T by a constant
//! and has the same slope). With the timer alone that is **R_AI per T = 40 Mb/s per 50 µs =
//! 0.8 Gb/s per ms**; the byte counter adds one R_AI per B = 10 MB sent (at most a few steps
//! here), and the ends of the measured span can each be off by one step. So, over a span Δt
//! in which V sent S bytes, the rise of R_C must lie in
//! `[R_AI·(Δt/T − 1), R_AI·(Δt/T + S/B + 1)]`: about ±1.5% of the rise here. And because the
//! NIC paces V at R_C, V's goodput in each window must be the payload share of the mean of
//! R_C over the window (the rate at the window's end less half a window of slope), within 2%.
//! The values R_AI, T, B, MTU and header are read from the run's `scenario.resolved.toml`,
//! which lists every effective DCQCN value.

use std::path::{Path, PathBuf};

fn catalogue(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/catalogue")
        .join(name)
}

/// Runs `fabricsim run FILE --out DIR --quiet` in process.
fn run(file: &Path, out: &Path) {
    let args = [
        "fabricsim",
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]
    .map(Into::into);
    let (mut o, mut e) = (Vec::new(), Vec::new());
    let code = scenarios::cli::run(args, &mut o, &mut e, false);
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&e));
}

fn parse<T: std::str::FromStr>(s: &str) -> T
where
    T::Err: std::fmt::Debug,
{
    s.parse().unwrap()
}

/// `key` of `[fabric.roce.cc]` (or `[fabric]`) in the resolved scenario, as a string.
fn resolved_str<'a>(t: &'a toml::Table, path: &[&str]) -> &'a str {
    let mut v = t.get(path[0]).unwrap();
    for k in &path[1..] {
        v = v.get(k).unwrap_or_else(|| panic!("resolved scenario lacks {path:?}"));
    }
    v.as_str().unwrap_or_else(|| panic!("{path:?} is not a string"))
}

fn rate_bps(s: &str) -> f64 {
    scenarios::units::RateSpec::from_str(s).unwrap().get().0 as f64
}
fn time_s(s: &str) -> f64 {
    scenarios::units::TimeSpec::from_str(s).unwrap().get().ps() as f64 * 1e-12
}
fn size_b(s: &str) -> f64 {
    scenarios::units::SizeSpec::from_str(s).unwrap().get().get() as f64
}

use std::str::FromStr;

/// One row of `timeseries_flows.parquet` for the victim: window end (s), R_C (b/s), goodput (b/s).
#[derive(Clone, Copy, Debug)]
struct Row {
    t: f64,
    rate: f64,
    goodput: f64,
}

#[test]
fn victim_recovers_at_r_ai_per_timer_period_and_its_goodput_follows_the_rate() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    run(&catalogue("roce_dcqcn_victim.toml"), &out);

    // The effective parameters, as the resolved scenario lists them.
    let resolved: toml::Table = parse(&std::fs::read_to_string(out.join("scenario.resolved.toml")).unwrap());
    let cc = ["fabric", "roce", "cc"];
    let at = |k: &str| resolved_str(&resolved, &[cc[0], cc[1], cc[2], k]);
    let r_ai = rate_bps(at("rate_ai"));
    let t_inc = time_s(at("rate_increase_timer"));
    let b = size_b(at("byte_counter"));
    assert_eq!(
        (at("rate_ai"), at("rate_increase_timer"), at("byte_counter")),
        ("40Mbps", "50us", "10MB"),
        "the case's parameters"
    );
    let mtu = size_b(resolved_str(&resolved, &["fabric", "mtu"]));
    let header = size_b(resolved_str(&resolved, &["fabric", "header"]));
    let payload_share = mtu / (mtu + header);

    // The victim (group "victim") and the end of the burst.
    let mut flows = csv::Reader::from_path(out.join("flows.csv")).unwrap();
    let hdr = flows.headers().unwrap().clone();
    let col = |n: &str| hdr.iter().position(|h| h == n).unwrap();
    let (mut victim, mut victim_end, mut burst_end) = (None, 0.0, 0.0f64);
    for r in flows.records() {
        let r = r.unwrap();
        let finish: f64 = parse::<f64>(&r[col("finish_ns")]) * 1e-9;
        match &r[col("group")] {
            "victim" => {
                victim = Some(parse::<u32>(&r[col("flow")]));
                victim_end = finish;
            }
            _ => burst_end = burst_end.max(finish),
        }
    }
    let victim = victim.expect("a victim flow");

    let (_, ts) = fabricsim_tests::series(&out, "timeseries_flows");
    let rows: Vec<Row> = ts
        .iter()
        .filter(|r| parse::<u32>(&r[1]) == victim)
        .map(|r| Row {
            t: parse::<f64>(&r[0]) * 1e-9,
            rate: parse::<f64>(&r[2]) * 1e9,
            goodput: parse::<f64>(&r[3]) * 1e9,
        })
        .collect();
    let window = rows[1].t - rows[0].t;
    assert!((window - 500e-6).abs() < 1e-9, "500 us windows");

    // V is hurt: cut far below its max-min share (C/2) while the burst lasts.
    let line = 100e9;
    let min_rate = rows
        .iter()
        .filter(|r| r.t <= burst_end)
        .map(|r| r.rate)
        .fold(f64::MAX, f64::min);
    assert!(min_rate < line / 4.0, "victim rate never below C/4: {min_rate}");

    // The span: from one window after the last decrease seen to the last full window.
    let last_cut = rows
        .windows(2)
        .rposition(|w| w[1].rate < w[0].rate)
        .map_or(0, |i| i + 1);
    let start = last_cut + 2;
    // The last full window (the final row, at the run's end, may be a partial one).
    let on_grid = |r: &Row| ((r.t / window) - (r.t / window).round()).abs() < 1e-6;
    let end = rows.iter().rposition(|r| r.t <= victim_end && on_grid(r)).unwrap();
    assert!(end > start + 10, "at least 10 windows of recovery ({start}..{end})");
    let (a, z) = (rows[start], rows[end]);
    let dt = z.t - a.t;
    let rise = z.rate - a.rate;
    let sent: f64 = rows[start + 1..=end]
        .iter()
        .map(|r| r.goodput * window / 8.0 / payload_share)
        .sum();
    let lo = r_ai * (dt / t_inc - 1.0);
    let hi = r_ai * (dt / t_inc + (sent / b).ceil() + 1.0);
    let slope = rise / dt;
    eprintln!(
        "DCQCN victim: lowest sampled R_C {:.3} Gb/s during the burst (ends {:.3} ms); recovery {:.3}..{:.3} ms: \
         R_C {:.3} -> {:.3} Gb/s, slope {:.4} Gb/s per ms (R_AI/T = {:.4}), rise {:.4} Gb/s in [{:.4}, {:.4}], \
         {:.2} MB sent (B = {:.0} MB)",
        min_rate / 1e9,
        burst_end * 1e3,
        a.t * 1e3,
        z.t * 1e3,
        a.rate / 1e9,
        z.rate / 1e9,
        slope / 1e12,
        r_ai / t_inc / 1e12,
        rise / 1e9,
        lo / 1e9,
        hi / 1e9,
        sent / 1e6,
        b / 1e6
    );
    assert!(
        (lo..=hi).contains(&rise),
        "R_C rose {rise} b/s in {dt} s: expected [{lo}, {hi}] (R_AI per T)"
    );
    // No decrease inside the span: additive increase only.
    assert!(rows[start..=end].windows(2).all(|w| w[1].rate >= w[0].rate));

    // The goodput of every full window follows the ramp: payload share of the mean R_C.
    let mut worst: f64 = 0.0;
    for r in &rows[start + 1..=end] {
        let mean_rate = r.rate - r_ai / t_inc * window / 2.0;
        let expect = payload_share * mean_rate;
        let dev = (r.goodput - expect) / expect;
        worst = worst.max(dev.abs());
        assert!(
            dev.abs() <= 0.02,
            "window ending {:.3} ms: goodput {:.4} Gb/s, expected {:.4} Gb/s (R_C {:.4})",
            r.t * 1e3,
            r.goodput / 1e9,
            expect / 1e9,
            r.rate / 1e9
        );
    }
    eprintln!(
        "DCQCN victim: goodput vs payload share x mean R_C over {} windows: worst deviation {:.3}%",
        end - start,
        worst * 100.0
    );
}

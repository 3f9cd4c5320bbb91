//! `[fabric.roce.cc]` parameters: a preset's values overridden key by key
//! ([`dcqcn_params`], [`timely_params`], [`hpcc_params`]), every value range-checked at its
//! key, and the way back ([`dcqcn_spec`], [`timely_spec`], [`hpcc_spec`]): every effective
//! value written out for `scenario.resolved.toml`.
//!
//! Ranges (issue 14: no overflow, no event storm, no value without physical sense):
//! - The DCQCN timers (α timer K, rate-increase timer T) are at least [`MIN_CC_TIMER`] (1 µs,
//!   the firmware's own α period, `DCE_TCP_RTT 1`): T is one event per recovering flow per
//!   period, and a period of picoseconds would only multiply events. Every timer is at most
//!   [`MAX_TIMER`] (an hour), so `now + timer` always fits a `SimTime`.
//! - Fractions (g, α, TIMELY's α and β, HPCC's η) are in [0, 1] and stored in fixed point (g
//!   and α in Q20: g ≥ 1/65536, the smallest gain the model accepts; TIMELY and HPCC in parts
//!   per million, η ≥ 10^-6).
//! - HPCC's base RTT is `"auto"` or in [`MIN_BASE_RTT`]..=[`MAX_TIMER`]; its maxStage is at
//!   most [`MAX_STEPS`].
//! - Rates are in 1 bps ..= the slowest host link rate (a flow on a faster NIC runs its own
//!   line rate; R_min is then capped at it).
//! - The byte counter is 0 (off) or [`MIN_BYTE_COUNTER`]..=[`MAX_COUNTER_BYTES`].

use crate::build::{Loaded, MAX_TIMER};
use crate::diag::ScenarioError;
use crate::schema::{CcKind, CcPreset, ClampSpec, RoceCcSpec};
use crate::units::{RateSpec, SizeSpec, TimeSpec};
use fabrics::models::cc::dcqcn::{ALPHA_ONE, TargetClamp};
use fabrics::models::cc::hpcc::PPM_ONE as HPCC_PPM_ONE;
use fabrics::models::cc::timely::PPM_ONE;
use fabrics::models::{DcqcnParams, HpccParams, TimelyParams};
use sim_core::{BitsPerSec, Duration};

/// Shortest DCQCN α timer and rate-increase timer: 1 µs.
pub const MIN_CC_TIMER: Duration = Duration::from_us(1);
/// Smallest non-zero DCQCN byte counter: 64 B, the minimum Ethernet frame (a smaller one
/// counts like one frame: the counter restarts at every event).
pub const MIN_BYTE_COUNTER: u64 = 64;
/// Largest byte counter or TIMELY segment: 1 TiB.
pub const MAX_COUNTER_BYTES: u64 = 1 << 40;
/// Largest DCQCN F (fast-recovery steps), TIMELY HAI threshold and HPCC maxStage: 255.
pub const MAX_STEPS: u32 = 255;
/// Shortest TIMELY minRTT: 1 ns.
pub const MIN_RTT_FLOOR: Duration = Duration::from_ns(1);

fn at(k: &str) -> String {
    format!("fabric.roce.cc.{k}")
}

/// A fraction in `[lo, 1]` as fixed point with `one` = 1.0, or the error naming `key`.
fn fraction(l: &Loaded, key: &str, v: f64, one: u32, lo: u32, lo_text: &str) -> Result<u32, ScenarioError> {
    let scaled = v * one as f64;
    if !(0.0..=1.0).contains(&v) || scaled.round() < lo as f64 {
        return Err(l.err(
            &at(key),
            format!(
                "expected a fraction in [{lo_text}, 1], got {}",
                crate::wording::float_text(v)
            ),
        ));
    }
    Ok(scaled.round() as u32)
}

/// A time in `[lo, MAX_TIMER]`.
fn timer(l: &Loaded, key: &str, t: TimeSpec, lo: Duration, why: &str) -> Result<Duration, ScenarioError> {
    let d = t.get();
    if d < lo || d > MAX_TIMER {
        return Err(l.err(
            &at(key),
            format!(
                "expected a period in [{}, {}]{why}, got {t}",
                TimeSpec::new(lo),
                TimeSpec::new(MAX_TIMER)
            ),
        ));
    }
    Ok(d)
}

/// A rate in `[1 bps, line]`.
fn rate(l: &Loaded, key: &str, r: RateSpec, line: BitsPerSec) -> Result<BitsPerSec, ScenarioError> {
    if r.get() > line {
        return Err(l.err(
            &at(key),
            format!(
                "expected a rate in [1bps, {}] (the slowest host link), got {r}",
                RateSpec::new(line).map_or_else(|| "0bps".into(), |x| x.to_string())
            ),
        ));
    }
    Ok(r.get())
}

/// A byte count: 0 (off) or in `[lo, MAX_COUNTER_BYTES]`.
fn counter(l: &Loaded, key: &str, s: SizeSpec, lo: u64) -> Result<u64, ScenarioError> {
    let b = s.get().get();
    if b != 0 && !(lo..=MAX_COUNTER_BYTES).contains(&b) {
        return Err(l.err(
            &at(key),
            format!(
                "expected 0B (off) or a size in [{}, {}], got {s}",
                SizeSpec::from_bytes(lo),
                SizeSpec::from_bytes(MAX_COUNTER_BYTES)
            ),
        ));
    }
    Ok(b)
}

fn steps(l: &Loaded, key: &str, v: u32) -> Result<u32, ScenarioError> {
    if v > MAX_STEPS {
        return Err(l.err(&at(key), format!("expected 0..={MAX_STEPS}, got {v}")));
    }
    Ok(v)
}

/// Refuses a preset or a key of another algorithm than `kind`, at that key.
fn check_keys(l: &Loaded, s: &RoceCcSpec) -> Result<(), ScenarioError> {
    let (dcqcn, timely, hpcc) = s.algorithm_keys();
    let (own, others, name, presets, ok) = match s.kind {
        CcKind::Dcqcn => (
            &dcqcn,
            [(&timely, "TIMELY"), (&hpcc, "HPCC")],
            "dcqcn",
            "\"paper\" or \"firmware\"",
            matches!(s.preset, None | Some(CcPreset::Paper | CcPreset::Firmware)),
        ),
        CcKind::Timely => (
            &timely,
            [(&dcqcn, "DCQCN"), (&hpcc, "HPCC")],
            "timely",
            "\"reference\" or \"hpcc_sim\"",
            matches!(s.preset, None | Some(CcPreset::Reference | CcPreset::HpccSim)),
        ),
        CcKind::Hpcc => (
            &hpcc,
            [(&dcqcn, "DCQCN"), (&timely, "TIMELY")],
            "hpcc",
            "\"paper\" or \"hpcc_sim\"",
            matches!(s.preset, None | Some(CcPreset::Paper | CcPreset::HpccSim)),
        ),
    };
    if !ok {
        let got = toml::Value::try_from(s.preset).map_or_else(|_| "?".into(), |v| v.to_string());
        return Err(l.err(
            &at("preset"),
            format!("expected {presets} with kind = \"{name}\", got {got}"),
        ));
    }
    for (keys, other) in others {
        if let Some(k) = keys.iter().find(|k| !own.contains(k)) {
            return Err(l.err(
                &at(k),
                format!("`{k}` is a {other} parameter; kind = \"{name}\" does not take it"),
            ));
        }
    }
    Ok(())
}

/// The DCQCN parameters of `[fabric.roce.cc]` (`kind = "dcqcn"`) at the slowest host rate
/// `line`: the preset, then every key given.
pub fn dcqcn_params(l: &Loaded, s: &RoceCcSpec, line: BitsPerSec) -> Result<DcqcnParams, ScenarioError> {
    check_keys(l, s)?;
    let mut p = match s.preset {
        Some(CcPreset::Firmware) => DcqcnParams::connectx_firmware(line),
        _ => DcqcnParams::paper(line),
    };
    if let Some(g) = s.g {
        p.g_q20 = fraction(l, "g", g, ALPHA_ONE, 16, "1/65536")?;
    }
    if let Some(a) = s.initial_alpha {
        p.initial_alpha_q20 = fraction(l, "initial_alpha", a, ALPHA_ONE, 0, "0")?;
    }
    let no_storm = " (one event per recovering flow per period)";
    if let Some(t) = s.alpha_timer {
        p.alpha_period = timer(l, "alpha_timer", t, MIN_CC_TIMER, "")?;
    }
    if let Some(t) = s.rate_increase_timer {
        p.increase_period = timer(l, "rate_increase_timer", t, MIN_CC_TIMER, no_storm)?;
    }
    if let Some(b) = s.byte_counter {
        p.byte_counter_bytes = counter(l, "byte_counter", b, MIN_BYTE_COUNTER)?;
    }
    if let Some(f) = s.fast_recovery {
        p.fast_recovery_steps = steps(l, "fast_recovery", f)?;
    }
    if let Some(r) = s.rate_ai {
        p.rate_ai = rate(l, "rate_ai", r, line)?;
    }
    if let Some(r) = s.rate_hai {
        p.rate_hai = rate(l, "rate_hai", r, line)?;
    }
    if let Some(r) = s.min_rate {
        p.min_rate = rate(l, "min_rate", r, line)?;
    }
    if let Some(pct) = s.min_decrease_pct {
        if pct > 100 {
            return Err(l.err(
                &at("min_decrease_pct"),
                format!("expected 0..=100 (percent), got {pct}"),
            ));
        }
        p.min_decrease_pct = pct;
    }
    if let Some(t) = s.decrease_period {
        p.decrease_period = timer(l, "decrease_period", t, Duration::ZERO, "")?;
    }
    if let Some(c) = s.clamp_target_rate {
        p.clamp = match c {
            ClampSpec::Always => TargetClamp::Always,
            ClampSpec::AfterIncrease => TargetClamp::AfterAnyIncrease,
            ClampSpec::AfterByteIncrease => TargetClamp::AfterByteIncrease,
        };
    }
    if let Some(h) = s.hyper_halves {
        p.hyper_halves = h;
    }
    p.check().map_err(|m| l.err("fabric.roce.cc", m))?;
    Ok(p)
}

/// The TIMELY parameters of `[fabric.roce.cc]` (`kind = "timely"`) at the slowest host rate
/// `line`: the preset, then every key given.
pub fn timely_params(l: &Loaded, s: &RoceCcSpec, line: BitsPerSec) -> Result<TimelyParams, ScenarioError> {
    check_keys(l, s)?;
    let mut p = match s.preset {
        Some(CcPreset::HpccSim) => TimelyParams::hpcc_sim(line),
        _ => TimelyParams::reference(line),
    };
    if let Some(r) = s.min_rate {
        p.min_rate = rate(l, "min_rate", r, line)?;
    }
    if let Some(r) = s.delta {
        p.delta = rate(l, "delta", r, line)?;
    }
    if let Some(a) = s.ewma_alpha {
        p.ewma_alpha_ppm = fraction(l, "ewma_alpha", a, PPM_ONE, 0, "0")?;
    }
    if let Some(b) = s.beta {
        p.beta_ppm = fraction(l, "beta", b, PPM_ONE, 0, "0")?;
    }
    if let Some(t) = s.t_low {
        p.t_low = timer(l, "t_low", t, Duration::ZERO, "")?;
    }
    if let Some(t) = s.t_high {
        p.t_high = timer(l, "t_high", t, Duration::ZERO, "")?;
    }
    if p.t_high <= p.t_low {
        let key = if s.t_high.is_some() { "t_high" } else { "t_low" };
        return Err(l.err(
            &at(key),
            format!(
                "expected t_low < t_high, got t_low = {} and t_high = {}",
                TimeSpec::new(p.t_low),
                TimeSpec::new(p.t_high)
            ),
        ));
    }
    if let Some(t) = s.min_rtt {
        p.min_rtt = timer(l, "min_rtt", t, MIN_RTT_FLOOR, "")?;
    }
    if let Some(n) = s.hai_threshold {
        p.hai_threshold = steps(l, "hai_threshold", n)?;
    }
    if let Some(b) = s.segment {
        p.segment_bytes = counter(l, "segment", b, 1)?;
    }
    p.check().map_err(|m| l.err("fabric.roce.cc", m))?;
    Ok(p)
}

/// Shortest HPCC base RTT: 1 ns (it divides the queue term and sets the EWMA horizon).
pub const MIN_BASE_RTT: Duration = Duration::from_ns(1);

/// The HPCC parameters of `[fabric.roce.cc]` (`kind = "hpcc"`) at the slowest host rate
/// `line`: the preset, then every key given.
pub fn hpcc_params(l: &Loaded, s: &RoceCcSpec, line: BitsPerSec) -> Result<HpccParams, ScenarioError> {
    check_keys(l, s)?;
    let mut p = match s.preset {
        Some(CcPreset::HpccSim) => HpccParams::hpcc_sim(line),
        _ => HpccParams::paper(line),
    };
    if let Some(r) = s.min_rate {
        p.min_rate = rate(l, "min_rate", r, line)?;
    }
    if let Some(r) = s.rate_ai {
        p.rate_ai = rate(l, "rate_ai", r, line)?;
    }
    if let Some(e) = s.eta {
        p.eta_ppm = fraction(l, "eta", e, HPCC_PPM_ONE, 1, "1e-6")?;
    }
    if let Some(n) = s.max_stage {
        p.max_stage = steps(l, "max_stage", n)?;
    }
    if let Some(t) = &s.base_rtt {
        p.base_rtt = match t.trim() {
            "auto" => None,
            other => match other.parse::<TimeSpec>() {
                Ok(t) if (MIN_BASE_RTT..=MAX_TIMER).contains(&t.get()) => Some(t.get()),
                _ => {
                    return Err(l.err(
                        &at("base_rtt"),
                        format!(
                            "expected \"auto\" or a time in [{}, {}] such as \"10us\", got {other:?}",
                            TimeSpec::new(MIN_BASE_RTT),
                            TimeSpec::new(MAX_TIMER)
                        ),
                    ));
                }
            },
        };
    }
    if let Some(w) = s.window {
        p.window = w;
    }
    if let Some(f) = s.fast_react {
        p.fast_react = f;
    }
    p.check().map_err(|m| l.err("fabric.roce.cc", m))?;
    Ok(p)
}

fn rate_spec(r: BitsPerSec) -> Option<RateSpec> {
    RateSpec::new(r)
}

/// Every effective DCQCN value, for the resolved scenario (reloading it gives `p` again).
pub fn dcqcn_spec(preset: Option<CcPreset>, p: &DcqcnParams, cnp_interval: Duration) -> RoceCcSpec {
    RoceCcSpec {
        preset: Some(preset.unwrap_or(CcPreset::Paper)),
        g: Some(p.g_q20 as f64 / ALPHA_ONE as f64),
        initial_alpha: Some(p.initial_alpha_q20 as f64 / ALPHA_ONE as f64),
        alpha_timer: Some(TimeSpec::new(p.alpha_period)),
        rate_increase_timer: Some(TimeSpec::new(p.increase_period)),
        byte_counter: Some(SizeSpec::from_bytes(p.byte_counter_bytes)),
        fast_recovery: Some(p.fast_recovery_steps),
        rate_ai: rate_spec(p.rate_ai),
        rate_hai: rate_spec(p.rate_hai),
        min_rate: rate_spec(p.min_rate),
        min_decrease_pct: Some(p.min_decrease_pct),
        decrease_period: Some(TimeSpec::new(p.decrease_period)),
        clamp_target_rate: Some(match p.clamp {
            TargetClamp::Always => ClampSpec::Always,
            TargetClamp::AfterAnyIncrease => ClampSpec::AfterIncrease,
            TargetClamp::AfterByteIncrease => ClampSpec::AfterByteIncrease,
        }),
        hyper_halves: Some(p.hyper_halves),
        cnp_interval: Some(TimeSpec::new(cnp_interval)),
        ..RoceCcSpec::of(CcKind::Dcqcn)
    }
}

/// Every effective TIMELY value, for the resolved scenario.
pub fn timely_spec(preset: Option<CcPreset>, p: &TimelyParams) -> RoceCcSpec {
    RoceCcSpec {
        preset: Some(preset.unwrap_or(CcPreset::Reference)),
        min_rate: rate_spec(p.min_rate),
        delta: rate_spec(p.delta),
        ewma_alpha: Some(p.ewma_alpha_ppm as f64 / PPM_ONE as f64),
        beta: Some(p.beta_ppm as f64 / PPM_ONE as f64),
        t_low: Some(TimeSpec::new(p.t_low)),
        t_high: Some(TimeSpec::new(p.t_high)),
        min_rtt: Some(TimeSpec::new(p.min_rtt)),
        hai_threshold: Some(p.hai_threshold),
        segment: Some(SizeSpec::from_bytes(p.segment_bytes)),
        ..RoceCcSpec::of(CcKind::Timely)
    }
}

/// Every effective HPCC value, for the resolved scenario (`base_rtt = "auto"` stays `auto`:
/// the engine computes it from the run's paths).
pub fn hpcc_spec(preset: Option<CcPreset>, p: &HpccParams) -> RoceCcSpec {
    RoceCcSpec {
        preset: Some(preset.unwrap_or(CcPreset::Paper)),
        min_rate: rate_spec(p.min_rate),
        rate_ai: rate_spec(p.rate_ai),
        eta: Some(p.eta_ppm as f64 / HPCC_PPM_ONE as f64),
        max_stage: Some(p.max_stage),
        base_rtt: Some(
            p.base_rtt
                .map_or_else(|| "auto".to_owned(), |t| TimeSpec::new(t).to_string()),
        ),
        window: Some(p.window),
        fast_react: Some(p.fast_react),
        ..RoceCcSpec::of(CcKind::Hpcc)
    }
}

#[cfg(test)]
mod tests {
    use crate::build::{Built, Loaded, load_str};
    use fabrics::engine::RoceCc;
    use fabrics::models::cc::dcqcn::TargetClamp;
    use fabrics::models::{DcqcnParams, HpccParams, TimelyParams};
    use sim_core::{BitsPerSec, Duration};

    fn scenario(roce: &str) -> String {
        format!(
            r#"[scenario]
name = "cc"
[topology]
kind = "custom"
hosts = 3
switches = 1
links = [
  {{ a = "h0", b = "s0", rate = "40Gbps" }},
  {{ a = "h1", b = "s0", rate = "40Gbps" }},
  {{ a = "h2", b = "s0", rate = "40Gbps" }},
]
[fabric]
kind = "rocev2"
[fabric.roce]
buffer = "4MiB"
{roce}
[[workload]]
kind = "incast"
receiver = 0
senders = [1, 2]
size = "1MiB"
class = 3
"#
        )
    }

    fn build(text: String) -> (Loaded, Built) {
        let l = load_str("t.toml".into(), ".".into(), text).unwrap();
        let b = l.build().unwrap_or_else(|e| panic!("{e}"));
        (l, b)
    }

    fn cc(b: &Built) -> RoceCc {
        b.engine.roce.as_ref().unwrap().cc.clone()
    }

    /// Loads the resolved scenario of `text` and checks it builds the same CC again.
    fn round_trip(text: String) -> (Built, Built) {
        let (l, b) = build(text);
        let resolved = toml::to_string(&l.resolved(&b)).unwrap();
        let (l2, b2) = build(resolved.clone());
        let again = toml::to_string(&l2.resolved(&b2)).unwrap();
        assert_eq!(resolved, again, "the resolved scenario is a fixed point");
        (b, b2)
    }

    #[test]
    fn keys_override_the_preset_and_the_rest_is_the_preset() {
        let (_, b) = build(scenario(
            "[fabric.roce.cc]\nkind = \"dcqcn\"\npreset = \"firmware\"\nrate_ai = \"20Mbps\"\n\
             rate_increase_timer = \"55us\"\ng = 0.0625\nclamp_target_rate = \"always\"",
        ));
        let RoceCc::Dcqcn(p) = cc(&b) else { panic!("DCQCN") };
        let want = DcqcnParams {
            rate_ai: BitsPerSec(20_000_000),
            increase_period: Duration::from_us(55),
            g_q20: 1 << 16,
            clamp: TargetClamp::Always,
            ..DcqcnParams::connectx_firmware(BitsPerSec::from_gbps(40))
        };
        assert_eq!(p, want);
        // The firmware preset brings its CNP interval (4 us) unless one is given.
        assert_eq!(b.engine.roce.as_ref().unwrap().cnp_interval, Duration::from_us(4));
        let (_, b) = build(scenario(
            "[fabric.roce.cc]\nkind = \"dcqcn\"\npreset = \"firmware\"\ncnp_interval = \"10us\"",
        ));
        assert_eq!(b.engine.roce.as_ref().unwrap().cnp_interval, Duration::from_us(10));

        let (_, b) = build(scenario(
            "[fabric.roce.cc]\nkind = \"timely\"\nbeta = 0.5\nt_high = \"2ms\"\nsegment = \"0B\"",
        ));
        let RoceCc::Timely(p) = cc(&b) else { panic!("TIMELY") };
        let want = TimelyParams {
            beta_ppm: 500_000,
            t_high: Duration::from_ms(2),
            segment_bytes: 0,
            ..TimelyParams::reference(BitsPerSec::from_gbps(40))
        };
        assert_eq!(p, want);
    }

    #[test]
    fn the_resolved_scenario_lists_every_value_and_rebuilds_the_same_run() {
        for roce in [
            "ecn = { preset = \"hpcc_sim\" }\n[fabric.roce.cc]\nkind = \"dcqcn\"",
            "xoff_threshold = \"64KiB\"\n[fabric.roce.cc]\nkind = \"dcqcn\"\npreset = \"firmware\"\ng = 0.01",
            "cnp_interval = \"7us\"\n[fabric.roce.cc]\nkind = \"timely\"\npreset = \"hpcc_sim\"",
        ] {
            let (b, b2) = round_trip(scenario(roce));
            let (c, c2) = (b.engine.roce.unwrap(), b2.engine.roce.unwrap());
            assert_eq!(c.ecn, c2.ecn);
            assert_eq!(c.cnp_interval, c2.cnp_interval);
            assert_eq!(c.xoff_threshold_bytes, c2.xoff_threshold_bytes);
            assert_eq!(c.alpha_shift, c2.alpha_shift);
            match (&c.cc, &c2.cc) {
                (RoceCc::Dcqcn(p), RoceCc::Dcqcn(q)) => assert_eq!(p, q),
                (RoceCc::Timely(p), RoceCc::Timely(q)) => assert_eq!(p, q),
                other => panic!("{other:?}"),
            }
        }
        // Every DCQCN key is written out, the CNP interval with them.
        let (l, b) = build(scenario("[fabric.roce.cc]\nkind = \"dcqcn\""));
        let text = toml::to_string(&l.resolved(&b)).unwrap();
        for key in [
            "preset = \"paper\"",
            "g = 0.00390625",
            "initial_alpha = 1.0",
            "alpha_timer = \"55us\"",
            "rate_increase_timer = \"55us\"",
            "byte_counter = \"10MB\"",
            "fast_recovery = 5",
            "rate_ai = \"40Mbps\"",
            "rate_hai = \"200Mbps\"",
            "min_rate = \"100Mbps\"",
            "min_decrease_pct = 0",
            "decrease_period = \"0s\"",
            "clamp_target_rate = \"always\"",
            "hyper_halves = true",
            "cnp_interval = \"50us\"",
            "alpha_shift = 3",
            "lossless = [3]",
            "pause_quanta = 65535",
        ] {
            assert!(text.contains(key), "{key} missing in\n{text}");
        }
    }

    #[test]
    fn hpcc_presets_keys_and_the_resolved_scenario() {
        let line = BitsPerSec::from_gbps(40);
        let (_, b) = build(scenario("[fabric.roce.cc]\nkind = \"hpcc\""));
        let RoceCc::Hpcc(p) = cc(&b) else { panic!("HPCC") };
        assert_eq!(p, HpccParams::paper(line));
        let (_, b) = build(scenario(
            "[fabric.roce.cc]\nkind = \"hpcc\"\npreset = \"hpcc_sim\"\neta = 0.9\nrate_ai = \"50Mbps\"\n\
             base_rtt = \"8us\"\nwindow = false\nfast_react = false\nmax_stage = 3",
        ));
        let want = HpccParams {
            eta_ppm: 900_000,
            rate_ai: BitsPerSec(50_000_000),
            base_rtt: Some(Duration::from_us(8)),
            window: false,
            fast_react: false,
            max_stage: 3,
            ..HpccParams::hpcc_sim(line)
        };
        let RoceCc::Hpcc(p) = cc(&b) else { panic!("HPCC") };
        assert_eq!(p, want);
        assert!(b.engine.roce.as_ref().unwrap().cc.needs_acks());
        for roce in [
            "[fabric.roce.cc]\nkind = \"hpcc\"",
            "[fabric.roce.cc]\nkind = \"hpcc\"\npreset = \"hpcc_sim\"\nbase_rtt = \"12us\"",
        ] {
            let (b, b2) = round_trip(scenario(roce));
            match (&b.engine.roce.unwrap().cc, &b2.engine.roce.unwrap().cc) {
                (RoceCc::Hpcc(p), RoceCc::Hpcc(q)) => assert_eq!(p, q),
                other => panic!("{other:?}"),
            }
        }
        let (l, b) = build(scenario("[fabric.roce.cc]\nkind = \"hpcc\""));
        let text = toml::to_string(&l.resolved(&b)).unwrap();
        for key in [
            "kind = \"hpcc\"",
            "preset = \"paper\"",
            "rate_ai = \"16Mbps\"",
            "min_rate = \"100Mbps\"",
            "eta = 0.95",
            "max_stage = 5",
            "base_rtt = \"auto\"",
            "window = true",
            "fast_react = true",
        ] {
            assert!(text.contains(key), "{key} missing in\n{text}");
        }
    }

    #[test]
    fn hpcc_errors_name_the_key() {
        for (roce, key, what) in [
            ("kind = \"hpcc\"\neta = 1.5", "eta", "fraction"),
            ("kind = \"hpcc\"\neta = 0.0", "eta", "fraction"),
            ("kind = \"hpcc\"\nbase_rtt = \"soon\"", "base_rtt", "\"auto\""),
            ("kind = \"hpcc\"\nbase_rtt = \"0us\"", "base_rtt", "\"auto\""),
            ("kind = \"hpcc\"\nmax_stage = 1000", "max_stage", "0..=255"),
            (
                "kind = \"hpcc\"\npreset = \"firmware\"",
                "preset",
                "\"paper\" or \"hpcc_sim\"",
            ),
            ("kind = \"hpcc\"\ng = 0.5", "g", "DCQCN parameter"),
            ("kind = \"hpcc\"\nbeta = 0.5", "beta", "TIMELY parameter"),
            ("kind = \"dcqcn\"\neta = 0.5", "eta", "HPCC parameter"),
            ("kind = \"timely\"\nrate_ai = \"1Mbps\"", "rate_ai", "parameter"),
            ("kind = \"hpcc\"\nrate_ai = \"100Gbps\"", "rate_ai", "slowest host link"),
        ] {
            let text = scenario(&format!("[fabric.roce.cc]\n{roce}"));
            let l = load_str("t.toml".into(), ".".into(), text).unwrap();
            let e = l.build().err().unwrap_or_else(|| panic!("{roce} accepted")).to_string();
            assert!(e.contains(&format!("fabric.roce.cc.{key}")), "{roce}: {e}");
            assert!(e.contains(what), "{roce}: {e}");
        }
    }

    #[test]
    fn static_xoff_threshold_reaches_the_engine() {
        let (_, b) = build(scenario("xoff_threshold = \"100KiB\""));
        assert_eq!(b.engine.roce.unwrap().xoff_threshold_bytes, Some(100 * 1024));
    }
}

//! A deterministic mutation fuzzer of the scenario loader (`fabricsim validate`: parse, checks,
//! build; no simulation).
//!
//! It starts from every shipped scenario in `scenarios/catalogue/`, applies seeded mutations
//! (a value replaced by another type, a huge or negative integer, NaN or infinity, a long
//! string, deep nesting; a key deleted, renamed or its table duplicated; another `kind`; a CDF
//! path naming a device) and asserts of every input:
//!
//! - no panic, and the exit status is 0 (accepted) or 2 (refused); never 1 or 101;
//! - a refusal is one line `error: file:line:col: field: message`;
//! - no line longer than [`MAX_LINE`] characters;
//! - the message speaks the user's terms: no Rust type (`i128`, `u32`, `enum ...`,
//!   `variant index`), no NaN or infinity glued to a unit (`"NaNus"`, `"-infMB"`).
//!
//! The default budget ([`DEFAULT_INPUTS`]) runs in a few seconds in release mode; set
//! `FABRICSIM_FUZZ_N` for a longer run (and `FABRICSIM_FUZZ_SEED` for another seed). The test
//! prints how many inputs it ran and how many were refused.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use toml::Value;

/// Inputs run by default.
const DEFAULT_INPUTS: usize = 3000;
/// Longest error line accepted, in characters.
const MAX_LINE: usize = 300;

use fabricsim_tests::SplitMix64 as Rng;

fn catalogue_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/catalogue")
}

/// The shipped scenarios: (file name, text).
fn seeds() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir(catalogue_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    v.sort();
    assert!(v.len() >= 10, "the catalogue has scenarios");
    v
}

/// Paths (dotted, with `[i]` for array elements) of every value in `v`.
fn paths(v: &Value, prefix: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    match v {
        Value::Table(t) => {
            for (k, x) in t {
                prefix.push(Step::Key(k.clone()));
                out.push(prefix.clone());
                paths(x, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                prefix.push(Step::Index(i));
                out.push(prefix.clone());
                paths(x, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

/// The parent container of `path` and the last step.
fn parent_mut<'a>(root: &'a mut Value, path: &[Step]) -> Option<(&'a mut Value, Step)> {
    let (last, init) = path.split_last()?;
    let mut v = root;
    for s in init {
        v = match (s, v) {
            (Step::Key(k), Value::Table(t)) => t.get_mut(k)?,
            (Step::Index(i), Value::Array(a)) => a.get_mut(*i)?,
            _ => return None,
        };
    }
    Some((v, last.clone()))
}

fn get_mut<'a>(root: &'a mut Value, path: &[Step]) -> Option<&'a mut Value> {
    let (p, last) = parent_mut(root, path)?;
    match (last, p) {
        (Step::Key(k), Value::Table(t)) => t.get_mut(&k),
        (Step::Index(i), Value::Array(a)) => a.get_mut(i),
        _ => None,
    }
}

/// Every `kind = "..."` value of the catalogue, to swap kinds between tables.
fn all_kinds(seeds: &[(String, String)]) -> Vec<String> {
    let mut kinds: Vec<String> = seeds
        .iter()
        .flat_map(|(_, t)| {
            t.lines()
                .filter_map(|l| l.trim().strip_prefix("kind = \""))
                .map(|r| r.trim_end_matches('"').to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

/// A replacement value of another type or an extreme value.
fn odd_value(rng: &mut Rng, kinds: &[String]) -> Value {
    match rng.below(22) {
        0 => Value::String("abc".into()),
        1 => Value::String(String::new()),
        2 => Value::String("x".repeat(1 + rng.below(5000))),
        3 => Value::Integer(*rng.pick(&[0, 1, 2, 3, 7, 255, 256, 65536, 1 << 31, 1 << 32])),
        4 => Value::Integer(*rng.pick(&[-1, -128, i64::MIN, i64::MAX])),
        5 => Value::Float(*rng.pick(&[f64::NAN, f64::INFINITY, f64::NEG_INFINITY])),
        6 => Value::Float(*rng.pick(&[0.5, -0.5, 1e300, 1e-300, 3.0])),
        7 => Value::Boolean(rng.below(2) == 0),
        8 => Value::Array(vec![Value::Integer(1), Value::Integer(2)]),
        9 => Value::Array(vec![]),
        10 => {
            let mut t = toml::Table::new();
            t.insert("x".into(), Value::Integer(1));
            Value::Table(t)
        }
        11 => Value::String(rng.pick(kinds).clone()),
        12 => Value::String(
            rng.pick(&[
                "NaNus",
                "-infMB",
                "infGbps",
                "nan",
                "1e999Gbps",
                "-1ns",
                "1.5",
                "0ps",
                "18446744073709551616B",
                "99999999999999999999999ms",
                "0.0000000000001ns",
                "4 KiB",
                "1:0",
                "h99999",
                "s-1",
                "µs",
            ])
            .to_string(),
        ),
        13 => Value::String(
            rng.pick(&["100Gbps", "4KiB", "1us", "1ps", "3600s", "1TB", "1000Tbps"])
                .to_string(),
        ),
        14 => Value::Integer(*rng.pick(&[4, 8, 16, 5, 9])),
        15 => Value::String("/dev/zero".into()),
        16 => Value::Array(vec![Value::String("a".into()), Value::Integer(1)]),
        17 => Value::Array(vec![Value::Integer(-1); 17]),
        18 => Value::Array((0..20).map(Value::Integer).collect()),
        19 => Value::Float(f64::MAX),
        20 => Value::String("\u{0}\u{7f}\u{202e}".into()),
        _ => Value::Integer(rng.below(64) as i64),
    }
}

/// One structural mutation of `doc`; `false` if it did nothing.
fn mutate_value(rng: &mut Rng, doc: &mut Value, kinds: &[String]) -> bool {
    let mut all = Vec::new();
    paths(doc, &mut Vec::new(), &mut all);
    if all.is_empty() {
        return false;
    }
    let path = rng.pick(&all).clone();
    match rng.below(6) {
        // Replace the value.
        0..=2 => match get_mut(doc, &path) {
            Some(v) => {
                *v = odd_value(rng, kinds);
                true
            }
            None => false,
        },
        // Delete the key or element.
        3 => match parent_mut(doc, &path) {
            Some((Value::Table(t), Step::Key(k))) => t.remove(&k).is_some(),
            Some((Value::Array(a), Step::Index(i))) if i < a.len() => {
                a.remove(i);
                true
            }
            _ => false,
        },
        // Rename the key.
        4 => match parent_mut(doc, &path) {
            Some((Value::Table(t), Step::Key(k))) => {
                let v = t.remove(&k).unwrap();
                let new = match rng.below(3) {
                    0 => format!("{k}x"),
                    1 => k.to_uppercase(),
                    _ => rng
                        .pick(&["kind", "size", "rate", "name", "class", "buffer", "k", "hosts"])
                        .to_string(),
                };
                t.insert(new, v);
                true
            }
            _ => false,
        },
        // Duplicate an array element (e.g. a second [[workload]]) or copy a table elsewhere.
        _ => match parent_mut(doc, &path) {
            Some((Value::Array(a), Step::Index(i))) if i < a.len() => {
                let x = a[i].clone();
                a.push(x);
                true
            }
            Some((Value::Table(t), Step::Key(k))) => {
                let x = t[&k].clone();
                t.insert(format!("{k}_copy"), x);
                true
            }
            _ => false,
        },
    }
}

/// Text-level mutations that a `toml::Value` cannot express.
fn mutate_text(rng: &mut Rng, text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let i = rng.below(lines.len().max(1));
    let assign: Vec<usize> = (0..lines.len()).filter(|&j| lines[j].contains(" = ")).collect();
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    match rng.below(7) {
        // An integer beyond 64 bits.
        0 if !assign.is_empty() => {
            let j = *rng.pick(&assign);
            let key = out[j].split(" = ").next().unwrap().to_string();
            out[j] = format!(
                "{key} = {}",
                rng.pick(&[
                    "99999999999999999999999",
                    "-99999999999999999999999",
                    "18446744073709551616"
                ])
            );
        }
        // Deep nesting of arrays or inline tables as a value.
        1 if !assign.is_empty() => {
            let j = *rng.pick(&assign);
            let key = out[j].split(" = ").next().unwrap().to_string();
            let depth = 60 + rng.below(200);
            out[j] = if rng.below(2) == 0 {
                format!("{key} = {}1{}", "[".repeat(depth), "]".repeat(depth))
            } else {
                format!("{key} = {}1{}", "{ a = ".repeat(depth), " }".repeat(depth))
            };
        }
        // A deeply nested table header.
        2 => {
            let depth = 60 + rng.below(200);
            out.insert(i, format!("[{}]\nx = 1", vec!["a"; depth].join(".")));
        }
        // A duplicated line (a duplicate key or table header).
        3 => {
            let l = out[i].clone();
            out.insert(i, l);
        }
        // A deleted line.
        4 if !out.is_empty() => {
            out.remove(i);
        }
        // Truncated text.
        5 => {
            let cut = rng.below(text.len().max(1));
            let mut c = cut;
            while !text.is_char_boundary(c) {
                c -= 1;
            }
            return text[..c].to_string();
        }
        // A deeply dotted key.
        _ => {
            let depth = 60 + rng.below(200);
            out.insert(i, format!("{} = 1", vec!["b"; depth].join(".")));
        }
    }
    let mut s = out.join("\n");
    s.push('\n');
    s
}

/// What went wrong with one input, if anything.
fn judge(file: &str, input: &str, code: i32, stdout: &str, stderr: &str) -> Result<bool, String> {
    for line in stdout.lines().chain(stderr.lines()) {
        if line.chars().count() > MAX_LINE {
            return Err(format!("a line of {} characters", line.chars().count()));
        }
    }
    match code {
        0 => return Ok(false),
        2 => {}
        c => return Err(format!("exit status {c} (expected 0 or 2)")),
    }
    let mut lines = stderr.lines();
    let (Some(line), None) = (lines.next(), lines.next()) else {
        return Err("the error is not exactly one line".into());
    };
    let rest = line
        .strip_prefix("error: ")
        .and_then(|r| r.strip_prefix(file))
        .ok_or("the error does not start with `error: FILE`")?;
    // :line:col: field: message
    let mut parts = rest.splitn(4, ':');
    let (empty, l, c, after) = (parts.next(), parts.next(), parts.next(), parts.next());
    let located = empty == Some("")
        && l.is_some_and(|x| x.parse::<usize>().is_ok())
        && c.is_some_and(|x| x.parse::<usize>().is_ok());
    if !located {
        return Err("no file:line:col".into());
    }
    let after = after.unwrap_or("").strip_prefix(' ').unwrap_or("");
    let Some((field, message)) = after.split_once(": ") else {
        return Err("no `field: message`".into());
    };
    if field.is_empty() || field.contains(' ') && field != "(top level)" {
        return Err(format!("no field (got {field:?})"));
    }
    let lower = message.to_lowercase();
    let leaks = [
        "i128",
        "u128",
        "variant index",
        "enum ",
        "struct ",
        "nanus",
        "nanmb",
        "nangbps",
        "infus",
        "infmb",
        "infgbps",
        "recursion limit",
    ];
    // A leak is a word the loader wrote, not the user's own value quoted back.
    let input = input.to_lowercase();
    if let Some(w) = leaks.iter().find(|w| lower.contains(*w) && !input.contains(*w)) {
        return Err(format!("the message says {w:?}"));
    }
    for w in message.split(|c: char| !c.is_ascii_alphanumeric()) {
        if [
            "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "f32", "f64", "usize", "NaN",
        ]
        .contains(&w)
        {
            return Err(format!("the message names the Rust type or value {w:?}"));
        }
    }
    Ok(true)
}

#[test]
fn mutated_scenarios_are_accepted_or_refused_with_a_located_message() {
    let n: usize = std::env::var("FABRICSIM_FUZZ_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_INPUTS);
    let seed: u64 = std::env::var("FABRICSIM_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(14_15);
    let seeds = seeds();
    let kinds = all_kinds(&seeds);
    let dir = tempfile::tempdir().unwrap();
    // CDF files resolve relative to the scenario, as in the catalogue.
    std::fs::create_dir(dir.path().join("cdf")).unwrap();
    for e in std::fs::read_dir(catalogue_dir().join("cdf")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, dir.path().join("cdf").join(p.file_name().unwrap())).unwrap();
    }
    let file = dir.path().join("fuzz.toml");
    let file_s = file.to_str().unwrap().to_owned();
    let mut rng = Rng(seed);
    let (mut refused, mut failures) = (0usize, Vec::new());
    for case in 0..n {
        let (name, text) = rng.pick(&seeds).clone();
        let mutated = if rng.below(4) == 0 {
            mutate_text(&mut rng, &text)
        } else {
            let mut doc = Value::Table(toml::from_str(&text).unwrap());
            for _ in 0..1 + rng.below(3) {
                mutate_value(&mut rng, &mut doc, &kinds);
            }
            toml::to_string(&doc).unwrap_or_else(|_| text.clone())
        };
        std::fs::write(&file, &mutated).unwrap();
        let args = ["fabricsim", "validate", &file_s].map(std::ffi::OsString::from);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = catch_unwind(AssertUnwindSafe(|| {
            scenarios::cli::run(args, &mut out, &mut err, false)
        }));
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out).into_owned(),
            String::from_utf8_lossy(&err).into_owned(),
        );
        let verdict = match code {
            Err(_) => Err("panic".to_owned()),
            Ok(code) => judge(&file_s, &mutated, code, &stdout, &stderr),
        };
        match verdict {
            Ok(r) => refused += r as usize,
            Err(why) => {
                let kept = dir.path().join(format!("failure-{case}.toml"));
                std::fs::write(&kept, &mutated).unwrap();
                failures.push(format!(
                    "case {case} (from {name}): {why}\n  {}",
                    stderr.trim_end().chars().take(400).collect::<String>()
                ));
            }
        }
    }
    println!(
        "fuzz_loader: seed {seed}, {n} inputs, {refused} refused, {} accepted, {} failures",
        n - refused - failures.len(),
        failures.len()
    );
    if !failures.is_empty() {
        let dir = dir.keep();
        panic!(
            "{} of {n} inputs failed (inputs kept in {}):\n{}",
            failures.len(),
            dir.display(),
            failures.iter().take(40).cloned().collect::<Vec<_>>().join("\n")
        );
    }
}

/// The judge itself: a refusal without a position or with a Rust type fails.
#[test]
fn the_judge_rejects_what_it_should() {
    let f = "s.toml";
    assert!(judge(f, "", 2, "", "error: s.toml:1:2: topology.k: expected 2..=64\n").is_ok());
    assert!(judge(f, "", 2, "", "error: s.toml: topology.k: expected 2..=64\n").is_err());
    assert!(judge(f, "", 2, "", "error: s.toml:1:2: k: expected u32\n").is_err());
    assert!(judge(f, "", 2, "", "error: s.toml:1:2: k: e.g. \"NaNus\"\n").is_err());
    assert!(
        judge(
            f,
            "",
            2,
            "",
            "error: s.toml:1:2: k: expected internally tagged enum X\n"
        )
        .is_err()
    );
    assert!(judge(f, "", 2, "", &format!("error: s.toml:1:2: k: {}\n", "x".repeat(400))).is_err());
    assert!(judge(f, "", 1, "", "error: s.toml: engine\n").is_err());
    assert!(judge(f, "", 0, "ok\n", "").is_ok());
    let _ = Path::new(f);
}

//! Every kind of bad scenario input gets a one-line error naming the file, the position
//! (`line:col`, where there is one), the field and what was expected; `validate` exits with 2
//! and never panics.
//!
//! Each test writes a small scenario into a temporary directory and runs
//! `fabricsim validate FILE` through `scenarios::cli::run`. Expected positions are computed
//! from the test text itself. The assertions are on stable parts of the message (field path,
//! the offending value and key words of what was expected), not on the full wording.
//!
//! Errors inside `[topology]` and `[[workload]]` come from serde's internally tagged enums
//! (selected by `kind`), which buffer the whole table; the loader then finds the key by taking
//! each one out in turn (`diag.rs`), so type errors name `topology.k` and point at its value.
//! Cases it cannot pin to one key keep the table's path and position; the older tests check
//! them with [`Bad::within`], which accepts either.

use std::ops::RangeInclusive;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

/// A valid scenario that the tests break in one place each.
const BASE: &str = r#"[scenario]
name = "bad-input-base"
seed = 1

[topology]
kind = "fat_tree"
k = 4
host_link = { rate = "100Gbps", cable_m = 3 }
fabric_link = { rate = "100Gbps", cable_m = 10 }

[fabric]
kind = "ethernet"
mtu = "4KiB"
switch_latency = "500ns"
buffer = { kind = "per_port_tail_drop", size = "512KiB" }

[[workload]]
kind = "flows"
flows = [
  { src = 0, dst = 1, size = "64KiB" },
  { src = 2, dst = 3, size = "64KiB" },
]

[run]
end_time = "1ms"
"#;

/// `BASE` with `from` (which must occur exactly once) replaced by `to`.
fn edit(from: &str, to: &str) -> String {
    edit_text(BASE, from, to)
}

fn edit_text(text: &str, from: &str, to: &str) -> String {
    assert_eq!(
        text.matches(from).count(),
        1,
        "{from:?} must occur exactly once in\n{text}"
    );
    text.replacen(from, to, 1)
}

/// `BASE` with its `[topology]` table replaced by `topology`.
fn with_topology(topology: &str) -> String {
    let start = BASE.find("[topology]").unwrap();
    let end = BASE.find("[fabric]").unwrap();
    format!("{}{topology}\n{}", &BASE[..start], &BASE[end..])
}

/// `BASE` with its `[[workload]]` table replaced by `workload`.
fn with_workload(workload: &str) -> String {
    let start = BASE.find("[[workload]]").unwrap();
    let end = BASE.find("[run]").unwrap();
    format!("{}{workload}\n{}", &BASE[..start], &BASE[end..])
}

/// 1-based line and column (in characters) of `value` at or after the one occurrence of
/// `needle` in `text`.
fn pos(text: &str, needle: &str, value: &str) -> (usize, usize) {
    assert_eq!(
        text.matches(needle).count(),
        1,
        "{needle:?} must occur exactly once in\n{text}"
    );
    let at = text.find(needle).unwrap();
    let at = at
        + text[at..]
            .find(value)
            .unwrap_or_else(|| panic!("{value:?} not in {needle:?}"));
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let col = before[before.rfind('\n').map_or(0, |i| i + 1)..].chars().count() + 1;
    (line, col)
}

/// 1-based line of the one occurrence of `needle` in `text`.
fn line_of(text: &str, needle: &str) -> usize {
    pos(text, needle, "").0
}

/// The error printed for an invalid scenario.
struct Bad {
    /// The scenario file as passed on the command line.
    file: String,
    /// The error line without `error: ` and the newline.
    line: String,
    /// The scenario text, for failure messages.
    text: String,
    _dir: tempfile::TempDir,
}

impl std::fmt::Debug for Bad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "error line:\n  {}\nscenario:\n{}", self.line, self.text)
    }
}

/// Runs `fabricsim validate FILE` with `fancy` rendering or not; a panic fails the test with
/// the input shown.
fn validate(file: &Path, fancy: bool, text: &str) -> (i32, String, String) {
    let args = ["fabricsim", "validate", file.to_str().unwrap()].map(Into::into);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = catch_unwind(AssertUnwindSafe(|| {
        scenarios::cli::run(args, &mut out, &mut err, fancy)
    }))
    .unwrap_or_else(|_| panic!("`fabricsim validate` panicked (fancy: {fancy}) on:\n{text}"));
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

/// Validates an existing file (in `dir`) that must be refused; returns its error line.
fn refused(dir: tempfile::TempDir, file: PathBuf, text: &str) -> Bad {
    let (code, out, err) = validate(&file, false, text);
    assert_eq!(
        code, 2,
        "expected exit 2, got {code}\nstdout: {out}\nstderr: {err}\nscenario:\n{text}"
    );
    assert_eq!(out, "", "nothing on stdout for an invalid scenario");
    assert_eq!(err.lines().count(), 1, "the error is one line:\n{err}");
    assert!(err.ends_with('\n'), "{err:?}");
    let line = err
        .trim_end()
        .strip_prefix("error: ")
        .unwrap_or_else(|| panic!("no `error: ` prefix: {err}"))
        .to_owned();
    let file = file.display().to_string();
    assert!(
        line.starts_with(&file),
        "the error does not start with the file name {file}: {line}"
    );
    // The fancy rendering (for terminals) of the same error is also fine.
    let (fancy_code, _, fancy_err) = validate(Path::new(&file), true, text);
    assert_eq!(fancy_code, 2);
    assert!(!fancy_err.trim().is_empty());
    Bad {
        file,
        line,
        text: text.to_owned(),
        _dir: dir,
    }
}

/// Writes `text` as `name` into a fresh temporary directory and validates it.
fn invalid(name: &str, text: &str) -> Bad {
    invalid_with(name, text, &[])
}

/// Like [`invalid`], with extra files (relative path, contents) next to the scenario.
fn invalid_with(name: &str, text: &str, extra: &[(&str, &[u8])]) -> Bad {
    let dir = tempfile::tempdir().unwrap();
    for (rel, bytes) in extra {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    let file = dir.path().join(name);
    std::fs::write(&file, text).unwrap();
    refused(dir, file, text)
}

impl Bad {
    /// What follows the file name.
    fn rest(&self) -> &str {
        &self.line[self.file.len()..]
    }

    /// (line, column) of the error, if it has a position.
    fn position(&self) -> Option<(usize, usize)> {
        let r = self.rest().strip_prefix(':')?;
        let mut parts = r.splitn(3, ':');
        let line = parts.next()?.parse().ok()?;
        let col = parts.next()?.parse().ok()?;
        Some((line, col))
    }

    /// The part after `file:line:col: ` (or `file: `).
    fn after_position(&self) -> &str {
        let r = self.rest();
        let r = match self.position() {
            Some((l, c)) => &r[format!(":{l}:{c}").len()..],
            None => r,
        };
        r.strip_prefix(": ")
            .unwrap_or_else(|| panic!("no `: ` after the position: {self:?}"))
    }

    /// The error is at exactly `(line, col)`.
    fn at(&self, want: (usize, usize)) -> &Self {
        assert_eq!(self.position(), Some(want), "wrong position (line, col): {self:?}");
        self
    }

    /// The error is on one of `lines` (see the module docs) and names `field` or a field
    /// inside it.
    fn within(&self, lines: RangeInclusive<usize>, field: &str) -> &Self {
        let (line, _) = self.position().unwrap_or_else(|| panic!("no position: {self:?}"));
        assert!(lines.contains(&line), "line {line} not in {lines:?}: {self:?}");
        let r = self.after_position();
        let f = r.split(": ").next().unwrap();
        assert!(
            f == field || f.starts_with(&format!("{field}.")) || f.starts_with(&format!("{field}[")),
            "field {f:?} is not {field:?} or inside it: {self:?}"
        );
        self
    }

    /// The error has no position (a file-level problem).
    fn nowhere(&self) -> &Self {
        assert_eq!(self.position(), None, "{self:?}");
        self
    }

    /// The field path is exactly `field`.
    fn field(&self, field: &str) -> &Self {
        assert!(
            self.after_position().starts_with(&format!("{field}: ")),
            "field is not {field:?}: {self:?}"
        );
        self
    }

    /// The message (after the position) starts with `prefix`: for errors without a field.
    fn starts(&self, prefix: &str) -> &Self {
        assert!(
            self.after_position().starts_with(prefix),
            "message does not start with {prefix:?}: {self:?}"
        );
        self
    }

    /// The message contains every one of `words`.
    fn says(&self, words: &[&str]) -> &Self {
        for w in words {
            assert!(self.after_position().contains(w), "message lacks {w:?}: {self:?}");
        }
        self
    }
}

#[test]
fn base_scenario_is_valid() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("base.toml");
    std::fs::write(&file, BASE).unwrap();
    let (code, out, err) = validate(&file, false, BASE);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(": ok (fat-tree k=4 (16 hosts, 20 switches); 2 flows)"),
        "{out}"
    );
}

// ------------------------------------------------------------------------------------------
// TOML syntax

#[test]
fn toml_syntax_errors() {
    // A key with no value: the error is at the end of `k = `.
    let text = edit("k = 4\n", "k = \n");
    invalid("syntax.toml", &text)
        .at((line_of(&text, "k = \n"), 5))
        .says(&["TOML syntax error: "])
        .says(&["expected"]);
    // An unterminated string.
    let text = edit("name = \"bad-input-base\"", "name = \"bad-input-base");
    let b = invalid("unterminated.toml", &text);
    b.says(&["TOML syntax error: "]).says(&["string"]);
    assert_eq!(b.position().unwrap().0, line_of(&text, "name = "), "{b:?}");
    // A key given twice.
    let text = edit("k = 4\n", "k = 4\nk = 6\n");
    invalid("dup.toml", &text)
        .at(pos(&text, "k = 6", "k"))
        .says(&["TOML syntax error: "])
        .says(&["duplicate key"]);
    // A table given twice.
    let text = edit("[run]\n", "[fabric]\nmtu = \"1KiB\"\n[run]\n");
    let b = invalid("duptable.toml", &text);
    b.says(&["TOML syntax error: "]).says(&["duplicate"]);
    assert_eq!(
        b.position().unwrap().0,
        line_of(&text, "[fabric]\nmtu = \"1KiB\""),
        "{b:?}"
    );
    // Nesting deep enough to exhaust the parser's recursion limit is refused, not a crash.
    let text = format!("x = {}{}\n", "[".repeat(5000), "]".repeat(5000));
    let b = invalid("deep.toml", &text);
    b.says(&["nested too deeply", "more than 64 levels"]).field("x");
    assert_eq!(b.position().unwrap().0, 1);
}

// ------------------------------------------------------------------------------------------
// Unknown tables and keys

#[test]
fn unknown_top_level_table() {
    let text = edit("[fabric]", "[fabrik]");
    invalid("table.toml", &text)
        .at(pos(&text, "[fabrik]", "fabrik"))
        .field("fabrik")
        .says(&[
            "unknown field `fabrik`",
            "expected one of",
            "`scenario`",
            "`topology`",
            "`fabric`",
            "`workload`",
            "`run`",
            "`output`",
        ]);
    // A top-level key.
    let text = format!("seed = 3\n{BASE}");
    invalid("topkey.toml", &text)
        .at((1, 1))
        .field("seed")
        .says(&["unknown field `seed`", "`scenario`"]);
}

#[test]
fn typo_in_topology_key() {
    let text = edit("k = 4", "kk = 4");
    invalid("topo_key.toml", &text)
        .within(line_of(&text, "[topology]")..=line_of(&text, "kk = 4"), "topology")
        .says(&["unknown field `kk`", "expected one of `k`, `host_link`, `fabric_link`"]);
    // Inside a link of the topology.
    let text = edit("host_link = { rate", "host_link = { rat");
    invalid("link_key.toml", &text)
        .within(line_of(&text, "[topology]")..=line_of(&text, "{ rat ="), "topology")
        .says(&["unknown field `rat`", "`rate`", "`delay`", "`cable_m`"]);
}

#[test]
fn typo_in_fabric_key() {
    let text = edit("switch_latency", "switch_latncy");
    invalid("fabric_key.toml", &text)
        .at(pos(&text, "switch_latncy", "switch_latncy"))
        .field("fabric.switch_latncy")
        .says(&[
            "unknown field `switch_latncy`",
            "expected one of",
            "`switch_latency`",
            "`mtu`",
            "`buffer`",
        ]);
}

#[test]
fn typo_in_workload_key() {
    let text = edit("kind = \"flows\"\n", "kind = \"flows\"\nflowz = []\n");
    invalid("workload_key.toml", &text)
        .within(line_of(&text, "[[workload]]")..=line_of(&text, "flowz"), "workload[0]")
        .says(&["unknown field `flowz`", "expected one of `flows`"]);
    // Inside one of the listed flows.
    let text = edit("src = 2, dst = 3,", "src = 2, dstt = 3,");
    invalid("flow_key.toml", &text)
        .within(line_of(&text, "[[workload]]")..=line_of(&text, "dstt"), "workload[0]")
        .says(&["unknown field `dstt`", "`src`", "`dst`", "`size`", "`start`"]);
}

#[test]
fn typo_in_other_tables() {
    let text = edit("seed = 1", "sead = 1");
    invalid("scenario_key.toml", &text)
        .at(pos(&text, "sead", "sead"))
        .field("scenario.sead")
        .says(&["unknown field `sead`", "`name`", "`description`", "`seed`"]);
    let text = edit("end_time", "end_tme");
    invalid("run_key.toml", &text)
        .at(pos(&text, "end_tme", "end_tme"))
        .field("run.end_tme")
        .says(&[
            "unknown field `end_tme`",
            "`end_time`",
            "`max_events`",
            "`wall_clock_s`",
        ]);
    let text = format!("{BASE}\n[output]\nhotspot = 3\n");
    invalid("output_key.toml", &text)
        .at(pos(&text, "hotspot =", "hotspot"))
        .field("output.hotspot")
        .says(&["unknown field `hotspot`", "expected one of `hotspots`"]);
}

// ------------------------------------------------------------------------------------------
// Wrong types

#[test]
fn wrong_types() {
    let text = edit("k = 4", "k = \"four\"");
    invalid("k_string.toml", &text)
        .within(
            line_of(&text, "[topology]")..=line_of(&text, "k = \"four\""),
            "topology",
        )
        .says(&["found the string \"four\"", "expected an integer in 0..=4294967295"]);
    let text = edit("k = 4", "k = -4");
    invalid("k_negative.toml", &text)
        .within(line_of(&text, "[topology]")..=line_of(&text, "k = -4"), "topology")
        .says(&[
            "the integer -4 is out of range",
            "expected an integer in 0..=4294967295",
        ]);
    let text = edit("seed = 1", "seed = \"one\"");
    invalid("seed.toml", &text)
        .at(pos(&text, "seed = ", "\"one\""))
        .field("scenario.seed")
        .says(&["found the string \"one\"", "expected an integer in 0..="]);
    let text = edit("end_time = \"1ms\"", "end_time = \"1ms\"\nmax_events = \"many\"");
    invalid("max_events.toml", &text)
        .at(pos(&text, "max_events = ", "\"many\""))
        .field("run.max_events")
        .says(&["found the string \"many\"", "expected an integer in 0..="]);
    let text = edit("src = 2, dst = 3,", "src = 2, dst = \"three\",");
    invalid("dst_string.toml", &text)
        .within(
            line_of(&text, "[[workload]]")..=line_of(&text, "\"three\""),
            "workload[0]",
        )
        .says(&["found the string \"three\"", "expected an integer in 0..=4294967295"]);
    // Units: a float, a boolean, an array, a date where a size or time is expected.
    let text = edit("\"4KiB\"", "4096.5");
    invalid("mtu_float.toml", &text)
        .at(pos(&text, "mtu = ", "4096.5"))
        .field("fabric.mtu")
        .says(&["invalid size", "floating-point number", "expected a number of bytes"]);
    let text = edit("\"500ns\"", "true");
    invalid("latency_bool.toml", &text)
        .at(pos(&text, "switch_latency = ", "true"))
        .field("fabric.switch_latency")
        .says(&["invalid time", "found a boolean", "\"500ns\""]);
    let text = edit("\"4KiB\"", "[1, 2]");
    invalid("mtu_array.toml", &text)
        .at(pos(&text, "mtu = ", "[1, 2]"))
        .field("fabric.mtu")
        .says(&["invalid size", "found an array"]);
    let text = edit("\"1ms\"", "1979-05-27T07:32:00Z");
    invalid("end_date.toml", &text)
        .at(pos(&text, "end_time = ", "1979"))
        .field("run.end_time")
        .says(&["invalid time", "expected a number followed by a unit"]);
}

// ------------------------------------------------------------------------------------------
// Unknown `kind` values

#[test]
fn unknown_topology_kind() {
    let text = edit("\"fat_tree\"", "\"torus\"");
    invalid("topo_kind.toml", &text)
        .at(pos(&text, "kind = \"torus\"", "\"torus\""))
        .field("topology.kind")
        .says(&[
            "unknown variant `torus`",
            "`fat_tree`",
            "`leaf_spine`",
            "`sized`",
            "`custom`",
        ]);
    // No kind at all.
    let text = edit("kind = \"fat_tree\"\n", "");
    invalid("topo_nokind.toml", &text)
        .within(line_of(&text, "[topology]")..=line_of(&text, "[topology]"), "topology")
        .says(&["missing field `kind`"]);
}

#[test]
fn unknown_buffer_kind() {
    let text = edit("per_port_tail_drop", "shared_buffer");
    invalid("buffer_kind.toml", &text)
        .at(pos(&text, "buffer = ", "\"shared_buffer\""))
        .field("fabric.buffer.kind")
        .says(&["unknown variant `shared_buffer`", "expected `per_port_tail_drop`"]);
}

#[test]
fn unknown_workload_kind() {
    let text = edit("\"flows\"", "\"alltoall\"");
    invalid("workload_kind.toml", &text)
        .at(pos(&text, "kind = \"alltoall\"", "\"alltoall\""))
        .field("workload[0].kind")
        .says(&[
            "unknown variant `alltoall`",
            "`flows`",
            "`permutation`",
            "`incast`",
            "`poisson`",
        ]);
}

#[test]
fn unknown_fabric_kind() {
    let text = edit("\"ethernet\"", "\"infinityband\"");
    invalid("fabric_kind.toml", &text)
        .at(pos(&text, "kind = \"infinityband\"", "\"infinityband\""))
        .field("fabric.kind")
        .says(&[
            "unknown variant `infinityband`",
            "expected `ethernet`, `infiniband` or `rocev2` (networks), or `nvlink` or `pcie`",
        ]);
}

// ------------------------------------------------------------------------------------------
// Units

#[test]
fn bad_rate_units() {
    // In [fabric]: exact position and field.
    let text = edit("mtu = \"4KiB\"\n", "mtu = \"4KiB\"\nsender_rate = \"100Gbs\"\n");
    invalid("rate_fabric.toml", &text)
        .at(pos(&text, "sender_rate = ", "\"100Gbs\""))
        .field("fabric.sender_rate")
        .says(&["invalid rate \"100Gbs\"", "unknown unit \"Gbs\"", "\"100Gbps\""]);
    let text = edit("mtu = \"4KiB\"\n", "mtu = \"4KiB\"\nsender_rate = \"0Gbps\"\n");
    invalid("rate_zero.toml", &text)
        .at(pos(&text, "sender_rate = ", "\"0Gbps\""))
        .field("fabric.sender_rate")
        .says(&["invalid rate \"0Gbps\"", "greater than zero"]);
    // In a topology link.
    let text = edit("rate = \"100Gbps\", cable_m = 3", "rate = \"100Gbs\", cable_m = 3");
    invalid("rate_topo.toml", &text)
        .within(line_of(&text, "[topology]")..=line_of(&text, "\"100Gbs\""), "topology")
        .says(&["invalid rate \"100Gbs\"", "unknown unit \"Gbs\"", "\"100Gbps\""]);
    let text = edit("rate = \"100Gbps\", cable_m = 10", "rate = \"0Gbps\", cable_m = 10");
    invalid("rate_topo_zero.toml", &text)
        .within(line_of(&text, "[topology]")..=line_of(&text, "\"0Gbps\""), "topology")
        .says(&["invalid rate \"0Gbps\"", "greater than zero"]);
}

#[test]
fn bad_size_units() {
    let text = edit("\"4KiB\"", "\"4KB\"");
    invalid("size_kb.toml", &text)
        .at(pos(&text, "mtu = ", "\"4KB\""))
        .field("fabric.mtu")
        .says(&["invalid size \"4KB\"", "ambiguous", "\"kB\"", "\"KiB\""]);
    // Bits where bytes are expected, in a listed flow.
    let text = edit(
        "src = 2, dst = 3, size = \"64KiB\"",
        "src = 2, dst = 3, size = \"64Kb\"",
    );
    invalid("size_bits.toml", &text)
        .within(
            line_of(&text, "[[workload]]")..=line_of(&text, "\"64Kb\""),
            "workload[0]",
        )
        .says(&["invalid size \"64Kb\"", "in bits", "sizes are in bytes"]);
}

#[test]
fn bad_time_units() {
    let text = edit("\"500ns\"", "\"500\"");
    invalid("time_bare.toml", &text)
        .at(pos(&text, "switch_latency = ", "\"500\""))
        .field("fabric.switch_latency")
        .says(&["invalid time \"500\"", "needs a unit", "\"500ns\""]);
    let text = edit("\"500ns\"", "500");
    invalid("time_int.toml", &text)
        .at(pos(&text, "switch_latency = ", "500"))
        .field("fabric.switch_latency")
        .says(&["invalid time 500", "needs a unit"]);
    let text = edit("\"1ms\"", "\"2h\"");
    invalid("time_unit.toml", &text)
        .at(pos(&text, "end_time = ", "\"2h\""))
        .field("run.end_time")
        .says(&["invalid time \"2h\"", "unknown unit \"h\"", "\"2ms\""]);
}

// ------------------------------------------------------------------------------------------
// Missing required fields

#[test]
fn missing_required_fields() {
    let text = edit("name = \"bad-input-base\"\n", "");
    invalid("no_name.toml", &text)
        .at(pos(&text, "[scenario]", "["))
        .field("scenario")
        .says(&["missing field `name`"]);
    let text = edit("[scenario]\nname = \"bad-input-base\"\nseed = 1\n", "");
    invalid("no_scenario.toml", &text)
        .field("(top level)")
        .says(&["missing field `scenario`"]);
    let start = BASE.find("[[workload]]").unwrap();
    let end = BASE.find("[run]").unwrap();
    let text = format!("{}{}", &BASE[..start], &BASE[end..]);
    invalid("no_workload.toml", &text)
        .field("(top level)")
        .says(&["missing field `workload`"]);
    let text = edit("host_link = { rate = \"100Gbps\", cable_m = 3 }\n", "");
    invalid("no_host_link.toml", &text)
        .within(line_of(&text, "[topology]")..=line_of(&text, "[topology]"), "topology")
        .says(&["missing field `host_link`"]);
    let text = edit("src = 2, dst = 3, size = \"64KiB\"", "src = 2, dst = 3");
    invalid("no_size.toml", &text)
        .within(
            line_of(&text, "[[workload]]")..=line_of(&text, "src = 2, dst = 3"),
            "workload[0]",
        )
        .says(&["missing field `size`"]);
    // An empty file, and one with only a comment.
    for (name, text) in [("empty.toml", ""), ("comment.toml", "# nothing here\n")] {
        invalid(name, text)
            .at((1, 1))
            .field("(top level)")
            .says(&["missing field `scenario`"]);
    }
}

// ------------------------------------------------------------------------------------------
// Semantic errors, located at the offending value

#[test]
fn odd_fat_tree_k() {
    let text = edit("k = 4", "k = 5");
    invalid("odd_k.toml", &text)
        .at(pos(&text, "k = 5", "5"))
        .field("topology.k")
        .says(&["even", "k=5"]);
    let text = edit("k = 4", "k = 0");
    invalid("zero_k.toml", &text)
        .at(pos(&text, "k = 0", "0"))
        .field("topology.k")
        .says(&["even", "at least 2", "k=0"]);
    // The same with CRLF line endings: the same line and column.
    let crlf = text.replace('\n', "\r\n");
    invalid("odd_k_crlf.toml", &crlf)
        .at(pos(&text, "k = 0", "0"))
        .field("topology.k");
}

#[test]
fn flow_host_out_of_range() {
    let text = edit("src = 2, dst = 3,", "src = 2, dst = 16,");
    invalid("flow_dst.toml", &text)
        .at(pos(&text, "dst = 16", "16"))
        .field("workload[0].flows[1].dst")
        .says(&["host 16 does not exist", "0..16"]);
    let text = edit("src = 0, dst = 1,", "src = 99, dst = 1,");
    invalid("flow_src.toml", &text)
        .at(pos(&text, "src = 99", "99"))
        .field("workload[0].flows[0].src")
        .says(&["host 99 does not exist", "0..16"]);
}

#[test]
fn flow_to_itself() {
    let text = edit("src = 2, dst = 3,", "src = 2, dst = 2,");
    invalid("self.toml", &text)
        .at(pos(&text, "dst = 2,", "2"))
        .field("workload[0].flows[1].dst")
        .says(&["destination must differ from its source"]);
}

#[test]
fn incast_hosts_out_of_range() {
    let text = with_workload("[[workload]]\nkind = \"incast\"\nreceiver = 0\nsenders = [1, 2, 16]\nsize = \"64KiB\"\n");
    invalid("incast_sender.toml", &text)
        .at(pos(&text, "senders = [1, 2, 16]", "16"))
        .field("workload[0].senders[2]")
        .says(&["host 16 does not exist", "0..16"]);
    let text = with_workload("[[workload]]\nkind = \"incast\"\nreceiver = 16\nn_senders = 3\nsize = \"64KiB\"\n");
    invalid("incast_receiver.toml", &text)
        .at(pos(&text, "receiver = 16", "16"))
        .field("workload[0].receiver")
        .says(&["host 16 does not exist"]);
    let text = with_workload("[[workload]]\nkind = \"incast\"\nreceiver = 0\nn_senders = 16\nsize = \"64KiB\"\n");
    invalid("incast_n.toml", &text)
        .at(pos(&text, "n_senders = 16", "16"))
        .field("workload[0].n_senders")
        .says(&["expected 1..=15 senders"]);
    let text = with_workload(
        "[[workload]]\nkind = \"incast\"\nreceiver = 0\nsenders = [1]\nn_senders = 1\nsize = \"64KiB\"\n",
    );
    invalid("incast_both.toml", &text)
        .at(pos(&text, "[[workload]]", "["))
        .field("workload[0]")
        .says(&["exactly one of `senders` or `n_senders`"]);
    let text = with_workload("[[workload]]\nkind = \"incast\"\nreceiver = 0\nsenders = [1, 0]\nsize = \"64KiB\"\n");
    invalid("incast_self.toml", &text)
        .within(
            line_of(&text, "[[workload]]")..=line_of(&text, "senders = [1, 0]"),
            "workload[0]",
        )
        .says(&["source and destination must differ"]);
}

#[test]
fn both_delay_and_cable_m() {
    let text = edit(
        "fabric_link = { rate = \"100Gbps\", cable_m = 10 }",
        "fabric_link = { rate = \"100Gbps\", cable_m = 10, delay = \"50ns\" }",
    );
    invalid("delay_cable.toml", &text)
        .at(pos(&text, "cable_m = 10", "10"))
        .field("topology.fabric_link.cable_m")
        .says(&["either `delay` or `cable_m`, not both"]);
}

const LEAF_SPINE: &str = "[topology]\nkind = \"leaf_spine\"\nleaves = 4\nhosts_per_leaf = 4\nSPINES\nhost_link = { rate = \"100Gbps\" }\nfabric_link = { rate = \"100Gbps\" }\n";

fn leaf_spine(spines: &str) -> String {
    with_topology(&LEAF_SPINE.replace("SPINES\n", spines))
}

#[test]
fn leaf_spine_needs_exactly_one_of_spines_or_oversubscription() {
    let ok = leaf_spine("spines = 2\n");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ok.toml");
    std::fs::write(&file, &ok).unwrap();
    assert_eq!(validate(&file, false, &ok).0, 0, "the leaf-spine template is valid");
    for (name, spines) in [
        ("both.toml", "spines = 2\noversubscription = \"2:1\"\n"),
        ("neither.toml", ""),
    ] {
        let text = leaf_spine(spines);
        invalid(name, &text)
            .at(pos(&text, "[topology]", "["))
            .field("topology")
            .says(&["exactly one of `spines` or `oversubscription`"]);
    }
}

#[test]
fn bad_oversubscription_ratio() {
    for ratio in ["2-1", "0:1", "two to one", ""] {
        let text = leaf_spine(&format!("oversubscription = \"{ratio}\"\n"));
        invalid("ratio.toml", &text)
            .at(pos(&text, "oversubscription = ", "\""))
            .field("topology.oversubscription")
            .says(&["expected a ratio like \"2:1\"", &format!("got \"{ratio}\"")]);
    }
}

#[test]
fn impossible_oversubscription() {
    let text = leaf_spine("oversubscription = \"3:1\"\n");
    invalid("ratio31.toml", &text)
        .at(pos(&text, "oversubscription = ", "\""))
        .field("topology.oversubscription")
        .says(&[
            "3:1",
            "4 hosts/leaf",
            "1.333 uplinks per leaf",
            "not a positive integer",
        ]);
    let text = leaf_spine("oversubscription = \"1000:1\"\n");
    invalid("ratio1000.toml", &text)
        .field("topology.oversubscription")
        .says(&["1000:1", "not a positive integer"]);
    let text = leaf_spine("spines = 0\n");
    invalid("spines0.toml", &text)
        .at(pos(&text, "spines = 0", "0"))
        .field("topology.spines")
        .says(&["at least 1", "got 0"]);
}

fn sized(hosts: u32, radix: u32) -> String {
    with_topology(&format!(
        "[topology]\nkind = \"sized\"\nhosts = {hosts}\nradix = {radix}\nhost_link = {{ rate = \"100Gbps\" }}\nfabric_link = {{ rate = \"100Gbps\" }}\n"
    ))
}

#[test]
fn sized_topology_too_large_for_radix() {
    let text = sized(100_000, 4);
    invalid("sized.toml", &text)
        .at(pos(&text, "hosts = 100000", "100000"))
        .field("topology.hosts")
        .says(&["100000 hosts do not fit radix-4 switches", "maximum is 16 hosts"]);
    let text = sized(2000, 8);
    invalid("sized8.toml", &text)
        .field("topology.hosts")
        .says(&["2000 hosts", "radix-8", "maximum is 128 hosts"]);
    let text = sized(200_000, 64);
    invalid("sized_max.toml", &text)
        .at(pos(&text, "hosts = 200000", "200000"))
        .field("topology.hosts")
        .says(&["at most 131072 hosts"]);
    // An odd radix: the message names the radix (the position is that of `hosts` today).
    let text = sized(16, 1);
    invalid("sized_radix.toml", &text)
        .within(line_of(&text, "hosts = 16")..=line_of(&text, "radix = 1"), "topology")
        .says(&["radix must be even", "got 1"]);
}

#[test]
fn bad_mtu_header_and_latency() {
    let text = edit("\"4KiB\"", "\"0B\"");
    invalid("mtu0.toml", &text)
        .at(pos(&text, "mtu = ", "\"0B\""))
        .field("fabric.mtu")
        .says(&["expected 1B..=65536B", "got 0B"]);
    let text = edit("\"4KiB\"", "0");
    invalid("mtu0_int.toml", &text)
        .at(pos(&text, "mtu = ", "0"))
        .field("fabric.mtu")
        .says(&["got 0B"]);
    let text = edit("\"4KiB\"", "\"1MiB\"");
    invalid("mtu_big.toml", &text)
        .field("fabric.mtu")
        .says(&["expected 1B..=65536B", "got 1048576B"]);
    let text = edit("mtu = \"4KiB\"\n", "mtu = \"4KiB\"\nheader = \"2KiB\"\n");
    invalid("header.toml", &text)
        .at(pos(&text, "header = ", "\"2KiB\""))
        .field("fabric.header")
        .says(&["at most 1024B", "got 2048B"]);
    let text = edit("\"500ns\"", "\"2ms\"");
    invalid("switch_latency.toml", &text)
        .at(pos(&text, "switch_latency = ", "\"2ms\""))
        .field("fabric.switch_latency")
        .says(&["at most 1ms", "got 2ms"]);
}

#[test]
fn buffer_smaller_than_one_packet() {
    let text = edit("size = \"512KiB\"", "size = \"4KiB\"");
    // One packet is the 4 KiB MTU plus the default 82 B header.
    invalid("small_buffer.toml", &text)
        .at(pos(&text, "size = \"4KiB\"", "\"4KiB\""))
        .field("fabric.buffer.size")
        .says(&["at least one packet (4178B)", "got 4096B"]);
}

fn poisson(load: &str, cdf: &str) -> String {
    with_workload(&format!(
        "[[workload]]\nkind = \"poisson\"\nload = {load}\ncdf = \"{cdf}\"\nduration = \"10us\"\n"
    ))
}

const GOOD_CDF: &[u8] = b"0 0\n1000 50\n2000 100\n";

#[test]
fn poisson_load_out_of_range() {
    for load in ["1.5", "0", "-0.5", "nan", "inf"] {
        let text = poisson(load, "cdf/good.txt");
        invalid_with("load.toml", &text, &[("cdf/good.txt", GOOD_CDF)])
            .at(pos(&text, "load = ", load))
            .field("workload[0].load")
            .says(&[
                "expected a load in (0, 1]",
                // As TOML writes it: `nan`, `inf` (never Rust's `NaN`).
                &format!("got {}", scenarios::wording::float_text(load.parse::<f64>().unwrap())),
            ]);
    }
    // A load given as a string is a type error.
    let text = poisson("\"30%\"", "cdf/good.txt");
    invalid_with("load_str.toml", &text, &[("cdf/good.txt", GOOD_CDF)])
        .within(
            line_of(&text, "[[workload]]")..=line_of(&text, "load = "),
            "workload[0]",
        )
        .says(&["\"30%\"", "expected a number"]);
}

#[test]
fn poisson_with_a_good_cdf_is_valid() {
    // The control for the CDF cases below: only the CDF file differs.
    let text = poisson("0.3", "cdf/good.txt");
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("cdf")).unwrap();
    std::fs::write(dir.path().join("cdf/good.txt"), GOOD_CDF).unwrap();
    let file = dir.path().join("poisson.toml");
    std::fs::write(&file, &text).unwrap();
    let (code, out, err) = validate(&file, false, &text);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(": ok ("), "{out}");
}

#[test]
fn missing_cdf_file() {
    let text = poisson("0.3", "cdf/missing.txt");
    invalid_with("cdf_missing.toml", &text, &[("cdf/good.txt", GOOD_CDF)])
        .at(pos(&text, "cdf = ", "\"cdf/missing.txt\""))
        .field("workload[0].cdf")
        .says(&["cannot read CDF file", "cdf/missing.txt"]);
    // A directory where the CDF file should be.
    let text = poisson("0.3", "cdf");
    invalid_with("cdf_dir.toml", &text, &[("cdf/good.txt", GOOD_CDF)])
        .at(pos(&text, "cdf = ", "\"cdf\""))
        .field("workload[0].cdf")
        .says(&["cannot read CDF file"]);
}

#[test]
fn malformed_cdf_file() {
    let cases: [(&[u8], &[&str]); 5] = [
        (b"0 0\n1000 x\n", &["line 2", "cumulative percent", "`x`"]),
        (b"0 0\n2000 50\n1000 100\n", &["line 3", "sizes must not decrease"]),
        (b"0 0\n1000 60\n2000 50\n", &["line 3", "percents must not decrease"]),
        (b"0 0 7\n", &["line 1", "expected 2 whitespace-separated numbers"]),
        (b"0 10\n1000 100\n", &["line 1", "first point", "0"]),
    ];
    for (cdf, words) in cases {
        let text = poisson("0.3", "cdf/bad.txt");
        invalid_with("cdf_bad.toml", &text, &[("cdf/bad.txt", cdf)])
            .at(pos(&text, "cdf = ", "\"cdf/bad.txt\""))
            .field("workload[0].cdf")
            .says(&["cdf/bad.txt"])
            .says(words);
    }
}

#[test]
fn bad_run_limits() {
    let text = edit("\"1ms\"", "\"0ns\"");
    invalid("end0.toml", &text)
        .at(pos(&text, "end_time = ", "\"0ns\""))
        .field("run.end_time")
        .says(&["expected a time in (0, 3600s]", "got 0s"]);
    let text = edit("\"1ms\"", "\"3601s\"");
    invalid("end_long.toml", &text)
        .field("run.end_time")
        .says(&["(0, 3600s]", "3601s"]);
    let text = edit("end_time = \"1ms\"", "end_time = \"1ms\"\nmax_events = 0");
    invalid("events0.toml", &text)
        .at(pos(&text, "max_events = 0", "0"))
        .field("run.max_events")
        .says(&["at least 1 event"]);
    let text = edit("end_time = \"1ms\"", "end_time = \"1ms\"\nmax_events = 549755813889");
    invalid("events_many.toml", &text)
        .at(pos(&text, "max_events = 549755813889", "549755813889"))
        .field("run.max_events")
        .says(&["at most 549755813888", "got 549755813889"]);
    let text = edit("end_time = \"1ms\"", "end_time = \"1ms\"\nwall_clock_s = 0");
    invalid("wall0.toml", &text)
        .at(pos(&text, "wall_clock_s = 0", "0"))
        .field("run.wall_clock_s")
        .says(&["at least 1 second"]);
}

fn custom(links: &str) -> String {
    with_topology(&format!(
        "[topology]\nkind = \"custom\"\nhosts = 2\nswitches = 1\nlinks = [\n{links}]\n"
    ))
}

fn custom_flows(links: &str) -> String {
    let t = custom(links);
    let start = t.find("flows = [").unwrap();
    let end = t.find("]\n\n[run]").unwrap();
    format!(
        "{}flows = [{{ src = 0, dst = 1, size = \"4KiB\" }}{}",
        &t[..start],
        &t[end..]
    )
}

const H0: &str = "  { a = \"h0\", b = \"s0\", rate = \"100Gbps\" },\n";

#[test]
fn custom_topology_template_is_valid() {
    let text = custom_flows(&format!("{H0}  {{ a = \"h1\", b = \"s0\", rate = \"100Gbps\" }},\n"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("custom.toml");
    std::fs::write(&file, &text).unwrap();
    let (code, out, err) = validate(&file, false, &text);
    assert_eq!(code, 0, "{err}\n{text}");
    assert!(out.contains("custom (2 hosts, 1 switches, 2 links); 1 flows"), "{out}");
}

#[test]
fn custom_topology_bad_endpoint() {
    for (a, b, which, bad) in [
        ("x3", "s0", "a", "x3"),
        ("h1", "s5", "b", "s5"),
        ("h7", "s0", "a", "h7"),
        ("h", "s0", "a", "h"),
        ("", "s0", "a", ""),
        ("h1", "s-1", "b", "s-1"),
    ] {
        let link = format!("  {{ a = \"{a}\", b = \"{b}\", rate = \"100Gbps\" }},\n");
        let text = custom_flows(&format!("{H0}{link}"));
        let value = if which == "a" {
            format!("a = \"{a}\"")
        } else {
            format!("b = \"{b}\"")
        };
        invalid("endpoint.toml", &text)
            .at(pos(&text, &value, "\""))
            .field(&format!("topology.links[1].{which}"))
            .says(&[
                "expected \"h<i>\" (host, i < 2) or \"s<i>\" (switch, i < 1)",
                &format!("got \"{bad}\""),
            ]);
    }
}

#[test]
fn custom_topology_non_ascii_endpoint_is_an_error_not_a_panic() {
    // Found by this suite: an endpoint starting with a multi-byte character made the endpoint
    // parser slice inside a character (the custom-topology builder split names at byte 1) and panic.
    let link = "  { a = \"é1\", b = \"s0\", rate = \"100Gbps\" },\n";
    let text = custom_flows(&format!("{H0}{link}"));
    invalid("endpoint_utf8.toml", &text)
        .at(pos(&text, "a = \"é1\"", "\""))
        .field("topology.links[1].a")
        .says(&["got \"é1\""]);
}

#[test]
fn custom_topology_host_with_two_links() {
    let link = "  { a = \"h0\", b = \"h1\", rate = \"100Gbps\" },\n";
    let text = custom_flows(&format!("{H0}{link}"));
    invalid("two_links.toml", &text)
        .at(pos(&text, link, "{"))
        .field("topology.links[1]")
        .says(&["host h0 has more than one link"]);
}

#[test]
fn custom_topology_other_errors() {
    // A link from a node to itself.
    let link = "  { a = \"s0\", b = \"s0\", rate = \"100Gbps\" },\n";
    let text = custom_flows(&format!("{H0}{link}"));
    invalid("self_link.toml", &text)
        .at(pos(&text, "b = \"s0\", rate = \"100Gbps\" },\n]", "\""))
        .field("topology.links[1].b")
        .says(&["two different nodes"]);
    // A host without a link.
    let text = custom_flows(H0);
    invalid("no_link.toml", &text)
        .at(pos(&text, "links = [", "["))
        .field("topology.links")
        .says(&["host h1 has no link"]);
    // Both delay and cable_m on a custom link.
    let link = "  { a = \"h1\", b = \"s0\", rate = \"100Gbps\", delay = \"5ns\", cable_m = 2 },\n";
    let text = custom_flows(&format!("{H0}{link}"));
    invalid("custom_delay.toml", &text)
        .at(pos(&text, "cable_m = 2", "2"))
        .field("topology.links[1].cable_m")
        .says(&["not both"]);
}

// ------------------------------------------------------------------------------------------
// File-level problems

#[test]
fn file_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nope.toml");
    refused(dir, file, "(no file)").nowhere().starts("file not found");
}

#[test]
fn file_is_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("adir.toml");
    std::fs::create_dir(&file).unwrap();
    refused(dir, file, "(a directory)").nowhere().starts("is a directory");
}

#[test]
fn file_too_large() {
    let limit = scenarios::diag::MAX_SCENARIO_BYTES as usize;
    assert_eq!(limit, 1 << 20);
    // A valid scenario padded with a comment to just over 1 MiB.
    let mut text = BASE.to_owned();
    text.push('#');
    text.push_str(&"x".repeat(limit + 1 - text.len() - 1));
    text.push('\n');
    assert_eq!(text.len(), limit + 1);
    invalid("big.toml", &text)
        .nowhere()
        .starts("file is too large")
        .says(&["1048577 bytes", "the limit is 1048576 bytes"]);
    // Exactly at the limit it is read (and valid).
    text.truncate(limit - 1);
    text.push('\n');
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("limit.toml");
    std::fs::write(&file, &text).unwrap();
    let (code, _, err) = validate(&file, false, "(1 MiB scenario)");
    assert_eq!(code, 0, "{err}");
}

#[test]
fn file_not_utf8() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("latin1.toml");
    // "café" in Latin-1 on line 2: the byte 0xE9 is at column 12.
    let mut bytes = BASE.as_bytes().to_vec();
    let at = BASE.find("bad-input-base").unwrap();
    bytes.splice(at..at + "bad-input-base".len(), b"caf\xe9".iter().copied());
    std::fs::write(&file, &bytes).unwrap();
    refused(dir, file, "(Latin-1 scenario)")
        .at((2, 12))
        .starts("file is not valid UTF-8")
        .says(&[&format!("offset {}", at + 3)]);
}

// ------------------------------------------------------------------------------------------
// InfiniBand

/// `BASE` as an InfiniBand fabric with an `[fabric.infiniband]` table holding `ib_lines`.
fn ib_text(ib_lines: &str) -> String {
    let t = edit(
        "kind = \"ethernet\"\nmtu = \"4KiB\"\nswitch_latency = \"500ns\"\nbuffer = { kind = \"per_port_tail_drop\", size = \"512KiB\" }\n",
        &format!("kind = \"infiniband\"\nmtu = \"4KiB\"\n\n[fabric.infiniband]\n{ib_lines}\n"),
    );
    edit_text(&t, "rate = \"100Gbps\", cable_m = 3", "rate = \"hdr\", cable_m = 3")
}

#[test]
fn infiniband_base_is_valid() {
    let text = ib_text("vls = 2");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ib.toml");
    std::fs::write(&file, &text).unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = scenarios::cli::run(
        ["fabricsim", "validate", file.to_str().unwrap()].map(std::ffi::OsString::from),
        &mut out,
        &mut err,
        false,
    );
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&err));
}

#[test]
fn infiniband_values_out_of_range() {
    let cases: &[(&str, &str, &str, &[&str])] = &[
        ("vls.toml", "vls = 16", "fabric.infiniband.vls", &["1..=15", "16"]),
        (
            "sl2vl_len.toml",
            "sl2vl = [0, 0]",
            "fabric.infiniband.sl2vl",
            &["16 entries", "got 2"],
        ),
        (
            "sl2vl_vl.toml",
            "vls = 2\nsl2vl = [0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]",
            "fabric.infiniband.sl2vl",
            &["SL 2 maps to VL 2", "0..2"],
        ),
        (
            "buf64.toml",
            "vl_buffer = \"100000B\"",
            "fabric.infiniband.vl_buffer",
            &["64-byte credits"],
        ),
        (
            "bufsmall.toml",
            "vl_buffer = \"4KiB\"",
            "fabric.infiniband.vl_buffer",
            &["one 4122B packet"],
        ),
        (
            "hoq.toml",
            "hoq_life_leaf = 40",
            "fabric.infiniband.hoq_life_leaf",
            &["0..=31", "40"],
        ),
        (
            "pool.toml",
            "shared_pool = \"1000B\"",
            "fabric.infiniband.shared_pool",
            &["64-byte credits", "1000B"],
        ),
        (
            "cc.toml",
            "cc = { threshold = 16 }",
            "fabric.infiniband.cc.threshold",
            &["0..=15", "16"],
        ),
        (
            "vlarb.toml",
            "vls = 2\nvl_arbitration = { low = [{ vl = 0, weight = 4 }] }",
            "fabric.infiniband.vl_arbitration",
            &["VL 1", "non-zero weight"],
        ),
    ];
    for (name, lines, field, words) in cases {
        let text = ib_text(lines);
        invalid(name, &text)
            .within(line_of(&text, "[fabric]")..=line_of(&text, "[[workload]]"), field)
            .says(words);
    }
}

#[test]
fn infiniband_structure_errors() {
    // Unknown key inside [fabric.infiniband]: exact position.
    let text = ib_text("vlz = 2");
    invalid("ib_key.toml", &text)
        .at(pos(&text, "vlz = 2", "vlz"))
        .field("fabric.infiniband.vlz")
        .says(&["unknown field `vlz`", "`vls`"]);
    // IB MTU values only.
    let text = edit_text(&ib_text(""), "mtu = \"4KiB\"", "mtu = \"3000B\"");
    invalid("ib_mtu.toml", &text)
        .field("fabric.mtu")
        .says(&["256B, 512B, 1KiB, 2KiB, 4KiB", "3000B"]);
    // [fabric.infiniband] needs kind = "infiniband".
    let text = edit(
        "buffer = { kind = \"per_port_tail_drop\", size = \"512KiB\" }\n",
        "\n[fabric.infiniband]\nvls = 2\n",
    );
    invalid("ib_eth.toml", &text)
        .field("fabric.infiniband")
        .says(&["kind = \"infiniband\""]);
    // An Ethernet buffer on an InfiniBand fabric.
    let text = edit_text(
        &ib_text(""),
        "mtu = \"4KiB\"",
        "mtu = \"4KiB\"\nbuffer = { kind = \"per_port_tail_drop\", size = \"512KiB\" }",
    );
    invalid("ib_buffer.toml", &text)
        .field("fabric.buffer")
        .says(&["vl_buffer"]);
    // A bad IB rate preset.
    let text = edit_text(&ib_text(""), "rate = \"hdr\"", "rate = \"hdr_3x\"");
    invalid("ib_rate.toml", &text).says(&["hdr_3x"]);
}

#[test]
fn roce_table_needs_rocev2_and_valid_priorities() {
    const BUF: &str = "buffer = { kind = \"per_port_tail_drop\", size = \"512KiB\" }";
    let roce = |table: &str| edit_text(&edit("\"ethernet\"", "\"rocev2\""), BUF, table);
    let text = edit(BUF, "[fabric.roce]\nbuffer = \"1MiB\"");
    invalid("roce_on_ethernet.toml", &text)
        .field("fabric.roce")
        .says(&["needs kind = \"rocev2\""]);
    let text = roce("[fabric.roce]\nlossless = [3]\nlossy = [3]");
    invalid("roce_both.toml", &text)
        .field("fabric.roce.lossy")
        .says(&["both lossless and lossy"]);
    let text = roce("[fabric.roce]\nbogus = 1");
    invalid("roce_typo.toml", &text).says(&["unknown field `bogus`"]);
    // A workload without a class takes the lowest lossless priority; class 5 is neither.
    let text = edit_text(
        &roce("[fabric.roce]\nlossy = [6]"),
        "kind = \"flows\"",
        "kind = \"flows\"\nclass = 5",
    );
    invalid("roce_class.toml", &text)
        .field("workload[0].class")
        .says(&["lossless or lossy"]);
}

/// Issue 15: a RoCEv2 buffer too small for the headroom exited 1 with `invalid engine
/// configuration: switch node N ...` and no location.
#[test]
fn roce_buffer_too_small_for_the_headroom_is_located() {
    const BUF: &str = "buffer = { kind = \"per_port_tail_drop\", size = \"512KiB\" }";
    let roce = |table: &str| edit_text(&edit("\"ethernet\"", "\"rocev2\""), BUF, table);
    let text = roce("[fabric.roce]\nbuffer = \"9B\"");
    invalid("roce_small.toml", &text)
        .at(pos(&text, "buffer = ", "\"9B\""))
        .field("fabric.roce.buffer")
        .says(&["needs a buffer of at least", "headroom", "the buffer is 9 B"]);
    // Without `buffer`, a headroom too large for the default buffer points at `headroom`.
    let text = roce("[fabric.roce]\nheadroom = \"100MiB\"");
    invalid("roce_headroom.toml", &text)
        .at(pos(&text, "headroom = ", "\"100MiB\""))
        .field("fabric.roce.headroom")
        .says(&["needs a buffer of at least"]);
    // A buffer that holds them all is valid.
    let text = roce("[fabric.roce]\nbuffer = \"4MiB\"");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("roce_ok.toml");
    std::fs::write(&file, &text).unwrap();
    let (code, _, err) = validate(&file, false, &text);
    assert_eq!(code, 0, "{err}");
}

/// Issue 14: PFC and timer values the engine could not honour panicked or never ended. Each
/// is now refused at its key with the valid range: `pause_quanta = 1` under an incast (the
/// PAUSE expired between refreshes: "losslessness broken"), a `pfc_refresh` longer than the
/// pause time (the same), a `pfc_refresh` or `rate_sample` of 1 ps (events without end), and
/// `SimTime` overflows from a huge link delay, PFC watchdog or CNP interval. The range for
/// `pause_quanta` is in bit times: 2 x (4178 B frame + 84 B PFC frame) x 8 / 512 = 133.2, so
/// 134 here, at any rate; the PFC refresh range is [one 4178 B frame at 100 Gb/s,
/// pause time - one frame - one PFC frame] = [334.24ns, 335.19824us].
#[test]
fn roce_pfc_and_timer_values_out_of_range_are_refused_with_the_range() {
    const BUF: &str = "buffer = { kind = \"per_port_tail_drop\", size = \"512KiB\" }";
    let roce = |table: &str| {
        edit_text(
            &edit("\"ethernet\"", "\"rocev2\""),
            BUF,
            &format!("[fabric.roce]\nbuffer = \"4MiB\"\nlossless = [3]\nlossy = [0, 6]\n{table}"),
        )
    };
    let cases: [(&str, &str, &str, &[&str]); 9] = [
        (
            "pause_quanta = 1",
            "pause_quanta",
            "1",
            &["expected 134..=65535", "got 1"],
        ),
        ("pause_quanta = 133", "pause_quanta", "133", &["expected 134..=65535"]),
        (
            "pfc_refresh = \"1ms\"",
            "pfc_refresh",
            "\"1ms\"",
            &["expected a period in [334.24ns, 335.19824us]", "got 1ms"],
        ),
        (
            "pfc_refresh = \"1ps\"",
            "pfc_refresh",
            "\"1ps\"",
            &["expected a period in [334.24ns, 335.19824us]", "got 1ps"],
        ),
        (
            "pfc_refresh = \"18446744s\"",
            "pfc_refresh",
            "\"18446744s\"",
            &["expected a period in [334.24ns, 335.19824us]"],
        ),
        (
            "rate_sample = \"1ps\"",
            "rate_sample",
            "\"1ps\"",
            &["expected a period in [334.24ns, 3600s]", "got 1ps"],
        ),
        (
            "cnp_interval = \"18446744s\"",
            "cnp_interval",
            "\"18446744s\"",
            &["expected an interval in [0, 3600s]"],
        ),
        (
            "pfc_watchdog = \"18446744s\"",
            "pfc_watchdog",
            "\"18446744s\"",
            &["expected a window in (0, 3600s]"],
        ),
        (
            "pause_quanta = 100\npfc_refresh = \"100ns\"",
            "pause_quanta",
            "100",
            &["too short to refresh", "raise pause_quanta or remove pfc_refresh"],
        ),
    ];
    for (i, (table, key, value, says)) in cases.into_iter().enumerate() {
        let text = roce(table);
        let needle = format!("{key} = ");
        invalid(&format!("roce_timing{i}.toml"), &text)
            .at(pos(&text, &needle, value))
            .field(&format!("fabric.roce.{key}"))
            .says(says);
    }
    // The edges themselves are valid.
    for table in [
        "pause_quanta = 134",
        "pfc_refresh = \"334.24ns\"",
        "pfc_refresh = \"335.19824us\"",
        "rate_sample = \"334.24ns\"",
        "cnp_interval = \"3600s\"",
    ] {
        let text = roce(table);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("edge_ok.toml");
        std::fs::write(&file, &text).unwrap();
        let (code, _, err) = validate(&file, false, &text);
        assert_eq!(code, 0, "{table}: {err}");
    }
    // A link delay whose picoseconds would overflow the headroom arithmetic.
    let text = edit("cable_m = 10 }", "delay = \"18446744s\" }");
    invalid("huge_delay.toml", &text)
        .at(pos(&text, "fabric_link = ", "\"18446744s\""))
        .field("topology.fabric_link.delay")
        .says(&["expected a one-way delay of at most 1s", "got 18446744s"]);
}

/// Issue 14: a type error inside a `kind`-tagged table named the table (`topology`, at its
/// header) instead of the key. Now the key and its value's position, in `[topology]`,
/// `[[workload]]` and `fabric.buffer` alike.
#[test]
fn type_errors_inside_tagged_tables_name_the_key() {
    let text = edit("k = 4", "k = \"four\"");
    invalid("topology_k.toml", &text)
        .at(pos(&text, "\nk = ", "\"four\""))
        .field("topology.k")
        .says(&["\"four\"", "expected an integer"]);
    let text = edit("kind = \"flows\"", "kind = \"flows\"\nclass = \"three\"");
    invalid("workload_class.toml", &text)
        .at(pos(&text, "class = ", "\"three\""))
        .field("workload[0].class")
        .says(&["\"three\"", "expected an integer"]);
    let text = edit("size = \"512KiB\" }", "size = 512.5 }");
    invalid("buffer_size.toml", &text)
        .at(pos(&text, "size = 512.5", "512.5"))
        .field("fabric.buffer.size")
        .says(&["512.5"]);
}

/// Issue 14/15: `validate` of a cluster of 4,096 HGX servers tried to allocate 15 GB of route
/// tables and aborted. The tables' size is estimated from the topology and the flows first (one
/// column per leaf switch a flow reaches) and refused over `run.memory_limit` (default 1 GiB),
/// before anything is allocated for them; the limit is settable. (This test returns in well
/// under a second only because nothing is allocated.)
#[test]
fn route_tables_over_the_memory_limit_are_refused_before_allocation() {
    // A permutation reaches every GPU's hub: 32,768 leaves.
    let huge = with_topology(
        "[topology]\nkind = \"cluster\"\nservers = 4096\nserver = \"hgx_h100\"\nk = 64\n\
         nic_link = { rate = \"400Gbps\", cable_m = 5 }\nfabric_link = { rate = \"400Gbps\", cable_m = 20 }\n",
    );
    let workload = "[[workload]]\nkind = \"flows\"\nflows = [\n  { src = 0, dst = 1, size = \"64KiB\" },\n  { src = 2, dst = 3, size = \"64KiB\" },\n]\n";
    let text = edit_text(
        &huge,
        workload,
        "[[workload]]\nkind = \"permutation\"\nsize = \"64KiB\"\n",
    );
    invalid("huge_cluster.toml", &text).field("topology").says(&[
        "the route tables of this fabric would take about",
        "GiB",
        "32768 leaf switches the flows reach",
        "more than run.memory_limit = 1GiB",
    ]);
    // The k=4 fat-tree's flows 0 -> 1 and 2 -> 3 reach two leaves: 20 forwarding nodes x 2
    // leaves x 4 B = 160 B.
    let text = edit("end_time = \"1ms\"", "end_time = \"1ms\"\nmemory_limit = \"128B\"");
    invalid("small_limit.toml", &text)
        .at(pos(&text, "memory_limit = ", "\"128B\""))
        .field("run.memory_limit")
        .says(&[
            "(20 forwarding nodes x 2 leaf switches the flows reach x 4 B)",
            "more than run.memory_limit = 128B",
        ]);
    let text = edit("end_time = \"1ms\"", "end_time = \"1ms\"\nmemory_limit = \"160B\"");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("limit_ok.toml");
    std::fs::write(&file, &text).unwrap();
    let (code, _, err) = validate(&file, false, &text);
    assert_eq!(code, 0, "{err}");
}

/// Issue 14: a CDF file that is `/dev/zero` was read to 2 GB before the error, and a FIFO hung
/// `validate` forever. Both are refused from their metadata, before they are opened.
#[test]
fn cdf_that_is_a_device_or_a_fifo_is_refused_before_reading() {
    for dev in ["/dev/zero", "/dev/urandom"] {
        if !Path::new(dev).exists() {
            continue;
        }
        let text = poisson("0.3", dev);
        invalid("cdf_dev.toml", &text)
            .at(pos(&text, "cdf = ", &format!("\"{dev}\"")))
            .field("workload[0].cdf")
            .says(&["cannot read CDF file", dev, "is a character device, not a regular file"]);
    }
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("cdf.fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("mkfifo is not available: FIFO case skipped");
        return;
    }
    let text = poisson("0.3", fifo.to_str().unwrap());
    let file = dir.path().join("cdf_fifo.toml");
    std::fs::write(&file, &text).unwrap();
    // Nobody writes to the FIFO: opening it would block forever, so this returns only if the
    // loader refuses it without opening it.
    refused(dir, file, &text)
        .field("workload[0].cdf")
        .says(&["is a FIFO (named pipe), not a regular file"]);
}

/// The scenario file itself: devices and FIFOs are refused the same way.
#[test]
fn scenario_file_that_is_a_device_or_a_fifo_is_refused() {
    if Path::new("/dev/zero").exists() {
        let (code, _, err) = validate(Path::new("/dev/zero"), false, "");
        assert_eq!(code, 2, "{err}");
        assert_eq!(
            err.trim_end(),
            "error: /dev/zero: is a character device, not a regular file"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("s.toml");
    if std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success())
    {
        let (code, _, err) = validate(&fifo, false, "");
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("is a FIFO (named pipe), not a regular file"), "{err}");
    }
}

/// Issue 14: every DCQCN/TIMELY parameter of `[fabric.roce.cc]`, the static XOFF threshold and
/// the IB CC (Annex A10) values are range-checked at their key, the message giving the range.
/// Timers have a floor (1 us for DCQCN's: a 1 ps rate-increase timer is an event storm) and a
/// ceiling (an hour: no `SimTime` overflow from "18446744s").
#[test]
fn congestion_control_parameters_out_of_range_are_refused_at_their_key() {
    const BUF: &str = "buffer = { kind = \"per_port_tail_drop\", size = \"512KiB\" }";
    let roce = |table: &str| {
        edit_text(
            &edit("\"ethernet\"", "\"rocev2\""),
            BUF,
            &format!("[fabric.roce]\nbuffer = \"4MiB\"\n\n{table}"),
        )
    };
    let dcqcn = |line: &str| roce(&format!("[fabric.roce.cc]\nkind = \"dcqcn\"\n{line}"));
    let timely = |line: &str| roce(&format!("[fabric.roce.cc]\nkind = \"timely\"\n{line}"));
    type Case<'a> = (String, &'a str, &'a str, &'a [&'a str]);
    let cases: Vec<Case> = vec![
        (
            dcqcn("g = 0.0"),
            "cc.g",
            "0.0",
            &["expected a fraction in [1/65536, 1]", "got 0"],
        ),
        (dcqcn("g = 1.5"), "cc.g", "1.5", &["[1/65536, 1]", "got 1.5"]),
        (dcqcn("initial_alpha = -0.1"), "cc.initial_alpha", "-0.1", &["[0, 1]"]),
        (
            dcqcn("rate_increase_timer = \"1ps\""),
            "cc.rate_increase_timer",
            "\"1ps\"",
            &["expected a period in [1us, 3600s]", "event", "got 1ps"],
        ),
        (
            dcqcn("rate_increase_timer = \"18446744s\""),
            "cc.rate_increase_timer",
            "\"18446744s\"",
            &["[1us, 3600s]", "got 18446744s"],
        ),
        (
            dcqcn("alpha_timer = \"0s\""),
            "cc.alpha_timer",
            "\"0s\"",
            &["[1us, 3600s]", "got 0s"],
        ),
        (
            dcqcn("byte_counter = \"10B\""),
            "cc.byte_counter",
            "\"10B\"",
            &["expected 0B (off) or a size in [64B, 1TiB]", "got 10B"],
        ),
        (dcqcn("fast_recovery = 1000"), "cc.fast_recovery", "1000", &["0..=255"]),
        (
            dcqcn("rate_ai = \"200Gbps\""),
            "cc.rate_ai",
            "\"200Gbps\"",
            &["expected a rate in [1bps, 100Gbps]", "got 200Gbps"],
        ),
        (
            dcqcn("min_rate = \"1Tbps\""),
            "cc.min_rate",
            "\"1Tbps\"",
            &["[1bps, 100Gbps]"],
        ),
        (
            dcqcn("min_decrease_pct = 101"),
            "cc.min_decrease_pct",
            "101",
            &["0..=100"],
        ),
        (
            dcqcn("decrease_period = \"7200s\""),
            "cc.decrease_period",
            "\"7200s\"",
            &["expected a period in [0s, 3600s]", "got 7200s"],
        ),
        (timely("beta = 1.5"), "cc.beta", "1.5", &["[0, 1]", "got 1.5"]),
        (
            timely("t_low = \"2ms\""),
            "cc.t_low",
            "\"2ms\"",
            &["expected t_low < t_high", "t_high = 1ms"],
        ),
        (timely("min_rtt = \"0s\""), "cc.min_rtt", "\"0s\"", &["[1ns, 3600s]"]),
        (
            roce("xoff_threshold = \"1B\""),
            "xoff_threshold",
            "\"1B\"",
            &["expected a size in [4178B, 1GiB]", "got 1B"],
        ),
        (
            roce("xoff_threshold = \"64KiB\"\nalpha_shift = 2"),
            "xoff_threshold",
            "\"64KiB\"",
            &["not both"],
        ),
        (
            dcqcn("clamp_target_rate = \"sometimes\""),
            "cc.clamp_target_rate",
            "\"sometimes\"",
            &["expected one of `always`, `after_increase`, `after_byte_increase`"],
        ),
        (dcqcn("g = \"x\""), "cc.g", "\"x\"", &["expected a number"]),
        (
            dcqcn("beta = 0.5"),
            "cc.beta",
            "0.5",
            &["`beta` is a TIMELY parameter; kind = \"dcqcn\" does not take it"],
        ),
        (
            timely("rate_ai = \"1Gbps\""),
            "cc.rate_ai",
            "\"1Gbps\"",
            &["`rate_ai` is a DCQCN parameter"],
        ),
        (
            dcqcn("preset = \"hpcc_sim\""),
            "cc.preset",
            "\"hpcc_sim\"",
            &["expected \"paper\" or \"firmware\" with kind = \"dcqcn\", got \"hpcc_sim\""],
        ),
        (
            roce("cnp_interval = \"10us\"\n[fabric.roce.cc]\nkind = \"dcqcn\"\ncnp_interval = \"20us\""),
            "cc.cnp_interval",
            "\"20us\"",
            &["not both"],
        ),
    ];
    for (i, (text, key, value, says)) in cases.iter().enumerate() {
        let leaf = key.rsplit('.').next().unwrap();
        let bad = invalid(&format!("cc{i}.toml"), text);
        bad.field(&format!("fabric.roce.{key}")).says(says);
        let needle = if text.matches(&format!("{leaf} = ")).count() == 1 {
            format!("{leaf} = ")
        } else {
            format!("{leaf} = {value}")
        };
        bad.at(pos(text, &needle, value));
    }
    // The edges are valid, and so is every key at once.
    for text in [
        dcqcn("g = 1.52587890625e-5\nrate_increase_timer = \"1us\"\nalpha_timer = \"3600s\"\nbyte_counter = \"0B\""),
        dcqcn(
            "preset = \"firmware\"\ng = 0.00390625\ninitial_alpha = 1.0\nalpha_timer = \"50us\"\n\
             rate_increase_timer = \"50us\"\nbyte_counter = \"64B\"\nfast_recovery = 255\nrate_ai = \"100Gbps\"\n\
             rate_hai = \"1Gbps\"\nmin_rate = \"1bps\"\nmin_decrease_pct = 100\ndecrease_period = \"0s\"\n\
             clamp_target_rate = \"always\"\nhyper_halves = true\ncnp_interval = \"0s\"",
        ),
        timely(
            "preset = \"hpcc_sim\"\nmin_rate = \"1Gbps\"\ndelta = \"10Mbps\"\newma_alpha = 0.02\nbeta = 0.8\n\
             t_low = \"0s\"\nt_high = \"1ms\"\nmin_rtt = \"1ns\"\nhai_threshold = 0\nsegment = \"0B\"",
        ),
        roce("xoff_threshold = \"4178B\""),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cc_ok.toml");
        std::fs::write(&file, &text).unwrap();
        let (code, _, err) = validate(&file, false, &text);
        assert_eq!(code, 0, "{text}\n{err}");
    }

    // IB CC (Annex A10).
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "cc = { ccti_increase = 0 }",
            "fabric.infiniband.cc.ccti_increase",
            &["1..=255"],
        ),
        (
            "cc = { ccti_limit = 20000 }",
            "fabric.infiniband.cc.ccti_limit",
            &["0..=16383", "20000"],
        ),
        (
            "cc = { ccti_min = 200 }",
            "fabric.infiniband.cc.ccti_min",
            &["at most ccti_limit", "200"],
        ),
        (
            "cc = { ccti_timer = \"1ns\" }",
            "fabric.infiniband.cc.ccti_timer",
            &["[1.024us, 67.10784ms]", "1.024us", "got 1ns"],
        ),
        (
            "cc = { cct = [] }",
            "fabric.infiniband.cc.cct",
            &["1..=16384 entries", "got 0"],
        ),
        (
            "cc = { ccti_limit = 3, cct = [0, 1] }",
            "fabric.infiniband.cc.cct",
            &["at least ccti_limit + 1 = 4 entries", "got 2"],
        ),
    ];
    for (i, (lines, field, words)) in cases.iter().enumerate() {
        let text = ib_text(lines);
        invalid(&format!("ibcc{i}.toml"), &text)
            .within(line_of(&text, "[fabric]")..=line_of(&text, "[[workload]]"), field)
            .field(field)
            .says(words);
    }
    let text = ib_text("cc = { cct = [0, 32769, 32770, 49155], ccti_timer = \"67.10784ms\", ccti_increase = 255 }");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ibcc_ok.toml");
    std::fs::write(&file, &text).unwrap();
    let (code, _, err) = validate(&file, false, &text);
    assert_eq!(code, 0, "{text}\n{err}");
}

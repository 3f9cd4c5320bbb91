//! Error reporting for the scenario loader.
//!
//! Every problem with a scenario file, from a missing file through a TOML syntax error to a
//! semantic check after parsing, becomes one [`ScenarioError`]. Its `Display` is a single plain
//! line for tests and logs:
//!
//! ```text
//! fabric.toml:3:8: fabric.link.rate: invalid rate "100Gbs": expected a number followed by ...
//! ```
//!
//! and, through [`miette::Diagnostic`], it carries the source text and span so that the CLI
//! can render the offending line with a label under it.

use std::ops::Range;
use std::path::Path;

use miette::{NamedSource, SourceSpan};

/// Largest scenario file accepted by [`read_scenario_file`] (1 MiB).
pub const MAX_SCENARIO_BYTES: u64 = 1024 * 1024;

/// A problem with a scenario file, located as precisely as it is known.
///
/// `Display` is one line: `{file}:{line}:{col}: {field}: {message}`, where the position is
/// left out when unknown (`{file}: {field}: {message}`) and so is the field
/// (`{file}:{line}:{col}: {message}`).
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{}", self.summary())]
#[diagnostic(code(fabricsim::scenario))]
pub struct ScenarioError {
    /// Everything but the source, boxed to keep `Result<_, ScenarioError>` small.
    details: Box<Details>,
    #[source_code]
    source_code: NamedSource<String>,
    #[label("{}", details.message)]
    span: Option<SourceSpan>,
}

#[derive(Debug)]
struct Details {
    file: String,
    /// 1-based line and column (in characters) of the start of the span.
    position: Option<(usize, usize)>,
    field: Option<String>,
    message: String,
}

impl ScenarioError {
    /// An error at byte range `span` of `text` (clamped to the text), about `field` if known.
    fn at(file: &str, text: &str, span: Option<Range<usize>>, field: Option<String>, message: String) -> Self {
        let span = span.map(|r| clamp_span(text, r));
        ScenarioError {
            details: Box::new(Details {
                file: file.to_owned(),
                position: span.as_ref().map(|r| line_col(text, r.start)),
                field,
                message: crate::wording::clip_quoted(&message),
            }),
            source_code: NamedSource::new(file, text.to_owned()),
            span: span.map(SourceSpan::from),
        }
    }

    /// An error about the file as a whole (not found, too large, ...): no text, no position.
    fn file_level(file: &str, message: String) -> Self {
        ScenarioError::at(file, "", None, None, message)
    }

    /// The file name as given (a display path).
    pub fn file(&self) -> &str {
        &self.details.file
    }

    /// 1-based line, if the error has a position.
    pub fn line(&self) -> Option<usize> {
        self.details.position.map(|(l, _)| l)
    }

    /// 1-based column in characters, if the error has a position.
    pub fn column(&self) -> Option<usize> {
        self.details.position.map(|(_, c)| c)
    }

    /// The field path, e.g. `fabric.link.rate`, `workload[2].size` or `(top level)`.
    pub fn field(&self) -> Option<&str> {
        self.details.field.as_deref()
    }

    /// What was wrong / what was expected, one line.
    pub fn message(&self) -> &str {
        &self.details.message
    }

    /// Byte range in the source text, if known.
    pub fn span(&self) -> Option<Range<usize>> {
        self.span.map(|s| s.offset()..s.offset() + s.len())
    }

    /// The one-line form used by `Display`.
    fn summary(&self) -> String {
        let d = &self.details;
        let mut out = d.file.clone();
        if let Some((line, col)) = d.position {
            out.push_str(&format!(":{line}:{col}"));
        }
        if let Some(field) = &d.field {
            out.push_str(": ");
            out.push_str(field);
        }
        out.push_str(": ");
        out.push_str(&d.message);
        out
    }
}

/// Longest piece of a user's value quoted in a message, in characters.
pub const MAX_QUOTED_CHARS: usize = 60;

/// `s` cut to [`MAX_QUOTED_CHARS`] characters, with `...` when something was cut.
pub fn short_quote(s: &str) -> String {
    let mut out: String = s.chars().take(MAX_QUOTED_CHARS).collect();
    if out.len() < s.len() {
        out.push_str("...");
    }
    out
}

/// Clamps `r` to `text`, on character boundaries, with `start <= end`.
fn clamp_span(text: &str, r: Range<usize>) -> Range<usize> {
    let floor = |mut i: usize| {
        i = i.min(text.len());
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let start = floor(r.start);
    let end = floor(r.end).max(start);
    start..end
}

/// 1-based (line, column) of byte `offset` in `text`; the column counts characters.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before.matches('\n').count() + 1;
    let col = before[line_start..].chars().count() + 1;
    (line, col)
}

/// Makes an error message one line: drops a `TOML parse error at ...` header and source
/// snippet lines (`  |`, `3 | ...`, `  |   ^^^`) if present, and joins what is left with `; `.
fn one_line(message: &str) -> String {
    let is_snippet = |l: &str| {
        let t = l.trim_start();
        let gutter = t.trim_start_matches(|c: char| c.is_ascii_digit());
        t.starts_with("TOML parse error at line") || gutter.trim_start().starts_with('|')
    };
    let parts: Vec<&str> = message
        .lines()
        .filter(|l| !is_snippet(l))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if parts.is_empty() {
        return "invalid TOML".to_owned();
    }
    parts.join("; ")
}

/// Shows an empty or `.` path as `(top level)`.
fn field_name(path: &str) -> String {
    if path.is_empty() || path == "." {
        "(top level)".to_owned()
    } else {
        path.to_owned()
    }
}

/// The field path from serde_path_to_error (`fabric.link.rate`, `flows[1].size`), without the
/// private keys that `serde_spanned::Spanned` and TOML datetimes use internally.
fn field_path(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path {
        let name = match segment {
            Segment::Seq { index } => {
                out.push_str(&format!("[{index}]"));
                continue;
            }
            Segment::Map { key } if key.starts_with("$__") => continue,
            Segment::Map { key } => key.as_str(),
            Segment::Enum { variant } => variant.as_str(),
            Segment::Unknown => "?",
        };
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(name);
    }
    field_name(&out)
}

/// Parses `text` (the contents of `file`) as TOML into `T`.
///
/// TOML syntax errors are reported at their position, without a field. Type errors, unknown
/// fields (with `#[serde(deny_unknown_fields)]`), missing fields and unit errors are reported
/// with the position of the offending value and its field path (`flows[1].size`).
pub fn parse_toml<T: serde::de::DeserializeOwned>(file: &str, text: &str) -> Result<T, ScenarioError> {
    let de = toml::de::Deserializer::parse(text).map_err(|e| {
        let message = one_line(e.message());
        // The parser reports its recursion limit without a position: find the deep part.
        let span = e.span().or_else(|| {
            message
                .contains("recursion")
                .then(|| crate::wording::locate_deep_nesting(text).unwrap_or(0))
                .map(|at| at..at + 1)
        });
        let message = if message.contains("recursion") {
            format!(
                "tables, arrays or dotted keys nested too deeply (more than {} levels)",
                crate::wording::MAX_NESTING
            )
        } else {
            format!("TOML syntax error: {message}")
        };
        let field = span.as_ref().map(|s| crate::wording::syntax_field(text, s.start));
        ScenarioError::at(file, text, span, field, message)
    })?;
    serde_path_to_error::deserialize(de).map_err(|e| {
        let field = field_path(e.path());
        let inner = e.into_inner();
        let raw = one_line(inner.message());
        let (field, span) = match key_inside_tagged_table::<T>(text, &field, &raw) {
            Some((key, span)) => (key, Some(span)),
            None => (field, inner.span()),
        };
        let message = crate::wording::user_terms(&raw, Some(&field));
        ScenarioError::at(file, text, span, Some(field), message)
    })
}

/// The key a type error inside a `kind`-tagged table is about, and where its value is written.
///
/// serde buffers an internally tagged table (`[topology]`, `[[workload]]`, `fabric.buffer`)
/// before it looks at `kind`, so its errors name the table and point at it. The key is found
/// by taking each key out of that table in turn: the one whose absence turns the error into
/// "missing field" for it (or makes the table parse) is the culprit. Only on the error path;
/// `None` when the error is not a value's type inside such a table, or no single key explains it.
fn key_inside_tagged_table<T: serde::de::DeserializeOwned>(
    text: &str,
    field: &str,
    message: &str,
) -> Option<(String, Range<usize>)> {
    if ["missing field", "unknown field", "unknown variant", "duplicate"]
        .iter()
        .any(|m| message.starts_with(m))
        || message.contains("internally tagged")
    {
        return None;
    }
    let root: toml::Table = text.parse().ok()?;
    let mut probe = root.clone();
    let table = table_at_mut(&mut probe, field)?;
    if !table.contains_key("kind") {
        return None;
    }
    let keys: Vec<String> = table.keys().filter(|k| *k != "kind").cloned().collect();
    for key in keys {
        let mut edited = root.clone();
        table_at_mut(&mut edited, field)?.remove(&key);
        let edited = toml::to_string(&edited).ok()?;
        let explained = match toml::from_str::<T>(&edited) {
            Ok(_) => true,
            Err(e) => e.message().starts_with(&format!("missing field `{key}`")),
        };
        if explained {
            let path = format!("{field}.{key}");
            let span = crate::locate::span_of(text, &path)?;
            return Some((path, span));
        }
    }
    None
}

/// The steps of a field path `a.b[2].c` (keys and indices).
fn path_steps(field: &str) -> Vec<Result<&str, usize>> {
    let mut steps = Vec::new();
    for part in field.split('.') {
        let (key, rest) = part.split_once('[').map_or((part, ""), |(k, r)| (k, r));
        if !key.is_empty() {
            steps.push(Ok(key));
        }
        for index in rest.split('[') {
            if let Ok(i) = index.trim_end_matches(']').parse::<usize>() {
                steps.push(Err(i));
            }
        }
    }
    steps
}

/// The table at `field` (`a.b[2].c`) in `root`, if that path leads to one.
fn table_at_mut<'a>(root: &'a mut toml::Table, field: &str) -> Option<&'a mut toml::Table> {
    let mut current: &mut toml::Value = root.get_mut(match path_steps(field).first()? {
        Ok(key) => *key,
        Err(_) => return None,
    })?;
    for step in path_steps(field).into_iter().skip(1) {
        current = match step {
            Ok(key) => current.as_table_mut()?.get_mut(key)?,
            Err(i) => current.as_array_mut()?.get_mut(i)?,
        };
    }
    current.as_table_mut()
}

/// An error found after parsing (a dangling reference, an impossible combination ...).
///
/// `span` is the byte range of the offending value, as given by
/// `serde_spanned::Spanned::span()`; `field` is its path (an empty `field` is left out of the
/// message, `"."` is shown as `(top level)`).
pub fn semantic_error(
    file: &str,
    text: &str,
    span: Option<Range<usize>>,
    field: &str,
    message: impl Into<String>,
) -> ScenarioError {
    let field = (!field.is_empty()).then(|| field_name(field));
    ScenarioError::at(file, text, span, field, one_line(&message.into()))
}

/// Reads a scenario file as UTF-8 text, refusing directories, devices and FIFOs (before
/// opening them), files over [`MAX_SCENARIO_BYTES`] and invalid UTF-8 (reported at its line
/// and column).
pub fn read_scenario_file(path: &Path) -> Result<String, ScenarioError> {
    use crate::files::FileError;
    let file = path.display().to_string();
    let bytes = crate::files::read_limited(path, MAX_SCENARIO_BYTES).map_err(|e| {
        let message = match e {
            FileError::Directory => "is a directory, not a scenario file".to_owned(),
            e => e.to_string(),
        };
        ScenarioError::file_level(&file, message)
    })?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let text = String::from_utf8_lossy(e.as_bytes()).into_owned();
        // The lossy text equals the original up to `at`, where U+FFFD (3 bytes) now stands.
        ScenarioError::at(
            &file,
            &text,
            Some(at..at + char::REPLACEMENT_CHARACTER.len_utf8()),
            None,
            format!("file is not valid UTF-8 (invalid byte at offset {at})"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scenario shapes for the tests: serde must accept every field (`deny_unknown_fields`),
    /// though the tests read only some.
    #[allow(dead_code, reason = "fields parsed but not all read")]
    mod shapes {
        use crate::units::{RateSpec, SizeSpec, TimeSpec};
        use serde::Deserialize;
        use serde_spanned::Spanned;

        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub(super) struct TestScenario {
            pub(super) name: String,
            pub(super) fabric: TestFabric,
            #[serde(default)]
            pub(super) flows: Vec<TestFlow>,
        }

        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub(super) struct TestFabric {
            pub(super) switches: u32,
            pub(super) link: TestLink,
        }

        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub(super) struct TestLink {
            pub(super) rate: RateSpec,
            pub(super) latency: TimeSpec,
        }

        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub(super) struct TestFlow {
            pub(super) src: u32,
            pub(super) dst: Spanned<u32>,
            pub(super) size: SizeSpec,
        }
    }
    use shapes::TestScenario;

    const GOOD: &str = r#"name = "two-flows"

[fabric]
switches = 4

[fabric.link]
rate = "100Gbps"
latency = "500ns"

[[flows]]
src = 0
dst = 1
size = "4KiB"

[[flows]]
src = 1
dst = 99
size = "1.5MB"
"#;

    fn parse_err(text: &str) -> ScenarioError {
        match parse_toml::<TestScenario>("s.toml", text) {
            Ok(v) => panic!("should fail: {v:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn good_file_parses() {
        let s: TestScenario = parse_toml("s.toml", GOOD).unwrap();
        assert_eq!(s.fabric.link.rate.get().0, 100_000_000_000);
        assert_eq!(s.flows[1].size.get().0, 1_500_000);
        assert_eq!(&GOOD[s.flows[1].dst.span()], "99");
    }

    #[test]
    fn syntax_error() {
        let text = GOOD.replace("latency = \"500ns\"", "latency \"500ns\"");
        let e = parse_err(&text);
        assert_eq!(e.line(), Some(8));
        // The field of a syntax error is the table (and key) being written on that line.
        assert_eq!(e.field(), Some("fabric.link"));
        assert_eq!(
            e.to_string(),
            "s.toml:8:9: fabric.link: TOML syntax error: key with no value, expected `=`"
        );
        assert!(!e.to_string().contains('\n'));
    }

    #[test]
    fn syntax_error_unterminated_string() {
        let e = parse_err("name = \"abc\n");
        assert_eq!(e.line(), Some(1));
        assert!(!e.to_string().contains('\n'), "{e}");
        assert!(e.to_string().starts_with("s.toml:1:"), "{e}");
    }

    #[test]
    fn unknown_field() {
        let e = parse_err(&GOOD.replace("latency =", "latncy ="));
        assert_eq!(
            e.to_string(),
            "s.toml:8:1: fabric.link.latncy: unknown field `latncy`, expected `rate` or `latency`"
        );
        let e = parse_err(&GOOD.replace("switches = 4", "switches = 4\nswitchez = 5"));
        assert_eq!(
            e.to_string(),
            "s.toml:5:1: fabric.switchez: unknown field `switchez`, expected `switches` or `link`"
        );
        let e = parse_err(&format!("seed = 1\n{GOOD}"));
        assert_eq!(
            e.to_string(),
            "s.toml:1:1: seed: unknown field `seed`, expected one of `name`, `fabric`, `flows`"
        );
    }

    #[test]
    fn wrong_type() {
        let e = parse_err(&GOOD.replace("switches = 4", "switches = \"four\""));
        assert_eq!(
            e.to_string(),
            "s.toml:4:12: fabric.switches: found the string \"four\"; expected an integer in 0..=4294967295"
        );
        let e = parse_err(&GOOD.replace("dst = 99", "dst = -3"));
        assert_eq!(
            e.to_string(),
            "s.toml:17:7: flows[1].dst: the integer -3 is out of range; expected an integer in 0..=4294967295"
        );
    }

    #[test]
    fn deep_nesting_is_located() {
        let deep = format!("name = \"x\"\n[{}]\nx = 1\n", vec!["a"; 100].join("."));
        let e = parse_err(&deep);
        assert_eq!((e.line(), e.column()), (Some(2), Some(129)), "{e}");
        assert!(
            e.field().is_some_and(|f| f.starts_with("a.a.a") && f.len() <= 80),
            "{e}"
        );
        assert!(e.message().contains("nested too deeply"), "{e}");
    }

    #[test]
    fn long_values_are_quoted_short_and_big_integers_in_user_terms() {
        let long = "x".repeat(5000);
        let e = parse_err(&GOOD.replace("switches = 4", &format!("switches = \"{long}\"")));
        assert!(e.to_string().len() < 200, "{e}");
        assert!(
            e.message()
                .contains(&format!("\"{}...\"", "x".repeat(MAX_QUOTED_CHARS))),
            "{e}"
        );
        let e = parse_err(&GOOD.replace("switches = 4", "switches = 99999999999999999999999"));
        assert!(!e.to_string().contains("i128"), "{e}");
        assert!(
            e.message()
                .starts_with("the integer 99999999999999999999999 is out of range"),
            "{e}"
        );
        assert_eq!(e.field(), Some("fabric.switches"));
    }

    #[test]
    fn bad_unit_in_array_element() {
        let e = parse_err(&GOOD.replace("\"1.5MB\"", "\"1.5Mb\""));
        assert_eq!(e.field(), Some("flows[1].size"));
        assert_eq!(
            e.to_string(),
            "s.toml:18:8: flows[1].size: invalid size \"1.5Mb\": unit \"Mb\" is in bits but sizes \
             are in bytes: use \"B\", e.g. \"4096B\", \"4KiB\" or \"1.5MB\""
        );
        let e = parse_err(&GOOD.replace("\"100Gbps\"", "\"100Gbs\""));
        assert_eq!(
            e.to_string(),
            "s.toml:7:8: fabric.link.rate: invalid rate \"100Gbs\": expected a number followed by \
             a unit such as \"100Gbps\", \"400Gb/s\" or \"800Mbps\" (unknown unit \"Gbs\")"
        );
        let text = GOOD.replace("\"500ns\"", "500");
        let e = parse_err(&text);
        assert_eq!(
            e.to_string(),
            "s.toml:8:11: fabric.link.latency: invalid time 500: a time needs a unit (a bare \
             number is ambiguous); expected a number followed by a unit such as \"500ns\", \
             \"1.5us\" or \"2ms\""
        );
        let at = text.find("= 500").unwrap() + 2;
        assert_eq!(e.span(), Some(at..at + 3));
    }

    #[test]
    fn missing_field() {
        let e = parse_err(&GOOD.replace("rate = \"100Gbps\"\n", ""));
        assert_eq!(e.field(), Some("fabric.link"));
        assert_eq!(e.message(), "missing field `rate`");
        assert!(e.to_string().starts_with("s.toml:"), "{e}");
        assert!(e.to_string().ends_with(": fabric.link: missing field `rate`"), "{e}");
        let e = parse_err(&GOOD.replace("name = \"two-flows\"\n", ""));
        assert!(e.to_string().ends_with(": (top level): missing field `name`"), "{e}");
    }

    #[test]
    fn semantic_error_with_span() {
        let s: TestScenario = parse_toml("s.toml", GOOD).unwrap();
        let dst = &s.flows[1].dst;
        let e = semantic_error(
            "s.toml",
            GOOD,
            Some(dst.span()),
            "flows[1].dst",
            format!("node {} does not exist (the fabric has 4 switches)", dst.get_ref()),
        );
        assert_eq!(
            e.to_string(),
            "s.toml:17:7: flows[1].dst: node 99 does not exist (the fabric has 4 switches)"
        );
        assert_eq!(e.span(), Some(dst.span()));
        // No span, no field.
        let e = semantic_error("s.toml", GOOD, None, "", "no flows at all");
        assert_eq!(e.to_string(), "s.toml: no flows at all");
        let e = semantic_error("s.toml", GOOD, None, ".", "empty scenario");
        assert_eq!(e.to_string(), "s.toml: (top level): empty scenario");
        // A span past the end is clamped, not a panic.
        let e = semantic_error("s.toml", "a\nb", Some(10..20), "x", "m");
        assert_eq!(e.to_string(), "s.toml:2:2: x: m");
        // A multi-line message becomes one line.
        let e = semantic_error("s.toml", GOOD, None, "x", "first\n  second\n");
        assert_eq!(e.to_string(), "s.toml: x: first; second");
    }

    #[test]
    fn columns_count_characters() {
        let text = "name = \"µµ\" ; bad\n";
        let e = parse_toml::<TestScenario>("u.toml", text).unwrap_err();
        assert_eq!(e.line(), Some(1));
        assert_eq!(e.column(), Some(13));
        assert_eq!(line_col("ab\ncµd", 6), (2, 3));
    }

    #[test]
    fn one_line_strips_toml_snippets() {
        let msg = "TOML parse error at line 1, column 10\n  |\n1 | 00:32:00.a999999\n  |          \
                   ^\nUnexpected `a`\nExpected `digit`\n";
        assert_eq!(one_line(msg), "Unexpected `a`; Expected `digit`");
    }

    #[test]
    fn fancy_rendering_has_label() {
        let e = parse_err(&GOOD.replace("\"100Gbps\"", "\"100Gbs\""));
        let mut out = String::new();
        miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
            .render_report(&mut out, &e)
            .unwrap();
        assert!(out.contains("rate = \"100Gbs\""), "{out}");
        assert!(out.contains("s.toml:7:8"), "{out}");
        assert!(out.contains("╰── invalid rate \"100Gbs\""), "{out}");
    }

    #[test]
    fn file_missing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nope.toml");
        let e = read_scenario_file(&path).unwrap_err();
        assert_eq!(e.to_string(), format!("{}: file not found", path.display()));
        assert_eq!(e.line(), None);
    }

    #[test]
    fn file_is_directory() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_scenario_file(dir.path()).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{}: is a directory, not a scenario file", dir.path().display())
        );
    }

    #[test]
    fn file_too_large() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.toml");
        std::fs::write(&path, vec![b'#'; MAX_SCENARIO_BYTES as usize + 1]).unwrap();
        let e = read_scenario_file(&path).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}: file is too large (1048577 bytes; the limit is 1048576 bytes)",
                path.display()
            )
        );
        // Exactly at the limit is fine.
        std::fs::write(&path, vec![b'#'; MAX_SCENARIO_BYTES as usize]).unwrap();
        assert_eq!(read_scenario_file(&path).unwrap().len(), MAX_SCENARIO_BYTES as usize);
    }

    #[test]
    fn file_not_utf8() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bin.toml");
        std::fs::write(&path, b"name = \"x\"\nab\xffc\n").unwrap();
        let e = read_scenario_file(&path).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}:2:3: file is not valid UTF-8 (invalid byte at offset 13)",
                path.display()
            )
        );
    }

    #[test]
    fn file_read_ok() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ok.toml");
        std::fs::write(&path, GOOD).unwrap();
        let text = read_scenario_file(&path).unwrap();
        let file = path.display().to_string();
        let s: TestScenario = parse_toml(&file, &text).unwrap();
        assert_eq!(s.flows.len(), 2);
    }
}

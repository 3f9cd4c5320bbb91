//! JUnit XML for CI systems: one `<testcase>` per scenario, a `<failure>` listing the metrics
//! beyond tolerance, an `<error>` when the scenario could not be checked (bad scenario,
//! missing or unreadable baseline, failed run).

use std::fmt::Write as _;
use std::path::Path;

/// One scenario's result.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// The scenario file's stem (`quickstart`).
    pub name: String,
    /// The scenario file as given.
    pub file: String,
    /// Wall-clock seconds of the run, when one was made.
    pub time_s: Option<f64>,
    pub outcome: CaseOutcome,
    /// The printed block (notes and table), kept as `<system-out>`.
    pub output: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum CaseOutcome {
    Passed,
    /// Metrics beyond tolerance: `message` is one line naming them.
    Failed {
        message: String,
    },
    /// The scenario could not be checked.
    Error {
        message: String,
    },
}

/// The XML document.
pub fn to_xml(suite: &str, cases: &[Case]) -> String {
    let failures = cases
        .iter()
        .filter(|c| matches!(c.outcome, CaseOutcome::Failed { .. }))
        .count();
    let errors = cases
        .iter()
        .filter(|c| matches!(c.outcome, CaseOutcome::Error { .. }))
        .count();
    let time: f64 = cases.iter().filter_map(|c| c.time_s).sum();
    let mut o = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let counts = format!(
        "tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{time:.3}\"",
        cases.len()
    );
    let _ = writeln!(o, "<testsuites name=\"{}\" {counts}>", esc(suite));
    let _ = writeln!(o, "  <testsuite name=\"{}\" {counts} skipped=\"0\">", esc(suite));
    for c in cases {
        let _ = write!(
            o,
            "    <testcase name=\"{}\" classname=\"{}\" file=\"{}\"",
            esc(&c.name),
            esc(suite),
            esc(&c.file)
        );
        if let Some(t) = c.time_s {
            let _ = write!(o, " time=\"{t:.3}\"");
        }
        let _ = writeln!(o, ">");
        match &c.outcome {
            CaseOutcome::Passed => {}
            CaseOutcome::Failed { message } => {
                let _ = writeln!(
                    o,
                    "      <failure message=\"{}\" type=\"regression\">{}</failure>",
                    esc(message),
                    esc_text(&c.output)
                );
            }
            CaseOutcome::Error { message } => {
                let _ = writeln!(
                    o,
                    "      <error message=\"{}\" type=\"error\">{}</error>",
                    esc(message),
                    esc_text(message)
                );
            }
        }
        if !c.output.is_empty() {
            let _ = writeln!(o, "      <system-out>{}</system-out>", esc_text(&c.output));
        }
        let _ = writeln!(o, "    </testcase>");
    }
    let _ = writeln!(o, "  </testsuite>");
    let _ = writeln!(o, "</testsuites>");
    o
}

/// Escapes text for an XML attribute value. Characters XML 1.0 cannot hold (control
/// characters other than tab, line feed and carriage return) become U+FFFD; line breaks and
/// tabs become character references, which attribute-value normalisation keeps.
pub fn esc(s: &str) -> String {
    escape(s, true)
}

/// Escapes text for XML element content (line breaks and tabs kept as they are).
pub fn esc_text(s: &str) -> String {
    escape(s, false)
}

fn escape(s: &str, attr: bool) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            '\n' | '\t' if !attr => o.push(c),
            '\n' => o.push_str("&#10;"),
            '\r' => o.push_str("&#13;"),
            '\t' => o.push_str("&#9;"),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => o.push('\u{FFFD}'),
            c => o.push(c),
        }
    }
    o
}

/// Writes `bytes` to `path` through a temporary sibling file and a rename, so a reader never
/// sees a half-written file. Missing parent directories are created.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)?;
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "no file name"))?
        .to_string_lossy()
        .into_owned();
    let tmp = parent.join(format!(".{name}.partial-{}", std::process::id()));
    let r = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_everything_xml_needs() {
        assert_eq!(esc("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
        assert_eq!(esc("x\u{1}y\nz"), "x\u{FFFD}y&#10;z");
        assert_eq!(esc_text("x\u{1}y\nz\r"), "x\u{FFFD}y\nz&#13;");
    }

    #[test]
    fn counts_and_cases() {
        let case = |name: &str, outcome| Case {
            name: name.into(),
            file: format!("{name}.toml"),
            time_s: Some(0.5),
            outcome,
            output: "table <&>".into(),
        };
        let xml = to_xml(
            "fabricsim check",
            &[
                case("a", CaseOutcome::Passed),
                case(
                    "b",
                    CaseOutcome::Failed {
                        message: "fct_ns.p99".into(),
                    },
                ),
                case(
                    "c",
                    CaseOutcome::Error {
                        message: "no baseline".into(),
                    },
                ),
            ],
        );
        assert!(
            xml.contains("tests=\"3\" failures=\"1\" errors=\"1\" time=\"1.500\""),
            "{xml}"
        );
        assert_eq!(xml.matches("<testcase ").count(), 3);
        assert!(xml.contains("<failure message=\"fct_ns.p99\""), "{xml}");
        assert!(xml.contains("table &lt;&amp;&gt;"), "{xml}");
    }

    #[test]
    fn atomic_write_leaves_only_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("sub/report.xml");
        write_atomically(&f, b"one").unwrap();
        write_atomically(&f, b"two").unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path().join("sub")).unwrap().collect();
        assert_eq!(names.len(), 1);
    }
}

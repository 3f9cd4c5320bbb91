//! Error messages in the user's terms.
//!
//! serde and the TOML parser speak Rust: `invalid type: integer `7` as i128, expected any
//! value`, `expected u32`, `expected internally tagged enum TopologySpec`, `expected variant
//! index 0 <= i < 1`, `recursion limit`. [`user_terms`] rewrites such a message into what a
//! scenario author wrote and what the format accepts (`an integer in 0..=4294967295`, `a
//! table`, the accepted `kind` names); [`locate_deep_nesting`] and [`syntax_field`] give a TOML
//! syntax error the position and the key that the parser did not report.

/// How deep tables, arrays and dotted keys may nest before [`locate_deep_nesting`] points at
/// them (the TOML parser's own limit is about 80; a scenario needs 6 or so).
pub const MAX_NESTING: usize = 64;

/// The message with Rust types and serde's wording replaced; `field` is the field path of the
/// error, used to name the accepted values of an enum-valued key.
pub fn user_terms(message: &str, field: Option<&str>) -> String {
    let message = &clip_quoted(message);
    let text = match split_serde(message) {
        None => message.to_owned(),
        Some((found, expected)) => match expected.map(|e| expected_text(e, field)) {
            Some(e) if e.is_empty() => found,
            Some(e) => format!("{found}; expected {e}"),
            None => found,
        },
    };
    fit(&text, MAX_MESSAGE_CHARS)
}

/// Longest message [`user_terms`] returns, in characters: with the file, position and field
/// the error line stays under 300 characters.
pub const MAX_MESSAGE_CHARS: usize = 200;

/// `message` within `max` characters: a long list of accepted names (`` `a`, `b`, ... ``) is cut
/// to what fits, with a count of the rest; an unknown name gets the closest accepted one.
fn fit(message: &str, max: usize) -> String {
    if message.chars().count() <= max {
        return message.to_owned();
    }
    let Some(list_at) = message.find(", expected ").map(|i| i + ", expected ".len()) else {
        return cut(message, max);
    };
    let (head, list) = message.split_at(list_at);
    let list = list.strip_prefix("one of ").unwrap_or(list);
    let names: Vec<&str> = list
        .split(['`', ','])
        .map(str::trim)
        .filter(|n| !n.is_empty() && *n != "or")
        .collect();
    let unknown = backticked(head).unwrap_or("");
    let mut out = head.trim_end_matches(", expected ").to_owned();
    if let Some(near) = closest(unknown, &names) {
        out.push_str(&format!("; did you mean `{near}`?"));
    }
    out.push_str("; expected one of ");
    let mut shown = 0;
    for n in &names {
        let more = names.len() - shown;
        if out.chars().count() + n.len() + 4 + format!(" and {more} more").len() > max {
            break;
        }
        if shown > 0 {
            out.push_str(", ");
        }
        out.push_str(&format!("`{n}`"));
        shown += 1;
    }
    if shown < names.len() {
        out.push_str(&format!(" and {} more", names.len() - shown));
    }
    cut(&out, max)
}

/// The accepted name closest to `unknown` (ignoring case), if it is close (at most a third of
/// its letters differ).
fn closest<'a>(unknown: &str, names: &[&'a str]) -> Option<&'a str> {
    let u = unknown.to_lowercase();
    names
        .iter()
        .map(|n| (edit_distance(&u, &n.to_lowercase()), *n))
        .filter(|(d, n)| *d <= (n.len() / 3).max(1))
        .min()
        .map(|(_, n)| n)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(here + 1);
            prev = here;
        }
    }
    row[b.len()]
}

/// `s` cut to `max` characters with `...`.
fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(3)).collect();
    out.push_str("...");
    out
}

/// Cuts every quoted run (`"..."` or `` `...` ``) of `message` longer than
/// [`MAX_QUOTED_CHARS`](crate::diag::MAX_QUOTED_CHARS) characters: serde echoes a whole bad value, which may be 200 KB.
pub fn clip_quoted(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(1024));
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c != '"' && c != '`' {
            continue;
        }
        // Inside a quoted run: copy up to the limit, skip the rest, keep the closing quote.
        let (mut n, mut escaped, mut clipped) = (0usize, false, false);
        for d in chars.by_ref() {
            if d == c && !escaped {
                if clipped {
                    out.push_str("...");
                }
                out.push(d);
                break;
            }
            escaped = c == '"' && d == '\\' && !escaped;
            n += 1;
            if n <= crate::diag::MAX_QUOTED_CHARS {
                out.push(d);
            } else {
                clipped = true;
            }
        }
    }
    out
}

/// Splits `invalid type: X, expected Y` / `invalid value: X, expected Y` into the found part
/// (rewritten) and the raw expected part.
fn split_serde(message: &str) -> Option<(String, Option<&str>)> {
    if let Some(r) = message.strip_prefix("invalid length ") {
        // An array where a table (or another length) was expected.
        let expected = r.split_once(", expected ").map(|(_, e)| e);
        let e = match expected {
            Some(e) if e.starts_with("struct ") => "a table",
            _ => "another number of elements",
        };
        return Some(("found an array".to_owned(), Some(e)));
    }
    let (kind, rest) = if let Some(r) = message.strip_prefix("invalid type: ") {
        ("type", r)
    } else if let Some(r) = message.strip_prefix("invalid value: ") {
        ("value", r)
    } else {
        return None;
    };
    let (unexpected, expected) = split_unexpected(rest);
    Some((found_text(kind, unexpected), expected))
}

/// `X, expected Y` -> (`X`, `Some(Y)`), where X may hold a quoted string with commas.
fn split_unexpected(rest: &str) -> (&str, Option<&str>) {
    let quoted_end = quoted_prefix_end(rest);
    match rest[quoted_end..].find(", expected ") {
        Some(i) => (
            &rest[..quoted_end + i],
            Some(&rest[quoted_end + i + ", expected ".len()..]),
        ),
        None => (rest, None),
    }
}

/// Byte offset just past the first quoted run (`"..."` or `` `...` ``) of `s`, or 0.
fn quoted_prefix_end(s: &str) -> usize {
    let Some(open) = s.find(['"', '`']) else { return 0 };
    let q = s.as_bytes()[open];
    let mut escaped = false;
    for (i, b) in s.bytes().enumerate().skip(open + 1) {
        if b == q && !escaped {
            return i + 1;
        }
        escaped = q == b'"' && b == b'\\' && !escaped;
    }
    s.len()
}

/// The text between the first pair of backticks of `s`.
fn backticked(s: &str) -> Option<&str> {
    let a = s.find('`')?;
    let b = s[a + 1..].find('`')?;
    Some(&s[a + 1..a + 1 + b])
}

/// A float as TOML writes it: `nan`, `inf`, `-inf`, and long numbers in exponent form.
pub fn float_text(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf".into() } else { "-inf".into() }
    } else if v != 0.0 && (v.abs() >= 1e15 || v.abs() < 1e-6) {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

fn found_text(kind: &str, unexpected: &str) -> String {
    let u = unexpected.trim();
    if let Some(rest) = u.strip_prefix("integer ") {
        let n = backticked(rest).unwrap_or(rest);
        if rest.ends_with("as i128") {
            return format!(
                "the integer {n} is out of range (integers are -9223372036854775808..=9223372036854775807)"
            );
        }
        return if kind == "value" {
            format!("the integer {n} is out of range")
        } else {
            format!("found the integer {n}")
        };
    }
    if let Some(rest) = u.strip_prefix("floating point ") {
        let v = backticked(rest).unwrap_or(rest);
        let shown = v.parse::<f64>().map(float_text).unwrap_or_else(|_| v.to_owned());
        return format!("found the number {shown}");
    }
    if let Some(rest) = u.strip_prefix("string ") {
        return format!("found the string {rest}");
    }
    if let Some(rest) = u.strip_prefix("boolean ") {
        return format!("found {}", backticked(rest).unwrap_or(rest));
    }
    let what = match u {
        "sequence" => "an array",
        "map" => "a table",
        "unit value" => "an empty value",
        "option" => "an optional value",
        other => return format!("found {other}"),
    };
    format!("found {what}")
}

/// What serde expected, in scenario terms ("" when nothing useful is known).
fn expected_text(e: &str, field: Option<&str>) -> String {
    let e = e.trim();
    let int = |lo: i128, hi: i128| format!("an integer in {lo}..={hi}");
    match e {
        "u8" => return int(0, u8::MAX as i128),
        "u16" => return int(0, u16::MAX as i128),
        "u32" => return int(0, u32::MAX as i128),
        "u64" | "usize" => return int(0, i64::MAX as i128),
        "i8" => return int(i8::MIN as i128, i8::MAX as i128),
        "i16" => return int(i16::MIN as i128, i16::MAX as i128),
        "i32" => return int(i32::MIN as i128, i32::MAX as i128),
        "i64" | "isize" => return "an integer".into(),
        "f32" | "f64" => return "a number".into(),
        "a sequence" => return "an array".into(),
        "a map" => return "a table".into(),
        "a boolean" => return "true or false".into(),
        "any value" => return String::new(),
        _ => {}
    }
    if let Some(name) = e.strip_prefix("internally tagged enum ") {
        return match crate::schema::kind_names(name) {
            Some(kinds) => format!("a table with `kind` = one of {kinds}"),
            None => "a table with a `kind`".into(),
        };
    }
    if e.starts_with("struct ") {
        return "a table".into();
    }
    if e.starts_with("variant index") || e == "variant identifier" || e.starts_with("enum ") {
        return match field.and_then(crate::schema::names_at) {
            Some(names) => format!("one of {names} (a name in quotes)"),
            None => "a name in quotes".into(),
        };
    }
    if e.starts_with("tuple") || e.starts_with("newtype") || e.starts_with("unit ") {
        return "another form".into();
    }
    e.to_owned()
}

/// Byte offset of the first place in `text` where tables, arrays and dotted keys nest more than
/// [`MAX_NESTING`] levels deep, if any. A light scan: strings and comments are skipped; a
/// table header counts its dotted parts, a key line its own parts on top of its table's.
pub fn locate_deep_nesting(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let (mut i, mut depth, mut table_depth) = (0usize, 0usize, 0usize);
    let mut line_start = true;
    let mut key_parts = 0usize;
    let mut header = false;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\n' => {
                line_start = true;
                key_parts = 0;
                i += 1;
                continue;
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'"' | b'\'' => {
                i = skip_string(b, i);
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            _ => {}
        }
        if line_start && depth == 0 {
            header = c == b'[';
            key_parts = 1;
            if header {
                table_depth = 0;
            }
        }
        line_start = false;
        match c {
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if header && depth == 0 {
                    header = false;
                    table_depth = key_parts;
                }
            }
            b'.' if header || depth == 0 => key_parts += 1,
            b'=' if depth == 0 => key_parts += 0,
            _ => {}
        }
        let nesting = if header {
            key_parts
        } else {
            table_depth + key_parts + depth
        };
        if nesting > MAX_NESTING {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Index just past the string that starts at `b[i]` (basic or literal, one- or multi-line).
fn skip_string(b: &[u8], i: usize) -> usize {
    let q = b[i];
    let triple = b.len() >= i + 3 && b[i + 1] == q && b[i + 2] == q;
    let mut j = if triple { i + 3 } else { i + 1 };
    while j < b.len() {
        if q == b'"' && b[j] == b'\\' {
            j += 2;
            continue;
        }
        if b[j] == q && (!triple || (b.len() >= j + 3 && b[j + 1] == q && b[j + 2] == q)) {
            return j + if triple { 3 } else { 1 };
        }
        if !triple && b[j] == b'\n' {
            return j;
        }
        j += 1;
    }
    j
}

/// The key or table being written at byte `offset` of `text`, for a syntax error: the last
/// table header before it, and the key of its line (`fabric.mtu`), shortened when long.
pub fn syntax_field(text: &str, offset: usize) -> String {
    let offset = offset.min(text.len());
    let mut cut = offset;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let before = &text[..cut];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[line_start..].find('\n').map_or(text.len(), |i| line_start + i);
    let line = text[line_start..line_end].trim();
    let header_of = |l: &str| {
        let l = l.trim();
        l.starts_with('[').then(|| {
            let inner = l.trim_start_matches('[');
            let end = inner.find(']').unwrap_or(inner.len());
            inner[..end].trim().to_owned()
        })
    };
    if let Some(h) = header_of(line) {
        return shorten(&h);
    }
    let table = before[..line_start]
        .lines()
        .rev()
        .find_map(header_of)
        .unwrap_or_default();
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim().to_owned())
        .filter(|k| !k.is_empty() && !k.contains(['[', ']', '{', '}', '"', '\'', ' ']))
        .unwrap_or_default();
    let path = match (table.is_empty(), key.is_empty()) {
        (true, true) => "(top level)".to_owned(),
        (true, false) => key,
        (false, true) => table,
        (false, false) => format!("{table}.{key}"),
    };
    shorten(&path)
}

/// A field path cut to 80 characters (the middle elided); `(top level)` when empty.
fn shorten(path: &str) -> String {
    const MAX: usize = 80;
    if path.is_empty() {
        return "(top level)".to_owned();
    }
    let n = path.chars().count();
    if n <= MAX {
        return path.to_owned();
    }
    let head: String = path.chars().take(40).collect();
    let tail: String = path.chars().skip(n - 30).collect();
    format!("{head}...{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_messages_in_user_terms() {
        let t = |m: &str| user_terms(m, None);
        assert_eq!(
            t("invalid type: integer `99999999999999999999999` as i128, expected any value"),
            "the integer 99999999999999999999999 is out of range (integers are \
             -9223372036854775808..=9223372036854775807)"
        );
        assert_eq!(
            t("invalid type: string \"four\", expected u32"),
            "found the string \"four\"; expected an integer in 0..=4294967295"
        );
        assert_eq!(
            t("invalid value: integer `-3`, expected u8"),
            "the integer -3 is out of range; expected an integer in 0..=255"
        );
        assert_eq!(
            t("invalid type: floating point `NaN`, expected a string"),
            "found the number nan; expected a string"
        );
        assert_eq!(
            t("invalid type: floating point `-inf`, expected a sequence"),
            "found the number -inf; expected an array"
        );
        assert_eq!(
            t("invalid type: map, expected struct LinkSpec"),
            "found a table; expected a table"
        );
        assert!(t("invalid type: string \"a, expected b\", expected u8").ends_with("expected an integer in 0..=255"));
        assert_eq!(t("unknown field `x`, expected `a`"), "unknown field `x`, expected `a`");
        let tagged = t("invalid type: string \"abc\", expected internally tagged enum TopologySpec");
        assert!(tagged.contains("`kind` = one of `fat_tree`"), "{tagged}");
        let v = user_terms(
            "invalid value: integer `5`, expected variant index 0 <= i < 4",
            Some("fabric.routing"),
        );
        assert!(v.contains("one of `ecmp`"), "{v}");
        assert!(!v.contains("variant index"), "{v}");
    }

    #[test]
    fn long_lists_are_cut_and_the_closest_name_suggested() {
        let names: Vec<String> = (0..30).map(|i| format!("`key_number_{i}`")).collect();
        let m = format!("unknown field `KEY_NUMBER_7`, expected one of {}", names.join(", "));
        let f = user_terms(&m, None);
        assert!(f.chars().count() <= MAX_MESSAGE_CHARS, "{f}");
        assert!(f.contains("did you mean `key_number_7`?"), "{f}");
        assert!(f.ends_with(" more"), "{f}");
        assert_eq!(closest("zzzz", &["ecmp", "dmodk"]), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn deep_nesting_is_located() {
        let deep = format!("[scenario]\nname = \"x\"\n[{}]\nx = 1\n", vec!["a"; 100].join("."));
        let at = locate_deep_nesting(&deep).unwrap();
        assert_eq!(deep[..at].matches('\n').count(), 2, "on the header line");
        let arr = format!("x = {}1{}\n", "[".repeat(70), "]".repeat(70));
        assert!(locate_deep_nesting(&arr).is_some());
        let keys = format!("{} = 1\n", vec!["b"; 70].join("."));
        assert!(locate_deep_nesting(&keys).is_some());
        let ok = "[a.b]\nc.d = [[1, 2], { e = \"[[[[\" }] # [[[[[\n";
        assert_eq!(locate_deep_nesting(ok), None);
    }

    #[test]
    fn syntax_fields() {
        let text = "[fabric]\nmtu = 4KiB\n[[workload]]\nkind \"x\"\n";
        assert_eq!(syntax_field(text, text.find("4KiB").unwrap()), "fabric.mtu");
        assert_eq!(syntax_field(text, text.find("kind").unwrap()), "workload");
        assert_eq!(syntax_field("x = \n", 3), "x");
        assert_eq!(syntax_field("= 1\n", 0), "(top level)");
    }
}

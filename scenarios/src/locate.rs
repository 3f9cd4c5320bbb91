//! Finds where a field of a scenario file is written, for errors found after parsing.
//!
//! Semantic checks (an odd fat-tree radix, a host number out of range) run on typed data that
//! no longer knows its position. They name the field by path (`topology.k`,
//! `workload[1].senders[2]`), and this module walks toml's span-preserving parse tree to find
//! the byte range of that value, so the error can still point at file:line:column.

use std::ops::Range;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// One step of a field path.
#[derive(Debug, PartialEq, Eq)]
enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

fn parse_path(path: &str) -> Option<Vec<Seg<'_>>> {
    let mut segs = Vec::new();
    for part in path.split('.') {
        let (key, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            segs.push(Seg::Key(key));
        }
        while let Some(stripped) = rest.strip_prefix('[') {
            let close = stripped.find(']')?;
            segs.push(Seg::Index(stripped[..close].parse().ok()?));
            rest = &stripped[close + 1..];
        }
    }
    Some(segs)
}

/// Byte range of the value at `path` in `text`, or of the closest enclosing value that exists
/// (so a missing key still points at its table). `None` if `text` does not parse.
pub fn span_of(text: &str, path: &str) -> Option<Range<usize>> {
    let root = DeTable::parse(text).ok()?;
    let segs = parse_path(path)?;
    let mut span = root.span();
    let mut table: Option<&DeTable<'_>> = Some(root.get_ref());
    let mut value: Option<&Spanned<DeValue<'_>>> = None;
    for seg in segs {
        let next = match (seg, table, value.map(|v| v.get_ref())) {
            (Seg::Key(k), Some(t), _) => t.iter().find(|(key, _)| key.get_ref().as_ref() == k).map(|(_, v)| v),
            (Seg::Index(i), _, Some(DeValue::Array(a))) => a.get(i),
            _ => None,
        };
        let Some(v) = next else { break };
        span = v.span();
        value = Some(v);
        table = match v.get_ref() {
            DeValue::Table(t) => Some(t),
            _ => None,
        };
    }
    Some(span)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "[topology]\nkind = \"fat_tree\"\nk = 5\n\n[[workload]]\nkind = \"a\"\n\n[[workload]]\nkind = \"incast\"\nsenders = [1, 2, 99]\n";

    fn text_at(path: &str) -> &'static str {
        let r = span_of(DOC, path).unwrap();
        &DOC[r]
    }

    #[test]
    fn finds_nested_values() {
        assert_eq!(text_at("topology.k"), "5");
        assert_eq!(text_at("workload[1].kind"), "\"incast\"");
        assert_eq!(text_at("workload[1].senders[2]"), "99");
    }

    #[test]
    fn missing_key_points_at_enclosing_value() {
        // An array-of-tables element is located by its `[[workload]]` header: the second one.
        let r = span_of(DOC, "workload[1].receiver").unwrap();
        assert_eq!(&DOC[r.clone()], "[[workload]]");
        assert_eq!(DOC[..r.start].matches("[[workload]]").count(), 1);
    }

    #[test]
    fn path_parsing() {
        assert_eq!(
            parse_path("a[2][3].b").unwrap(),
            vec![Seg::Key("a"), Seg::Index(2), Seg::Index(3), Seg::Key("b")]
        );
        assert!(parse_path("a[x]").is_none());
    }
}

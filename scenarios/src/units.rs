//! Human units in scenario files: rates, sizes and times.
//!
//! Scenario files write quantities the way people say them (`"100Gbps"`, `"4KiB"`, `"1.5us"`);
//! the newtypes here parse them into sim-core's integer types **exactly**. Decimals are parsed
//! by splitting integer and fraction digits and scaling in integer arithmetic, so `"12.5Gbps"`
//! is exactly 12 500 000 000 b/s and `"1.5us"` exactly 1 500 000 ps. A value that is not a
//! whole number of the base unit (`"0.1ps"`, `"0.5B"`) is refused, never rounded.
//!
//! | type         | converts to                 | base unit   | accepted units (case-sensitive)                      |
//! |--------------|-----------------------------|-------------|------------------------------------------------------|
//! | [`RateSpec`] | [`BitsPerSec`]              | bit/s       | `bps`, `b/s`, `bit/s` with prefix `k`/`K`, `M`, `G`, `T`; bytes per second `B/s` (same prefixes, ×8); InfiniBand presets `sdr`..`xdr` (4x) or `ndr_1x`, `hdr_2x`, `xdr_8x` |
//! | [`SizeSpec`] | [`Bytes`]                   | byte        | none (bytes), `B`; SI `kB`, `MB`, `GB`, `TB`, `PB`, `EB` (×1000); IEC `KiB`, `MiB`, `GiB`, `TiB`, `PiB`, `EiB` (×1024) |
//! | [`TimeSpec`] | [`Duration`] | picosecond | `ps`, `ns`, `us` (or `µs`, `μs`), `ms`, `s`          |
//!
//! Notes:
//! - Rate prefixes are decimal SI: `1Gbps` = 10⁹ b/s. Lower-case `b` is bits, upper-case `B`
//!   is bytes: `"1GB/s"` is one gigabyte per second = 8 Gb/s. `"GBps"` is refused as
//!   ambiguous (write `Gbps` or `GB/s`).
//! - A size may be a bare number (`"4096"`) or a TOML integer (`4096`): both mean bytes.
//!   `"KB"` is refused as ambiguous (write `kB` for 1000 or `KiB` for 1024).
//! - A time needs a unit: a bare number (`"500"` or `500`) is refused, since it could be ns
//!   or ps. Rates need a unit for the same reason.
//! - A space (or tab) between number and unit is allowed: `"400 Gb/s"`, `"130 ns"`.
//! - Rates must be greater than zero; sizes and times may be zero.
//! - Values that do not fit in a `u64` of the base unit are refused.
//!
//! Every type implements [`FromStr`], [`Deserialize`], [`Display`](fmt::Display) (a canonical
//! form that parses back to the same value) and [`Serialize`] (to that canonical string).

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserialize, Deserializer, Visitor};
use serde::{Serialize, Serializer};
use sim_core::time::{BitsPerSec, Bytes, Duration};

/// Which kind of quantity failed to parse (for error messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Quantity {
    Rate,
    Size,
    Time,
}

impl Quantity {
    fn name(self) -> &'static str {
        match self {
            Quantity::Rate => "rate",
            Quantity::Size => "size",
            Quantity::Time => "time",
        }
    }

    fn expected(self) -> &'static str {
        match self {
            Quantity::Rate => "expected a number followed by a unit such as \"100Gbps\", \"400Gb/s\" or \"800Mbps\"",
            Quantity::Size => {
                "expected a number of bytes, optionally followed by a unit such as \"4096B\", \"4KiB\", \"32MiB\" or \"1.5MB\""
            }
            Quantity::Time => "expected a number followed by a unit such as \"500ns\", \"1.5us\" or \"2ms\"",
        }
    }

    /// The unit suggested after a bare number, e.g. `1.5` -> `"1.5us"`.
    fn example_unit(self) -> &'static str {
        match self {
            Quantity::Rate => "Gbps",
            Quantity::Size => "MB",
            Quantity::Time => "us",
        }
    }

    /// A value of this quantity written correctly.
    fn example(self) -> &'static str {
        match self {
            Quantity::Rate => "\"100Gbps\"",
            Quantity::Size => "\"4KiB\"",
            Quantity::Time => "\"1.5us\"",
        }
    }

    fn base_unit(self) -> &'static str {
        match self {
            Quantity::Rate => "bits per second",
            Quantity::Size => "bytes",
            Quantity::Time => "picoseconds",
        }
    }

    fn max(self) -> &'static str {
        match self {
            Quantity::Rate => "18446744073709551615bps",
            Quantity::Size => "18446744073709551615B (just under 16EiB)",
            Quantity::Time => "18446744073709551615ps (about 213 days)",
        }
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a quantity was refused.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UnitErrorKind {
    /// The value is empty or only whitespace.
    Empty,
    /// Not of the form `<number>[.<digits>][ ]<unit>`.
    Syntax,
    /// A number without a unit where one is required (rates, times).
    MissingUnit,
    /// The number is fine but the unit is not known.
    UnknownUnit(String),
    /// The unit is known to be ambiguous (`GBps`, `KB`, bits for a size); the string is a hint.
    AmbiguousUnit(String),
    /// A leading minus sign.
    Negative,
    /// A zero rate.
    Zero,
    /// Does not fit in a `u64` of the base unit.
    Overflow,
    /// Not a whole number of the base unit (e.g. `"0.1ps"`).
    Inexact,
    /// More significant decimal places than can be exact in any unit.
    TooManyDecimals,
    /// A TOML value of the wrong type (float, bool, ...).
    WrongType(String),
}

/// A rate, size or time that could not be parsed.
///
/// Displays as one line: `invalid rate "100Gbs": expected a number followed by a unit such as
/// "100Gbps", "400Gb/s" or "800Mbps" (unknown unit "Gbs")`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[error("invalid {quantity} {}: {}", self.shown_input(), self.reason())]
pub struct UnitError {
    quantity: Quantity,
    input: String,
    /// Whether the input was a string (shown quoted) or a TOML number (shown bare).
    quoted: bool,
    kind: UnitErrorKind,
}

/// Longest input echoed back in an error message (in characters).
const MAX_ECHO_CHARS: usize = 64;

impl UnitError {
    fn new(quantity: Quantity, input: &str, kind: UnitErrorKind) -> Self {
        UnitError {
            quantity,
            input: input.to_owned(),
            quoted: true,
            kind,
        }
    }

    fn number(quantity: Quantity, input: impl fmt::Display, kind: UnitErrorKind) -> Self {
        UnitError {
            quantity,
            input: input.to_string(),
            quoted: false,
            kind,
        }
    }

    /// The kind of quantity (rate, size, time).
    pub fn quantity(&self) -> Quantity {
        self.quantity
    }

    /// The text that was refused.
    pub fn input(&self) -> &str {
        &self.input
    }

    /// Why it was refused.
    pub fn kind(&self) -> &UnitErrorKind {
        &self.kind
    }

    fn shown_input(&self) -> String {
        let mut shown: String = self.input.chars().take(MAX_ECHO_CHARS).collect();
        if shown.len() < self.input.len() {
            shown.push_str("...");
        }
        if self.quoted { format!("{shown:?}") } else { shown }
    }

    fn reason(&self) -> String {
        let q = self.quantity;
        match &self.kind {
            UnitErrorKind::Empty => format!("empty value; {}", q.expected()),
            UnitErrorKind::Syntax => q.expected().to_owned(),
            UnitErrorKind::MissingUnit => format!("a {q} needs a unit (a bare number is ambiguous); {}", q.expected()),
            UnitErrorKind::UnknownUnit(unit) => {
                format!("{} (unknown unit {unit:?})", q.expected())
            }
            UnitErrorKind::AmbiguousUnit(hint) => hint.clone(),
            UnitErrorKind::Negative => format!("a {q} cannot be negative"),
            UnitErrorKind::Zero => "a rate must be greater than zero".to_owned(),
            UnitErrorKind::Overflow => format!("too large; the maximum is {}", q.max()),
            UnitErrorKind::Inexact => format!(
                "not a whole number of {}{}",
                q.base_unit(),
                match q {
                    Quantity::Time => " (1ps is the smallest time step)",
                    Quantity::Size => "",
                    Quantity::Rate => "",
                }
            ),
            UnitErrorKind::TooManyDecimals => {
                format!("too many decimal places (at most {MAX_FRACTION_DIGITS})")
            }
            UnitErrorKind::WrongType(found) => format!("found {found}; {}", q.expected()),
        }
    }
}

/// Most significant fraction digits accepted (after dropping trailing zeros). With at most 20
/// digits the fraction times the largest multiplier (2^60 for `EiB`) fits in a `u128`.
const MAX_FRACTION_DIGITS: usize = 20;

/// A number split into integer digits, fraction digits and unit text.
struct Split<'a> {
    int: &'a str,
    frac: &'a str,
    unit: &'a str,
}

fn split(quantity: Quantity, input: &str) -> Result<Split<'_>, UnitError> {
    let err = |kind| UnitError::new(quantity, input, kind);
    let s = input.trim();
    if s.is_empty() {
        return Err(err(UnitErrorKind::Empty));
    }
    if let Some(rest) = s.strip_prefix('-') {
        if rest.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
            return Err(err(UnitErrorKind::Negative));
        }
        return Err(err(UnitErrorKind::Syntax));
    }
    let int_len = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (int, rest) = s.split_at(int_len);
    if int.is_empty() {
        return Err(err(UnitErrorKind::Syntax));
    }
    let (frac, rest) = match rest.strip_prefix('.') {
        Some(after_dot) => {
            let frac_len = after_dot.find(|c: char| !c.is_ascii_digit()).unwrap_or(after_dot.len());
            if frac_len == 0 {
                return Err(err(UnitErrorKind::Syntax));
            }
            after_dot.split_at(frac_len)
        }
        None => ("", rest),
    };
    let unit = rest.trim_start_matches([' ', '\t']);
    if unit.contains(char::is_whitespace) {
        return Err(err(UnitErrorKind::UnknownUnit(unit.to_owned())));
    }
    Ok(Split { int, frac, unit })
}

/// `int.frac × mult`, exactly, as a `u64`.
fn scale(quantity: Quantity, input: &str, parts: &Split<'_>, mult: u128) -> Result<u64, UnitError> {
    let err = |kind| UnitError::new(quantity, input, kind);
    let frac = parts.frac.trim_end_matches('0');
    if frac.len() > MAX_FRACTION_DIGITS {
        return Err(err(UnitErrorKind::TooManyDecimals));
    }
    let whole = digits_value(parts.int)
        .and_then(|i| i.checked_mul(mult))
        .ok_or_else(|| err(UnitErrorKind::Overflow))?;
    let mut part = 0u128;
    if !frac.is_empty() {
        let num = digits_value(frac)
            .and_then(|f| f.checked_mul(mult))
            .ok_or_else(|| err(UnitErrorKind::Overflow))?;
        let den = 10u128.pow(frac.len() as u32);
        if num % den != 0 {
            return Err(err(UnitErrorKind::Inexact));
        }
        part = num / den;
    }
    whole
        .checked_add(part)
        .and_then(|v| u64::try_from(v).ok())
        .ok_or_else(|| err(UnitErrorKind::Overflow))
}

/// Value of a string of ASCII digits, `None` on overflow.
fn digits_value(digits: &str) -> Option<u128> {
    digits
        .bytes()
        .try_fold(0u128, |acc, b| acc.checked_mul(10)?.checked_add(u128::from(b - b'0')))
}

/// Writes `value / unit` as an exact decimal (`unit` a power of ten), then `suffix`.
fn write_decimal(f: &mut fmt::Formatter<'_>, value: u64, unit: u64, suffix: &str) -> fmt::Result {
    let int = value / unit;
    let rem = value % unit;
    if rem == 0 {
        return write!(f, "{int}{suffix}");
    }
    let width = unit.ilog10() as usize;
    let frac = format!("{rem:0width$}");
    write!(f, "{int}.{}{suffix}", frac.trim_end_matches('0'))
}

// ---------------------------------------------------------------------------------------------
// Rates

/// A data rate from a scenario file, e.g. `"100Gbps"`, `"400 Gb/s"`, `"12.5Gbps"`, `"1GB/s"`.
///
/// Always greater than zero. Converts to [`BitsPerSec`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RateSpec(BitsPerSec);

impl RateSpec {
    /// `None` for a zero rate.
    pub const fn new(rate: BitsPerSec) -> Option<Self> {
        if rate.0 == 0 { None } else { Some(RateSpec(rate)) }
    }

    /// A rate of `bps` bits per second; `None` for zero.
    pub const fn from_bps(bps: u64) -> Option<Self> {
        RateSpec::new(BitsPerSec(bps))
    }

    /// The rate in bits per second.
    pub const fn get(self) -> BitsPerSec {
        self.0
    }
}

const RATE_PREFIXES: [(&str, u128); 6] = [
    ("", 1),
    ("k", 1_000),
    ("K", 1_000),
    ("M", 1_000_000),
    ("G", 1_000_000_000),
    ("T", 1_000_000_000_000),
];

fn rate_multiplier(unit: &str) -> Result<u128, UnitErrorKind> {
    for (prefix, mult) in RATE_PREFIXES {
        let Some(base) = unit.strip_prefix(prefix) else {
            continue;
        };
        match base {
            "bps" | "b/s" | "bit/s" => return Ok(mult),
            "B/s" => return Ok(mult * 8),
            _ => {}
        }
    }
    if let Some(prefix) = unit.strip_suffix("Bps") {
        return Err(UnitErrorKind::AmbiguousUnit(format!(
            "unit {unit:?} is ambiguous: write \"{prefix}bps\" for bits or \"{prefix}B/s\" for bytes per second"
        )));
    }
    Err(UnitErrorKind::UnknownUnit(unit.to_owned()))
}

impl FromStr for RateSpec {
    type Err = UnitError;

    fn from_str(input: &str) -> Result<Self, UnitError> {
        let q = Quantity::Rate;
        if let Some(rate) = ib_preset(input.trim()) {
            return Ok(RateSpec(rate));
        }
        let parts = split(q, input)?;
        if parts.unit.is_empty() {
            return Err(UnitError::new(q, input, UnitErrorKind::MissingUnit));
        }
        let mult = rate_multiplier(parts.unit).map_err(|k| UnitError::new(q, input, k))?;
        let bps = scale(q, input, &parts, mult)?;
        RateSpec::new(BitsPerSec(bps)).ok_or_else(|| UnitError::new(q, input, UnitErrorKind::Zero))
    }
}

/// An InfiniBand link preset: `"ndr"` (4x) or `"<speed>_<width>x"` such as `"hdr_1x"`,
/// `"xdr_8x"`: the data rate after encoding and FEC (`fabrics::ib::link`, models.md §1.4).
fn ib_preset(input: &str) -> Option<BitsPerSec> {
    let lower = input.to_ascii_lowercase();
    let (speed, width) = match lower.split_once('_') {
        Some((s, w)) => (s, w.strip_suffix('x')?.parse::<u8>().ok()?),
        None => (lower.as_str(), 4),
    };
    fabrics::ib::IbSpeed::from_name(speed)?.data_rate(width)
}

impl fmt::Display for RateSpec {
    /// Canonical form: the largest SI unit not above the value, with an exact decimal
    /// fraction if needed: `"100Gbps"`, `"12.5Gbps"`, `"800Mbps"`, `"10bps"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0.0;
        for (unit, suffix) in [
            (1_000_000_000_000, "Tbps"),
            (1_000_000_000, "Gbps"),
            (1_000_000, "Mbps"),
            (1_000, "kbps"),
        ] {
            if v >= unit {
                return write_decimal(f, v, unit, suffix);
            }
        }
        write!(f, "{v}bps")
    }
}

impl From<RateSpec> for BitsPerSec {
    fn from(r: RateSpec) -> BitsPerSec {
        r.0
    }
}

impl TryFrom<BitsPerSec> for RateSpec {
    type Error = UnitError;

    fn try_from(rate: BitsPerSec) -> Result<Self, UnitError> {
        RateSpec::new(rate).ok_or_else(|| UnitError::number(Quantity::Rate, "0bps", UnitErrorKind::Zero))
    }
}

// ---------------------------------------------------------------------------------------------
// Sizes

/// A size from a scenario file, e.g. `"4KiB"`, `"4096B"`, `"4096"`, `"1.5MB"`, `"9000 B"`, or a
/// TOML integer (bytes). Converts to [`Bytes`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SizeSpec(Bytes);

impl SizeSpec {
    pub const fn new(bytes: Bytes) -> Self {
        SizeSpec(bytes)
    }

    /// A size of `bytes` bytes.
    pub const fn from_bytes(bytes: u64) -> Self {
        SizeSpec(Bytes(bytes))
    }

    /// The size in bytes.
    pub const fn get(self) -> Bytes {
        self.0
    }
}

const KI: u128 = 1024;

/// Size units, IEC first so that the canonical form prefers them on a tie.
const SIZE_UNITS: [(&str, u128); 13] = [
    ("B", 1),
    ("KiB", KI),
    ("MiB", KI * KI),
    ("GiB", KI * KI * KI),
    ("TiB", KI * KI * KI * KI),
    ("PiB", KI * KI * KI * KI * KI),
    ("EiB", KI * KI * KI * KI * KI * KI),
    ("kB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("TB", 1_000_000_000_000),
    ("PB", 1_000_000_000_000_000),
    ("EB", 1_000_000_000_000_000_000),
];

fn size_multiplier(unit: &str) -> Result<u128, UnitErrorKind> {
    if unit.is_empty() {
        return Ok(1);
    }
    if let Some(&(_, mult)) = SIZE_UNITS.iter().find(|(name, _)| *name == unit) {
        return Ok(mult);
    }
    if unit == "KB" {
        return Err(UnitErrorKind::AmbiguousUnit(
            "unit \"KB\" is ambiguous: write \"kB\" for 1000 bytes or \"KiB\" for 1024 bytes".to_owned(),
        ));
    }
    let bit_prefix = unit
        .strip_suffix("bits")
        .or_else(|| unit.strip_suffix("bit"))
        .or_else(|| unit.strip_suffix('b'));
    let prefixes = [
        "", "k", "K", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
    ];
    if bit_prefix.is_some_and(|p| prefixes.contains(&p)) {
        return Err(UnitErrorKind::AmbiguousUnit(format!(
            "unit {unit:?} is in bits but sizes are in bytes: use \"B\", e.g. \"4096B\", \"4KiB\" or \"1.5MB\""
        )));
    }
    Err(UnitErrorKind::UnknownUnit(unit.to_owned()))
}

impl FromStr for SizeSpec {
    type Err = UnitError;

    fn from_str(input: &str) -> Result<Self, UnitError> {
        let q = Quantity::Size;
        let parts = split(q, input)?;
        let mult = size_multiplier(parts.unit).map_err(|k| UnitError::new(q, input, k))?;
        Ok(SizeSpec(Bytes(scale(q, input, &parts, mult)?)))
    }
}

impl fmt::Display for SizeSpec {
    /// Canonical form: a whole number of the unit giving the smallest number (IEC preferred on
    /// a tie), else bytes: `"4KiB"`, `"1.5MB"` prints as `"1500kB"`, `"1536B"`, `"0B"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = u128::from(self.0.0);
        let mut best = (v, "B");
        if v != 0 {
            for (name, mult) in SIZE_UNITS {
                if v % mult == 0 && v / mult < best.0 {
                    best = (v / mult, name);
                }
            }
        }
        write!(f, "{}{}", best.0, best.1)
    }
}

impl From<SizeSpec> for Bytes {
    fn from(s: SizeSpec) -> Bytes {
        s.0
    }
}

impl From<Bytes> for SizeSpec {
    fn from(b: Bytes) -> SizeSpec {
        SizeSpec(b)
    }
}

// ---------------------------------------------------------------------------------------------
// Times

/// A span of time from a scenario file, e.g. `"1.5us"`, `"500ns"`, `"100ps"`, `"2ms"`, `"1s"`,
/// `"130 ns"`, `"1.5µs"`. A unit is required. Converts to [`Duration`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimeSpec(Duration);

impl TimeSpec {
    pub const fn new(d: Duration) -> Self {
        TimeSpec(d)
    }

    /// Same as [`TimeSpec::new`].
    pub const fn from_duration(d: Duration) -> Self {
        TimeSpec(d)
    }

    /// The duration in picoseconds.
    pub const fn get(self) -> Duration {
        self.0
    }
}

fn time_multiplier(unit: &str) -> Result<u128, UnitErrorKind> {
    match unit {
        "ps" => Ok(1),
        "ns" => Ok(1_000),
        // "µ" is U+00B5 MICRO SIGN, "μ" is U+03BC GREEK SMALL LETTER MU; both are used.
        "us" | "\u{b5}s" | "\u{3bc}s" => Ok(1_000_000),
        "ms" => Ok(1_000_000_000),
        "s" => Ok(1_000_000_000_000),
        _ => Err(UnitErrorKind::UnknownUnit(unit.to_owned())),
    }
}

impl FromStr for TimeSpec {
    type Err = UnitError;

    fn from_str(input: &str) -> Result<Self, UnitError> {
        let q = Quantity::Time;
        let parts = split(q, input)?;
        if parts.unit.is_empty() {
            return Err(UnitError::new(q, input, UnitErrorKind::MissingUnit));
        }
        let mult = time_multiplier(parts.unit).map_err(|k| UnitError::new(q, input, k))?;
        Ok(TimeSpec(Duration(scale(q, input, &parts, mult)?)))
    }
}

impl fmt::Display for TimeSpec {
    /// Canonical form: the largest unit not above the value, with an exact decimal fraction
    /// if needed: `"1.5us"`, `"500ns"`, `"100ps"`, `"2ms"`, `"0s"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0.0;
        if v == 0 {
            return f.write_str("0s");
        }
        for (unit, suffix) in [
            (1_000_000_000_000, "s"),
            (1_000_000_000, "ms"),
            (1_000_000, "us"),
            (1_000, "ns"),
        ] {
            if v >= unit {
                return write_decimal(f, v, unit, suffix);
            }
        }
        write!(f, "{v}ps")
    }
}

impl From<TimeSpec> for Duration {
    fn from(t: TimeSpec) -> Duration {
        t.0
    }
}

impl From<Duration> for TimeSpec {
    fn from(d: Duration) -> TimeSpec {
        TimeSpec(d)
    }
}

// ---------------------------------------------------------------------------------------------
// serde

/// Visitor shared by the three types: strings go through `FromStr`; integers are accepted
/// as bytes for sizes only; every other TOML type is refused with the expected form.
struct UnitVisitor<T> {
    quantity: Quantity,
    from_int: fn(u64) -> Option<T>,
}

impl<T> UnitVisitor<T> {
    fn refuse<E: de::Error>(&self, shown: &str, found: &str) -> E {
        E::custom(UnitError::number(
            self.quantity,
            shown,
            UnitErrorKind::WrongType(found.to_owned()),
        ))
    }
}

impl<'de, T: FromStr<Err = UnitError>> Visitor<'de> for UnitVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.quantity {
            Quantity::Rate => f.write_str("a rate such as \"100Gbps\", \"400Gb/s\" or \"800Mbps\""),
            Quantity::Size => f.write_str("a size such as 4096, \"4096B\", \"4KiB\" or \"1.5MB\""),
            Quantity::Time => f.write_str("a time such as \"500ns\", \"1.5us\" or \"2ms\""),
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        v.parse().map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        (self.from_int)(v).ok_or_else(|| E::custom(UnitError::number(self.quantity, v, UnitErrorKind::MissingUnit)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        match u64::try_from(v) {
            Ok(v) => self.visit_u64(v),
            Err(_) => Err(E::custom(UnitError::number(self.quantity, v, UnitErrorKind::Negative))),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        let shown = crate::wording::float_text(v);
        // Suggest the number with a unit only when it reads as one (never "nanus" or "-infMB").
        let example = if v.is_finite() && !shown.contains('e') {
            format!("\"{shown}{}\"", self.quantity.example_unit())
        } else {
            self.quantity.example().to_owned()
        };
        Err(E::custom(UnitError::number(
            self.quantity,
            &shown,
            UnitErrorKind::WrongType(format!(
                "a floating-point number (write it as a string with a unit, e.g. {example})"
            )),
        )))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<T, E> {
        Err(E::custom(UnitError::number(
            self.quantity,
            v,
            UnitErrorKind::WrongType("a boolean".to_owned()),
        )))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<T, A::Error> {
        Err(self.refuse("[...]", "an array"))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, _: A) -> Result<T, A::Error> {
        Err(self.refuse("{...}", "a table"))
    }
}

impl<'de> Deserialize<'de> for RateSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UnitVisitor {
            quantity: Quantity::Rate,
            from_int: |_| None,
        })
    }
}

impl<'de> Deserialize<'de> for SizeSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UnitVisitor {
            quantity: Quantity::Size,
            from_int: |v| Some(SizeSpec(Bytes(v))),
        })
    }
}

impl<'de> Deserialize<'de> for TimeSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UnitVisitor {
            quantity: Quantity::Time,
            from_int: |_| None,
        })
    }
}

impl Serialize for RateSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Serialize for SizeSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Serialize for TimeSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(s: &str) -> u64 {
        match s.parse::<RateSpec>() {
            Ok(r) => r.get().0,
            Err(e) => panic!("{s:?} should parse: {e}"),
        }
    }
    fn size(s: &str) -> u64 {
        match s.parse::<SizeSpec>() {
            Ok(v) => v.get().0,
            Err(e) => panic!("{s:?} should parse: {e}"),
        }
    }
    fn time(s: &str) -> u64 {
        match s.parse::<TimeSpec>() {
            Ok(v) => v.get().0,
            Err(e) => panic!("{s:?} should parse: {e}"),
        }
    }
    fn rate_err(s: &str) -> UnitError {
        match s.parse::<RateSpec>() {
            Ok(v) => panic!("{s:?} should fail, got {v:?}"),
            Err(e) => e,
        }
    }
    fn size_err(s: &str) -> UnitError {
        match s.parse::<SizeSpec>() {
            Ok(v) => panic!("{s:?} should fail, got {v:?}"),
            Err(e) => e,
        }
    }
    fn time_err(s: &str) -> UnitError {
        match s.parse::<TimeSpec>() {
            Ok(v) => panic!("{s:?} should fail, got {v:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn rates_accepted() {
        assert_eq!(rate("100Gbps"), 100_000_000_000);
        assert_eq!(rate("400 Gb/s"), 400_000_000_000);
        assert_eq!(rate("400Gbit/s"), 400_000_000_000);
        assert_eq!(rate("12.5Gbps"), 12_500_000_000);
        assert_eq!(rate("800Mbps"), 800_000_000);
        assert_eq!(rate("1Tbps"), 1_000_000_000_000);
        assert_eq!(rate("10bps"), 10);
        assert_eq!(rate("10b/s"), 10);
        assert_eq!(rate("1.5kbps"), 1_500);
        assert_eq!(rate("1.5Kbps"), 1_500);
        assert_eq!(rate("  25Gbps  "), 25_000_000_000);
        assert_eq!(rate("25\tGbps"), 25_000_000_000);
        assert_eq!(rate("0.001Gbps"), 1_000_000);
        assert_eq!(rate("12.50000Gbps"), 12_500_000_000);
        assert_eq!(rate("007Gbps"), 7_000_000_000);
        // Bytes per second: x8.
        assert_eq!(rate("1GB/s"), 8_000_000_000);
        assert_eq!(rate("12.5GB/s"), 100_000_000_000);
        assert_eq!(rate("1B/s"), 8);
        assert_eq!(rate("0.125B/s"), 1);
        // Largest rate that fits.
        assert_eq!(rate("18446744073709551615bps"), u64::MAX);
    }

    #[test]
    fn rates_refused() {
        let e = rate_err("100Gbs");
        assert_eq!(e.kind(), &UnitErrorKind::UnknownUnit("Gbs".into()));
        assert_eq!(
            e.to_string(),
            "invalid rate \"100Gbs\": expected a number followed by a unit such as \"100Gbps\", \
             \"400Gb/s\" or \"800Mbps\" (unknown unit \"Gbs\")"
        );
        assert_eq!(rate_err("").kind(), &UnitErrorKind::Empty);
        assert_eq!(rate_err("   ").kind(), &UnitErrorKind::Empty);
        assert_eq!(rate_err("100").kind(), &UnitErrorKind::MissingUnit);
        assert_eq!(rate_err("Gbps").kind(), &UnitErrorKind::Syntax);
        assert_eq!(rate_err(".5Gbps").kind(), &UnitErrorKind::Syntax);
        assert_eq!(rate_err("1.Gbps").kind(), &UnitErrorKind::Syntax);
        assert_eq!(rate_err("+1Gbps").kind(), &UnitErrorKind::Syntax);
        assert_eq!(rate_err("-1Gbps").kind(), &UnitErrorKind::Negative);
        assert_eq!(rate_err("-Gbps").kind(), &UnitErrorKind::Syntax);
        assert_eq!(rate_err("0Gbps").kind(), &UnitErrorKind::Zero);
        assert_eq!(rate_err("0.0bps").kind(), &UnitErrorKind::Zero);
        assert_eq!(rate_err("0.1bps").kind(), &UnitErrorKind::Inexact);
        assert_eq!(rate_err("18446744073709551616bps").kind(), &UnitErrorKind::Overflow);
        assert_eq!(rate_err("20000000Tbps").kind(), &UnitErrorKind::Overflow);
        assert_eq!(
            rate_err("99999999999999999999999999999999999999999Gbps").kind(),
            &UnitErrorKind::Overflow
        );
        assert_eq!(
            rate_err("1.000000000000000000001Gbps").kind(),
            &UnitErrorKind::TooManyDecimals
        );
        assert_eq!(rate_err("1e9bps").kind(), &UnitErrorKind::UnknownUnit("e9bps".into()));
        assert_eq!(
            rate_err("100 G bps").kind(),
            &UnitErrorKind::UnknownUnit("G bps".into())
        );
        assert_eq!(rate_err("100gbps").kind(), &UnitErrorKind::UnknownUnit("gbps".into()));
        let e = rate_err("100GBps");
        assert!(matches!(e.kind(), UnitErrorKind::AmbiguousUnit(_)));
        assert_eq!(
            e.to_string(),
            "invalid rate \"100GBps\": unit \"GBps\" is ambiguous: write \"Gbps\" for bits or \
             \"GB/s\" for bytes per second"
        );
        assert_eq!(
            rate_err("0Gbps").to_string(),
            "invalid rate \"0Gbps\": a rate must be greater than zero"
        );
        assert_eq!(
            rate_err("-5Gbps").to_string(),
            "invalid rate \"-5Gbps\": a rate cannot be negative"
        );
        assert_eq!(
            rate_err("100").to_string(),
            "invalid rate \"100\": a rate needs a unit (a bare number is ambiguous); expected a \
             number followed by a unit such as \"100Gbps\", \"400Gb/s\" or \"800Mbps\""
        );
    }

    #[test]
    fn sizes_accepted() {
        assert_eq!(size("4KiB"), 4096);
        assert_eq!(size("4096B"), 4096);
        assert_eq!(size("4096"), 4096);
        assert_eq!(size("1.5MB"), 1_500_000);
        assert_eq!(size("32MiB"), 32 << 20);
        assert_eq!(size("9000 B"), 9000);
        assert_eq!(size("1.5KiB"), 1536);
        assert_eq!(size("0.5KiB"), 512);
        assert_eq!(size("1kB"), 1000);
        assert_eq!(size("2GB"), 2_000_000_000);
        assert_eq!(size("1GiB"), 1 << 30);
        assert_eq!(size("1TiB"), 1 << 40);
        assert_eq!(size("1TB"), 1_000_000_000_000);
        assert_eq!(size("1PiB"), 1 << 50);
        assert_eq!(size("1PB"), 1_000_000_000_000_000);
        assert_eq!(size("15EiB"), 15 << 60);
        assert_eq!(size("18EB"), 18_000_000_000_000_000_000);
        assert_eq!(size("0"), 0);
        assert_eq!(size("0B"), 0);
        // 2^40 bytes written with 20 decimals in EiB: exact, so accepted.
        assert_eq!(size("0.00000095367431640625EiB"), 1 << 40);
        assert_eq!(size("18446744073709551615"), u64::MAX);
    }

    #[test]
    fn sizes_refused() {
        assert_eq!(size_err("").kind(), &UnitErrorKind::Empty);
        assert_eq!(size_err("KiB").kind(), &UnitErrorKind::Syntax);
        assert_eq!(size_err("-4KiB").kind(), &UnitErrorKind::Negative);
        assert_eq!(
            size_err("4Kib").kind(),
            &UnitErrorKind::AmbiguousUnit(
                "unit \"Kib\" is in bits but sizes are in bytes: use \"B\", e.g. \"4096B\", \"4KiB\" \
             or \"1.5MB\""
                    .into()
            )
        );
        assert!(matches!(size_err("4KB").kind(), UnitErrorKind::AmbiguousUnit(_)));
        assert!(matches!(size_err("100Mbit").kind(), UnitErrorKind::AmbiguousUnit(_)));
        assert_eq!(size_err("4 KiBs").kind(), &UnitErrorKind::UnknownUnit("KiBs".into()));
        assert_eq!(size_err("4kib").kind(), &UnitErrorKind::UnknownUnit("kib".into()));
        assert_eq!(size_err("0.5B").kind(), &UnitErrorKind::Inexact);
        assert_eq!(size_err("1.0001KiB").kind(), &UnitErrorKind::Inexact);
        assert_eq!(size_err("16EiB").kind(), &UnitErrorKind::Overflow);
        assert_eq!(size_err("18446744073709551616").kind(), &UnitErrorKind::Overflow);
        assert_eq!(
            size_err("0.000000000000000000001EB").kind(),
            &UnitErrorKind::TooManyDecimals
        );
        assert_eq!(
            size_err("0.5B").to_string(),
            "invalid size \"0.5B\": not a whole number of bytes"
        );
        assert_eq!(
            size_err("16EiB").to_string(),
            "invalid size \"16EiB\": too large; the maximum is 18446744073709551615B (just under 16EiB)"
        );
        assert_eq!(
            size_err("4 KiBs").to_string(),
            "invalid size \"4 KiBs\": expected a number of bytes, optionally followed by a unit \
             such as \"4096B\", \"4KiB\", \"32MiB\" or \"1.5MB\" (unknown unit \"KiBs\")"
        );
    }

    #[test]
    fn times_accepted() {
        assert_eq!(time("1.5us"), 1_500_000);
        assert_eq!(time("500ns"), 500_000);
        assert_eq!(time("100ps"), 100);
        assert_eq!(time("2ms"), 2_000_000_000);
        assert_eq!(time("1s"), 1_000_000_000_000);
        assert_eq!(time("130 ns"), 130_000);
        assert_eq!(time("1.5µs"), 1_500_000); // U+00B5
        assert_eq!(time("1.5μs"), 1_500_000); // U+03BC
        assert_eq!(time("0.001ns"), 1);
        assert_eq!(time("0.000000000001s"), 1);
        assert_eq!(time("0s"), 0);
        assert_eq!(time("18446744.073709551615s"), u64::MAX);
    }

    #[test]
    fn times_refused() {
        assert_eq!(time_err("").kind(), &UnitErrorKind::Empty);
        let e = time_err("500");
        assert_eq!(e.kind(), &UnitErrorKind::MissingUnit);
        assert_eq!(
            e.to_string(),
            "invalid time \"500\": a time needs a unit (a bare number is ambiguous); expected a \
             number followed by a unit such as \"500ns\", \"1.5us\" or \"2ms\""
        );
        assert_eq!(time_err("ns").kind(), &UnitErrorKind::Syntax);
        assert_eq!(time_err("1..5us").kind(), &UnitErrorKind::Syntax);
        assert_eq!(time_err("5 sec").kind(), &UnitErrorKind::UnknownUnit("sec".into()));
        assert_eq!(time_err("5NS").kind(), &UnitErrorKind::UnknownUnit("NS".into()));
        assert_eq!(time_err("-1ns").kind(), &UnitErrorKind::Negative);
        assert_eq!(time_err("-0.5ns").kind(), &UnitErrorKind::Negative);
        let e = time_err("0.1ps");
        assert_eq!(e.kind(), &UnitErrorKind::Inexact);
        assert_eq!(
            e.to_string(),
            "invalid time \"0.1ps\": not a whole number of picoseconds (1ps is the smallest time \
             step)"
        );
        assert_eq!(time_err("1.0001ns").kind(), &UnitErrorKind::Inexact);
        assert_eq!(time_err("18446745s").kind(), &UnitErrorKind::Overflow);
        assert_eq!(time_err("18446744.073709551616s").kind(), &UnitErrorKind::Overflow);
        assert_eq!(
            time_err("1.000000000000000000001s").kind(),
            &UnitErrorKind::TooManyDecimals
        );
        assert_eq!(
            time_err("1.000000000000000000001s").to_string(),
            "invalid time \"1.000000000000000000001s\": too many decimal places (at most 20)"
        );
    }

    #[test]
    fn long_input_is_truncated_in_messages() {
        let long = format!("{}Gbps", "9".repeat(200));
        let msg = rate_err(&long).to_string();
        assert!(msg.len() < 200, "{msg}");
        assert!(msg.contains("...\": too large"), "{msg}");
    }

    #[test]
    fn display_is_canonical_and_round_trips() {
        let cases_rate = [
            ("100Gbps", "100Gbps"),
            ("400 Gb/s", "400Gbps"),
            ("12.5Gbps", "12.5Gbps"),
            ("800Mbps", "800Mbps"),
            ("1Tbps", "1Tbps"),
            ("1.6Tbps", "1.6Tbps"),
            ("10bps", "10bps"),
            ("1500bps", "1.5kbps"),
            ("1GB/s", "8Gbps"),
            ("1000000001bps", "1.000000001Gbps"),
        ];
        for (input, canon) in cases_rate {
            let r: RateSpec = input.parse().unwrap();
            assert_eq!(r.to_string(), canon, "{input}");
            assert_eq!(canon.parse::<RateSpec>().unwrap(), r);
        }
        let cases_size = [
            ("4KiB", "4KiB"),
            ("4096B", "4KiB"),
            ("1.5MB", "1500kB"),
            ("32MiB", "32MiB"),
            ("9000 B", "9kB"),
            ("1536", "1536B"),
            ("1000000", "1MB"),
            ("1024000", "1000KiB"),
            ("0", "0B"),
            ("1", "1B"),
        ];
        for (input, canon) in cases_size {
            let s: SizeSpec = input.parse().unwrap();
            assert_eq!(s.to_string(), canon, "{input}");
            assert_eq!(canon.parse::<SizeSpec>().unwrap(), s);
        }
        let cases_time = [
            ("1.5us", "1.5us"),
            ("500ns", "500ns"),
            ("100ps", "100ps"),
            ("2ms", "2ms"),
            ("1s", "1s"),
            ("130 ns", "130ns"),
            ("1500ns", "1.5us"),
            ("0ns", "0s"),
            ("1000001ps", "1.000001us"),
            ("90s", "90s"),
        ];
        for (input, canon) in cases_time {
            let t: TimeSpec = input.parse().unwrap();
            assert_eq!(t.to_string(), canon, "{input}");
            assert_eq!(canon.parse::<TimeSpec>().unwrap(), t);
        }
        // Extremes round-trip too.
        for v in [1, 7, 999, 1001, 123_456_789_012_345, u64::MAX] {
            let r = RateSpec::new(BitsPerSec(v)).unwrap();
            assert_eq!(r.to_string().parse::<RateSpec>().unwrap(), r);
            let s = SizeSpec::new(Bytes(v));
            assert_eq!(s.to_string().parse::<SizeSpec>().unwrap(), s);
            let t = TimeSpec::new(Duration(v));
            assert_eq!(t.to_string().parse::<TimeSpec>().unwrap(), t);
        }
    }

    #[test]
    fn conversions() {
        assert_eq!(RateSpec::new(BitsPerSec(0)), None);
        assert!(RateSpec::try_from(BitsPerSec(0)).is_err());
        let r = RateSpec::try_from(BitsPerSec::from_gbps(100)).unwrap();
        assert_eq!(BitsPerSec::from(r), BitsPerSec::from_gbps(100));
        assert_eq!(Bytes::from(SizeSpec::from(Bytes(9))), Bytes(9));
        assert_eq!(
            Duration::from(TimeSpec::from(Duration::from_ns(3))),
            Duration::from_ns(3)
        );
        assert_eq!(SizeSpec::from_bytes(4096).get(), Bytes(4096));
        assert_eq!(TimeSpec::from_duration(Duration(7)).get(), Duration(7));
        assert_eq!(RateSpec::from_bps(10).map(RateSpec::get), Some(BitsPerSec(10)));
        assert_eq!(RateSpec::from_bps(0), None);
    }

    #[derive(Debug, serde::Deserialize, serde::Serialize, PartialEq)]
    struct Doc {
        rate: RateSpec,
        size: SizeSpec,
        time: TimeSpec,
    }

    fn doc_err(text: &str) -> String {
        match toml::from_str::<Doc>(text) {
            Ok(d) => panic!("should fail: {d:?}"),
            Err(e) => e.message().to_owned(),
        }
    }

    /// Issue 15: a float where a quantity goes suggested `"NaNus"` or `"-infMB"`.
    #[test]
    fn non_finite_floats_get_a_real_example() {
        for (v, shown) in [("nan", "nan"), ("-inf", "-inf"), ("inf", "inf"), ("1e300", "1e300")] {
            let m = doc_err(&format!("rate = \"1Gbps\"\nsize = 1\ntime = {v}\n"));
            assert!(
                m.starts_with(&format!("invalid time {shown}: found a floating-point number")),
                "{m}"
            );
            assert!(m.contains("e.g. \"1.5us\")"), "{m}");
            assert!(
                !m.to_lowercase().contains("nanus") && !m.contains("infus") && !m.contains("NaN"),
                "{m}"
            );
        }
    }

    #[test]
    fn serde_toml() {
        let doc: Doc = toml::from_str("rate = \"12.5Gbps\"\nsize = 4096\ntime = \"1.5us\"\n").unwrap();
        assert_eq!(doc.rate.get(), BitsPerSec(12_500_000_000));
        assert_eq!(doc.size.get(), Bytes(4096));
        assert_eq!(doc.time.get(), Duration::from_ns(1500));
        let out = toml::to_string(&doc).unwrap();
        assert_eq!(out, "rate = \"12.5Gbps\"\nsize = \"4KiB\"\ntime = \"1.5us\"\n");
        assert_eq!(toml::from_str::<Doc>(&out).unwrap(), doc);

        assert_eq!(
            doc_err("rate = \"100Gbs\"\nsize = 1\ntime = \"1s\"\n"),
            "invalid rate \"100Gbs\": expected a number followed by a unit such as \"100Gbps\", \
             \"400Gb/s\" or \"800Mbps\" (unknown unit \"Gbs\")"
        );
        assert_eq!(
            doc_err("rate = \"1Gbps\"\nsize = 1\ntime = 500\n"),
            "invalid time 500: a time needs a unit (a bare number is ambiguous); expected a \
             number followed by a unit such as \"500ns\", \"1.5us\" or \"2ms\""
        );
        assert_eq!(
            doc_err("rate = 100\nsize = 1\ntime = \"1s\"\n"),
            "invalid rate 100: a rate needs a unit (a bare number is ambiguous); expected a \
             number followed by a unit such as \"100Gbps\", \"400Gb/s\" or \"800Mbps\""
        );
        assert_eq!(
            doc_err("rate = \"1Gbps\"\nsize = -1\ntime = \"1s\"\n"),
            "invalid size -1: a size cannot be negative"
        );
        assert_eq!(
            doc_err("rate = \"1Gbps\"\nsize = 1.5\ntime = \"1s\"\n"),
            "invalid size 1.5: found a floating-point number (write it as a string with a unit, \
             e.g. \"1.5MB\"); expected a number of bytes, optionally followed by a unit such as \
             \"4096B\", \"4KiB\", \"32MiB\" or \"1.5MB\""
        );
        assert_eq!(
            doc_err("rate = true\nsize = 1\ntime = \"1s\"\n"),
            "invalid rate true: found a boolean; expected a number followed by a unit such as \
             \"100Gbps\", \"400Gb/s\" or \"800Mbps\""
        );
        assert!(
            doc_err("rate = \"1Gbps\"\nsize = [1]\ntime = \"1s\"\n").contains("invalid size [...]: found an array;")
        );
        assert!(doc_err("rate = \"1Gbps\"\nsize = 1\ntime = {a = 1}\n").contains("invalid time {...}: found a table;"));
    }
}

#[cfg(test)]
mod ib_preset_tests {
    use super::*;

    #[test]
    fn infiniband_presets() {
        let r = |s: &str| s.parse::<RateSpec>().map(|r| r.get().get());
        assert_eq!(r("ndr").unwrap(), 400_000_000_000);
        assert_eq!(r("NDR").unwrap(), 400_000_000_000);
        assert_eq!(r("hdr_1x").unwrap(), 50_000_000_000);
        assert_eq!(r("xdr_8x").unwrap(), 1_600_000_000_000);
        assert_eq!(r("edr").unwrap(), 100_000_000_000);
        assert_eq!(r("fdr").unwrap(), 54_545_454_544);
        assert!(r("ndr_3x").is_err());
        assert!(r("qdrx").is_err());
        // The canonical form is numeric, and parses back to the same rate.
        let ndr: RateSpec = "ndr".parse().unwrap();
        assert_eq!(ndr.to_string(), "400Gbps");
    }
}

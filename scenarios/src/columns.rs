//! A table of typed columns, written as CSV or as Parquet (the time series, `timeseries.rs`),
//! and a Parquet file read back as text cells (the plots, `plots/mod.rs`).
//!
//! One table gives both files, so they cannot disagree on columns or rows: the CSV writes
//! each decimal column with its own number of places, Parquet keeps the full `f64`.
//! Parquet is written with the `parquet` crate's low-level column writer: INT64, DOUBLE
//! (optional where a cell may be missing: null, the CSV's empty cell) and UTF-8 BYTE_ARRAY
//! columns, Snappy pages, row groups of at most [`ROW_GROUP_ROWS`] rows. The bytes depend on
//! the table alone (`created_by` names fabricsim's version, nothing of the machine or the
//! clock), so the same run gives the same file.

use parquet::basic::Compression;
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::record::Field;
use std::fmt::Write as _;
use std::sync::Arc;

/// Most rows of one Parquet row group.
pub const ROW_GROUP_ROWS: usize = 65_536;

/// The `created_by` of the Parquet files.
const CREATED_BY: &str = concat!("fabricsim ", env!("CARGO_PKG_VERSION"), " (parquet-rs)");

/// The cells of one column.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    /// Integers (Parquet INT64).
    Int(Vec<i64>),
    /// Numbers written with `decimals` places in the CSV (Parquet DOUBLE).
    Float { values: Vec<f64>, decimals: usize },
    /// Numbers that may be missing: an empty CSV cell, a Parquet null (optional DOUBLE).
    OptFloat { values: Vec<Option<f64>>, decimals: usize },
    /// Text (Parquet BYTE_ARRAY, UTF-8); never holds a comma or a newline.
    Text(Vec<String>),
}

impl Values {
    fn len(&self) -> usize {
        match self {
            Values::Int(v) => v.len(),
            Values::Float { values, .. } => values.len(),
            Values::OptFloat { values, .. } => values.len(),
            Values::Text(v) => v.len(),
        }
    }

    fn write_cell(&self, i: usize, s: &mut String) {
        let _ = match self {
            Values::Int(v) => write!(s, "{}", v[i]),
            Values::Float { values, decimals } => write!(s, "{:.*}", decimals, values[i]),
            Values::OptFloat { values, decimals } => match values[i] {
                Some(v) => write!(s, "{v:.decimals$}"),
                None => Ok(()),
            },
            Values::Text(v) => write!(s, "{}", v[i]),
        };
    }

    fn parquet_type(&self) -> &'static str {
        match self {
            Values::Int(_) => "required int64",
            Values::Float { .. } => "required double",
            Values::OptFloat { .. } => "optional double",
            Values::Text(_) => "required binary",
        }
    }
}

/// A named column.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub name: String,
    pub values: Values,
}

/// Columns of equal length (the rows of a table).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Columns {
    pub columns: Vec<Column>,
}

impl Columns {
    fn push(&mut self, name: &str, values: Values) {
        assert!(
            self.columns.first().is_none_or(|c| c.values.len() == values.len()),
            "column {name}: length differs"
        );
        self.columns.push(Column {
            name: name.to_owned(),
            values,
        });
    }

    /// Adds an integer column.
    pub fn int(&mut self, name: &str, v: impl IntoIterator<Item = i64>) {
        self.push(name, Values::Int(v.into_iter().collect()));
    }

    /// Adds a number column written with `decimals` places in the CSV.
    pub fn float(&mut self, name: &str, decimals: usize, v: impl IntoIterator<Item = f64>) {
        let values = v.into_iter().collect();
        self.push(name, Values::Float { values, decimals });
    }

    /// Adds a number column whose cells may be missing.
    pub fn opt_float(&mut self, name: &str, decimals: usize, v: impl IntoIterator<Item = Option<f64>>) {
        let values = v.into_iter().collect();
        self.push(name, Values::OptFloat { values, decimals });
    }

    /// Adds a text column.
    pub fn text(&mut self, name: &str, v: impl IntoIterator<Item = String>) {
        self.push(name, Values::Text(v.into_iter().collect()));
    }

    /// Rows.
    pub fn len(&self) -> usize {
        self.columns.first().map_or(0, |c| c.values.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The table as CSV: a header line, one line per row, then `trailer` (e.g. a `#` line).
    pub fn csv(&self, trailer: &str) -> String {
        let names: Vec<&str> = self.columns.iter().map(|c| c.name.as_str()).collect();
        let mut s = names.join(",");
        s.push('\n');
        for i in 0..self.len() {
            for (k, c) in self.columns.iter().enumerate() {
                if k > 0 {
                    s.push(',');
                }
                c.values.write_cell(i, &mut s);
            }
            s.push('\n');
        }
        s.push_str(trailer);
        s
    }

    /// The table as a Parquet file named `name` (the schema's message name), with
    /// `metadata` as the footer's key-value metadata. `Err` only if the writer fails.
    pub fn parquet(&self, name: &str, metadata: &[(&str, String)]) -> Result<Vec<u8>, String> {
        let err = |e: parquet::errors::ParquetError| format!("writing Parquet: {e}");
        let mut schema = format!("message {name} {{\n");
        for c in &self.columns {
            let logical = if matches!(c.values, Values::Text(_)) {
                " (STRING)"
            } else {
                ""
            };
            let _ = writeln!(schema, "  {} {}{logical};", c.values.parquet_type(), c.name);
        }
        schema.push('}');
        let schema = Arc::new(parquet::schema::parser::parse_message_type(&schema).map_err(err)?);
        let kv: Vec<KeyValue> = metadata
            .iter()
            .map(|(k, v)| KeyValue::new((*k).to_owned(), v.clone()))
            .collect();
        let props = WriterProperties::builder()
            .set_created_by(CREATED_BY.to_owned())
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_key_value_metadata((!kv.is_empty()).then_some(kv))
            .build();
        let mut w = SerializedFileWriter::new(Vec::new(), schema, Arc::new(props)).map_err(err)?;
        for start in (0..self.len()).step_by(ROW_GROUP_ROWS) {
            let rows = start..(start + ROW_GROUP_ROWS).min(self.len());
            let mut rg = w.next_row_group().map_err(err)?;
            for c in &self.columns {
                let mut col = rg
                    .next_column()
                    .map_err(err)?
                    .ok_or("fewer Parquet columns than the schema's")?;
                match &c.values {
                    Values::Int(v) => col.typed::<Int64Type>().write_batch(&v[rows.clone()], None, None),
                    Values::Float { values, .. } => {
                        col.typed::<DoubleType>().write_batch(&values[rows.clone()], None, None)
                    }
                    Values::OptFloat { values, .. } => {
                        let cells = &values[rows.clone()];
                        let present: Vec<f64> = cells.iter().flatten().copied().collect();
                        let def: Vec<i16> = cells.iter().map(|v| i16::from(v.is_some())).collect();
                        col.typed::<DoubleType>().write_batch(&present, Some(&def), None)
                    }
                    Values::Text(v) => {
                        let b: Vec<ByteArray> = v[rows.clone()].iter().map(|s| ByteArray::from(s.as_str())).collect();
                        col.typed::<ByteArrayType>().write_batch(&b, None, None)
                    }
                }
                .map_err(err)?;
                col.close().map_err(err)?;
            }
            rg.close().map_err(err)?;
        }
        w.into_inner().map_err(err)
    }
}

/// A Parquet file's column names and rows as text cells: integers and strings as written,
/// doubles in Rust's shortest round-trip form, nulls as empty cells.
pub fn read_parquet(file: std::fs::File) -> Result<(Vec<String>, Vec<Vec<String>>), String> {
    let err = |e: parquet::errors::ParquetError| e.to_string();
    let reader = SerializedFileReader::new(file).map_err(err)?;
    let header = reader
        .metadata()
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .map(|c| c.name().to_owned())
        .collect();
    let mut rows = Vec::new();
    for row in reader.get_row_iter(None).map_err(err)? {
        let row = row.map_err(err)?;
        rows.push(
            row.get_column_iter()
                .map(|(_, f)| match f {
                    Field::Null => String::new(),
                    Field::Str(s) => s.clone(),
                    Field::Double(v) => v.to_string(),
                    f => f.to_string(),
                })
                .collect(),
        );
    }
    Ok((header, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Columns {
        let mut c = Columns::default();
        c.float("time_ns", 3, [1.5, 2.25]);
        c.int("port", [3, 4]);
        c.text("link", ["a->b".to_owned(), "b->a".to_owned()]);
        c.opt_float("alpha", 6, [Some(0.5), None]);
        c
    }

    #[test]
    fn csv_writes_each_column_with_its_places_and_missing_cells_empty() {
        assert_eq!(
            table().csv("# end\n"),
            "time_ns,port,link,alpha\n1.500,3,a->b,0.500000\n2.250,4,b->a,\n# end\n"
        );
    }

    #[test]
    fn parquet_reads_back_the_same_cells_and_is_the_same_bytes_twice() {
        let bytes = table().parquet("t", &[("k", "v".to_owned())]).unwrap();
        assert_eq!(bytes, table().parquet("t", &[("k", "v".to_owned())]).unwrap());
        assert_eq!(&bytes[..4], b"PAR1");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        std::fs::write(&path, &bytes).unwrap();
        let (h, rows) = read_parquet(std::fs::File::open(&path).unwrap()).unwrap();
        assert_eq!(h, ["time_ns", "port", "link", "alpha"]);
        assert_eq!(rows, [["1.5", "3", "a->b", "0.5"], ["2.25", "4", "b->a", ""]]);
    }
}

//! Reading files the user names (scenarios, CDFs, baselines, results): regular files only, and
//! never more than a size limit.
//!
//! A path that names a device (`/dev/zero`, `/dev/urandom`), a FIFO or a socket is refused from
//! its metadata, before it is opened: opening a FIFO blocks until a writer comes, and a device
//! never ends. A regular file is read through [`std::io::Read::take`], one byte past the limit,
//! so a file that grows while it is read is refused too.

use std::io::Read;
use std::path::Path;

/// Why a file could not be read; `Display` is the message without the file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileError {
    NotFound,
    PermissionDenied,
    /// A directory where a file was expected.
    Directory,
    /// A FIFO, device or socket: `what` names it ("a FIFO (named pipe)", "a character device").
    NotRegular {
        what: &'static str,
    },
    /// Over the limit: `size` when the metadata said so, `None` when it grew while read.
    TooLarge {
        size: Option<u64>,
        limit: u64,
    },
    Io(String),
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileError::NotFound => write!(f, "file not found"),
            FileError::PermissionDenied => write!(f, "permission denied"),
            FileError::Directory => write!(f, "is a directory, not a file"),
            FileError::NotRegular { what } => write!(f, "is {what}, not a regular file"),
            FileError::TooLarge {
                size: Some(size),
                limit,
            } => {
                write!(f, "file is too large ({size} bytes; the limit is {limit} bytes)")
            }
            FileError::TooLarge { size: None, limit } => {
                write!(f, "file is too large (more than the limit of {limit} bytes)")
            }
            FileError::Io(m) => write!(f, "cannot read file: {m}"),
        }
    }
}

impl From<std::io::Error> for FileError {
    fn from(e: std::io::Error) -> Self {
        match e.kind() {
            std::io::ErrorKind::NotFound => FileError::NotFound,
            std::io::ErrorKind::PermissionDenied => FileError::PermissionDenied,
            _ => FileError::Io(e.to_string()),
        }
    }
}

/// What a non-regular, non-directory file is, for messages.
fn kind_of(t: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    let _ = t;
    "a special file"
}

/// Checks that `path` is a regular file of at most `limit` bytes (symbolic links followed)
/// without opening it.
pub fn check_regular(path: &Path, limit: u64) -> Result<(), FileError> {
    let meta = std::fs::metadata(path)?;
    let t = meta.file_type();
    if t.is_dir() {
        return Err(FileError::Directory);
    }
    if !t.is_file() {
        return Err(FileError::NotRegular { what: kind_of(t) });
    }
    if meta.len() > limit {
        return Err(FileError::TooLarge {
            size: Some(meta.len()),
            limit,
        });
    }
    Ok(())
}

/// Reads the regular file at `path`, at most `limit` bytes ([`check_regular`] first).
pub fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, FileError> {
    check_regular(path, limit)?;
    let handle = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    handle.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(FileError::TooLarge { size: None, limit });
    }
    Ok(bytes)
}

/// [`read_limited`] as UTF-8 text; invalid UTF-8 is an [`FileError::Io`] naming the offset.
pub fn read_text_limited(path: &Path, limit: u64) -> Result<String, FileError> {
    String::from_utf8(read_limited(path, limit)?).map_err(|e| {
        FileError::Io(format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_are_refused_before_reading() {
        for dev in ["/dev/zero", "/dev/urandom", "/dev/null"] {
            if Path::new(dev).exists() {
                assert_eq!(
                    read_limited(Path::new(dev), 1 << 20),
                    Err(FileError::NotRegular {
                        what: "a character device"
                    }),
                    "{dev}"
                );
            }
        }
    }

    #[test]
    fn limits_and_kinds() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"12345").unwrap();
        assert_eq!(read_limited(&p, 5).unwrap(), b"12345");
        assert_eq!(
            read_limited(&p, 4),
            Err(FileError::TooLarge {
                size: Some(5),
                limit: 4
            })
        );
        assert_eq!(read_limited(dir.path(), 4), Err(FileError::Directory));
        assert_eq!(read_limited(&dir.path().join("none"), 4), Err(FileError::NotFound));
        std::fs::write(&p, b"a\xffb").unwrap();
        assert_eq!(
            read_text_limited(&p, 10).unwrap_err().to_string(),
            "cannot read file: not UTF-8 text (invalid byte at offset 1)"
        );
    }
}

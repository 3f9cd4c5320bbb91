//! The results directory: fabricsim's marker, refusal of any directory fabricsim did not write,
//! and a swap of old and new results by renames.
//!
//! Every results directory holds [`MARKER`], a file naming the summary schema. `fabricsim run
//! --out DIR` replaces `DIR` only when it carries the marker or is empty, and never when it is
//! the current directory, a parent of it, or the directory of the scenario file (or a parent).
//!
//! Writing: the files go into `.<name>.partial-<pid>` beside `DIR` (the marker first); then the
//! old `DIR` is renamed to `.<name>.old-<pid>`, the new one renamed to `DIR`, and the old one
//! deleted (its marker last). A kill at any moment leaves the old results or the new ones whole
//! (under `DIR`, or under `.<name>.old-<pid>` for the instant between the two renames); the
//! next run restores such an old directory if `DIR` is missing, and removes stale partial and
//! old directories of that name that carry the marker.

use crate::interrupt::Interrupt;
use std::path::{Path, PathBuf};

/// The marker file of a results directory.
pub const MARKER: &str = ".fabricsim-results";

/// The marker's contents: the schema of the results, and what the file is for.
pub fn marker_text() -> String {
    format!(
        "{}\nWritten by `fabricsim run`: this directory holds fabricsim results, and the next run with \
         the same --out replaces it (docs/results.md).\n",
        crate::report::SUMMARY_SCHEMA
    )
}

/// Why results cannot be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutError {
    /// The directory is not one fabricsim may replace (a usage error: exit 2).
    Refused(String),
    /// A file-system error while writing.
    Io(String),
    /// A signal came while writing: nothing was replaced.
    Interrupted,
}

impl std::fmt::Display for OutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OutError::Refused(m) | OutError::Io(m) => f.write_str(m),
            OutError::Interrupted => f.write_str("interrupted while writing; the previous results are unchanged"),
        }
    }
}

fn io(e: std::io::Error) -> OutError {
    OutError::Io(e.to_string())
}

/// A results directory about to be written.
#[derive(Debug, Clone)]
pub struct Target {
    dir: PathBuf,
    parent: PathBuf,
    name: String,
}

/// `p` with symbolic links and `..` resolved as far as it exists.
fn resolved(p: &Path) -> PathBuf {
    if let Ok(c) = p.canonicalize() {
        return c;
    }
    match (p.parent(), p.file_name()) {
        (Some(parent), Some(name)) => {
            let parent = if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            };
            resolved(parent).join(name)
        }
        _ => std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()),
    }
}

pub fn has_marker(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join(MARKER)).is_ok_and(|m| m.is_file())
}

fn is_empty_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut it| it.next().is_none())
}

impl Target {
    /// Checks that `dir` may receive the results of `scenario_file` (see the module docs) and
    /// tidies what an earlier killed run left beside it. Called before the run, so that a
    /// refusal costs no simulation.
    pub fn new(dir: &Path, scenario_file: &Path) -> Result<Target, OutError> {
        let shown = dir.display();
        let abs = resolved(dir);
        let refuse = |why: String| Err(OutError::Refused(why));
        if let Ok(cwd) = std::env::current_dir().map(|c| resolved(&c)) {
            if cwd == abs {
                return refuse(format!(
                    "{shown} is the current directory; fabricsim never replaces it: give a new directory, e.g. --out results/run1"
                ));
            }
            if cwd.starts_with(&abs) {
                return refuse(format!(
                    "{shown} is a parent of the current directory; fabricsim never replaces it: give a new directory, e.g. --out results/run1"
                ));
            }
        }
        if let Some(sdir) = resolved(scenario_file).parent()
            && sdir.starts_with(&abs)
        {
            return refuse(format!(
                "{shown} holds the scenario file {}; fabricsim never replaces it: give a new directory",
                scenario_file.display()
            ));
        }
        let (Some(parent), Some(name)) = (abs.parent(), abs.file_name()) else {
            return refuse(format!("{shown} is not a directory fabricsim can write results to"));
        };
        let t = Target {
            dir: dir.to_path_buf(),
            parent: parent.to_path_buf(),
            name: name.to_string_lossy().into_owned(),
        };
        t.check_replaceable()?;
        t.tidy();
        Ok(t)
    }

    /// The results directory as given.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `Ok` when the directory is absent, empty, or a fabricsim results directory.
    fn check_replaceable(&self) -> Result<(), OutError> {
        let shown = self.dir.display();
        let Ok(meta) = std::fs::symlink_metadata(&self.dir) else {
            return Ok(());
        };
        if meta.file_type().is_symlink() {
            return Err(OutError::Refused(format!(
                "{shown} is a symbolic link; give the directory itself, or a new one"
            )));
        }
        if !meta.is_dir() {
            return Err(OutError::Refused(format!(
                "{shown} exists and is not a directory; give a new directory"
            )));
        }
        if has_marker(&self.dir) || is_empty_dir(&self.dir) {
            return Ok(());
        }
        Err(OutError::Refused(format!(
            "{shown} is not empty and is not a fabricsim results directory (it has no {MARKER} file), so \
             fabricsim will not replace it: give a new directory, or empty or remove this one yourself"
        )))
    }

    fn sibling(&self, what: &str, pid: u32) -> PathBuf {
        self.parent.join(format!(".{}.{what}-{pid}", self.name))
    }

    /// Restores old results a killed run left between its two renames, and removes stale
    /// partial and old directories of this name (of processes no longer running) that carry
    /// the marker.
    fn tidy(&self) {
        let Ok(entries) = std::fs::read_dir(&self.parent) else {
            return;
        };
        let me = std::process::id();
        let mut stale: Vec<(PathBuf, bool)> = Vec::new();
        for e in entries.flatten() {
            let file = e.file_name().to_string_lossy().into_owned();
            let Some(rest) = file.strip_prefix(&format!(".{}.", self.name)) else {
                continue;
            };
            let (old, pid) = match (rest.strip_prefix("old-"), rest.strip_prefix("partial-")) {
                (Some(p), _) => (true, p),
                (_, Some(p)) => (false, p),
                _ => continue,
            };
            let Ok(pid) = pid.parse::<u32>() else { continue };
            if pid == me || process_alive(pid) || !has_marker(&e.path()) {
                continue;
            }
            stale.push((e.path(), old));
        }
        stale.sort();
        for (p, old) in stale {
            if old && std::fs::symlink_metadata(&self.dir).is_err() && std::fs::rename(&p, &self.dir).is_ok() {
                continue;
            }
            let _ = remove_results_dir(&p);
        }
    }

    /// Writes `files` (and the marker) and swaps them into place. A rise of `interrupt` above
    /// `seen` before the swap stops the writing: the partial directory is removed and the old
    /// results stay.
    pub fn write(&self, files: &[(&str, Vec<u8>)], interrupt: &Interrupt, seen: usize) -> Result<(), OutError> {
        std::fs::create_dir_all(&self.parent).map_err(io)?;
        let me = std::process::id();
        let tmp = self.sibling("partial", me);
        if std::fs::symlink_metadata(&tmp).is_ok() {
            remove_results_dir(&tmp).map_err(io)?;
        }
        std::fs::create_dir(&tmp).map_err(io)?;
        let r = self.fill_and_swap(&tmp, files, interrupt, seen);
        if r.is_err() {
            let _ = remove_results_dir(&tmp);
        }
        r
    }

    fn fill_and_swap(
        &self,
        tmp: &Path,
        files: &[(&str, Vec<u8>)],
        interrupt: &Interrupt,
        seen: usize,
    ) -> Result<(), OutError> {
        let stop = || interrupt.count() > seen;
        std::fs::write(tmp.join(MARKER), marker_text()).map_err(io)?;
        for (f, bytes) in files {
            if stop() {
                return Err(OutError::Interrupted);
            }
            std::fs::write(tmp.join(f), bytes).map_err(io)?;
        }
        if stop() {
            return Err(OutError::Interrupted);
        }
        // The directory may have changed during the run: check again before replacing it.
        self.check_replaceable()?;
        let old = self.sibling("old", std::process::id());
        let had_old = std::fs::symlink_metadata(&self.dir).is_ok();
        if had_old {
            std::fs::rename(&self.dir, &old).map_err(io)?;
        }
        if let Err(e) = std::fs::rename(tmp, &self.dir) {
            if had_old {
                let _ = std::fs::rename(&old, &self.dir);
            }
            return Err(io(e));
        }
        if had_old {
            // Not an error if this fails: the new results are in place, and the next run tidies.
            let _ = remove_results_dir(&old);
        }
        Ok(())
    }
}

/// Whether process `pid` runs (Linux `/proc`; elsewhere assumed not, so stale dirs are tidied).
fn process_alive(pid: u32) -> bool {
    Path::new("/proc/self").exists() && Path::new(&format!("/proc/{pid}")).exists()
}

/// Removes a results directory with its marker last, so that a directory half removed by a
/// kill still carries the marker and is tidied by the next run.
fn remove_results_dir(p: &Path) -> std::io::Result<()> {
    for e in std::fs::read_dir(p)? {
        let e = e?;
        if e.file_name() == MARKER {
            continue;
        }
        if e.file_type()?.is_dir() {
            std::fs::remove_dir_all(e.path())?;
        } else {
            std::fs::remove_file(e.path())?;
        }
    }
    match std::fs::remove_file(p.join(MARKER)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    std::fs::remove_dir(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Vec<(&'static str, Vec<u8>)> {
        vec![("summary.json", b"{}\n".to_vec()), ("flows.csv", b"flow\n".to_vec())]
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn writes_the_marker_and_replaces_only_marked_or_empty_directories() {
        let root = tempfile::tempdir().unwrap();
        let scenario = root.path().join("s.toml");
        std::fs::write(&scenario, "").unwrap();
        let out = root.path().join("out");
        let t = Target::new(&out, &scenario).unwrap();
        t.write(&files(), &Interrupt::manual(), 0).unwrap();
        assert_eq!(names(&out), [MARKER, "flows.csv", "summary.json"]);
        assert!(
            std::fs::read_to_string(out.join(MARKER))
                .unwrap()
                .starts_with("fabricsim.summary/")
        );
        // A second run replaces it; nothing is left beside it.
        Target::new(&out, &scenario)
            .unwrap()
            .write(&files()[..1], &Interrupt::manual(), 0)
            .unwrap();
        assert_eq!(names(&out), [MARKER, "summary.json"]);
        assert_eq!(names(root.path()), ["out", "s.toml"]);
        // An empty directory is fine; one with a user's file, even named summary.json, is not.
        let empty = root.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        Target::new(&empty, &scenario).unwrap();
        let user = root.path().join("user");
        std::fs::create_dir_all(user.join("src")).unwrap();
        std::fs::write(user.join("summary.json"), "mine").unwrap();
        let e = Target::new(&user, &scenario).unwrap_err();
        assert!(
            matches!(&e, OutError::Refused(m) if m.contains("no .fabricsim-results")),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(user.join("summary.json")).unwrap(), "mine");
        // The scenario's own directory and its parents are refused even when marked.
        std::fs::write(root.path().join(MARKER), "").unwrap();
        let e = Target::new(root.path(), &scenario).unwrap_err();
        assert!(e.to_string().contains("holds the scenario file"), "{e}");
    }

    #[test]
    fn an_interrupt_while_writing_leaves_the_old_results_and_no_partial_directory() {
        let root = tempfile::tempdir().unwrap();
        let scenario = root.path().join("s.toml");
        std::fs::write(&scenario, "").unwrap();
        let out = root.path().join("out");
        Target::new(&out, &scenario)
            .unwrap()
            .write(&files(), &Interrupt::manual(), 0)
            .unwrap();
        let before = names(&out);
        let signals = Interrupt::manual();
        signals.raise();
        let e = Target::new(&out, &scenario).unwrap().write(&files()[..1], &signals, 0);
        assert_eq!(e, Err(OutError::Interrupted));
        assert_eq!(names(&out), before);
        assert_eq!(names(root.path()), ["out", "s.toml"]);
    }

    #[test]
    fn leftovers_of_a_killed_run_are_restored_or_removed() {
        let root = tempfile::tempdir().unwrap();
        let scenario = root.path().join("s.toml");
        std::fs::write(&scenario, "").unwrap();
        // Killed between its two renames: no `out`, the old results as `.out.old-PID`, the new
        // ones complete as `.out.partial-PID`. PID 4000000000 runs nowhere.
        let old = root.path().join(".out.old-4000000000");
        let partial = root.path().join(".out.partial-4000000000");
        for d in [&old, &partial] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join(MARKER), marker_text()).unwrap();
        }
        std::fs::write(old.join("summary.json"), "old").unwrap();
        // A user's hidden directory of the same shape but without the marker is left alone.
        let foreign = root.path().join(".out.partial-4000000001");
        std::fs::create_dir(&foreign).unwrap();
        let out = root.path().join("out");
        Target::new(&out, &scenario).unwrap();
        assert_eq!(std::fs::read_to_string(out.join("summary.json")).unwrap(), "old");
        assert_eq!(names(root.path()), [".out.partial-4000000001", "out", "s.toml"]);
    }
}

//! `fabricsim sweep`: runs a sweep's points as child processes of the same binary.
//!
//! Each run (a point and a seed) is `fabricsim run OUT/points/NNNN/scenario.toml --out
//! OUT/points/NNNN/seed-S --seed S --quiet`, its output in `OUT/points/NNNN/seed-S.log`. At most
//! `jobs` children run at once (a semaphore); a child still running after `timeout` is killed
//! and its run marked `timeout`; Ctrl-C (or SIGTERM) kills the running children, keeps the
//! finished runs and makes the sweep exit 130. A run is skipped (resume) when its results
//! directory holds a `summary.json` whose `scenario.resolved_sha256` is the hash of the run's
//! resolved scenario as computed from the sweep now: complete results of an unchanged
//! scenario. `docs/sweeps.md` describes the layout.
//!
//! The orchestration reads the wall clock (progress, ETA, timeouts); nothing it reads enters
//! a results table other than `sweep_timing.csv`.

use super::table::{RunRecord, Status};
use super::{PointPlan, RunPlan, Sweep};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The marker and manifest of a sweep output directory.
pub const MANIFEST: &str = "sweep.json";
/// Exit status of a cancelled sweep (128 + SIGINT, the shell convention).
pub const EXIT_CANCELLED: i32 = 130;

/// How to run a sweep.
#[derive(Clone, Debug)]
pub struct Options {
    pub out_dir: PathBuf,
    /// Most children at once (at least 1).
    pub jobs: usize,
    /// Wall-time limit of one run.
    pub timeout: Option<Duration>,
    /// Progress lines on stderr.
    pub progress: bool,
    /// The `fabricsim` binary the children run.
    pub exe: PathBuf,
}

/// What a sweep invocation did.
#[derive(Debug)]
pub struct Outcome {
    /// Every run, in point then seed order.
    pub records: Vec<RunRecord>,
    pub cancelled: bool,
}

impl Outcome {
    /// 0 when every run has results, 1 when one failed, timed out or is missing,
    /// [`EXIT_CANCELLED`] when cancelled.
    pub fn exit_code(&self) -> i32 {
        if self.cancelled {
            EXIT_CANCELLED
        } else if self
            .records
            .iter()
            .all(|r| matches!(r.status, Status::Ok | Status::Partial))
        {
            0
        } else {
            1
        }
    }
}

#[allow(
    clippy::disallowed_methods,
    reason = "sweep orchestration: progress, ETA and timeouts only"
)]
fn now() -> Instant {
    Instant::now()
}

/// `OUT/points/NNNN` (at least 4 digits, enough for every point).
pub fn point_dir(out: &Path, index: usize, n_points: usize) -> PathBuf {
    let width = n_points.saturating_sub(1).to_string().len().max(4);
    out.join("points").join(format!("{index:0width$}"))
}

/// The results directory of one run inside its point directory.
pub fn run_dir(point_dir: &Path, seed: u64) -> PathBuf {
    point_dir.join(format!("seed-{seed}"))
}

/// The run's `summary.json` if it is complete results of the planned scenario.
pub fn up_to_date(run_dir: &Path, plan: &RunPlan) -> Option<Value> {
    let text = std::fs::read_to_string(run_dir.join("summary.json")).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    (v.pointer("/scenario/resolved_sha256")?.as_str()? == plan.resolved_sha256).then_some(v)
}

/// The simulation's wall time recorded in a results directory (`timing.json`).
fn recorded_wall_s(run_dir: &Path) -> Option<f64> {
    let text = std::fs::read_to_string(run_dir.join("timing.json")).ok()?;
    serde_json::from_str::<Value>(&text).ok()?.get("wall_seconds")?.as_f64()
}

/// The status of a run with results.
fn status_of(summary: &Value) -> Status {
    if summary.pointer("/run/complete").and_then(Value::as_bool) == Some(true) {
        Status::Ok
    } else {
        Status::Partial
    }
}

/// Creates (or reuses) the output directory and writes the manifest and every point file.
/// Refuses a directory that is not empty and not a sweep's.
pub fn prepare(sweep: &Sweep, plans: &[PointPlan], out: &Path) -> std::io::Result<()> {
    if out.exists() && !out.join(MANIFEST).is_file() {
        let empty = std::fs::read_dir(out)?.next().is_none();
        if !empty {
            return Err(std::io::Error::other(format!(
                "{} exists and is not a sweep's output directory (no {MANIFEST}); choose another --out",
                out.display()
            )));
        }
    }
    std::fs::create_dir_all(out)?;
    let params: Vec<Value> = sweep
        .params
        .iter()
        .map(|p| {
            serde_json::json!({
                "path": p.path,
                "values": p.values.iter().map(super::cell).collect::<Vec<_>>(),
            })
        })
        .collect();
    let manifest = serde_json::json!({
        "schema": "fabricsim.sweep/1",
        "file": sweep.file,
        "mode": sweep.mode.as_str(),
        "seeds": sweep.seeds,
        "points": sweep.n_points(),
        "params": params,
    });
    let mut bytes = serde_json::to_vec_pretty(&manifest).expect("plain data");
    bytes.push(b'\n');
    super::table::write_atomically(&out.join(MANIFEST), &bytes)?;
    for p in plans {
        let dir = point_dir(out, p.index, sweep.n_points());
        std::fs::create_dir_all(&dir)?;
        let file = dir.join("scenario.toml");
        let header = format!(
            "# Point {} of the sweep {}: {}\n# Written by `fabricsim sweep`; edit the sweep file, not this one.\n\n",
            p.index,
            sweep.file,
            sweep.label(p.index)
        );
        let text = format!("{header}{}", p.text);
        if std::fs::read_to_string(&file).ok().as_deref() != Some(text.as_str()) {
            super::table::write_atomically(&file, text.as_bytes())?;
        }
    }
    Ok(())
}

/// The records of runs already complete (for `--collect`, and the start of a resume); the
/// others get `missing`, in point then seed order.
pub fn collect(sweep: &Sweep, plans: &[PointPlan], out: &Path) -> Vec<RunRecord> {
    let mut records = Vec::new();
    for p in plans {
        let pdir = point_dir(out, p.index, sweep.n_points());
        for r in &p.runs {
            let dir = run_dir(&pdir, r.seed);
            let summary = up_to_date(&dir, r);
            let wall_s = summary.as_ref().and_then(|_| recorded_wall_s(&dir));
            records.push(RunRecord {
                point: p.index,
                seed: r.seed,
                status: summary.as_ref().map_or(Status::Missing, status_of),
                resumed: summary.is_some(),
                summary,
                wall_s,
            });
        }
    }
    records
}

/// One child to run.
struct Job {
    /// Index into the records.
    slot: usize,
    point: usize,
    seed: u64,
    point_file: PathBuf,
    run_dir: PathBuf,
    log: PathBuf,
    expected_sha256: String,
}

/// A finished job.
struct Done {
    slot: usize,
    point: usize,
    seed: u64,
    status: Status,
    summary: Option<Value>,
    wall_s: Option<f64>,
    /// Why it failed, for the progress line.
    note: Option<String>,
}

/// Runs the sweep's pending runs; `err` gets the progress lines.
pub fn run(sweep: &Sweep, plans: &[PointPlan], opts: &Options, err: &mut dyn Write) -> std::io::Result<Outcome> {
    prepare(sweep, plans, &opts.out_dir)?;
    let mut records = collect(sweep, plans, &opts.out_dir);
    let mut jobs = Vec::new();
    for (slot, rec) in records.iter().enumerate() {
        if rec.summary.is_some() {
            continue;
        }
        let pdir = point_dir(&opts.out_dir, rec.point, sweep.n_points());
        let plan = &plans[rec.point]
            .runs
            .iter()
            .find(|r| r.seed == rec.seed)
            .expect("planned");
        jobs.push(Job {
            slot,
            point: rec.point,
            seed: rec.seed,
            point_file: pdir.join("scenario.toml"),
            run_dir: run_dir(&pdir, rec.seed),
            log: pdir.join(format!("seed-{}.log", rec.seed)),
            expected_sha256: plan.resolved_sha256.clone(),
        });
    }
    let n_jobs = jobs.len();
    let up = records.len() - n_jobs;
    if opts.progress {
        let _ = writeln!(
            err,
            "sweep {}: {} point(s) x {} seed(s) = {} run(s); {up} up to date, {n_jobs} to run, {} at a time; results in {}",
            sweep.file,
            sweep.n_points(),
            sweep.seeds,
            records.len(),
            opts.jobs.min(n_jobs.max(1)),
            opts.out_dir.display()
        );
    }
    if n_jobs == 0 {
        return Ok(Outcome {
            records,
            cancelled: false,
        });
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let cancelled = rt.block_on(orchestrate(sweep, jobs, opts, &mut records, err))?;
    Ok(Outcome { records, cancelled })
}

/// The async part of [`run`]: returns whether it was cancelled.
async fn orchestrate(
    sweep: &Sweep,
    jobs: Vec<Job>,
    opts: &Options,
    records: &mut [RunRecord],
    err: &mut dyn Write,
) -> std::io::Result<bool> {
    use tokio::sync::{Semaphore, mpsc, watch};
    let start = now();
    let total = jobs.len();
    let sem = Arc::new(Semaphore::new(opts.jobs.max(1)));
    let (cancel_tx, cancel_rx) = watch::channel(false);
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Done>();
    for job in jobs {
        let (sem, cancel, tx) = (sem.clone(), cancel_rx.clone(), done_tx.clone());
        let (exe, timeout) = (opts.exe.clone(), opts.timeout);
        tokio::spawn(async move {
            let done = run_job(job, &exe, timeout, sem, cancel).await;
            let _ = tx.send(done);
        });
    }
    drop(done_tx);
    let mut interrupt = Box::pin(tokio::signal::ctrl_c());
    #[cfg(unix)]
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let term_recv = async {
        #[cfg(unix)]
        {
            term.recv().await;
        }
        #[cfg(not(unix))]
        std::future::pending::<()>().await;
    };
    tokio::pin!(term_recv);
    let mut cancelled = false;
    let mut n_done = 0;
    loop {
        tokio::select! {
            biased;
            _ = &mut interrupt, if !cancelled => {
                cancelled = true;
                let _ = cancel_tx.send(true);
                let _ = writeln!(err, "sweep: interrupted: stopping the running points (finished ones are kept)");
            }
            _ = &mut term_recv, if !cancelled => {
                cancelled = true;
                let _ = cancel_tx.send(true);
                let _ = writeln!(err, "sweep: terminated: stopping the running points (finished ones are kept)");
            }
            done = done_rx.recv() => {
                let Some(done) = done else { break };
                n_done += 1;
                let rec = &mut records[done.slot];
                rec.status = done.status;
                rec.summary = done.summary;
                rec.wall_s = done.wall_s;
                let (point, seed) = (done.point, done.seed);
                if opts.progress && (done.status != Status::Cancelled || !cancelled) {
                    let elapsed = now().duration_since(start).as_secs_f64();
                    let left = total - n_done;
                    let eta = if left == 0 { String::new() } else {
                        format!(", ETA {}", clock(elapsed / n_done as f64 * left as f64))
                    };
                    let wall = done.wall_s.map(|w| format!(" in {w:.2} s")).unwrap_or_default();
                    let note = done.note.map(|n| format!(" ({n})")).unwrap_or_default();
                    let _ = writeln!(
                        err,
                        "[{n_done}/{total}] point {point} seed {seed} ({}): {}{wall}{note}; elapsed {}{eta}",
                        sweep.label(point),
                        done.status.as_str(),
                        clock(elapsed),
                    );
                }
            }
        }
    }
    Ok(cancelled)
}

/// `42 s`, `3 min 05 s`, `2 h 07 min`.
fn clock(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}

/// Removes what a killed `fabricsim run` leaves: its `.seed-S.partial-<pid>` directory.
fn remove_partials(run_dir: &Path) {
    let (Some(parent), Some(name)) = (run_dir.parent(), run_dir.file_name()) else {
        return;
    };
    let prefix = format!(".{}.partial-", name.to_string_lossy());
    if let Ok(entries) = std::fs::read_dir(parent) {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

/// The last non-empty line of a log, for a failure's note.
fn last_line(log: &Path) -> Option<String> {
    let text = std::fs::read_to_string(log).ok()?;
    let line = text.lines().rev().find(|l| !l.trim().is_empty())?;
    Some(line.chars().take(300).collect())
}

async fn run_job(
    job: Job,
    exe: &Path,
    timeout: Option<Duration>,
    sem: Arc<tokio::sync::Semaphore>,
    mut cancel: tokio::sync::watch::Receiver<bool>,
) -> Done {
    let done = |status, summary, wall_s, note| Done {
        slot: job.slot,
        point: job.point,
        seed: job.seed,
        status,
        summary,
        wall_s,
        note,
    };
    let permit = tokio::select! {
        biased;
        _ = cancel.wait_for(|c| *c) => return done(Status::Cancelled, None, None, None),
        p = sem.acquire_owned() => p.expect("the semaphore is never closed"),
    };
    let start = now();
    remove_partials(&job.run_dir);
    // Results of another scenario or incomplete ones (no summary.json, which `fabricsim run`
    // would refuse to replace): this directory belongs to the sweep, start afresh.
    if job.run_dir.exists() && !job.run_dir.join("summary.json").is_file() {
        let _ = std::fs::remove_dir_all(&job.run_dir);
    }
    let log = match std::fs::File::create(&job.log) {
        Ok(f) => f,
        Err(e) => {
            return done(
                Status::Failed,
                None,
                None,
                Some(format!("cannot create {}: {e}", job.log.display())),
            );
        }
    };
    let stdout = match log.try_clone() {
        Ok(f) => f,
        Err(e) => return done(Status::Failed, None, None, Some(e.to_string())),
    };
    let mut cmd = tokio::process::Command::new(exe);
    cmd.arg("run")
        .arg(&job.point_file)
        .arg("--out")
        .arg(&job.run_dir)
        .arg("--seed")
        .arg(job.seed.to_string())
        .arg("--quiet")
        .stdin(std::process::Stdio::null())
        .stdout(stdout)
        .stderr(log)
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return done(
                Status::Failed,
                None,
                None,
                Some(format!("cannot start {}: {e}", exe.display())),
            );
        }
    };
    let limit = async {
        match timeout {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    enum End {
        Exited(std::io::Result<std::process::ExitStatus>),
        Timeout,
        Cancelled,
    }
    let end = tokio::select! {
        s = child.wait() => End::Exited(s),
        _ = limit => End::Timeout,
        _ = cancel.wait_for(|c| *c) => End::Cancelled,
    };
    if !matches!(end, End::Exited(_)) {
        let _ = child.kill().await; // SIGKILL, then reaped
        remove_partials(&job.run_dir);
    }
    let wall = Some(now().duration_since(start).as_secs_f64());
    drop(permit);
    match end {
        End::Timeout => done(
            Status::Timeout,
            None,
            wall,
            timeout.map(|d| format!("killed after {} s", d.as_secs_f64())),
        ),
        End::Cancelled => done(Status::Cancelled, None, wall, None),
        End::Exited(Err(e)) => done(Status::Failed, None, wall, Some(e.to_string())),
        // A deadlocked run exits 3 with its results written: a result like any other.
        End::Exited(Ok(s)) if s.success() || s.code() == Some(crate::outcome::EXIT_DEADLOCKED) => {
            let plan = RunPlan {
                seed: job.seed,
                resolved_sha256: job.expected_sha256.clone(),
            };
            match up_to_date(&job.run_dir, &plan) {
                Some(v) => done(status_of(&v), Some(v), wall, None),
                None => done(
                    Status::Failed,
                    None,
                    wall,
                    Some("no summary.json of the planned scenario in the results (its resolved hash differs)".into()),
                ),
            }
        }
        End::Exited(Ok(s)) => {
            #[cfg(unix)]
            {
                use std::os::unix::process::ExitStatusExt;
                // Ctrl-C at a terminal reaches the children too (same process group).
                if matches!(s.signal(), Some(2 | 15)) {
                    remove_partials(&job.run_dir);
                    return done(Status::Cancelled, None, wall, None);
                }
            }
            let note = format!("{s}; {}", last_line(&job.log).unwrap_or_else(|| "no output".into()));
            done(Status::Failed, None, wall, Some(note))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        let out = Path::new("o");
        assert_eq!(point_dir(out, 3, 10), Path::new("o/points/0003"));
        assert_eq!(point_dir(out, 3, 123_456), Path::new("o/points/000003"));
        assert_eq!(run_dir(Path::new("p"), 7), Path::new("p/seed-7"));
    }

    #[test]
    fn clocks() {
        assert_eq!(clock(41.6), "42 s");
        assert_eq!(clock(185.0), "3 min 05 s");
        assert_eq!(clock(7620.0), "2 h 07 min");
    }

    #[test]
    fn exit_codes() {
        let rec = |status| RunRecord {
            point: 0,
            seed: 1,
            status,
            summary: None,
            wall_s: None,
            resumed: false,
        };
        let o = |statuses: &[Status], cancelled| Outcome {
            records: statuses.iter().map(|s| rec(*s)).collect(),
            cancelled,
        };
        assert_eq!(o(&[Status::Ok, Status::Partial], false).exit_code(), 0);
        assert_eq!(o(&[Status::Ok, Status::Timeout], false).exit_code(), 1);
        assert_eq!(o(&[Status::Ok, Status::Failed], false).exit_code(), 1);
        assert_eq!(o(&[Status::Ok], true).exit_code(), EXIT_CANCELLED);
    }
}

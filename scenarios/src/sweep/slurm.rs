//! `fabricsim sweep FILE --slurm`: the sweep as a Slurm job array, one array task per point
//! with runs still to do.
//!
//! Writes `OUT/slurm/tasks.txt` (a line per task: the point directory, relative to `OUT`, and
//! the seeds to run) and `OUT/slurm/sweep.sbatch`, whose task `$SLURM_ARRAY_TASK_ID` runs
//! `fabricsim run` for each seed of line `$SLURM_ARRAY_TASK_ID + 1`, exactly as the local
//! orchestrator does. Then it submits the script with `sbatch` when that is on `PATH`, else
//! prints the command. `fabricsim sweep FILE --out OUT --collect` gathers the results into the
//! same tables. Points already up to date get no task (resume works the same way).

use super::command::SweepArgs;
use super::run;
use super::{PointPlan, Sweep};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Per run, on top of its `run.wall_clock_s`: start-up and writing the results.
pub const RUN_MARGIN_S: u64 = 60;

/// The array script and its tasks.
#[derive(Debug)]
pub struct Script {
    pub script: String,
    /// One line per task: `points/NNNN seed seed ...`.
    pub tasks: String,
    pub n_tasks: usize,
    /// The `--time` limit of a task, in seconds.
    pub time_limit_s: u64,
}

/// `H:MM:SS`, as `sbatch --time` reads it.
fn hms(s: u64) -> String {
    format!("{}:{:02}:{:02}", s / 3600, (s % 3600) / 60, s % 60)
}

/// Quotes `s` for bash (single quotes).
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Builds the script for the runs of `plans` not yet up to date in `out` (absolute).
pub fn script(sweep: &Sweep, plans: &[PointPlan], out: &Path, exe: &Path, throttle: Option<u32>) -> Script {
    let mut tasks = String::new();
    let mut n_tasks = 0;
    let mut time_limit_s = 0;
    for p in plans {
        let pdir = run::point_dir(out, p.index, sweep.n_points());
        let pending: Vec<String> = p
            .runs
            .iter()
            .filter(|r| run::up_to_date(&run::run_dir(&pdir, r.seed), r).is_none())
            .map(|r| r.seed.to_string())
            .collect();
        if pending.is_empty() {
            continue;
        }
        let rel = pdir.strip_prefix(out).expect("the point directory is inside OUT");
        tasks.push_str(&format!("{} {}\n", rel.display(), pending.join(" ")));
        n_tasks += 1;
        time_limit_s = time_limit_s.max(pending.len() as u64 * (p.wall_clock_s + RUN_MARGIN_S));
    }
    let array = match (n_tasks, throttle) {
        (0, _) => String::new(),
        (n, Some(t)) => format!("0-{}%{t}", n - 1),
        (n, None) => format!("0-{}", n - 1),
    };
    let name = crate::runner::sanitize(sweep.name().unwrap_or("sweep"));
    let out_q = quote(&out.display().to_string());
    let script = format!(
        r#"#!/bin/bash
#SBATCH --job-name=fabricsim-{name}
#SBATCH --array={array}
#SBATCH --time={time}
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#SBATCH --output={out}/slurm/task-%a.out
# Written by `fabricsim sweep {file} --slurm`: one array task per point of the sweep with runs
# still to do (slurm/tasks.txt); the time limit is the point's run.wall_clock_s + {margin} s per
# seed. Gather the results with `fabricsim sweep {file} --out {out} --collect`.
# FABRICSIM overrides the binary (it must be reachable from the compute nodes, as must OUT).
set -u
if [ -z "${{FABRICSIM:-}}" ]; then FABRICSIM={exe}; fi
cd {out_q} || exit 1
line=$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" slurm/tasks.txt)
set -- $line
dir="$1"
shift
status=0
for seed in "$@"; do
    "$FABRICSIM" run "$dir/scenario.toml" --out "$dir/seed-$seed" --seed "$seed" --quiet \
        > "$dir/seed-$seed.log" 2>&1 || status=1
done
exit $status
"#,
        time = hms(time_limit_s.max(60)),
        out = out.display(),
        file = sweep.file,
        margin = RUN_MARGIN_S,
        exe = quote(&exe.display().to_string()),
    );
    Script {
        script,
        tasks,
        n_tasks,
        time_limit_s,
    }
}

fn write_exec(path: &Path, text: &str) -> std::io::Result<()> {
    super::table::write_atomically(path, text.as_bytes())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}

/// Whether `name` is an executable on `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// `fabricsim sweep --slurm`: writes the script and submits it; returns the exit status.
pub fn command(
    sweep: &Sweep,
    plans: &[PointPlan],
    out_dir: &Path,
    args: &SweepArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    let fail = |m: String, err: &mut dyn Write| {
        let _ = writeln!(err, "error: sweep --slurm: {m}");
        1
    };
    if let Err(e) = run::prepare(sweep, plans, out_dir) {
        return fail(e.to_string(), err);
    }
    let out_abs = match std::path::absolute(out_dir) {
        Ok(p) => p,
        Err(e) => return fail(format!("{}: {e}", out_dir.display()), err),
    };
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return fail(format!("cannot find the fabricsim binary: {e}"), err),
    };
    let s = script(sweep, plans, &out_abs, &exe, args.array_throttle);
    let collect = format!("fabricsim sweep {} --out {} --collect", sweep.file, out_dir.display());
    if s.n_tasks == 0 {
        let _ = writeln!(out, "every run is up to date: nothing to submit; tables: {collect}");
        return 0;
    }
    let dir = out_abs.join("slurm");
    let script_path = dir.join("sweep.sbatch");
    let written = std::fs::create_dir_all(&dir)
        .and_then(|_| super::table::write_atomically(&dir.join("tasks.txt"), s.tasks.as_bytes()))
        .and_then(|_| write_exec(&script_path, &s.script));
    if let Err(e) = written {
        return fail(format!("cannot write {}: {e}", dir.display()), err);
    }
    let _ = writeln!(
        out,
        "wrote {} ({} array task(s), time limit {} each)",
        script_path.display(),
        s.n_tasks,
        hms(s.time_limit_s.max(60))
    );
    let Some(sbatch) = on_path("sbatch") else {
        let _ = writeln!(
            out,
            "sbatch is not on PATH: submit it on the cluster with `sbatch {}`, then gather the tables with `{collect}`",
            script_path.display()
        );
        return 0;
    };
    match std::process::Command::new(&sbatch).arg(&script_path).output() {
        Ok(o) if o.status.success() => {
            let _ = out.write_all(&o.stdout);
            let _ = writeln!(out, "when the array has finished: {collect}");
            0
        }
        Ok(o) => {
            let _ = err.write_all(&o.stderr);
            fail(
                format!("{} {} failed: {}", sbatch.display(), script_path.display(), o.status),
                err,
            )
        }
        Err(e) => fail(format!("cannot run {}: {e}", sbatch.display()), err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(hms(3660), "1:01:00");
        assert_eq!(hms(59), "0:00:59");
        assert_eq!(quote("a'b c"), r"'a'\''b c'");
    }

    #[test]
    fn one_task_per_point_with_pending_runs() {
        let text = "[scenario]\nname = \"t\"\n[topology]\nkind = \"fat_tree\"\nk = 4\nhost_link = { rate = \"100Gbps\" }\n\
                    fabric_link = { rate = \"100Gbps\" }\n[[workload]]\nkind = \"permutation\"\nsize = \"4KiB\"\n\
                    [run]\nwall_clock_s = 100\n[sweep]\nseeds = 2\n[sweep.params]\n\"topology.k\" = [2, 4]\n";
        let sweep = Sweep::parse("s.toml".into(), PathBuf::new(), text.into())
            .unwrap()
            .unwrap();
        let plans = sweep.expand(1).unwrap();
        let out = tempfile::tempdir().unwrap();
        let s = script(&sweep, &plans, out.path(), Path::new("/bin/fabricsim"), Some(3));
        assert_eq!(s.n_tasks, 2);
        assert_eq!(s.tasks, "points/0000 1 2\npoints/0001 1 2\n");
        assert_eq!(s.time_limit_s, 2 * 160);
        assert!(s.script.contains("#SBATCH --array=0-1%3\n"), "{}", s.script);
        assert!(s.script.contains("#SBATCH --time=0:05:20\n"), "{}", s.script);
        assert!(s.script.contains("then FABRICSIM='/bin/fabricsim'; fi"), "{}", s.script);
    }
}

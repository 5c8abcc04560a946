//! What the benchmark binaries share.

pub mod stats {
    //! Order statistics of samples.

    /// The median; `values` is sorted in place.
    pub fn median(values: &mut [f64]) -> f64 {
        values.sort_by(|a, b| a.total_cmp(b));
        let n = values.len();
        if n == 0 {
            return f64::NAN;
        }
        if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 }
    }

    /// The `q` quantile (0 to 1), nearest rank.
    pub fn quantile(values: &[f64], q: f64) -> f64 {
        if values.is_empty() {
            return f64::NAN;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(|a, b| a.total_cmp(b));
        sorted[((q * sorted.len() as f64).ceil() as usize).saturating_sub(1).min(sorted.len() - 1)]
    }

    pub fn p90(values: &[f64]) -> f64 {
        quantile(values, 0.9)
    }

    /// `x` to one decimal, as the figures are printed.
    pub fn round1(x: f64) -> f64 {
        (x * 10.0).round() / 10.0
    }

    /// `x` to two decimals.
    pub fn round2(x: f64) -> f64 {
        (x * 100.0).round() / 100.0
    }
}

pub mod history {
    //! A line of `docs/bench-history.jsonl`: the commit measured, whether the tree was dirty,
    //! the date, the cores, whether the run was quick, the medians in µs by line, and the
    //! extra figures as `line.key`. (`scripts/bench/history.py` writes the same for the
    //! Python benches.)

    use std::collections::BTreeMap;
    use std::path::Path;
    use std::process::Command;

    use anyhow::{Context, Result};
    use serde_json::{Value, json};

    /// Appends one line to `file`.
    pub fn record(file: &Path, median_us: BTreeMap<String, Value>, also: BTreeMap<String, Value>, quick: bool) -> Result<()> {
        use std::io::Write;
        let git = |args: &[&str]| {
            Command::new("git")
                .args(args)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_default();
        let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|status| !status.is_empty());
        let date = Command::new("date")
            .args(["-u", "+%Y-%m-%dT%H:%MZ"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())?;
        let line = json!({
            "commit": commit,
            "dirty": dirty,
            "date": date,
            "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
            "quick": quick,
            "median_us": median_us,
            "also": also,
        });
        let mut out =
            std::fs::OpenOptions::new().create(true).append(true).open(file).with_context(|| file.display().to_string())?;
        writeln!(out, "{line}")?;
        eprintln!("recorded in {}", file.display());
        Ok(())
    }
}

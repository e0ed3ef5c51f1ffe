//! Latency histograms, outcome counts and the markdown rows they become.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use hdrhistogram::Histogram;

/// How one operation ended.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// The server answered with this HTTP status (2xx counts as success).
    Status(u16),
    /// The request failed before a status arrived (connection, TLS, timeout).
    Transport,
    /// The answer was wrong (e.g. a list missing objects, a watcher missing events).
    Check,
}

impl Outcome {
    /// Whether the operation succeeded.
    pub fn is_ok(&self) -> bool {
        matches!(self, Outcome::Status(s) if (200..300).contains(s))
    }

    fn label(&self) -> String {
        match self {
            Outcome::Status(s) => s.to_string(),
            Outcome::Transport => "io".into(),
            Outcome::Check => "check".into(),
        }
    }
}

/// Latencies (microseconds) and outcomes of a set of operations.
#[derive(Clone)]
pub struct Recorder {
    hist: Histogram<u64>,
    errors: BTreeMap<String, u64>,
    /// The first few error descriptions, for the log.
    pub samples: Vec<String>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            // 1 µs .. 1 hour, 3 significant figures.
            hist: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds"),
            errors: BTreeMap::new(),
            samples: Vec::new(),
        }
    }
}

impl Recorder {
    /// Records one operation of `latency` ending in `outcome`.
    pub fn record(&mut self, latency: Duration, outcome: Outcome) {
        let us = (latency.as_micros() as u64).clamp(1, 3_600_000_000);
        self.hist.saturating_record(us);
        if !outcome.is_ok() {
            *self.errors.entry(outcome.label()).or_default() += 1;
        }
    }

    /// Records a latency without an outcome (a successful delivery, say).
    pub fn record_ok(&mut self, latency: Duration) {
        self.record(latency, Outcome::Status(200));
    }

    /// Counts `n` failures of kind `outcome` without a latency.
    pub fn fail(&mut self, outcome: Outcome, n: u64, why: impl Into<String>) {
        if n == 0 {
            return;
        }
        *self.errors.entry(outcome.label()).or_default() += n;
        if self.samples.len() < 5 {
            self.samples.push(why.into());
        }
    }

    /// Keeps a description of a failure (at most a few).
    pub fn note_error(&mut self, why: impl Into<String>) {
        if self.samples.len() < 5 {
            self.samples.push(why.into());
        }
    }

    /// Adds `other`'s figures to these.
    pub fn merge(&mut self, other: &Recorder) {
        let _ = self.hist.add(&other.hist);
        for (k, v) in &other.errors {
            *self.errors.entry(k.clone()).or_default() += v;
        }
        for s in &other.samples {
            if self.samples.len() < 5 {
                self.samples.push(s.clone());
            }
        }
    }

    /// How many latencies were recorded.
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// Turns the figures into a table row; `ops` is what throughput counts (usually
    /// [`Recorder::count`]), over `elapsed`.
    pub fn row(&self, scenario: &str, concurrency: usize, ops: u64, elapsed: Duration) -> Row {
        let ms = |q: f64| {
            if self.hist.is_empty() {
                0.0
            } else {
                self.hist.value_at_quantile(q) as f64 / 1000.0
            }
        };
        let secs = elapsed.as_secs_f64();
        Row {
            scenario: scenario.to_string(),
            concurrency,
            ops,
            seconds: secs,
            throughput: if secs > 0.0 { ops as f64 / secs } else { 0.0 },
            p50_ms: ms(0.50),
            p90_ms: ms(0.90),
            p99_ms: ms(0.99),
            max_ms: if self.hist.is_empty() {
                0.0
            } else {
                self.hist.max() as f64 / 1000.0
            },
            errors: self.errors.clone(),
        }
    }
}

/// One line of a results table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// What was measured.
    pub scenario: String,
    /// Requests in flight (or watchers).
    pub concurrency: usize,
    /// Operations counted by the throughput.
    pub ops: u64,
    /// Wall time of the measurement.
    pub seconds: f64,
    /// `ops / seconds`.
    pub throughput: f64,
    /// Median latency, milliseconds.
    pub p50_ms: f64,
    /// 90th percentile latency, milliseconds.
    pub p90_ms: f64,
    /// 99th percentile latency, milliseconds.
    pub p99_ms: f64,
    /// Largest latency, milliseconds.
    pub max_ms: f64,
    /// Failures by HTTP status (`409`), `io` (transport) or `check` (wrong answer).
    pub errors: BTreeMap<String, u64>,
}

impl Row {
    /// Total failures.
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    fn errors_text(&self) -> String {
        if self.errors.is_empty() {
            return "0".into();
        }
        self.errors
            .iter()
            .map(|(k, v)| format!("{k}×{v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The median of `values` (the mean of the middle two for an even count).
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Per (scenario, concurrency), the median of every figure over the runs; errors are
/// summed over the runs, so none is hidden. Keeps the order of first appearance.
pub fn median_rows(runs: &[Vec<Row>]) -> Vec<Row> {
    let mut keys: Vec<(String, usize)> = Vec::new();
    for row in runs.iter().flatten() {
        let key = (row.scenario.clone(), row.concurrency);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys.into_iter()
        .map(|(scenario, concurrency)| {
            let same: Vec<&Row> = runs
                .iter()
                .flatten()
                .filter(|r| r.scenario == scenario && r.concurrency == concurrency)
                .collect();
            let med =
                |f: fn(&Row) -> f64| median(&mut same.iter().map(|r| f(r)).collect::<Vec<_>>());
            let mut errors = BTreeMap::new();
            for r in &same {
                for (k, v) in &r.errors {
                    *errors.entry(k.clone()).or_default() += v;
                }
            }
            Row {
                scenario,
                concurrency,
                ops: med(|r| r.ops as f64).round() as u64,
                seconds: med(|r| r.seconds),
                throughput: med(|r| r.throughput),
                p50_ms: med(|r| r.p50_ms),
                p90_ms: med(|r| r.p90_ms),
                p99_ms: med(|r| r.p99_ms),
                max_ms: med(|r| r.max_ms),
                errors,
            }
        })
        .collect()
}

/// A figure with three significant digits or so.
pub fn num(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A markdown table of `rows` whose throughput is in `unit` per second.
pub fn table(rows: &[Row], unit: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| scenario | concurrency | ops | {unit}/s | p50 ms | p90 ms | p99 ms | max ms | errors |"
    );
    let _ = writeln!(
        out,
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.scenario,
            r.concurrency,
            r.ops,
            num(r.throughput),
            num(r.p50_ms),
            num(r.p90_ms),
            num(r.p99_ms),
            num(r.max_ms),
            r.errors_text()
        );
    }
    out
}

/// One finished scenario on stderr, so a long run shows where it is.
pub fn progress(row: &Row) {
    eprintln!(
        "  {} c={}: {} ops, {:.0}/s, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms, errors {}",
        row.scenario,
        row.concurrency,
        row.ops,
        row.throughput,
        row.p50_ms,
        row.p99_ms,
        row.max_ms,
        row.error_count()
    );
}

/// `v` against `base` as a signed percentage; positive: worse than the baseline.
pub fn cost(base: Option<f64>, v: Option<f64>, higher_better: bool) -> String {
    match (base, v) {
        (Some(b), Some(v)) if b > 0.0 => {
            let pct = if higher_better {
                100.0 * (b - v) / b
            } else {
                100.0 * (v - b) / b
            };
            format!("{pct:+.1}%").replace('-', "−")
        }
        _ => "—".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_errors() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        let mut a = Recorder::default();
        a.record(Duration::from_millis(2), Outcome::Status(201));
        a.record(Duration::from_millis(4), Outcome::Status(409));
        let ra = a.row("create", 1, 2, Duration::from_secs(1));
        let mut b = Recorder::default();
        b.record(Duration::from_millis(6), Outcome::Transport);
        let rb = b.row("create", 1, 4, Duration::from_secs(1));
        let m = median_rows(&[vec![ra], vec![rb]]);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].ops, 3);
        assert_eq!(m[0].error_count(), 2);
        assert!(table(&m, "ops").contains("409×1 io×1"));
    }
}

/// Server CPU per operation of one run, µs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cpu {
    /// Per create.
    pub create: f64,
    /// Per update (GET + PUT).
    pub update: f64,
}

/// A figure picked from one run's [`Cpu`].
pub type PickCpu = fn(&Cpu) -> f64;

/// The server-CPU rows of the admission and audit tables.
pub const CPU_FIGURES: [(&str, PickCpu); 2] = [
    ("server CPU per create, µs", |c| c.create),
    ("server CPU per update (GET + PUT), µs", |c| c.update),
];

/// The median of one figure over a configuration's runs, if it has any.
pub fn median_cpu(runs: Option<&Vec<Cpu>>, pick: PickCpu) -> Option<f64> {
    let mut each: Vec<f64> = runs?.iter().map(pick).collect();
    (!each.is_empty()).then(|| median(&mut each))
}

/// One figure of each run, comma-separated, in whole µs.
pub fn each_cpu(runs: Option<&Vec<Cpu>>, pick: PickCpu) -> String {
    runs.into_iter()
        .flatten()
        .map(|cpu| format!("{:.0}", pick(cpu)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// CPU time spent over `ops` operations, µs each.
pub fn per_op_us(spent: std::time::Duration, ops: u64) -> f64 {
    spent.as_secs_f64() * 1e6 / ops.max(1) as f64
}

//! `loadgen startup`: what the server costs before any request (issue #16 item 4). The
//! binary is started again and again on a fresh, empty data directory; each start is timed
//! from spawn to the first `/readyz` 200, its CPU time up to then is read, then its memory
//! once it has settled (`VmRSS`, and its anonymous and file-backed parts), and the server
//! is stopped.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};

use crate::authz::load_average;
use crate::metrics::median;
use crate::server::ServerProcess;

const MIB: f64 = 1024.0 * 1024.0;

/// Everything `loadgen startup` needs.
#[derive(Clone, Debug)]
pub struct StartupOptions {
    /// The server binary.
    pub server_bin: PathBuf,
    /// Extra flags for the server.
    pub server_args: Vec<String>,
    /// Where temporary data directories go (default: the system temp directory).
    pub data_root: Option<PathBuf>,
    /// Starts measured; the table shows medians.
    pub runs: usize,
}

/// One start on an empty data directory.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Start {
    /// Spawn to the first `/readyz` 200, ms.
    pub ready_ms: f64,
    /// CPU time (user and system, every live thread) the server had used when `/readyz`
    /// first answered 200, ms: steadier than `ready_ms` on a shared machine.
    pub cpu_ms: f64,
    /// Settled `VmRSS`, bytes.
    pub rss: f64,
    /// Its anonymous part (`RssAnon`: the heap and stacks), bytes.
    pub rss_anon: f64,
    /// Its file-backed part (`RssFile`: the binary's pages that were read), bytes.
    pub rss_file: f64,
}

/// One row of the table: its name, the figure of a start, the divisor and unit shown.
type Figure = (&'static str, fn(&Start) -> f64, f64, &'static str);

/// The results of `loadgen startup`.
#[derive(Clone, Debug, Default)]
pub struct StartupReport {
    /// Every start, in order.
    pub starts: Vec<Start>,
    /// Binary size, bytes.
    pub binary_size: u64,
    /// 1-minute load average before the first and after the last start.
    pub load: (Option<f64>, Option<f64>),
}

impl StartupReport {
    /// The report as a markdown table: median, lowest and highest of each figure.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let load = |l: Option<f64>| l.map_or("?".to_string(), |l| format!("{l:.2}"));
        let _ = writeln!(
            out,
            "{} starts on an empty data directory; binary {:.1} MiB; 1-minute load average {} at the start, {} at the end.\n",
            self.starts.len(),
            self.binary_size as f64 / MIB,
            load(self.load.0),
            load(self.load.1),
        );
        let _ = writeln!(out, "| figure | median | lowest | highest |");
        let _ = writeln!(out, "| --- | ---: | ---: | ---: |");
        let rows: [Figure; 5] = [
            ("start to /readyz 200", |s| s.ready_ms, 1.0, "ms"),
            ("CPU time to /readyz 200", |s| s.cpu_ms, 1.0, "ms"),
            ("idle RSS after start (VmRSS)", |s| s.rss, MIB, "MiB"),
            ("of which anonymous (RssAnon)", |s| s.rss_anon, MIB, "MiB"),
            ("of which file-backed (RssFile)", |s| s.rss_file, MIB, "MiB"),
        ];
        for (name, figure, scale, unit) in rows {
            let mut values: Vec<f64> = self.starts.iter().map(|s| figure(s) / scale).collect();
            let lowest = values.iter().copied().fold(f64::INFINITY, f64::min);
            let highest = values.iter().copied().fold(0.0, f64::max);
            let _ = writeln!(
                out,
                "| {name} | {:.1} {unit} | {lowest:.1} {unit} | {highest:.1} {unit} |",
                median(&mut values)
            );
        }
        out
    }
}

/// Starts the server `runs` times, one after another.
pub async fn run(opts: &StartupOptions) -> Result<StartupReport> {
    let mut report = StartupReport {
        binary_size: std::fs::metadata(&opts.server_bin)
            .with_context(|| format!("reading {}", opts.server_bin.display()))?
            .len(),
        ..StartupReport::default()
    };
    report.load.0 = load_average();
    let runs = opts.runs.max(1);
    for run in 0..runs {
        let parent = opts.data_root.clone().unwrap_or_else(std::env::temp_dir);
        std::fs::create_dir_all(&parent)?;
        let dir = tempfile::Builder::new()
            .prefix("loadgen-startup-")
            .tempdir_in(&parent)?;
        let server = ServerProcess::start(&opts.server_bin, dir.path(), &opts.server_args).await?;
        let ready_ms = server.ready_after.as_secs_f64() * 1000.0;
        let cpu_ms = server.pid().map_or(Ok(0.0), cpu_time_ms);
        let settled = settled_memory(&server).await;
        server.stop_gracefully(Duration::from_secs(30)).await;
        let (rss, rss_anon, rss_file) = settled?;
        let cpu_ms = cpu_ms?;
        let start = Start {
            ready_ms,
            cpu_ms,
            rss,
            rss_anon,
            rss_file,
        };
        eprintln!(
            "run {}/{runs}: /readyz {ready_ms:.1} ms (CPU {cpu_ms:.1} ms), RSS {:.1} MiB (anonymous {:.1}, file {:.1})",
            run + 1,
            rss / MIB,
            rss_anon / MIB,
            rss_file / MIB
        );
        report.starts.push(start);
    }
    report.load.1 = load_average();
    Ok(report)
}

/// `VmRSS`, `RssAnon` and `RssFile` once `VmRSS` has stopped changing: sampled every
/// 100 ms until three samples in a row lie within 64 KiB (at most 5 s), as `loadgen crds`
/// settles it.
async fn settled_memory(server: &ServerProcess) -> Result<(f64, f64, f64)> {
    let pid = server
        .pid()
        .ok_or_else(|| anyhow!("the server has exited"))?;
    let mut samples: Vec<(u64, u64, u64)> = Vec::new();
    for _ in 0..50 {
        samples.push(memory_of(pid)?);
        if let &[a, b, c] = &samples[samples.len().saturating_sub(3)..] {
            let rss = [a.0, b.0, c.0];
            let (lo, hi) = (rss.iter().min(), rss.iter().max());
            if let (Some(lo), Some(hi)) = (lo, hi) {
                if hi - lo <= 64 * 1024 {
                    break;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (rss, anon, file) = samples.last().copied().unwrap_or_default();
    Ok((rss as f64, anon as f64, file as f64))
}

/// The CPU time of process `pid`'s threads, ms: the first field of each thread's
/// `schedstat` (nanoseconds on the CPU; `/proc/<pid>/stat` counts in 10 ms ticks).
/// Threads that have already exited are not counted.
fn cpu_time_ms(pid: u32) -> Result<f64> {
    let mut ns = 0u64;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let Ok(stat) = std::fs::read_to_string(task?.path().join("schedstat")) else {
            continue; // the thread has just exited
        };
        ns += stat
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or_else(|| anyhow!("bad schedstat {stat:?} of process {pid}"))?;
    }
    Ok(ns as f64 / 1e6)
}

/// `VmRSS`, `RssAnon` and `RssFile` of process `pid`, bytes.
fn memory_of(pid: u32) -> Result<(u64, u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    let field = |name: &str| -> Result<u64> {
        let line = status
            .lines()
            .find(|l| l.starts_with(name))
            .ok_or_else(|| anyhow!("no {name} in /proc/{pid}/status"))?;
        line.split_whitespace()
            .nth(1)
            .and_then(|v| v.parse::<u64>().ok())
            .map(|kb| kb * 1024)
            .ok_or_else(|| anyhow!("bad {name} line {line:?}"))
    };
    Ok((field("VmRSS:")?, field("RssAnon:")?, field("RssFile:")?))
}

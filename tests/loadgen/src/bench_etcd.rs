//! The etcd that the scenarios comparing server configurations on one etcd share
//! (`consistent-reads`, `backend-ops`): started in a temporary directory, each run's server
//! then under a key prefix and a data directory of its own.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use etcd_launcher::Etcd;
use tempfile::TempDir;

use crate::client::Protocol;

/// Everything `loadgen consistent-reads` and `loadgen backend-ops` need.
#[derive(Clone, Debug)]
pub struct EtcdBenchOptions {
    /// The server binary (built with the `etcd` feature).
    pub server_bin: PathBuf,
    /// The etcd binary to start.
    pub etcd_bin: PathBuf,
    /// Extra flags for the server.
    pub server_args: Vec<String>,
    /// Where temporary directories go (default: the system temp directory).
    pub data_root: Option<PathBuf>,
    /// HTTP/2 (one connection) or an HTTP/1.1 pool.
    pub protocol: Protocol,
    /// Timeout of one request.
    pub request_timeout: Duration,
    /// How many times to run every configuration; the table shows medians.
    pub runs: usize,
    /// ConfigMaps created (the working set of the GETs and updates).
    pub count: u64,
    /// Requests in flight.
    pub concurrency: usize,
    /// How long each measured phase (GETs, updates) runs.
    pub duration: Duration,
    /// Approximate size of each ConfigMap's JSON, bytes.
    pub object_size: usize,
}

/// A running etcd and the temporary directory holding it and the servers' data.
pub struct BenchEtcd {
    // Declared before `dir`, so etcd stops before its directory goes.
    etcd: Etcd,
    dir: TempDir,
    /// etcd's process id (its CPU time is read from `/proc`).
    pub pid: u32,
    /// What `etcd --version` names, or "(unknown version)".
    pub version: String,
}

impl BenchEtcd {
    /// Starts `opts.etcd_bin` in a temporary directory `<prefix>*` under `opts.data_root`
    /// (default: the system temp directory).
    pub fn start(opts: &EtcdBenchOptions, prefix: &str) -> Result<Self> {
        let etcd_bin: &Path = &opts.etcd_bin;
        let root = opts.data_root.clone().unwrap_or_else(std::env::temp_dir);
        std::fs::create_dir_all(&root)?;
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir_in(&root)
            .with_context(|| format!("making a temporary directory in {}", root.display()))?;
        let etcd = Etcd::builder()
            .binary(etcd_bin)
            .dir_in(dir.path())
            .try_start()?;
        let pid = etcd.pid().context("etcd's pid")?;
        let version = std::process::Command::new(etcd_bin)
            .arg("--version")
            .output()
            .ok()
            .and_then(|o| {
                let text = String::from_utf8_lossy(&o.stdout).into_owned();
                text.lines()
                    .find_map(|l| l.strip_prefix("etcd Version: ").map(str::to_string))
            })
            .unwrap_or_else(|| "(unknown version)".into());
        Ok(BenchEtcd {
            etcd,
            dir,
            pid,
            version,
        })
    }

    /// A fresh data directory for one server (its embedded store, or its certificates on
    /// etcd), beside etcd's.
    pub fn server_data(&self) -> Result<TempDir> {
        Ok(tempfile::Builder::new()
            .prefix("server-")
            .tempdir_in(self.dir.path())?)
    }

    /// A fresh data directory for one server, and `server_args` with the flags that put
    /// that server on this etcd under a key prefix of its own.
    pub fn server_setup(&self, server_args: &[String]) -> Result<(TempDir, Vec<String>)> {
        let data = self.server_data()?;
        let mut args = server_args.to_vec();
        args.push(format!("--etcd-servers={}", self.etcd.endpoint()));
        args.push("--etcd-prefix=/bench-{unique}".into());
        Ok((data, args))
    }
}

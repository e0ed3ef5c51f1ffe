//! Runs the `apiserver` binary for a benchmark: on a free loopback port with its own data
//! directory, timed from spawn to the first `/readyz` 200, with its resident memory read
//! from `/proc/<pid>/status`.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::client::{Client, Protocol};
use crate::kubeconfig::{self, Target};

/// How long a server may take to become ready.
pub const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// A running server process, killed when dropped.
pub struct ServerProcess {
    child: Child,
    /// The data directory (`--data-dir`).
    pub data_dir: PathBuf,
    /// The admin kubeconfig the server wrote.
    pub kubeconfig: PathBuf,
    /// Where to reach it.
    pub target: Target,
    /// From spawn to the first `/readyz` answered 200.
    pub ready_after: Duration,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

/// A free TCP port on 127.0.0.1 (bound to port 0, then released).
pub fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

impl ServerProcess {
    /// Starts `bin` on `data_dir` with `extra` flags and waits until `/readyz` says 200.
    /// `{unique}` in a flag becomes the data directory's name, so a backend shared by
    /// several servers (etcd) can get a key prefix per data directory
    /// (`--etcd-prefix=/bench-{unique}`) that a restart on the same directory reuses.
    pub async fn start(bin: &Path, data_dir: &Path, extra: &[String]) -> Result<ServerProcess> {
        let mut last = None;
        for _ in 0..3 {
            match Self::try_start(bin, data_dir, extra).await {
                Ok(s) => return Ok(s),
                // The port was taken between picking and binding: pick another.
                Err(e) if format!("{e:#}").contains("cannot listen") => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| anyhow!("could not start the server")))
    }

    async fn try_start(bin: &Path, data_dir: &Path, extra: &[String]) -> Result<ServerProcess> {
        let port = free_port()?;
        let unique = data_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let started = Instant::now();
        let mut child = Command::new(bin)
            .arg("--data-dir")
            .arg(data_dir)
            .args([
                "--secure-port",
                &port.to_string(),
                "--bind-address",
                "127.0.0.1",
                // Scenarios count the ConfigMaps of their namespace: without the
                // published kube-root-ca.crt among them (kube-apiserver, measured the same
                // way, publishes none: kube-controller-manager does).
                "--controllers=*,-root-ca-certificate-publisher-controller",
            ])
            .args(extra.iter().map(|a| a.replace("{unique}", &unique)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("spawning {}", bin.display()))?;

        // Keep the last lines of the log for error messages; never let the pipe fill.
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        {
            let pipe = child.stderr.take().expect("piped stderr");
            let sink = stderr.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(pipe).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let mut s = sink.lock().unwrap_or_else(|e| e.into_inner());
                    if s.len() == 40 {
                        s.pop_front();
                    }
                    s.push_back(line);
                }
            });
        }
        let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let tail = |stderr: &Arc<Mutex<VecDeque<String>>>| {
            let s = stderr.lock().unwrap_or_else(|e| e.into_inner());
            s.iter().cloned().collect::<Vec<_>>().join("\n")
        };
        let deadline = started + READY_TIMEOUT;
        let kubeconfig = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, lines.next_line()).await {
                Ok(Ok(Some(line))) => {
                    if let Some(p) = line.strip_prefix("Admin kubeconfig: ") {
                        break PathBuf::from(p.trim());
                    }
                }
                Ok(_) => {
                    // stdout closed: the process exited. Let stderr drain a moment.
                    let status = child.wait().await.ok();
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    bail!(
                        "{} exited ({status:?}) before printing its kubeconfig:\n{}",
                        bin.display(),
                        tail(&stderr)
                    );
                }
                Err(_) => bail!(
                    "{} printed no kubeconfig within {READY_TIMEOUT:?}:\n{}",
                    bin.display(),
                    tail(&stderr)
                ),
            }
        };
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let target = kubeconfig::load(&kubeconfig)?;
        // Poll /readyz on fresh connections until it answers 200.
        loop {
            let client = Client::new(target.clone(), Protocol::Http1, Duration::from_secs(2))?;
            if let Ok(r) = client.get("/readyz").await {
                if r.status == 200 {
                    break;
                }
            }
            if Instant::now() > deadline {
                bail!(
                    "/readyz did not answer 200 within {READY_TIMEOUT:?}:\n{}",
                    tail(&stderr)
                );
            }
            if let Ok(Some(status)) = child.try_wait() {
                bail!(
                    "the server exited ({status}) before it was ready:\n{}",
                    tail(&stderr)
                );
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let ready_after = started.elapsed();
        Ok(ServerProcess {
            child,
            data_dir: data_dir.to_path_buf(),
            kubeconfig,
            target,
            ready_after,
            stderr,
        })
    }

    /// The process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Resident set size in bytes (`VmRSS` of `/proc/<pid>/status`).
    pub fn rss_bytes(&self) -> Result<u64> {
        let pid = self.pid().ok_or_else(|| anyhow!("the server has exited"))?;
        rss_of(pid)
    }

    /// The last lines the server logged.
    pub fn log_tail(&self) -> String {
        let s = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        s.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// Kills the server (SIGKILL: the store must survive it) and waits for it.
    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }

    /// Asks the server to stop (SIGTERM, through `kill`) and waits up to `grace` for it
    /// to exit; kills it after that.
    pub async fn stop_gracefully(mut self, grace: Duration) {
        if let Some(pid) = self.pid() {
            let sent = Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .await
                .is_ok_and(|s| s.success());
            if sent && tokio::time::timeout(grace, self.child.wait()).await.is_ok() {
                return;
            }
        }
        let _ = self.child.kill().await;
    }
}

/// `VmRSS` of process `pid`, in bytes.
pub fn rss_of(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .ok_or_else(|| anyhow!("no VmRSS in /proc/{pid}/status"))?;
    let kb: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| anyhow!("bad VmRSS line {line:?}"))?;
    Ok(kb * 1024)
}

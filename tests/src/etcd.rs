//! A real etcd for the black-box tests: one `etcd` process on free loopback ports with a
//! temporary data directory, killed (and the directory removed) on drop.
//!
//! It can be killed and started again on the same data directory and ports, so a test can
//! take storage away from a running server and give it back. Without an `etcd` binary
//! [`Etcd::start`] panics: tests that ask for etcd fail, they never skip.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// How long etcd may take from spawn to answering `/health`.
pub const ETCD_START_TIMEOUT: Duration = Duration::from_secs(20);

/// How many port pairs [`Etcd::start`] tries when etcd cannot bind the ones it picked.
const PORT_ATTEMPTS: usize = 3;

/// The `etcd` binary: `$ETCD_BIN`, else `etcd` on `PATH`, else `/usr/bin/etcd`.
///
/// # Panics
///
/// When none exists, with how to install it.
pub fn etcd_binary() -> PathBuf {
    let from_env = std::env::var_os("ETCD_BIN")
        .filter(|b| !b.is_empty())
        .map(PathBuf::from);
    let on_path = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("etcd"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    from_env
        .into_iter()
        .chain(on_path)
        .chain([PathBuf::from("/usr/bin/etcd")])
        .find(|c| c.is_file())
        .unwrap_or_else(|| {
            panic!(
                "these tests need an `etcd` binary (looked at $ETCD_BIN, PATH and /usr/bin/etcd): \
                 install Debian's etcd-server (`apt-get install -y etcd-server`; tests/run.sh \
                 does this). They fail rather than skip."
            )
        })
}

/// A running (or deliberately stopped) single-member etcd.
pub struct Etcd {
    child: Option<Child>,
    bin: PathBuf,
    /// `data/` (etcd's data directory) and `etcd.log`; removed on drop.
    dir: TempDir,
    client_port: u16,
    peer_port: u16,
}

impl Etcd {
    /// Starts etcd on free loopback ports and waits until `/health` says it is healthy.
    ///
    /// # Panics
    ///
    /// When there is no etcd binary or it does not become healthy within
    /// [`ETCD_START_TIMEOUT`]; the message carries etcd's log.
    pub fn start() -> Etcd {
        let bin = etcd_binary();
        let mut failures = Vec::new();
        for _ in 0..PORT_ATTEMPTS {
            let dir = TempDir::with_prefix("apiserver-test-etcd-").expect("creating a temp dir");
            let mut etcd = Etcd {
                child: None,
                bin: bin.clone(),
                dir,
                client_port: crate::free_port(),
                peer_port: crate::free_port(),
            };
            match etcd.launch() {
                Ok(()) => return etcd,
                // Another process took a port between picking and binding: new ports.
                Err(why) if why.contains("address already in use") => failures.push(why),
                Err(why) => panic!("{why}"),
            }
        }
        panic!("etcd did not start:\n{}", failures.join("\n---\n"))
    }

    /// The client URL, e.g. `http://127.0.0.1:40123` (for `--etcd-servers`).
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// etcd's data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Kills etcd (SIGKILL, no graceful shutdown) and waits for it to exit. The data
    /// directory and ports are kept for [`Etcd::restart`]. Calling it twice is harmless.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts etcd again on the same data directory and ports (killing it first if it is
    /// running) and waits until it is healthy.
    ///
    /// # Panics
    ///
    /// When it does not come back; the message carries etcd's log.
    pub fn restart(&mut self) {
        self.kill();
        let deadline = Instant::now() + ETCD_START_TIMEOUT;
        loop {
            match self.launch() {
                Ok(()) => return,
                // The old process's listening sockets can linger a moment.
                Err(why) if why.contains("address already in use") && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(why) => panic!("{why}"),
            }
        }
    }

    /// Whether the etcd process is running.
    pub fn is_running(&mut self) -> bool {
        match &mut self.child {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// The last lines of etcd's log, for failure messages.
    pub fn log_tail(&self) -> String {
        let mut text = String::new();
        if let Ok(mut f) = std::fs::File::open(self.log_path()) {
            let _ = f.read_to_string(&mut text);
        }
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("etcd.log")
    }

    /// Spawns etcd on this directory and these ports and waits for `/health`. On failure
    /// the process is killed and the error carries its log.
    fn launch(&mut self) -> Result<(), String> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .map_err(|e| format!("opening {}: {e}", self.log_path().display()))?;
        let client = self.endpoint();
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let child = Command::new(&self.bin)
            .arg("--name=test")
            .arg(format!("--data-dir={}", self.data_dir().display()))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=test={peer}"))
            // One member: short raft timers make it leader (and ready) in milliseconds.
            .arg("--heartbeat-interval=20")
            .arg("--election-timeout=200")
            .arg("--logger=zap")
            .arg("--log-outputs=stderr")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("spawning {}: {e}", self.bin.display()))?;
        self.child = Some(child);
        let deadline = Instant::now() + ETCD_START_TIMEOUT;
        loop {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                self.child = None;
                return Err(format!(
                    "etcd on client port {} exited with {status}; its log (address already in \
                     use means a port was taken):\n{}",
                    self.client_port,
                    self.log_tail()
                ));
            }
            if health(self.client_port) {
                return Ok(());
            }
            if Instant::now() > deadline {
                self.kill();
                return Err(format!(
                    "etcd on client port {} was not healthy within {ETCD_START_TIMEOUT:?}; its \
                     log:\n{}",
                    self.client_port,
                    self.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Whether etcd's `/health` on `port` answers `"health":"true"` (a plain HTTP/1.0 GET, so
/// the harness needs no etcd client).
fn health(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.0 200") && answer.contains(r#""health":"true""#)
}

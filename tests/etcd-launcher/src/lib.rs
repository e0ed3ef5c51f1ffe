//! A real `etcd` for tests and benchmarks: one single-member etcd on free loopback ports
//! with a temporary data directory, started and waited for until it is healthy, killed
//! (and its directory removed) on drop. It can be killed and started again on the same
//! data directory and ports, so a test can take storage away from a running server and
//! give it back.
//!
//! The storage conformance suite (apiserver's unit tests), the black-box test harness
//! (apiserver-tests) and the load generator all start their etcd here. Without an etcd
//! binary [`etcd_binary`] panics with how to install one: tests that need etcd fail, they
//! never skip.
//!
//! ```no_run
//! let etcd = etcd_launcher::Etcd::start();
//! println!("--etcd-servers={}", etcd.endpoint());
//! ```

#![warn(missing_docs)]

use std::fmt;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// How long etcd may take from spawn to answering `/health`.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);

/// How many port sets [`Builder::start`] tries when etcd cannot bind the ones it picked.
const PORT_ATTEMPTS: usize = 3;

/// What etcd logs when a port it was given is taken.
const PORT_TAKEN: &str = "address already in use";

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
                "this needs an `etcd` binary (looked at $ETCD_BIN, PATH and /usr/bin/etcd): \
                 install Debian's etcd-server (`apt-get install -y etcd-server`; tests/run.sh \
                 does this). Tests that need etcd fail rather than skip."
            )
        })
}

/// Why etcd did not start; the message carries etcd's log.
#[derive(Debug)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// How to start etcd; [`Etcd::builder`] makes one.
#[derive(Clone, Debug, Default)]
pub struct Builder {
    binary: Option<PathBuf>,
    tls: bool,
    parent: Option<PathBuf>,
    args: Vec<String>,
}

impl Builder {
    /// Runs this binary instead of [`etcd_binary`]'s.
    pub fn binary(mut self, path: impl Into<PathBuf>) -> Self {
        self.binary = Some(path.into());
        self
    }

    /// Serves clients over TLS and requires client certificates; [`Etcd::tls`] has the
    /// generated CA, server and client certificates.
    pub fn tls(mut self) -> Self {
        self.tls = true;
        self
    }

    /// Makes the temporary directory (data and log) inside `parent` instead of the
    /// system's temporary directory, e.g. on the disk a benchmark measures.
    pub fn dir_in(mut self, parent: impl Into<PathBuf>) -> Self {
        self.parent = Some(parent.into());
        self
    }

    /// Adds a flag to etcd's command line (also on [`Etcd::restart`]).
    pub fn arg(mut self, flag: impl Into<String>) -> Self {
        self.args.push(flag.into());
        self
    }

    /// Starts etcd and waits until it is healthy.
    ///
    /// # Panics
    ///
    /// As [`Builder::try_start`] fails, and when there is no etcd binary.
    pub fn start(self) -> Etcd {
        self.try_start().unwrap_or_else(|e| panic!("{e}"))
    }

    /// Starts etcd on free loopback ports and waits until `/health` says it is healthy
    /// (at most [`START_TIMEOUT`]); new ports when another process took one first.
    ///
    /// # Panics
    ///
    /// When no binary was given and [`etcd_binary`] finds none.
    pub fn try_start(self) -> Result<Etcd, Error> {
        let bin = self.binary.clone().unwrap_or_else(etcd_binary);
        let mut failures = Vec::new();
        for _ in 0..PORT_ATTEMPTS {
            let dir = match &self.parent {
                Some(parent) => TempDir::with_prefix_in("etcd-", parent),
                None => TempDir::with_prefix("etcd-"),
            }
            .map_err(|e| Error(format!("creating etcd's temporary directory: {e}")))?;
            let tls = match self.tls {
                true => Some(TlsFiles::generate(dir.path())?),
                false => None,
            };
            let mut etcd = Etcd {
                child: None,
                bin: bin.clone(),
                args: self.args.clone(),
                tls,
                dir,
                client_port: free_port()?,
                peer_port: free_port()?,
                metrics_port: free_port()?,
            };
            match etcd.launch() {
                Ok(()) => return Ok(etcd),
                // Another process took a port between picking and binding: new ports.
                Err(why) if why.contains(PORT_TAKEN) => failures.push(why),
                Err(why) => return Err(Error(why)),
            }
        }
        Err(Error(format!(
            "etcd did not start:\n{}",
            failures.join("\n---\n")
        )))
    }
}

/// A running (or deliberately stopped) single-member etcd.
pub struct Etcd {
    child: Option<Child>,
    bin: PathBuf,
    /// Extra flags ([`Builder::arg`]).
    args: Vec<String>,
    tls: Option<TlsFiles>,
    /// `data/` (etcd's data directory), `etcd.log` and the certificates; removed on drop.
    dir: TempDir,
    client_port: u16,
    peer_port: u16,
    /// Plain-HTTP `/health` (and `/metrics`), also when clients must use TLS.
    metrics_port: u16,
}

impl Etcd {
    /// Starts etcd with the defaults (plain HTTP, system temporary directory).
    ///
    /// # Panics
    ///
    /// When there is no etcd binary or it does not become healthy within
    /// [`START_TIMEOUT`]; the message carries etcd's log.
    pub fn start() -> Etcd {
        Builder::default().start()
    }

    /// A [`Builder`] for TLS, another binary, another directory or extra flags.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// The client URL, e.g. `http://127.0.0.1:40123` (for `--etcd-servers`); `https` with
    /// [`Builder::tls`].
    pub fn endpoint(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.client_port)
    }

    /// The certificates, when etcd serves clients over TLS.
    pub fn tls(&self) -> Option<&TlsFiles> {
        self.tls.as_ref()
    }

    /// etcd's data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The etcd process's id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
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
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            match self.launch() {
                Ok(()) => return,
                // The old process's listening sockets can linger a moment.
                Err(why) if why.contains(PORT_TAKEN) && Instant::now() < deadline => {
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
        let mut command = Command::new(&self.bin);
        if let Some(t) = &self.tls {
            command
                .arg(format!("--cert-file={}", t.server_cert.display()))
                .arg(format!("--key-file={}", t.server_key.display()))
                .arg(format!("--trusted-ca-file={}", t.ca.display()))
                .arg("--client-cert-auth");
        }
        let child = command
            .arg("--name=launched")
            .arg(format!("--data-dir={}", self.data_dir().display()))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=launched={peer}"))
            .arg(format!(
                "--listen-metrics-urls=http://127.0.0.1:{}",
                self.metrics_port
            ))
            // One member: short raft timers make it leader (and ready) in milliseconds.
            .arg("--heartbeat-interval=20")
            .arg("--election-timeout=200")
            .arg("--logger=zap")
            .arg("--log-outputs=stderr")
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("spawning {}: {e}", self.bin.display()))?;
        self.child = Some(child);
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                self.child = None;
                return Err(format!(
                    "etcd on client port {} exited with {status}; its log ({PORT_TAKEN} means \
                     a port was taken):\n{}",
                    self.client_port,
                    self.log_tail()
                ));
            }
            if health(self.metrics_port) {
                return Ok(());
            }
            if Instant::now() > deadline {
                self.kill();
                return Err(format!(
                    "etcd on client port {} was not healthy within {START_TIMEOUT:?}; its \
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

/// A free TCP port on 127.0.0.1, found by binding port 0 and letting it go.
fn free_port() -> Result<u16, Error> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| Error(format!("finding a free loopback port: {e}")))
}

/// Whether etcd's `/health` on the metrics `port` answers `"health":"true"` (a plain
/// HTTP/1.0 GET, so this crate needs no HTTP or etcd client).
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
    answer.split_whitespace().nth(1) == Some("200") && answer.contains(r#""health":"true""#)
}

/// A CA, etcd's serving certificate (for 127.0.0.1) and a client certificate, as PEM
/// files in etcd's temporary directory.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The CA that signed both certificates (`--etcd-cafile`).
    pub ca: PathBuf,
    /// etcd's serving certificate.
    pub server_cert: PathBuf,
    /// Its key.
    pub server_key: PathBuf,
    /// The client certificate (`--etcd-certfile`).
    pub client_cert: PathBuf,
    /// Its key (`--etcd-keyfile`).
    pub client_key: PathBuf,
}

impl TlsFiles {
    fn generate(dir: &Path) -> Result<TlsFiles, Error> {
        use rcgen::{
            BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
            KeyPair,
        };
        let err = |e: rcgen::Error| Error(format!("generating test certificates: {e}"));
        let ca_key = KeyPair::generate().map_err(err)?;
        let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
        ca.distinguished_name
            .push(DnType::CommonName, "etcd-test-ca");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_cert = ca.self_signed(&ca_key).map_err(err)?;
        let issuer = Issuer::new(ca, ca_key);
        let leaf = |name: &str, sans: Vec<String>, usage: ExtendedKeyUsagePurpose| {
            let key = KeyPair::generate().map_err(err)?;
            let mut params = CertificateParams::new(sans).map_err(err)?;
            params.distinguished_name.push(DnType::CommonName, name);
            params.extended_key_usages = vec![usage];
            let cert = params.signed_by(&key, &issuer).map_err(err)?;
            Ok::<_, Error>((cert.pem(), key.serialize_pem()))
        };
        let server = leaf(
            "etcd",
            vec!["127.0.0.1".into(), "localhost".into()],
            ExtendedKeyUsagePurpose::ServerAuth,
        )?;
        let client = leaf("apiserver", vec![], ExtendedKeyUsagePurpose::ClientAuth)?;
        let files = TlsFiles {
            ca: dir.join("ca.crt"),
            server_cert: dir.join("server.crt"),
            server_key: dir.join("server.key"),
            client_cert: dir.join("client.crt"),
            client_key: dir.join("client.key"),
        };
        for (path, text) in [
            (&files.ca, ca_cert.pem()),
            (&files.server_cert, server.0),
            (&files.server_key, server.1),
            (&files.client_cert, client.0),
            (&files.client_key, client.1),
        ] {
            std::fs::write(path, text).map_err(|e| Error(format!("{}: {e}", path.display())))?;
        }
        Ok(files)
    }
}

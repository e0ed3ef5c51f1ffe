//! The admin kubeconfig written at start-up, so kubectl works right away.

use std::fs;
use std::path::Path;

use base64::Engine;

/// Writes a kubeconfig for `server_url` trusting `ca_pem`, with `token` as credentials.
pub fn write(path: &Path, server_url: &str, ca_pem: &str, token: &str) -> Result<(), String> {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let text = format!(
        "apiVersion: v1
kind: Config
clusters:
- name: apiserver
  cluster:
    server: {server_url}
    certificate-authority-data: {ca}
users:
- name: admin
  user:
    token: {token}
contexts:
- name: admin@apiserver
  context:
    cluster: apiserver
    user: admin
    namespace: default
current-context: admin@apiserver
"
    );
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

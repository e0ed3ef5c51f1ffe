//! The little of a kubeconfig the load generator needs: the current context's server
//! URL, the CA that signed its certificate and the bearer token.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use base64::Engine;
use serde_yaml::Value;

/// Where and how to reach an API server, from a kubeconfig.
#[derive(Clone, Debug)]
pub struct Target {
    /// The server URL, e.g. `https://127.0.0.1:6443`.
    pub url: String,
    /// The host part of the URL (the TLS server name), e.g. `127.0.0.1`.
    pub host: String,
    /// The resolved loopback address to connect to.
    pub addr: SocketAddr,
    /// PEM of the certificate authority that signed the serving certificate.
    pub ca_pem: Vec<u8>,
    /// The bearer token, when the user has one.
    pub token: Option<String>,
}

/// Reads the current context of the kubeconfig at `path`.
///
/// Refuses servers that are not on the loopback interface: benchmark traffic only ever
/// goes to this machine.
pub fn load(path: &Path) -> Result<Target> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading kubeconfig {}", path.display()))?;
    let doc: Value = serde_yaml::from_str(&text)
        .with_context(|| format!("parsing kubeconfig {}", path.display()))?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    parse(&doc, &dir).with_context(|| format!("kubeconfig {}", path.display()))
}

fn named<'a>(doc: &'a Value, list: &str, name: &str, field: &str) -> Result<&'a Value> {
    doc[list]
        .as_sequence()
        .and_then(|items| items.iter().find(|i| i["name"].as_str() == Some(name)))
        .map(|i| &i[field])
        .ok_or_else(|| anyhow!("no {list} entry named {name:?}"))
}

fn parse(doc: &Value, dir: &Path) -> Result<Target> {
    let current = doc["current-context"]
        .as_str()
        .ok_or_else(|| anyhow!("no current-context"))?;
    let context = named(doc, "contexts", current, "context")?;
    let cluster_name = context["cluster"]
        .as_str()
        .ok_or_else(|| anyhow!("context {current:?} names no cluster"))?;
    let cluster = named(doc, "clusters", cluster_name, "cluster")?;
    let url = cluster["server"]
        .as_str()
        .ok_or_else(|| anyhow!("cluster {cluster_name:?} has no server"))?
        .trim_end_matches('/')
        .to_string();
    let ca_pem = if let Some(data) = cluster["certificate-authority-data"].as_str() {
        base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .context("certificate-authority-data is not base64")?
    } else if let Some(file) = cluster["certificate-authority"].as_str() {
        let file = relative(dir, file);
        std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?
    } else {
        bail!("cluster {cluster_name:?} has no certificate-authority(-data)");
    };
    let token = match context["user"].as_str() {
        Some(user_name) => {
            let user = named(doc, "users", user_name, "user")?;
            if let Some(t) = user["token"].as_str() {
                Some(t.to_string())
            } else if let Some(file) = user["tokenFile"].as_str() {
                let file = relative(dir, file);
                let t = std::fs::read_to_string(&file)
                    .with_context(|| format!("reading {}", file.display()))?;
                Some(t.trim().to_string())
            } else {
                None
            }
        }
        None => None,
    };
    let (host, addr) = loopback_address(&url)?;
    Ok(Target {
        url,
        host,
        addr,
        ca_pem,
        token,
    })
}

fn relative(dir: &Path, file: &str) -> PathBuf {
    let p = PathBuf::from(file);
    if p.is_absolute() {
        p
    } else {
        dir.join(p)
    }
}

/// Splits `https://host:port` and checks that the host is a loopback address.
pub fn loopback_address(url: &str) -> Result<(String, SocketAddr)> {
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| anyhow!("server {url:?}: only https:// servers are supported"))?;
    let authority = rest.split('/').next().unwrap_or_default();
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !p.contains(']') => (
            h,
            p.parse::<u16>()
                .map_err(|_| anyhow!("server {url:?}: bad port {p:?}"))?,
        ),
        _ => (authority, 443),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => (host, port)
            .to_socket_addrs()
            .with_context(|| format!("resolving {host}"))?
            .collect(),
    };
    let addr = addrs
        .iter()
        .copied()
        .find(|a| a.ip().is_loopback())
        .ok_or_else(|| {
            anyhow!(
                "server {url:?} is not on the loopback interface: the load generator only \
                 sends traffic to this machine (127.0.0.0/8 or ::1)"
            )
        })?;
    if addrs.iter().any(|a| !a.ip().is_loopback()) {
        bail!("server {url:?} resolves to addresses off this machine");
    }
    Ok((host.to_string(), addr))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_only() {
        assert_eq!(
            loopback_address("https://127.0.0.1:6443").unwrap().1,
            "127.0.0.1:6443".parse().unwrap()
        );
        assert!(loopback_address("https://[::1]:6443").is_ok());
        assert!(loopback_address("https://10.0.0.1:6443").is_err());
        assert!(loopback_address("http://127.0.0.1:8080").is_err());
    }

    #[test]
    fn parses_the_servers_kubeconfig() {
        let doc: Value = serde_yaml::from_str(
            "apiVersion: v1
kind: Config
clusters:
- name: apiserver
  cluster:
    server: https://127.0.0.1:41234
    certificate-authority-data: aGVsbG8=
users:
- name: admin
  user:
    token: abc
contexts:
- name: admin@apiserver
  context:
    cluster: apiserver
    user: admin
current-context: admin@apiserver
",
        )
        .unwrap();
        let t = parse(&doc, Path::new("/")).unwrap();
        assert_eq!(t.url, "https://127.0.0.1:41234");
        assert_eq!(t.host, "127.0.0.1");
        assert_eq!(t.ca_pem, b"hello");
        assert_eq!(t.token.as_deref(), Some("abc"));
    }
}

//! Users other than the admin: a test CA that issues client certificates, and
//! kubeconfigs for this server with a token, a certificate, or no credentials at all.

use std::path::{Path, PathBuf};
use std::process::Output;

use base64::Engine;

use crate::TestServer;

/// A CA of the test's own, for `--client-ca-file`.
pub struct TestCa {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    /// The CA certificate, PEM.
    pub pem: String,
}

impl TestCa {
    /// A new self-signed CA named `name`.
    ///
    /// # Panics
    ///
    /// When rcgen fails.
    pub fn new(name: &str) -> TestCa {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let key = rcgen::KeyPair::generate().expect("CA key");
        let cert = params.self_signed(&key).expect("CA certificate");
        TestCa {
            issuer: rcgen::Issuer::new(params, key),
            pem: cert.pem(),
        }
    }

    /// Writes the CA certificate into `dir` and returns its path.
    pub fn write(&self, dir: &Path) -> PathBuf {
        let path = dir.join("client-ca.crt");
        std::fs::write(&path, &self.pem).expect("writing the CA");
        path
    }

    /// A client certificate for user `cn` in group `org` (if any): `(cert, key)` PEM.
    ///
    /// # Panics
    ///
    /// When rcgen fails.
    pub fn client_cert(&self, cn: &str, org: Option<&str>) -> (String, String) {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        if let Some(o) = org {
            params
                .distinguished_name
                .push(rcgen::DnType::OrganizationName, o);
        }
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let key = rcgen::KeyPair::generate().expect("client key");
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("client certificate");
        (cert.pem(), key.serialize_pem())
    }
}

impl TestCa {
    /// A serving certificate for the DNS names `names`: `(cert, key)` PEM.
    ///
    /// # Panics
    ///
    /// When rcgen fails.
    pub fn serving_cert(&self, names: &[&str]) -> (String, String) {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = rcgen::CertificateParams::new(names).expect("params");
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let key = rcgen::KeyPair::generate().expect("serving key");
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("serving certificate");
        (cert.pem(), key.serialize_pem())
    }
}

/// How a kubeconfig's user authenticates.
pub enum UserCredentials {
    /// A bearer token.
    Token(String),
    /// A client certificate and its key, PEM.
    Certificate(String, String),
    /// Nothing: the server sees an anonymous request.
    Anonymous,
}

impl TestServer {
    /// Writes a kubeconfig for this server (its cluster and CA, as the admin kubeconfig
    /// has them) whose user authenticates with `creds`; `name` names the file.
    ///
    /// # Panics
    ///
    /// When the admin kubeconfig cannot be read.
    pub fn kubeconfig_for(&self, name: &str, creds: &UserCredentials) -> PathBuf {
        let text = std::fs::read_to_string(self.kubeconfig()).expect("reading the kubeconfig");
        let mut config: serde_yaml::Value = serde_yaml::from_str(&text).expect("kubeconfig YAML");
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let user = match creds {
            UserCredentials::Token(t) => serde_json::json!({ "token": t }),
            UserCredentials::Certificate(cert, key) => serde_json::json!({
                "client-certificate-data": b64(cert),
                "client-key-data": b64(key),
            }),
            UserCredentials::Anonymous => serde_json::json!({}),
        };
        config["users"][0]["user"] = serde_yaml::to_value(user).expect("user YAML");
        let text = serde_yaml::to_string(&config).expect("kubeconfig YAML");
        self.write_file(&format!("{name}.kubeconfig"), &text)
    }

    /// Runs kubectl with `kubeconfig` instead of the admin's.
    ///
    /// # Panics
    ///
    /// When kubectl cannot be run.
    pub fn kubectl_as(&self, kubeconfig: &Path, args: &[&str]) -> Output {
        self.kubectl_command_with(kubeconfig, args)
            .output()
            .unwrap_or_else(|e| panic!("running kubectl {args:?}: {e}"))
    }
}

impl TestServer {
    /// As the admin: a Role `role` in `namespace` allowing `verbs` (comma-separated) on
    /// `resource`, bound to `subject` (kubectl's flag: `--user=alice`,
    /// `--serviceaccount=a:robot`) by a RoleBinding `<role>-binding`.
    pub fn grant(&self, namespace: &str, role: &str, verbs: &str, resource: &str, subject: &str) {
        let (verbs, resource) = (format!("--verb={verbs}"), format!("--resource={resource}"));
        self.kubectl_ok(&["create", "role", role, &verbs, &resource, "-n", namespace]);
        let binding = format!("{role}-binding");
        let role_flag = format!("--role={role}");
        self.kubectl_ok(&[
            "create",
            "rolebinding",
            &binding,
            &role_flag,
            subject,
            "-n",
            namespace,
        ]);
    }
}

/// A GET as the user of `kubeconfig` with extra `headers`, from synchronous code.
///
/// # Panics
///
/// When the request cannot be sent.
pub fn get_as(kubeconfig: &Path, path: &str, headers: &[(&str, &str)]) -> crate::RawResponse {
    request_as(kubeconfig, "GET", path, None, headers)
}

/// A request as the user of `kubeconfig` with extra `headers` and an optional JSON
/// `body`, from synchronous code; the answer whatever its status.
///
/// # Panics
///
/// When the request cannot be sent.
pub fn request_as(
    kubeconfig: &Path,
    method: &str,
    path: &str,
    body: Option<&serde_json::Value>,
    headers: &[(&str, &str)],
) -> crate::RawResponse {
    let rt = tokio::runtime::Runtime::new().expect("a tokio runtime");
    rt.block_on(async {
        let client = crate::client_from_kubeconfig(kubeconfig).await;
        let mut req = http::Request::builder()
            .method(method)
            .uri(path)
            .header(http::header::ACCEPT, "application/json");
        if body.is_some() {
            req = req.header(http::header::CONTENT_TYPE, "application/json");
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let body = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
        let resp = client
            .send(req.body(kube::client::Body::from(body)).expect("a request"))
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp.into_body().collect_bytes().await.expect("the body");
        let text = String::from_utf8_lossy(&body).into_owned();
        let json = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
        crate::RawResponse {
            status,
            headers,
            text,
            json,
        }
    })
}

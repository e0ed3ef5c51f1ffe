//! The `kube-system/extension-apiserver-authentication` ConfigMap: how a server tells the
//! API servers it fronts which client CA and front-proxy settings to trust (written by
//! the parent at start-up, read by an aggregated server that was not given them), in
//! kube-apiserver's format: CA bundles as PEM text, lists as JSON string arrays.

use std::collections::BTreeMap;

use super::authn::requestheader::RequestHeaderConfig;

/// The ConfigMap's namespace.
pub const NAMESPACE: &str = "kube-system";
/// The ConfigMap's name.
pub const NAME: &str = "extension-apiserver-authentication";

const CLIENT_CA: &str = "client-ca-file";
const REQUESTHEADER_CA: &str = "requestheader-client-ca-file";
const ALLOWED_NAMES: &str = "requestheader-allowed-names";
const USERNAME_HEADERS: &str = "requestheader-username-headers";
const UID_HEADERS: &str = "requestheader-uid-headers";
const GROUP_HEADERS: &str = "requestheader-group-headers";
const EXTRA_PREFIXES: &str = "requestheader-extra-headers-prefix";

/// What the ConfigMap holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExtensionAuthentication {
    /// PEM bundle of `--client-ca-file`.
    pub client_ca: Option<String>,
    /// PEM bundle of `--requestheader-client-ca-file`, with its headers and names.
    pub request_header: Option<(String, RequestHeaderConfig)>,
}

impl ExtensionAuthentication {
    /// The ConfigMap's `data`.
    pub fn to_data(&self) -> BTreeMap<String, String> {
        let mut data = BTreeMap::new();
        if let Some(ca) = &self.client_ca {
            data.insert(CLIENT_CA.into(), ca.clone());
        }
        if let Some((ca, config)) = &self.request_header {
            let list = |l: &[String]| serde_json::to_string(l).unwrap_or_else(|_| "[]".into());
            data.insert(REQUESTHEADER_CA.into(), ca.clone());
            data.insert(ALLOWED_NAMES.into(), list(&config.allowed_names));
            data.insert(USERNAME_HEADERS.into(), list(&config.username_headers));
            data.insert(UID_HEADERS.into(), list(&config.uid_headers));
            data.insert(GROUP_HEADERS.into(), list(&config.group_headers));
            data.insert(EXTRA_PREFIXES.into(), list(&config.extra_prefixes));
        }
        data
    }

    /// Reads a ConfigMap's `data`; a list that is not a JSON string array is an error
    /// naming its key. Missing keys are empty.
    pub fn from_data(data: &BTreeMap<String, String>) -> Result<Self, String> {
        let text = |key: &str| data.get(key).filter(|v| !v.trim().is_empty()).cloned();
        let list = |key: &str| -> Result<Vec<String>, String> {
            match text(key) {
                Some(v) => serde_json::from_str::<Vec<String>>(&v)
                    .map_err(|e| format!("{key}: not a JSON list of strings: {e}")),
                None => Ok(Vec::new()),
            }
        };
        let request_header = match text(REQUESTHEADER_CA) {
            Some(ca) => Some((
                ca,
                RequestHeaderConfig {
                    username_headers: list(USERNAME_HEADERS)?,
                    uid_headers: list(UID_HEADERS)?,
                    group_headers: list(GROUP_HEADERS)?,
                    extra_prefixes: list(EXTRA_PREFIXES)?,
                    allowed_names: list(ALLOWED_NAMES)?,
                },
            )),
            None => None,
        };
        Ok(ExtensionAuthentication {
            client_ca: text(CLIENT_CA),
            request_header,
        })
    }

    /// This server's settings added to what another server already published, as
    /// kube-apiserver combines them (so servers sharing storage each keep theirs):
    /// certificates and list entries once each, the existing ones first (bundles are
    /// re-encoded, so merging the same settings again gives the same text).
    pub fn merged_into(&self, existing: &ExtensionAuthentication) -> ExtensionAuthentication {
        let client_ca = match (&existing.client_ca, &self.client_ca) {
            (old, Some(new)) => Some(combine_pem(old.as_deref().unwrap_or_default(), new)),
            (old, None) => old.clone(),
        };
        let request_header = match (&existing.request_header, &self.request_header) {
            (None, Some((new_ca, new))) => Some((combine_pem("", new_ca), new.clone())),
            (Some((old_ca, old)), Some((new_ca, new))) => Some((
                combine_pem(old_ca, new_ca),
                RequestHeaderConfig {
                    username_headers: union(&old.username_headers, &new.username_headers),
                    uid_headers: union(&old.uid_headers, &new.uid_headers),
                    group_headers: union(&old.group_headers, &new.group_headers),
                    extra_prefixes: union(&old.extra_prefixes, &new.extra_prefixes),
                    allowed_names: union(&old.allowed_names, &new.allowed_names),
                },
            )),
            (old, None) => old.clone(),
        };
        ExtensionAuthentication {
            client_ca,
            request_header,
        }
    }
}

fn union(a: &[String], b: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(a.len() + b.len());
    for s in a.iter().chain(b) {
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    out
}

/// The certificates of two PEM bundles, each once (by its DER bytes), re-encoded.
fn combine_pem(a: &str, b: &str) -> String {
    let mut seen: Vec<Vec<u8>> = Vec::new();
    let mut out = String::new();
    for bundle in [a, b] {
        for cert in rustls_pemfile::certs(&mut bundle.as_bytes()).flatten() {
            let der = cert.as_ref().to_vec();
            if seen.contains(&der) {
                continue;
            }
            let config = pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF);
            let block = pem::Pem::new("CERTIFICATE", der.clone());
            out.push_str(&pem::encode_config(&block, config));
            seen.push(der);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca_pem(name: &str) -> String {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().pem()
    }

    fn front_proxy(ca: &str) -> ExtensionAuthentication {
        ExtensionAuthentication {
            client_ca: None,
            request_header: Some((
                ca.to_string(),
                RequestHeaderConfig {
                    username_headers: vec!["X-Remote-User".into()],
                    uid_headers: vec![],
                    group_headers: vec!["X-Remote-Group".into()],
                    extra_prefixes: vec!["X-Remote-Extra-".into()],
                    allowed_names: vec!["front-proxy-client".into()],
                },
            )),
        }
    }

    #[test]
    fn the_data_is_in_kube_apiservers_format() {
        let mut published = front_proxy("PROXY CA");
        published.client_ca = Some("CLIENT CA".into());
        let data = published.to_data();
        let expected: BTreeMap<String, String> = [
            ("client-ca-file", "CLIENT CA"),
            ("requestheader-client-ca-file", "PROXY CA"),
            ("requestheader-allowed-names", r#"["front-proxy-client"]"#),
            ("requestheader-username-headers", r#"["X-Remote-User"]"#),
            ("requestheader-uid-headers", "[]"),
            ("requestheader-group-headers", r#"["X-Remote-Group"]"#),
            (
                "requestheader-extra-headers-prefix",
                r#"["X-Remote-Extra-"]"#,
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(data, expected);
        assert_eq!(
            ExtensionAuthentication::from_data(&data).unwrap(),
            published
        );
    }

    #[test]
    fn only_a_client_ca_leaves_the_requestheader_keys_out() {
        let only = ExtensionAuthentication {
            client_ca: Some("CLIENT CA".into()),
            request_header: None,
        };
        let data = only.to_data();
        assert_eq!(data.keys().collect::<Vec<_>>(), ["client-ca-file"]);
        assert_eq!(ExtensionAuthentication::from_data(&data).unwrap(), only);
    }

    #[test]
    fn a_list_that_is_not_json_names_its_key() {
        let mut data = front_proxy("CA").to_data();
        data.insert(
            "requestheader-group-headers".into(),
            "X-Remote-Group".into(),
        );
        let e = ExtensionAuthentication::from_data(&data).unwrap_err();
        assert!(e.starts_with("requestheader-group-headers:"), "{e}");
    }

    #[test]
    fn merging_keeps_what_others_published_and_adds_ours_once() {
        let (a, b) = (ca_pem("a"), ca_pem("b"));
        let existing = front_proxy(&a);
        let mut ours = front_proxy(&b);
        if let Some((_, config)) = &mut ours.request_header {
            config.allowed_names.push("aggregator".into());
        }
        let merged = ours.merged_into(&existing);
        let (ca, config) = merged.request_header.unwrap();
        assert_eq!(rustls_pemfile::certs(&mut ca.as_bytes()).count(), 2);
        assert_eq!(config.allowed_names, ["front-proxy-client", "aggregator"]);
        assert_eq!(config.username_headers, ["X-Remote-User"]);
        // Publishing the same again changes nothing.
        let again = front_proxy(&a).merged_into(&front_proxy(&a));
        let (ca, _) = again.request_header.unwrap();
        assert_eq!(rustls_pemfile::certs(&mut ca.as_bytes()).count(), 1);
    }
}

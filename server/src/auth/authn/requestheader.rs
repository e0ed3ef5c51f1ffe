//! Front-proxy (request header) authentication (`--requestheader-*`): a request whose
//! client certificate verifies against the front proxy's CA (and whose common name is
//! allowed) is the user its headers name, as kube-apiserver and aggregated API servers
//! trust the aggregator. The certificate itself is no user; without a user name header
//! the request is left to the next authenticator. The headers are removed from every
//! request ([`RequestHeaderConfig::strip`]), so nothing after authentication can mistake
//! a client's own for the proxy's.

use actix_web::http::header::{HeaderMap, HeaderName};
use rustls::pki_types::CertificateDer;

use super::x509::{common_name, ClientCa};
use crate::auth::UserInfo;

/// Which headers carry the user, and which proxies may send them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestHeaderConfig {
    /// Headers naming the user; the first present one counts.
    pub username_headers: Vec<String>,
    /// Headers carrying the user's uid; the first present one counts.
    pub uid_headers: Vec<String>,
    /// Headers carrying groups; every value of each counts.
    pub group_headers: Vec<String>,
    /// Prefixes of headers carrying extras (`<prefix><key>: value`).
    pub extra_prefixes: Vec<String>,
    /// Common names a proxy's certificate may have; empty: any the CA signed.
    pub allowed_names: Vec<String>,
}

impl RequestHeaderConfig {
    /// The user the headers name, `None` when no user name header has a value.
    pub fn user(&self, headers: &HeaderMap) -> Option<UserInfo> {
        let name = first_value(headers, &self.username_headers)?;
        let groups = self
            .group_headers
            .iter()
            .flat_map(|h| values(headers, h))
            .collect();
        let mut extra = std::collections::BTreeMap::<String, Vec<String>>::new();
        for (header, value) in headers {
            let header = header.as_str();
            let Some(key) = self
                .extra_prefixes
                .iter()
                .find_map(|p| strip_prefix_ignore_case(header, p))
            else {
                continue;
            };
            let Ok(value) = value.to_str() else { continue };
            if value.is_empty() {
                continue;
            }
            // As upstream: lower-cased, then `%XX` escapes decoded; a key that does not
            // decode is taken as it is.
            let key = key.to_lowercase();
            let key = crate::auth::percent_decode(&key).unwrap_or(key);
            extra.entry(key).or_default().push(value.to_string());
        }
        Some(UserInfo {
            name,
            uid: first_value(headers, &self.uid_headers).unwrap_or_default(),
            groups,
            extra,
        })
    }

    /// Removes every header this configuration reads.
    pub fn strip(&self, headers: &mut HeaderMap) {
        let named = self
            .username_headers
            .iter()
            .chain(&self.uid_headers)
            .chain(&self.group_headers);
        for name in named {
            if let Ok(name) = HeaderName::from_bytes(name.as_bytes()) {
                headers.remove(name);
            }
        }
        if self.extra_prefixes.is_empty() {
            return;
        }
        let prefixed: Vec<HeaderName> = headers
            .keys()
            .filter(|h| {
                self.extra_prefixes
                    .iter()
                    .any(|p| strip_prefix_ignore_case(h.as_str(), p).is_some())
            })
            .cloned()
            .collect();
        for name in prefixed {
            headers.remove(name);
        }
    }
}

/// The front-proxy authenticator: a CA that proxies' certificates verify against, and
/// the headers they send.
#[derive(Debug)]
pub struct RequestHeaderAuthenticator {
    ca: ClientCa,
    /// The headers and the allowed names.
    pub config: RequestHeaderConfig,
}

impl RequestHeaderAuthenticator {
    /// Trusts proxies whose certificates `ca` signed.
    pub fn new(ca: ClientCa, config: RequestHeaderConfig) -> Self {
        RequestHeaderAuthenticator { ca, config }
    }

    /// The CA bundle proxies' certificates are verified against.
    pub fn ca(&self) -> &ClientCa {
        &self.ca
    }

    /// `Ok(None)`: no certificate, or a proxy's that names no user; `Err`: a
    /// certificate that is not an allowed proxy's.
    pub fn authenticate(
        &self,
        chain: Option<&[CertificateDer<'static>]>,
        headers: &HeaderMap,
    ) -> Result<Option<UserInfo>, String> {
        let Some(chain) = chain.filter(|c| !c.is_empty()) else {
            return Ok(None);
        };
        let leaf = self.ca.verify(chain)?;
        if !self.config.allowed_names.is_empty() {
            let cn = common_name(leaf)?;
            if !self.config.allowed_names.contains(&cn) {
                return Err(format!(
                    "x509: subject with cn={cn} is not in the allowed list"
                ));
            }
        }
        Ok(self.config.user(headers))
    }
}

/// The first non-empty value of the first of `names` that has one.
fn first_value(headers: &HeaderMap, names: &[String]) -> Option<String> {
    names.iter().find_map(|n| values(headers, n).next())
}

/// The non-empty text values of header `name`.
fn values<'h>(headers: &'h HeaderMap, name: &str) -> impl Iterator<Item = String> + 'h {
    let name = HeaderName::from_bytes(name.as_bytes()).ok();
    name.into_iter()
        .flat_map(move |n| headers.get_all(n).collect::<Vec<_>>())
        .filter_map(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

/// `header` without `prefix`, compared without case (header names are lower-cased).
fn strip_prefix_ignore_case<'a>(header: &'a str, prefix: &str) -> Option<&'a str> {
    let head = header.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &header[prefix.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::HeaderValue;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    fn config() -> RequestHeaderConfig {
        RequestHeaderConfig {
            username_headers: vec!["X-Remote-User".into()],
            uid_headers: vec!["X-Remote-Uid".into()],
            group_headers: vec!["X-Remote-Group".into()],
            extra_prefixes: vec!["X-Remote-Extra-".into()],
            allowed_names: vec![],
        }
    }

    #[test]
    fn headers_name_the_user_its_groups_uid_and_extras() {
        let user = config()
            .user(&headers(&[
                ("X-Remote-User", "alice"),
                ("X-Remote-Uid", "u-1"),
                ("X-Remote-Group", "devs"),
                ("X-Remote-Group", "ops"),
                ("X-Remote-Extra-Scopes", "read"),
                ("X-Remote-Extra-Scopes", "write"),
                ("X-Remote-Extra-Example.com%2fteam", "blue"),
                ("X-Remote-Extra-Bad%zz", "kept"),
                ("X-Other", "ignored"),
            ]))
            .unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.uid, "u-1");
        assert_eq!(user.groups, ["devs", "ops"]);
        assert_eq!(user.extra["scopes"], ["read", "write"]);
        assert_eq!(user.extra["example.com/team"], ["blue"]);
        assert_eq!(user.extra["bad%zz"], ["kept"]);
        assert_eq!(user.extra.len(), 3);
    }

    #[test]
    fn the_first_user_header_with_a_value_counts_and_none_is_no_user() {
        let mut two = config();
        two.username_headers = vec!["X-First".into(), "X-Second".into()];
        let user = two
            .user(&headers(&[("X-First", ""), ("X-Second", "bob")]))
            .unwrap();
        assert_eq!(user.name, "bob");
        assert!(user.groups.is_empty() && user.extra.is_empty());
        assert_eq!(config().user(&headers(&[("X-Remote-Group", "devs")])), None);
        assert_eq!(config().user(&headers(&[("X-Remote-User", "")])), None);
    }

    #[test]
    fn strip_removes_every_header_the_config_reads() {
        let mut map = headers(&[
            ("X-Remote-User", "alice"),
            ("X-Remote-Uid", "u"),
            ("X-Remote-Group", "devs"),
            ("X-Remote-Extra-A", "1"),
            ("x-remote-extra-b", "2"),
            ("Accept", "application/json"),
        ]);
        config().strip(&mut map);
        let left: Vec<&str> = map.keys().map(|k| k.as_str()).collect();
        assert_eq!(left, ["accept"]);
    }

    fn ca(name: &str) -> (rcgen::Issuer<'static, rcgen::KeyPair>, String) {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        (rcgen::Issuer::new(params, key), cert.pem())
    }

    fn client(issuer: &rcgen::Issuer<'_, rcgen::KeyPair>, cn: &str) -> CertificateDer<'static> {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let key = rcgen::KeyPair::generate().unwrap();
        params.signed_by(&key, issuer).unwrap().der().clone()
    }

    fn authenticator(pem: &str, allowed: &[&str]) -> RequestHeaderAuthenticator {
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let ca = ClientCa::from_pem(pem.as_bytes(), "test", provider).unwrap();
        let mut config = config();
        config.allowed_names = allowed.iter().map(|n| n.to_string()).collect();
        RequestHeaderAuthenticator::new(ca, config)
    }

    #[test]
    fn only_an_allowed_proxy_certificate_makes_the_headers_count() {
        let (proxy_ca, pem) = ca("front-proxy-ca");
        let (other_ca, _) = ca("client-ca");
        let alice = headers(&[("X-Remote-User", "alice")]);
        let auth = authenticator(&pem, &["front-proxy-client"]);
        let proxy = [client(&proxy_ca, "front-proxy-client")];
        assert_eq!(
            auth.authenticate(Some(&proxy), &alice)
                .unwrap()
                .unwrap()
                .name,
            "alice"
        );
        // The proxy's certificate without a user header: no user of this authenticator.
        assert_eq!(auth.authenticate(Some(&proxy), &headers(&[])), Ok(None));
        // No certificate: not this authenticator's request.
        assert_eq!(auth.authenticate(None, &alice), Ok(None));
        // Another CA's certificate, or a name not allowed: refused.
        let stranger = [client(&other_ca, "front-proxy-client")];
        assert!(auth.authenticate(Some(&stranger), &alice).is_err());
        let e = auth
            .authenticate(Some(&[client(&proxy_ca, "mallory")]), &alice)
            .unwrap_err();
        assert_eq!(
            e,
            "x509: subject with cn=mallory is not in the allowed list"
        );
        // No allowed names: any certificate the CA signed.
        let any = authenticator(&pem, &[]);
        let mallory = [client(&proxy_ca, "mallory")];
        assert!(any.authenticate(Some(&mallory), &alice).unwrap().is_some());
    }
}

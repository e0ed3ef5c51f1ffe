//! Client certificates (`--client-ca-file`): the common name is the user, each
//! organization a group, as kube-apiserver reads them.
//!
//! The TLS layer asks for a client certificate but accepts any (checking only that the
//! client holds its key), so a certificate from another CA is a 401 Status from this
//! authenticator rather than a failed handshake, as with kube-apiserver.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme};

use crate::auth::UserInfo;

/// A CA bundle that client certificate chains are verified against (`--client-ca-file`,
/// `--requestheader-client-ca-file`, or the bundles a parent publishes).
#[derive(Debug)]
pub struct ClientCa {
    verifier: Arc<dyn ClientCertVerifier>,
    /// The CAs' subjects, sent to clients as acceptable issuers.
    subjects: Vec<DistinguishedName>,
}

impl ClientCa {
    /// Reads a PEM bundle (one or more certificates) from `path`; `flag` names it in
    /// errors.
    pub fn load(path: &Path, flag: &str, provider: Arc<CryptoProvider>) -> Result<Self, String> {
        let source = format!("{flag} {}", path.display());
        let data = std::fs::read(path).map_err(|e| format!("{source}: {e}"))?;
        Self::from_pem(&data, &source, provider)
    }

    /// The bundle in PEM text; `source` names it in errors.
    pub fn from_pem(
        pem: &[u8],
        source: &str,
        provider: Arc<CryptoProvider>,
    ) -> Result<Self, String> {
        let mut roots = RootCertStore::empty();
        for cert in rustls_pemfile::certs(&mut &pem[..]) {
            let cert = cert.map_err(|e| format!("{source}: {e}"))?;
            roots.add(cert).map_err(|e| format!("{source}: {e}"))?;
        }
        if roots.is_empty() {
            return Err(format!("{source}: no certificate found"));
        }
        let subjects = roots.subjects();
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .allow_unauthenticated()
            .build()
            .map_err(|e| format!("{source}: {e}"))?;
        Ok(ClientCa { verifier, subjects })
    }

    /// The leaf of a chain (leaf first) that verifies against this bundle.
    pub fn verify<'c>(
        &self,
        chain: &'c [CertificateDer<'static>],
    ) -> Result<&'c CertificateDer<'static>, String> {
        let (leaf, intermediates) = chain.split_first().ok_or("no client certificate")?;
        self.verifier
            .verify_client_cert(leaf, intermediates, UnixTime::now())
            .map_err(|e| format!("verifying the client certificate: {e}"))?;
        Ok(leaf)
    }

    /// The CAs' subjects (the TLS layer's acceptable issuers).
    pub fn subjects(&self) -> &[DistinguishedName] {
        &self.subjects
    }
}

/// Client certificates as users: verified against `--client-ca-file`.
#[derive(Debug)]
pub struct X509Authenticator {
    ca: ClientCa,
}

impl X509Authenticator {
    /// Reads the CA bundle of `--client-ca-file` (PEM, one or more certificates).
    pub fn load(path: &Path, provider: Arc<CryptoProvider>) -> Result<Self, String> {
        Ok(X509Authenticator {
            ca: ClientCa::load(path, "--client-ca-file", provider)?,
        })
    }

    /// Users of certificates signed by `ca`.
    pub fn new(ca: ClientCa) -> Self {
        X509Authenticator { ca }
    }

    /// The user of a verified chain (leaf first).
    pub fn authenticate(&self, chain: &[CertificateDer<'static>]) -> Result<UserInfo, String> {
        user_of(self.ca.verify(chain)?)
    }

    /// The CA bundle.
    pub fn ca(&self) -> &ClientCa {
        &self.ca
    }
}

/// A verifier for the TLS server config that requests a client certificate, naming
/// `subjects` as acceptable issuers, and accepts any the client holds the key of.
pub fn tls_verifier(
    subjects: Vec<DistinguishedName>,
    provider: Arc<CryptoProvider>,
) -> Arc<dyn ClientCertVerifier> {
    Arc::new(RequestClientCert { subjects, provider })
}

/// The common name of a certificate's subject (empty when it has none).
pub fn common_name(cert: &CertificateDer<'_>) -> Result<String, String> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref())
        .map_err(|e| format!("parsing the client certificate: {e}"))?;
    let cn = parsed.subject().iter_common_name().next();
    cn.map_or(Ok(String::new()), |cn| {
        cn.as_str().map(str::to_string).map_err(|e| e.to_string())
    })
}

/// CN → user name, O → groups.
fn user_of(cert: &CertificateDer<'_>) -> Result<UserInfo, String> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref())
        .map_err(|e| format!("parsing the client certificate: {e}"))?;
    let subject = parsed.subject();
    let text = |attr: &x509_parser::x509::AttributeTypeAndValue<'_>| {
        attr.as_str().map(str::to_string).map_err(|e| e.to_string())
    };
    let name = match subject.iter_common_name().next() {
        Some(cn) => text(cn)?,
        None => String::new(),
    };
    if name.is_empty() {
        return Err("the client certificate has no common name".into());
    }
    let groups = subject
        .iter_organization()
        .map(text)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(UserInfo {
        name,
        groups,
        ..UserInfo::default()
    })
}

/// Asks for a client certificate and checks the client holds its key; whether the
/// certificate is trusted is the authenticator's question, answered per request.
#[derive(Debug)]
struct RequestClientCert {
    subjects: Vec<DistinguishedName>,
    provider: Arc<CryptoProvider>,
}

impl ClientCertVerifier for RequestClientCert {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.subjects
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn client(
        issuer: &rcgen::Issuer<'_, rcgen::KeyPair>,
        cn: &str,
        orgs: &[&str],
    ) -> CertificateDer<'static> {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        if !cn.is_empty() {
            params
                .distinguished_name
                .push(rcgen::DnType::CommonName, cn);
        }
        for o in orgs {
            params
                .distinguished_name
                .push(rcgen::DnType::OrganizationName, *o);
        }
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let key = rcgen::KeyPair::generate().unwrap();
        params.signed_by(&key, issuer).unwrap().der().clone()
    }

    fn authenticator(ca_pem: &str) -> X509Authenticator {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.crt");
        std::fs::write(&path, ca_pem).unwrap();
        X509Authenticator::load(&path, Arc::new(rustls::crypto::ring::default_provider())).unwrap()
    }

    #[test]
    fn common_name_and_organizations() {
        let (issuer, pem) = ca("test-ca");
        let x509 = authenticator(&pem);
        let user = x509
            .authenticate(&[client(&issuer, "jane", &["dev"])])
            .unwrap();
        assert_eq!(user.name, "jane");
        assert_eq!(user.groups, ["dev"]);
    }

    #[test]
    fn another_ca_or_no_common_name_is_refused() {
        let (issuer, pem) = ca("test-ca");
        let (other, _) = ca("other-ca");
        let x509 = authenticator(&pem);
        let r = x509.authenticate(&[client(&other, "jane", &[])]);
        assert!(r.is_err(), "{r:?}");
        assert!(x509.authenticate(&[client(&issuer, "", &["dev"])]).is_err());
        assert!(x509.authenticate(&[]).is_err());
    }
}

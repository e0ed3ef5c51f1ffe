//! Service account tokens: bound JWTs the server issues (TokenRequest, `kubectl create
//! token`) signed with `--service-account-signing-key-file`, and verified with the keys
//! of `--service-account-key-file` for the issuers of `--service-account-issuer`. A token
//! is valid only while its ServiceAccount (and the object it is bound to) still exists
//! with the uid the token names.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use sha2::Digest;
use x509_parser::prelude::FromDer;

use super::TokenAuthenticator;
use crate::auth::names::{SERVICE_ACCOUNTS, SERVICE_ACCOUNT_PREFIX};
use crate::auth::UserInfo;

/// Where bound tokens' objects are looked up (the server's watch caches).
#[async_trait]
pub trait ObjectLookup: Send + Sync {
    /// The uid of the object, `None` when it does not exist; `kind` is `ServiceAccount`,
    /// `Secret`, `Pod` or `Node` (the last cluster-scoped, `namespace` ignored).
    async fn uid(&self, kind: &str, namespace: &str, name: &str) -> Option<String>;
}

/// A name and uid, as the `kubernetes.io` claim records each object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectClaim {
    pub name: String,
    pub uid: String,
}

/// The `kubernetes.io` private claim.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubernetesClaim {
    pub namespace: String,
    pub serviceaccount: ObjectClaim,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<ObjectClaim>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<ObjectClaim>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<ObjectClaim>,
}

/// A bound service account token's claims.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    pub iss: String,
    pub sub: String,
    pub aud: Vec<String>,
    pub exp: u64,
    pub iat: u64,
    pub nbf: u64,
    pub jti: String,
    #[serde(rename = "kubernetes.io")]
    pub kubernetes: KubernetesClaim,
}

/// Which JWT algorithm a PEM key signs with.
fn algorithm_of(pem: &str) -> Result<Algorithm, String> {
    let key =
        rcgen::KeyPair::from_pem(pem).map_err(|e| format!("not a PKCS#8 private key: {e}"))?;
    if key.is_compatible(&rcgen::PKCS_ECDSA_P256_SHA256) {
        Ok(Algorithm::ES256)
    } else if key.is_compatible(&rcgen::PKCS_ECDSA_P384_SHA384) {
        Ok(Algorithm::ES384)
    } else if key.is_compatible(&rcgen::PKCS_RSA_SHA256) {
        Ok(Algorithm::RS256)
    } else {
        Err("only RSA and ECDSA P-256/P-384 keys sign service account tokens".into())
    }
}

/// The key id upstream gives a public key: the unpadded base64url SHA-256 of its DER.
fn key_id(public_der: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(public_der))
}

/// Signs tokens (TokenRequest).
pub struct TokenIssuer {
    key: EncodingKey,
    header: Header,
    /// The first `--service-account-issuer`.
    pub issuer: String,
    /// `--api-audiences`, the audiences of a token that asks for none.
    pub audiences: Vec<String>,
    /// `--service-account-max-token-expiration`, if set.
    pub max_expiration: Option<Duration>,
}

impl std::fmt::Debug for TokenIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenIssuer")
            .field("issuer", &self.issuer)
            .finish()
    }
}

impl TokenIssuer {
    /// An issuer signing with the PKCS#8 private key `pem`.
    pub fn new(pem: &str, issuer: String, audiences: Vec<String>) -> Result<Self, String> {
        let alg = algorithm_of(pem)?;
        let key = match alg {
            Algorithm::RS256 => EncodingKey::from_rsa_pem(pem.as_bytes()),
            _ => EncodingKey::from_ec_pem(pem.as_bytes()),
        }
        .map_err(|e| e.to_string())?;
        let public = rcgen::KeyPair::from_pem(pem).map_err(|e| e.to_string())?;
        let mut header = Header::new(alg);
        let der = pem::parse(public.public_key_pem()).map_err(|e| e.to_string())?;
        header.kid = Some(key_id(der.contents()));
        Ok(TokenIssuer {
            key,
            header,
            issuer,
            audiences,
            max_expiration: None,
        })
    }

    /// A signed token for `claims`.
    pub fn sign(&self, claims: &Claims) -> Result<String, String> {
        jsonwebtoken::encode(&self.header, claims, &self.key).map_err(|e| e.to_string())
    }

    /// Claims for a token of service account `namespace/name` (uid `uid`), valid for
    /// `lifetime` from now, for `audiences` (the API audiences when empty).
    pub fn claims(
        &self,
        namespace: &str,
        sa: ObjectClaim,
        audiences: Vec<String>,
        lifetime: Duration,
    ) -> Claims {
        let now = unix_now();
        Claims {
            iss: self.issuer.clone(),
            sub: format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{}", sa.name),
            aud: if audiences.is_empty() {
                self.audiences.clone()
            } else {
                audiences
            },
            exp: now + lifetime.as_secs(),
            iat: now,
            nbf: now,
            jti: uuid::Uuid::new_v4().to_string(),
            kubernetes: KubernetesClaim {
                namespace: namespace.to_string(),
                serviceaccount: sa,
                ..KubernetesClaim::default()
            },
        }
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// One verification key.
struct VerifyingKey {
    key: DecodingKey,
    alg: Algorithm,
}

/// Verifies service account tokens.
pub struct ServiceAccountTokens {
    keys: Vec<VerifyingKey>,
    issuers: Vec<String>,
    /// The audiences a token must name one of (`--api-audiences`).
    pub audiences: Vec<String>,
    lookup: Arc<dyn ObjectLookup>,
}

impl ServiceAccountTokens {
    /// Verifies with `keys` (PEM public keys, or PKCS#8 private keys whose public half
    /// is used; a file may hold several).
    pub fn new(
        pems: &[String],
        issuers: Vec<String>,
        audiences: Vec<String>,
        lookup: Arc<dyn ObjectLookup>,
    ) -> Result<Self, String> {
        let mut keys = Vec::new();
        for pem in pems {
            for block in pem::parse_many(pem).map_err(|e| e.to_string())? {
                keys.push(verifying_key(&block)?);
            }
        }
        if keys.is_empty() {
            return Err("no public or private key found".into());
        }
        Ok(ServiceAccountTokens {
            keys,
            issuers,
            audiences,
            lookup,
        })
    }

    /// The user a token names and the audiences of `wanted` it is for; `Ok(None)` for a
    /// token that is not a JWT of one of our issuers.
    pub async fn verified_for(
        &self,
        token: &str,
        wanted: &[String],
    ) -> Result<Option<(UserInfo, Vec<String>)>, String> {
        let Some(claims) = self.verify(token)? else {
            return Ok(None);
        };
        let audiences: Vec<String> = claims
            .aud
            .iter()
            .filter(|a| wanted.contains(a))
            .cloned()
            .collect();
        if audiences.is_empty() {
            return Err(format!(
                "token audiences {:?} is invalid for the target audiences {wanted:?}",
                claims.aud
            ));
        }
        let k = &claims.kubernetes;
        let expected = format!(
            "{SERVICE_ACCOUNT_PREFIX}{}:{}",
            k.namespace, k.serviceaccount.name
        );
        if claims.sub != expected || k.namespace.is_empty() || k.serviceaccount.name.is_empty() {
            return Err("the token's subject does not match its service account".into());
        }
        let bound = [
            ("ServiceAccount", Some(&k.serviceaccount)),
            ("Secret", k.secret.as_ref()),
            ("Pod", k.pod.as_ref()),
            ("Node", k.node.as_ref()),
        ];
        for (kind, object) in bound {
            let Some(object) = object else { continue };
            match self.lookup.uid(kind, &k.namespace, &object.name).await {
                Some(uid) if uid == object.uid => {}
                Some(_) => {
                    return Err(format!(
                        "{kind} {}/{} has been deleted and recreated (uid changed)",
                        k.namespace, object.name
                    ))
                }
                None => {
                    return Err(format!(
                        "{kind} {}/{} has been deleted",
                        k.namespace, object.name
                    ))
                }
            }
        }
        let mut extra = std::collections::BTreeMap::new();
        extra.insert(
            "authentication.kubernetes.io/credential-id".to_string(),
            vec![format!("JTI={}", claims.jti)],
        );
        if let Some(pod) = &k.pod {
            extra.insert(
                "authentication.kubernetes.io/pod-name".into(),
                vec![pod.name.clone()],
            );
            extra.insert(
                "authentication.kubernetes.io/pod-uid".into(),
                vec![pod.uid.clone()],
            );
        }
        let user = UserInfo {
            name: expected,
            uid: k.serviceaccount.uid.clone(),
            groups: vec![
                SERVICE_ACCOUNTS.into(),
                format!("{SERVICE_ACCOUNTS}:{}", k.namespace),
            ],
            extra,
        };
        Ok(Some((user, audiences)))
    }

    /// The verified claims; `Ok(None)` when the token is not a JWT from our issuers.
    fn verify(&self, token: &str) -> Result<Option<Claims>, String> {
        let Ok(header) = jsonwebtoken::decode_header(token) else {
            return Ok(None);
        };
        // Whose token it is, before checking it: a JWT of another issuer is not ours.
        let Some(issuer) = unverified_issuer(token) else {
            return Ok(None);
        };
        if !self.issuers.contains(&issuer) {
            return Ok(None);
        }
        let mut failure =
            "the token's signature does not verify with any service account key".to_string();
        for key in self.keys.iter().filter(|k| k.alg == header.alg) {
            let mut validation = Validation::new(key.alg);
            validation.set_issuer(&self.issuers);
            validation.validate_aud = false;
            validation.validate_nbf = true;
            validation.leeway = 0;
            validation.set_required_spec_claims(&["exp", "iss", "sub"]);
            match jsonwebtoken::decode::<Claims>(token, &key.key, &validation) {
                Ok(data) => return Ok(Some(data.claims)),
                Err(e) => match e.kind() {
                    jsonwebtoken::errors::ErrorKind::InvalidSignature => {}
                    jsonwebtoken::errors::ErrorKind::ExpiredSignature => {
                        return Err("the service account token has expired".into())
                    }
                    _ => failure = format!("invalid service account token: {e}"),
                },
            }
        }
        Err(failure)
    }
}

#[async_trait]
impl TokenAuthenticator for ServiceAccountTokens {
    async fn authenticate_token(&self, token: &str) -> Result<Option<UserInfo>, String> {
        Ok(self
            .verified_for(token, &self.audiences)
            .await?
            .map(|(user, _)| user))
    }

    async fn authenticate_for(
        &self,
        token: &str,
        wanted: &[String],
        _api: &[String],
    ) -> Result<Option<(UserInfo, Vec<String>)>, String> {
        self.verified_for(token, wanted).await
    }
}

/// The `iss` claim, read without verifying anything.
fn unverified_issuer(token: &str) -> Option<String> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    claims["iss"].as_str().map(str::to_string)
}

fn verifying_key(block: &pem::Pem) -> Result<VerifyingKey, String> {
    let text = pem::encode(block);
    let (public, alg) = match block.tag() {
        "PUBLIC KEY" => {
            let (_, spki) = x509_parser::x509::SubjectPublicKeyInfo::from_der(block.contents())
                .map_err(|e| format!("parsing a public key: {e}"))?;
            let alg = match spki.parsed().map_err(|e| e.to_string())? {
                x509_parser::public_key::PublicKey::RSA(_) => Algorithm::RS256,
                x509_parser::public_key::PublicKey::EC(point) if point.key_size() == 384 => {
                    Algorithm::ES384
                }
                x509_parser::public_key::PublicKey::EC(_) => Algorithm::ES256,
                _ => return Err("only RSA and ECDSA keys verify service account tokens".into()),
            };
            (text, alg)
        }
        "PRIVATE KEY" => {
            let alg = algorithm_of(&text)?;
            let pair = rcgen::KeyPair::from_pem(&text).map_err(|e| e.to_string())?;
            (pair.public_key_pem(), alg)
        }
        other => {
            return Err(format!(
                "a {other:?} block is not a key this server reads (use PKCS#8 or a PUBLIC KEY)"
            ))
        }
    };
    let key = match alg {
        Algorithm::RS256 => DecodingKey::from_rsa_pem(public.as_bytes()),
        _ => DecodingKey::from_ec_pem(public.as_bytes()),
    }
    .map_err(|e| e.to_string())?;
    Ok(VerifyingKey { key, alg })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Mutex;

    const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

    #[derive(Default)]
    struct Objects(Mutex<HashMap<(String, String), String>>);
    #[async_trait]
    impl ObjectLookup for Objects {
        async fn uid(&self, kind: &str, _ns: &str, name: &str) -> Option<String> {
            self.0
                .lock()
                .unwrap()
                .get(&(kind.to_string(), name.to_string()))
                .cloned()
        }
    }

    fn setup() -> (TokenIssuer, ServiceAccountTokens, Arc<Objects>) {
        let key = rcgen::KeyPair::generate().unwrap().serialize_pem();
        let issuer = TokenIssuer::new(&key, ISSUER.into(), vec![ISSUER.into()]).unwrap();
        let objects = Arc::new(Objects::default());
        objects
            .0
            .lock()
            .unwrap()
            .insert(("ServiceAccount".into(), "robot".into()), "uid-1".into());
        let verifier = ServiceAccountTokens::new(
            &[key],
            vec![ISSUER.into()],
            vec![ISSUER.into()],
            objects.clone(),
        )
        .unwrap();
        (issuer, verifier, objects)
    }

    fn robot(uid: &str) -> ObjectClaim {
        ObjectClaim {
            name: "robot".into(),
            uid: uid.into(),
        }
    }

    #[actix_web::test]
    async fn an_issued_token_names_its_service_account() {
        let (issuer, verifier, _) = setup();
        let claims = issuer.claims("ns1", robot("uid-1"), vec![], Duration::from_secs(600));
        let user = verifier
            .authenticate_token(&issuer.sign(&claims).unwrap())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(user.name, "system:serviceaccount:ns1:robot");
        assert_eq!(user.uid, "uid-1");
        assert_eq!(
            user.groups,
            [SERVICE_ACCOUNTS, "system:serviceaccounts:ns1"]
        );
    }

    #[actix_web::test]
    async fn expired_foreign_deleted_and_recreated_tokens_are_refused() {
        let (issuer, verifier, objects) = setup();
        let mut claims = issuer.claims("ns1", robot("uid-1"), vec![], Duration::from_secs(600));
        claims.exp = unix_now() - 10;
        let err = verifier
            .authenticate_token(&issuer.sign(&claims).unwrap())
            .await;
        assert!(err.unwrap_err().contains("expired"));

        // Signed by another key.
        let other_key = rcgen::KeyPair::generate().unwrap().serialize_pem();
        let other = TokenIssuer::new(&other_key, ISSUER.into(), vec![ISSUER.into()]).unwrap();
        let claims = other.claims("ns1", robot("uid-1"), vec![], Duration::from_secs(600));
        assert!(verifier
            .authenticate_token(&other.sign(&claims).unwrap())
            .await
            .is_err());

        // Another audience.
        let claims = issuer.claims(
            "ns1",
            robot("uid-1"),
            vec!["vault".into()],
            Duration::from_secs(600),
        );
        assert!(verifier
            .authenticate_token(&issuer.sign(&claims).unwrap())
            .await
            .is_err());

        // Another issuer's JWTs and non-JWTs are not ours at all.
        let foreign = TokenIssuer::new(&other_key, "https://elsewhere".into(), vec![]).unwrap();
        let claims = foreign.claims(
            "ns1",
            robot("uid-1"),
            vec![ISSUER.into()],
            Duration::from_secs(600),
        );
        assert_eq!(
            verifier
                .authenticate_token(&foreign.sign(&claims).unwrap())
                .await,
            Ok(None)
        );
        assert_eq!(verifier.authenticate_token("abc.def.ghi").await, Ok(None));
        assert_eq!(verifier.authenticate_token("plain").await, Ok(None));

        // A tampered payload.
        let token = issuer
            .sign(&issuer.claims("ns1", robot("uid-1"), vec![], Duration::from_secs(600)))
            .unwrap();
        let parts: Vec<&str> = token.split('.').collect();
        let mut claims: serde_json::Value = serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(parts[1])
                .unwrap(),
        )
        .unwrap();
        claims["sub"] = "system:serviceaccount:kube-system:admin".into();
        let forged = format!(
            "{}.{}.{}",
            parts[0],
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims.to_string()),
            parts[2]
        );
        assert!(verifier.authenticate_token(&forged).await.is_err());

        // Recreated (new uid), then deleted.
        let token = issuer
            .sign(&issuer.claims("ns1", robot("uid-1"), vec![], Duration::from_secs(600)))
            .unwrap();
        objects
            .0
            .lock()
            .unwrap()
            .insert(("ServiceAccount".into(), "robot".into()), "uid-2".into());
        assert!(verifier
            .authenticate_token(&token)
            .await
            .unwrap_err()
            .contains("recreated"));
        objects.0.lock().unwrap().clear();
        assert!(verifier
            .authenticate_token(&token)
            .await
            .unwrap_err()
            .contains("deleted"));
    }
}

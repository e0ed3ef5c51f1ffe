//! A resource's providers as one ordered chain: the first one writes, any of them reads
//! the values it wrote, told apart by their prefix (`k8s:enc:<provider>:v1:<key>:`).

use bytes::Bytes;

use super::providers::{CipherError, ValueTransformer};

/// Every encrypted value starts with this; `identity` reads only values without it.
pub const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";

/// One link of a chain: a provider's key with its prefix, or `identity`.
enum Link {
    /// Plain values, no prefix.
    Identity,
    /// A key of an encrypting provider.
    Key {
        /// `k8s:enc:<provider>:v1:<key name>:`
        prefix: Vec<u8>,
        cipher: Box<dyn ValueTransformer>,
    },
}

impl Link {
    fn name(&self) -> String {
        match self {
            Link::Identity => "identity".to_string(),
            Link::Key { prefix, .. } => describe_prefix(prefix),
        }
    }
}

/// `aescbc key "key1"` from `k8s:enc:aescbc:v1:key1:...`.
fn describe_prefix(value: &[u8]) -> String {
    let rest = value.strip_prefix(ENCRYPTED_PREFIX).unwrap_or(value);
    let text = String::from_utf8_lossy(&rest[..rest.len().min(300)]);
    let mut parts = text.splitn(4, ':');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(provider), Some(version), Some(key)) if parts.next().is_some() => {
            format!("{provider} ({version}) key {key:?}")
        }
        _ => "an unrecognised provider".to_string(),
    }
}

/// Why a stored value could not be read back.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TransformError {
    /// Encrypted with a provider or key the configuration does not list for the resource.
    #[error("the value is encrypted with {0}, which --encryption-provider-config does not list for this resource")]
    UnknownKey(String),
    /// A plain value, but `identity` is not among the resource's providers.
    #[error("the value is not encrypted, and identity is not among this resource's providers in --encryption-provider-config")]
    NotEncrypted,
    /// Every key whose prefix matched failed.
    #[error("decrypting with {key}: {cause}")]
    Cipher { key: String, cause: CipherError },
}

/// The transformers of one resource, in the configuration's order.
pub struct Transformers {
    links: Vec<Link>,
}

impl Transformers {
    /// An empty chain; links are added in order with [`Transformers::identity`] and
    /// [`Transformers::key`].
    pub(super) fn new() -> Self {
        Transformers { links: Vec::new() }
    }

    /// Appends `identity`.
    pub(super) fn identity(&mut self) {
        self.links.push(Link::Identity);
    }

    /// Appends a key of provider `provider` (e.g. `aescbc`) named `name`.
    pub(super) fn key(&mut self, provider: &str, name: &str, cipher: Box<dyn ValueTransformer>) {
        let prefix = format!("k8s:enc:{provider}:v1:{name}:").into_bytes();
        self.links.push(Link::Key { prefix, cipher });
    }

    /// Appends another chain's links (a resource listed in several entries).
    pub(super) fn extend(&mut self, other: Transformers) {
        self.links.extend(other.links);
    }

    /// Whether writes are stored as they are (the first provider is `identity`).
    pub fn writes_plain(&self) -> bool {
        matches!(self.links.first(), Some(Link::Identity) | None)
    }

    /// The value to store for `plain` under storage key `key`: sealed by the first
    /// provider (its first key), or `plain` itself when that is `identity`.
    pub fn to_storage(&self, key: &str, plain: Bytes) -> Result<Bytes, TransformError> {
        match self.links.first() {
            None | Some(Link::Identity) => Ok(plain),
            Some(link @ Link::Key { prefix, cipher }) => {
                let mut out = Vec::with_capacity(prefix.len() + plain.len() + 64);
                out.extend_from_slice(prefix);
                cipher
                    .seal(&plain, key.as_bytes(), &mut out)
                    .map_err(|cause| TransformError::Cipher {
                        key: link.name(),
                        cause,
                    })?;
                Ok(out.into())
            }
        }
    }

    /// The plain value of `stored` (read from storage key `key`) and whether it is stale:
    /// read by a link other than the first, so it should be rewritten. Links whose
    /// prefix matches are tried in order (a key name may be a prefix of another).
    pub fn from_storage(&self, key: &str, stored: Bytes) -> Result<(Bytes, bool), TransformError> {
        let encrypted = stored.starts_with(ENCRYPTED_PREFIX);
        let mut failed = None;
        for (i, link) in self.links.iter().enumerate() {
            match link {
                Link::Identity if !encrypted => return Ok((stored, i != 0)),
                Link::Identity => {}
                Link::Key { prefix, cipher } => {
                    let Some(sealed) = stored.strip_prefix(prefix.as_slice()) else {
                        continue;
                    };
                    match cipher.open(sealed, key.as_bytes()) {
                        Ok(plain) => return Ok((plain.into(), i != 0)),
                        Err(cause) => {
                            failed.get_or_insert(TransformError::Cipher {
                                key: link.name(),
                                cause,
                            });
                        }
                    }
                }
            }
        }
        Err(match failed {
            Some(e) => e,
            None if encrypted => TransformError::UnknownKey(describe_prefix(&stored)),
            None => TransformError::NotEncrypted,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::providers::{AesCbc, AesGcm, Secretbox};
    use super::*;

    const KEY: &str = "/registry/secrets/default/s";

    fn chain(links: &[(&str, &str, u8)]) -> Transformers {
        let mut t = Transformers::new();
        for &(provider, name, fill) in links {
            match provider {
                "identity" => t.identity(),
                "aescbc" => t.key(provider, name, Box::new(AesCbc::new(&[fill; 32]).unwrap())),
                "aesgcm" => t.key(provider, name, Box::new(AesGcm::new(&[fill; 16]).unwrap())),
                "secretbox" => t.key(
                    provider,
                    name,
                    Box::new(Secretbox::new(&[fill; 32]).unwrap()),
                ),
                other => panic!("{other}"),
            }
        }
        t
    }

    #[test]
    fn writes_carry_the_first_keys_prefix_and_read_back_fresh() {
        for provider in ["aescbc", "aesgcm", "secretbox"] {
            let t = chain(&[(provider, "key1", 1), ("identity", "", 0)]);
            let stored = t.to_storage(KEY, Bytes::from_static(b"{\"a\":1}")).unwrap();
            let prefix = format!("k8s:enc:{provider}:v1:key1:");
            assert!(stored.starts_with(prefix.as_bytes()), "{provider}");
            assert_eq!(
                t.from_storage(KEY, stored).unwrap(),
                (Bytes::from_static(b"{\"a\":1}"), false)
            );
        }
    }

    #[test]
    fn identity_first_writes_plain_and_still_reads_encrypted_values_as_stale() {
        let old = chain(&[("aescbc", "key1", 1)]);
        let sealed = old.to_storage(KEY, Bytes::from_static(b"v")).unwrap();
        let t = chain(&[("identity", "", 0), ("aescbc", "key1", 1)]);
        assert!(t.writes_plain());
        assert_eq!(
            t.to_storage(KEY, Bytes::from_static(b"v")).unwrap(),
            Bytes::from_static(b"v")
        );
        assert_eq!(
            t.from_storage(KEY, sealed).unwrap(),
            (Bytes::from_static(b"v"), true)
        );
        assert_eq!(
            t.from_storage(KEY, Bytes::from_static(b"plain")).unwrap(),
            (Bytes::from_static(b"plain"), false)
        );
    }

    #[test]
    fn a_plain_value_reads_under_an_aesgcm_first_config_listing_identity() {
        let t = chain(&[("aesgcm", "key1", 1), ("identity", "", 0)]);
        assert_eq!(
            t.from_storage(KEY, Bytes::from_static(b"{\"kind\":\"Secret\"}"))
                .unwrap(),
            (Bytes::from_static(b"{\"kind\":\"Secret\"}"), true)
        );
        // Without identity, a plain value is an error, not garbage.
        let strict = chain(&[("aesgcm", "key1", 1)]);
        assert_eq!(
            strict.from_storage(KEY, Bytes::from_static(b"{}")),
            Err(TransformError::NotEncrypted)
        );
    }

    #[test]
    fn rotation_reads_old_keys_as_stale_and_writes_the_new_one() {
        let before = chain(&[("aescbc", "key1", 1)]);
        let old = before.to_storage(KEY, Bytes::from_static(b"v")).unwrap();
        let rotated = chain(&[("aescbc", "key2", 2), ("aescbc", "key1", 1)]);
        assert_eq!(
            rotated.from_storage(KEY, old.clone()).unwrap(),
            (Bytes::from_static(b"v"), true)
        );
        let new = rotated.to_storage(KEY, Bytes::from_static(b"v")).unwrap();
        assert!(new.starts_with(b"k8s:enc:aescbc:v1:key2:"));
        assert_eq!(
            rotated.from_storage(KEY, new.clone()).unwrap(),
            (Bytes::from_static(b"v"), false)
        );
        // Once key1 is dropped, what it wrote names it in the error.
        let after = chain(&[("aescbc", "key2", 2)]);
        assert!(!after.from_storage(KEY, new).unwrap().1);
        let err = after.from_storage(KEY, old).unwrap_err();
        assert_eq!(
            err,
            TransformError::UnknownKey("aescbc (v1) key \"key1\"".into())
        );
        assert!(
            err.to_string().contains("aescbc (v1) key \"key1\""),
            "{err}"
        );
    }

    #[test]
    fn a_provider_switch_reads_the_old_providers_values() {
        let before = chain(&[("secretbox", "a", 1)]);
        let old = before.to_storage(KEY, Bytes::from_static(b"v")).unwrap();
        let t = chain(&[("aesgcm", "b", 2), ("secretbox", "a", 1)]);
        assert_eq!(
            t.from_storage(KEY, old).unwrap(),
            (Bytes::from_static(b"v"), true)
        );
    }

    #[test]
    fn the_same_name_with_another_secret_fails_clearly() {
        let writer = chain(&[("aesgcm", "key1", 1)]);
        let stored = writer.to_storage(KEY, Bytes::from_static(b"v")).unwrap();
        let reader = chain(&[("aesgcm", "key1", 9)]);
        let err = reader.from_storage(KEY, stored).unwrap_err();
        assert!(
            matches!(
                &err,
                TransformError::Cipher {
                    cause: CipherError::Unauthentic,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .starts_with("decrypting with aesgcm (v1) key \"key1\""),
            "{err}"
        );
    }

    #[test]
    fn identity_alone_refuses_encrypted_values() {
        let t = chain(&[("identity", "", 0)]);
        let err = t
            .from_storage(KEY, Bytes::from_static(b"k8s:enc:kms:v2:vault:xyz"))
            .unwrap_err();
        assert_eq!(
            err,
            TransformError::UnknownKey("kms (v2) key \"vault\"".into())
        );
        let err = t
            .from_storage(KEY, Bytes::from_static(b"k8s:enc:garbage"))
            .unwrap_err();
        assert_eq!(
            err,
            TransformError::UnknownKey("an unrecognised provider".into())
        );
    }

    #[test]
    fn a_key_name_that_prefixes_another_still_finds_its_value() {
        // Names "a" and "a:b": a value of "a:b" matches both prefixes.
        let writer = chain(&[("aesgcm", "a:b", 2)]);
        let stored = writer.to_storage(KEY, Bytes::from_static(b"v")).unwrap();
        let reader = chain(&[("aesgcm", "a", 1), ("aesgcm", "a:b", 2)]);
        assert_eq!(
            reader.from_storage(KEY, stored).unwrap(),
            (Bytes::from_static(b"v"), true)
        );
    }
}

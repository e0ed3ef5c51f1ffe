//! Encryption at rest (`--encryption-provider-config`), as kube-apiserver's: an
//! `EncryptionConfiguration` file names resources and, for each, ordered providers
//! (`identity`, `aescbc`, `aesgcm`, `secretbox`). The first provider (its first key)
//! encrypts writes; reads pick the provider and key by the value's prefix
//! (`k8s:enc:<provider>:v1:<key>:`), so old keys keep reading after a rotation, and a
//! value read with anything but the first counts as stale (rewritten by the next
//! update, even an unchanged one).
//!
//! `config` parses and checks the file, `providers` holds the ciphers, `transformers` a
//! resource's chain, `storage` the [`Storage`](crate::storage::Storage) wrapper that
//! applies it.

mod config;
mod providers;
mod storage;
mod transformers;

use std::path::Path;
use std::sync::Arc;

pub use config::{find_rule, GroupResource};
pub use storage::TransformedStorage;
pub use transformers::{TransformError, Transformers};

/// The checked `--encryption-provider-config`: each group resource it names, with its
/// providers.
pub struct EncryptionConfig {
    rules: Vec<(GroupResource, Arc<Transformers>)>,
}

impl EncryptionConfig {
    /// Reads and checks the file; every problem is reported, each with its field, in one
    /// message naming the file.
    pub fn load(path: &Path) -> Result<EncryptionConfig, String> {
        let flag = format!("--encryption-provider-config {}", path.display());
        let text = std::fs::read_to_string(path).map_err(|e| format!("{flag}: {e}"))?;
        Self::parse(&text).map_err(|errors| match errors.as_slice() {
            [one] => format!("{flag}: {one}"),
            many => format!("{flag}:\n  {}", many.join("\n  ")),
        })
    }

    /// Parses and checks a configuration's text; the problems, one `field: message` each.
    pub fn parse(text: &str) -> Result<EncryptionConfig, Vec<String>> {
        let rules = config::parse(text)?
            .into_iter()
            .map(|(gr, t)| (gr, Arc::new(t)))
            .collect();
        Ok(EncryptionConfig { rules })
    }

    /// The providers of `resource` in `group` (`""` for the core group): its own entry,
    /// else its group's wildcard, else `*.*`; `None` when the file does not cover it.
    pub fn transformers_for(&self, group: &str, resource: &str) -> Option<&Arc<Transformers>> {
        config::find_rule(&self.rules, group, resource)
    }

    /// The rules, in file order.
    pub fn rules(&self) -> &[(GroupResource, Arc<Transformers>)] {
        &self.rules
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_names_the_file_and_every_field_at_fault() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("enc.yaml");
        std::fs::write(
            &path,
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys: [{name: k, secret: c2hvcnQ=}]\n  - secretbox:\n      keys: []\n",
        )
        .unwrap();
        let err = EncryptionConfig::load(&path).err().unwrap();
        let flag = format!("--encryption-provider-config {}", path.display());
        assert_eq!(
            err,
            format!("{flag}:\n  resources[0].providers[0].aescbc.keys[0].secret: the key is 5 bytes long; expected one of [16, 24, 32] bytes\n  resources[0].providers[1].secretbox.keys: at least one key is required")
        );
        let missing = EncryptionConfig::load(&dir.path().join("nope.yaml"))
            .err()
            .unwrap();
        assert!(
            missing.starts_with("--encryption-provider-config "),
            "{missing}"
        );
        assert!(missing.contains("nope.yaml: "), "{missing}");
    }

    #[test]
    fn resources_find_their_providers() {
        let config = EncryptionConfig::parse(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers: [{aesgcm: {keys: [{name: k, secret: MTIzNDU2Nzg5MDEyMzQ1Ng==}]}}]\n- resources: ['*.apps']\n  providers: [identity: {}]\n",
        )
        .unwrap();
        assert!(!config
            .transformers_for("", "secrets")
            .unwrap()
            .writes_plain());
        assert!(config
            .transformers_for("apps", "deployments")
            .unwrap()
            .writes_plain());
        assert!(config.transformers_for("", "configmaps").is_none());
        assert_eq!(config.rules().len(), 2);
    }
}

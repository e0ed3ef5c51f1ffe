//! Which storage each resource uses: the backend itself, or the backend behind the
//! resource's encryption transformers. Chosen by group and resource (as kube-apiserver
//! chooses a transformer per group resource), not by key prefix: `/registry/apps/...`
//! does not say whether `apps` is a group or a core resource.

use std::sync::Arc;

use super::encryption::{EncryptionConfig, GroupResource, TransformedStorage};
use super::Storage;

/// The backend, and one wrapped storage per rule of `--encryption-provider-config`.
#[derive(Clone)]
pub struct ResourceStorages {
    base: Arc<dyn Storage>,
    /// Built once per rule, so a lookup is a comparison and an `Arc` clone at most.
    encrypted: Arc<[(GroupResource, Arc<dyn Storage>)]>,
}

impl ResourceStorages {
    /// Every resource on `base`, with the transformers `encryption` gives it.
    pub fn new(base: Arc<dyn Storage>, encryption: Option<&EncryptionConfig>) -> Self {
        let encrypted = encryption
            .map(|config| {
                config
                    .rules()
                    .iter()
                    .map(|(gr, t)| {
                        let s: Arc<dyn Storage> =
                            Arc::new(TransformedStorage::new(base.clone(), t.clone()));
                        (gr.clone(), s)
                    })
                    .collect()
            })
            .unwrap_or_default();
        ResourceStorages { base, encrypted }
    }

    /// The backend itself (revisions, health, and resources no rule names).
    pub fn base(&self) -> &Arc<dyn Storage> {
        &self.base
    }

    /// The storage of `resource` in `group` (`""` for the core group).
    pub fn of(&self, group: &str, resource: &str) -> &Arc<dyn Storage> {
        if self.encrypted.is_empty() {
            return &self.base;
        }
        super::encryption::find_rule(&self.encrypted, group, resource).unwrap_or(&self.base)
    }
}

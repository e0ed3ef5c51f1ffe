//! `crds`: a CustomResourceDefinition, optionally followed by a line `---` and a custom
//! object of its kind (YAML or JSON each). The definition is decoded as the handlers
//! decode it and created with `dryRun` through the real store, so the CRD strategy runs
//! (names, versions, structural-schema checks, CEL rules compiled and their cost
//! estimated). A definition it accepts must make a catalog entry, as the CRD controller
//! makes one; the object is then pruned, defaulted and validated against that entry's
//! schema and CEL rules, on create and as an update of itself (transition rules).

use apiserver::catalog::ApiResource;
use apiserver::endpoints::negotiation::decode_body_as;
use apiserver::registry::schema::{apply_defaults, prune};

use crate::fixture;

const CRDS: &str = "customresourcedefinitions.apiextensions.k8s.io";

/// Runs one input.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (crd_text, object_text) = match text.split_once("\n---\n") {
        Some((crd, obj)) => (crd, Some(obj)),
        None => (text, None),
    };
    let fixture = fixture::get();
    let crds = fixture.resource(CRDS);
    let decoded = decode_body_as("application/yaml", crd_text.as_bytes(), &crds);
    crate::client_errors_only(&decoded, "a CRD");
    let Ok(mut crd) = decoded else {
        return;
    };
    prune(&mut crd, crds.schema());
    let created =
        fixture
            .runtime
            .block_on(fixture.store.create(&crds, None, crd, &fixture::dry_run()));
    crate::client_errors_only(&created, "a CRD");
    let Ok(crd) = created else {
        return;
    };
    let defs = apiserver::apiextensions::definitions(&crd)
        .unwrap_or_else(|e| panic!("an accepted CRD has no definitions: {e:?}"));
    for def in defs {
        let res = ApiResource::new(def)
            .unwrap_or_else(|e| panic!("an accepted CRD makes no catalog entry: {e}"));
        if let Some(object) = object_text {
            check_object(&res, object);
        }
    }
}

/// What a create and an update of `object` run of the kind's schema: pruning,
/// defaults, schema validation and CEL rules. Causes are the expected answer; a panic
/// (or a rule that runs past libFuzzer's timeout) is the bug.
fn check_object(res: &ApiResource, object: &str) {
    let Ok(mut obj) = decode_body_as("application/yaml", object.as_bytes(), res) else {
        return;
    };
    prune(&mut obj, res.schema());
    apply_defaults(&mut obj, res.schema());
    let _ = res.validator().validate(&obj);
    let _ = res.rules.validate(&obj, None);
    let _ = res.rules.validate(&obj, Some(&obj));
}

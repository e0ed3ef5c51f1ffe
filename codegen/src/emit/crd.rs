//! CustomResourceDefinition manifests: a custom definition as the CRD that serves the
//! same kind at run time (here, or on any cluster), so a kind can move between "compiled
//! in" and "installed" without being rewritten.

use serde_json::{json, Map, Value};

use crate::model::{ResourceDef, Scope};

/// The `apiextensions.k8s.io/v1` CustomResourceDefinition serving `d`, or why there is
/// none (built-in kinds are not custom resources; a CRD's group needs a dot). A version
/// of a kind defined in several has its family's CRD ([`family_manifest`]) instead.
pub fn manifest(d: &ResourceDef) -> Result<Value, String> {
    if d.storage || d.conversion.is_some() {
        return Err(format!(
            "{} is defined in several versions: its CRD is its family's, with every version",
            d.kind
        ));
    }
    check_custom(d)?;
    Ok(crd(d, vec![version(d, true)], None))
}

/// A family's CRD: the one manifest serving every version of a kind defined in several,
/// and, when its versions do not all hold the same fields, why it needs a conversion
/// webhook.
#[derive(Clone, Debug, PartialEq)]
pub struct FamilyManifest {
    /// The CustomResourceDefinition.
    pub crd: Value,
    /// Why conversion `None` would lose or misplace fields (then the manifest asks for
    /// `Webhook` conversion, whose `clientConfig` the user must add).
    pub needs_webhook: Option<String>,
}

/// The CRD serving every version of `members` (the definitions of one group and kind,
/// one of them `storage: true`), in version order. Conversion is `None` when no version
/// declares a conversion rule or hook: codegen's checks then guarantee the versions hold
/// the same fields at the same paths, and only `apiVersion` differs between them, which
/// is what `None` does. Otherwise the rules are this server's, which a CRD cannot carry:
/// the manifest names `Webhook` conversion without a `clientConfig`, which a cluster
/// refuses until one is added, rather than serve the versions wrongly.
pub fn family_manifest(members: &[&ResourceDef]) -> Result<FamilyManifest, String> {
    let mut members = members.to_vec();
    members.sort_by(|a, b| a.version.cmp(&b.version));
    let hub = members
        .iter()
        .find(|d| d.storage)
        .ok_or_else(|| format!("{} has no storage version", members[0].kind))?;
    check_custom(hub)?;
    let converting: Vec<String> = members
        .iter()
        .filter(|d| d.conversion.as_ref().is_some_and(|c| !c.is_identity()))
        .map(|d| d.version.clone())
        .collect();
    let needs_webhook = (!converting.is_empty()).then(|| {
        format!(
            "{} {} converts to its storage version {} by rules (in {}), which only a conversion webhook can run on a cluster",
            hub.group,
            hub.kind,
            hub.version,
            converting.join(", ")
        )
    });
    let conversion = needs_webhook.as_ref().map(
        |_| json!({ "strategy": "Webhook", "webhook": { "conversionReviewVersions": ["v1"] } }),
    );
    let versions = members.iter().map(|d| version(d, d.storage)).collect();
    Ok(FamilyManifest {
        crd: crd(hub, versions, conversion),
        needs_webhook,
    })
}

/// A family's CRD as YAML: when it needs a webhook, a comment saying why and what to
/// add comes first.
pub fn family_yaml(family: &FamilyManifest) -> String {
    let yaml = serde_yaml::to_string(&family.crd).expect("JSON values always serialize");
    match &family.needs_webhook {
        Some(why) => format!(
            "# Conversion webhook needed: {why}. Add spec.conversion.webhook.clientConfig \
             (a service or URL serving ConversionReview v1) before applying.\n{yaml}"
        ),
        None => yaml,
    }
}

/// Why `d` cannot be a CRD, if it cannot.
fn check_custom(d: &ResourceDef) -> Result<(), String> {
    if d.builtin {
        return Err(format!(
            "{} is a built-in kind, not a custom resource",
            d.kind
        ));
    }
    if !d.group.contains('.') {
        return Err(format!(
            "{}: a CRD's group needs a dot (got `{}`)",
            d.kind, d.group
        ));
    }
    Ok(())
}

/// The CRD of `d`'s kind serving `versions`, with `conversion` when not `None`.
fn crd(d: &ResourceDef, versions: Vec<Value>, conversion: Option<Value>) -> Value {
    let mut names = Map::new();
    names.insert("plural".into(), json!(d.plural));
    names.insert("singular".into(), json!(d.singular));
    names.insert("kind".into(), json!(d.kind));
    names.insert("listKind".into(), json!(d.list_kind));
    if !d.short_names.is_empty() {
        names.insert("shortNames".into(), json!(d.short_names));
    }
    if !d.categories.is_empty() {
        names.insert("categories".into(), json!(d.categories));
    }
    let mut crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": format!("{}.{}", d.plural, d.group) },
        "spec": {
            "group": d.group,
            "names": names,
            "scope": match d.scope { Scope::Namespaced => "Namespaced", Scope::Cluster => "Cluster" },
            "versions": versions,
        },
    });
    if let Some(c) = conversion {
        crd["spec"]["conversion"] = c;
    }
    crd
}

/// One entry of a CRD's `spec.versions`: `d`'s schema, subresources and columns.
fn version(d: &ResourceDef, storage: bool) -> Value {
    let mut version = json!({
        "name": d.version,
        "served": true,
        "storage": storage,
        "schema": { "openAPIV3Schema": d.schema.to_json(false) },
    });
    let mut subresources = Map::new();
    if d.subresources.status {
        subresources.insert("status".into(), json!({}));
    }
    if let Some(s) = &d.subresources.scale {
        let mut scale = json!({
            "specReplicasPath": s.spec_replicas_path,
            "statusReplicasPath": s.status_replicas_path,
        });
        if let Some(sel) = &s.label_selector_path {
            scale["labelSelectorPath"] = json!(sel);
        }
        subresources.insert("scale".into(), scale);
    }
    if !subresources.is_empty() {
        version["subresources"] = Value::Object(subresources);
    }
    if !d.printer_columns.is_empty() {
        let columns: Vec<Value> = d
            .printer_columns
            .iter()
            .map(|c| {
                let mut col = json!({ "name": c.name, "type": c.type_, "jsonPath": c.json_path });
                if let Some(f) = &c.format {
                    col["format"] = json!(f);
                }
                if let Some(desc) = &c.description {
                    col["description"] = json!(desc);
                }
                if c.priority != 0 {
                    col["priority"] = json!(c.priority);
                }
                col
            })
            .collect();
        version["additionalPrinterColumns"] = json!(columns);
    }
    if !d.selectable_fields.is_empty() {
        let fields: Vec<Value> = d
            .selectable_fields
            .iter()
            .map(|f| json!({ "jsonPath": f }))
            .collect();
        version["selectableFields"] = json!(fields);
    }
    version
}

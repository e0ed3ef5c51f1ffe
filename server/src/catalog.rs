//! The live resource catalog: one entry per served resource, driving routing, discovery,
//! OpenAPI, storage keys and watch caches.
//!
//! Entries are owned values built from codegen's model ([`ResourceDef`]): the compiled-in
//! definitions at start-up (`generated::CATALOG`), and whatever registers a definition
//! while the server runs (`--definitions-dir` today, CustomResourceDefinitions next).
//! Each entry declares what the handlers need to know: its strategy hooks, whether it is
//! a built-in kind, and its endpoints (the one table of paths, verbs and subresources).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use serde_json::value::RawValue;

use codegen::endpoints::{self, Endpoint, Subresource, Verb};
use codegen::model::{ResourceDef, Schema, Scope};

use crate::registry::strategy::{self, Strategy};
use crate::registry::validator::Validator;
use crate::registry::virtual_kinds::{self, CreateHook};

/// A served resource, as the handlers see it.
pub struct ApiResource {
    /// The definition it was built from, without its schema (`def.schema` and the
    /// create-only subresources' body schemas are left empty): the schema is held once,
    /// as JSON, in `schema`. [`ApiResource::definition`] gives the whole definition.
    pub def: ResourceDef,
    /// The schema as JSON (see [`ApiResource::schema`]); shared with the kind's
    /// [`Family`](crate::registry::versions::Family).
    schema: Arc<SchemaJson>,
    /// Whether bodies may use Kubernetes' protobuf encoding (a built-in kind with field
    /// numbers).
    pub protobuf: bool,
    /// The per-kind hooks the definition chose.
    pub strategy: &'static dyn Strategy,
    /// For a kind that is not stored (`createOnly`): the hook that answers its creates.
    pub create_hook: Option<&'static dyn CreateHook>,
    /// The body kinds of the create-only subresources, by `Subresource::CreateOnly`
    /// index: entries of their own (never registered) that decode, validate, encode and
    /// answer like any create-only kind.
    pub subresource_kinds: Vec<ApiResource>,
    /// The hooks of the part subresources, by `Subresource::Part` index.
    pub parts: Vec<crate::registry::parts::Part>,
    /// Every path of the resource and the verbs each serves.
    pub endpoints: Vec<Endpoint>,
    /// The schema's CEL validation rules, compiled.
    pub rules: crate::registry::cel::Rules,
    /// How a CustomResourceDefinition serves this version (`None` for other kinds).
    pub crd: Option<CrdVersion>,
    /// A compiled-in kind defined in several versions: the family this version belongs
    /// to, which converts objects to and from its storage version.
    pub versions: Option<Arc<crate::registry::versions::Family>>,
    /// Fields usable in field selectors besides `metadata.name` and `metadata.namespace`
    /// (JSON paths without the leading dot).
    pub selectable_fields: Vec<String>,
    api_version: String,
}

/// What a served version of a CustomResourceDefinition adds to its entry.
#[derive(Clone, Debug, Default)]
pub struct CrdVersion {
    /// `apiVersion` objects are written in: the definition's storage version.
    pub storage_api_version: String,
    /// The definition has several versions: objects are converted between the stored
    /// and the requested one (conversion `None`: `apiVersion` rewritten).
    pub converts: bool,
    /// Conversion `Webhook`: the webhook that converts.
    pub webhook: Option<Arc<crate::apiextensions::conversion::Webhook>>,
    /// The `Warning` a deprecated version answers with.
    pub deprecation_warning: Option<String>,
    /// The definition is being deleted: objects can be read, changed and deleted (to
    /// let their finalizers finish), not created.
    pub terminating: bool,
}

impl std::fmt::Debug for ApiResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiResource")
            .field("group", &self.def.group)
            .field("version", &self.def.version)
            .field("plural", &self.def.plural)
            .finish_non_exhaustive()
    }
}

/// A schema as JSON. A compiled-in kind's is kept as its text in `catalog.json` (in the
/// binary, checked to be JSON when the catalog loads) and parsed the first time it is
/// read: most kinds are never written to or validated, and their trees were most of the
/// idle heap (~9 MB for every built-in group).
#[derive(Debug)]
pub struct SchemaJson {
    /// The text the tree is parsed from; `None` when the tree was given.
    text: Option<&'static RawValue>,
    tree: OnceLock<serde_json::Value>,
    /// The tree compiled for validation, when first validated against (a CRD's entry,
    /// and so its schema, is rebuilt at each generation).
    validator: OnceLock<Validator>,
}

impl SchemaJson {
    /// A schema already parsed.
    pub fn parsed(tree: serde_json::Value) -> Self {
        SchemaJson {
            text: None,
            tree: OnceLock::from(tree),
            validator: OnceLock::new(),
        }
    }

    /// A schema parsed from `text` when first read.
    fn compiled_in(text: &'static RawValue) -> Self {
        SchemaJson {
            text: Some(text),
            tree: OnceLock::new(),
            validator: OnceLock::new(),
        }
    }

    /// The tree (parsed now if it has not been yet).
    pub fn get(&self) -> &serde_json::Value {
        self.tree.get_or_init(|| match self.text {
            // The text is checked to be JSON when the catalog loads (`RawValue` is only
            // made of valid JSON), and a unit test parses every compiled-in schema.
            Some(text) => serde_json::from_str(text.get())
                .unwrap_or_else(|e| panic!("a compiled-in schema does not parse: {e}")),
            None => serde_json::Value::Null,
        })
    }

    /// The schema compiled for validation (compiled now if it has not been yet).
    pub fn validator(&self) -> &Validator {
        self.validator
            .get_or_init(|| Validator::compile(self.get()))
    }

    /// Whether the schema may hold `key`: an unparsed text is searched for it as a key,
    /// a tree says "maybe".
    fn may_hold(&self, key: &str) -> bool {
        match (self.text, self.tree.get()) {
            (Some(text), None) => text.get().contains(&format!("\"{key}\":")),
            _ => true,
        }
    }

    /// Whether the schema has a protobuf field number anywhere (codegen's
    /// `Schema::has_protobuf`), without parsing an unparsed text.
    fn has_field_numbers(&self) -> bool {
        match (self.text, self.tree.get()) {
            (Some(_), None) => self.may_hold("x-protobuf-field"),
            _ => has_field_numbers(self.get()),
        }
    }
}

impl ApiResource {
    /// The entry for a definition; an error when the definition names hooks the server
    /// does not have.
    pub fn new(mut def: ResourceDef) -> Result<Self, String> {
        let schema = SchemaJson::parsed(std::mem::take(&mut def.schema).to_json(true));
        let bodies = def
            .subresources
            .create_only
            .iter_mut()
            .map(|s| SchemaJson::parsed(std::mem::take(&mut s.schema).to_json(true)))
            .collect();
        Self::from_parts(def, schema, bodies)
    }

    /// The schema as JSON, with `x-protobuf-field` numbers (validation, pruning and the
    /// protobuf transcoder walk it).
    pub fn schema(&self) -> &serde_json::Value {
        self.schema.get()
    }

    /// The schema compiled for validation, once per entry.
    pub fn validator(&self) -> &Validator {
        self.schema.validator()
    }

    /// The entry for a definition whose schemas were taken out as JSON (`schema`, and
    /// `bodies` for its create-only subresources in order): the compiled-in catalog's
    /// schemas are kept as their text, never read into codegen's model.
    fn from_parts(
        def: ResourceDef,
        schema: SchemaJson,
        bodies: Vec<SchemaJson>,
    ) -> Result<Self, String> {
        if bodies.len() != def.subresources.create_only.len() {
            return Err("a create-only subresource has no schema".into());
        }
        let (strategy, create_hook) = if def.create_only {
            (
                strategy::named(None, def.builtin)?,
                Some(virtual_kinds::named(def.strategy.as_deref())?),
            )
        } else {
            (strategy::named(def.strategy.as_deref(), def.builtin)?, None)
        };
        let subresource_kinds = def
            .subresources
            .create_only
            .iter()
            .zip(bodies)
            .map(|(s, body)| {
                ApiResource::from_parts(s.body_def(&def), body, Vec::new())
                    .map_err(|e| format!("subresource {}: {e}", s.name))
            })
            .collect::<Result<Vec<_>, String>>()?;
        let parts = def
            .subresources
            .parts
            .iter()
            .map(|p| {
                crate::registry::parts::Part::named(&p.strategy)
                    .map_err(|e| format!("subresource {}: {e}", p.name))
            })
            .collect::<Result<Vec<_>, String>>()?;
        // A schema without rules is not parsed for them (nor for field numbers): a
        // compiled-in one's rules still fail the start when they do not compile.
        let rules = match schema.may_hold("x-kubernetes-validations") {
            false => crate::registry::cel::Rules::default(),
            true => {
                crate::registry::cel::Rules::compile(schema.get(), "schema").map_err(|causes| {
                    let list: Vec<String> = causes
                        .iter()
                        .map(|c| format!("{}: {}", c.field, c.message))
                        .collect();
                    list.join("; ")
                })?
            }
        };
        let protobuf = def.builtin && schema.has_field_numbers();
        let endpoints = endpoints::endpoints(&def);
        let selectable_fields = def
            .selectable_fields
            .iter()
            .map(|f| f.trim_start_matches('.').to_string())
            .collect();
        Ok(ApiResource {
            api_version: def.api_version(),
            def,
            schema: Arc::new(schema),
            rules,
            crd: None,
            versions: None,
            protobuf,
            strategy,
            create_hook,
            subresource_kinds,
            parts,
            endpoints,
            selectable_fields,
        })
    }

    /// The whole definition, its schemas read back from the JSON this entry holds (for
    /// the OpenAPI emitter, which works on codegen's model).
    pub fn definition(&self) -> ResourceDef {
        // The JSON was written by `Schema::to_json`, which `Schema::from_json` reads back.
        let model = |json: &serde_json::Value| Schema::from_json(json).unwrap_or_default();
        let mut def = self.def.clone();
        def.schema = model(self.schema());
        for (sub, kind) in def
            .subresources
            .create_only
            .iter_mut()
            .zip(&self.subresource_kinds)
        {
            sub.schema = model(kind.schema());
        }
        def
    }

    /// `apiVersion` as written in objects: `v1` or `group/version`.
    pub fn api_version(&self) -> &str {
        &self.api_version
    }

    /// `apiVersion` as objects are stored: the storage version's, for a CRD version or
    /// a version of a compiled-in kind defined in several.
    pub fn storage_api_version(&self) -> &str {
        match (&self.crd, &self.versions) {
            (Some(c), _) if c.converts => &c.storage_api_version,
            (_, Some(f)) => f.storage_api_version(),
            _ => &self.api_version,
        }
    }

    /// The version objects are stored in (discovery's `storageVersionHash` names it).
    pub fn storage_version(&self) -> &str {
        let api_version = self.storage_api_version();
        api_version.rsplit_once('/').map_or(api_version, |(_, v)| v)
    }

    /// The group and resource objects are stored under: this entry's own, or for a
    /// version stored in another group (events.k8s.io/v1 Event), the storage version's.
    pub fn storage_resource(&self) -> (&str, &str) {
        match &self.versions {
            Some(f) => f.storage_resource(),
            None => (&self.def.group, &self.def.plural),
        }
    }

    /// Whether stored objects may be in another version than this entry serves (and so
    /// cannot be served from their stored bytes).
    pub fn converts(&self) -> bool {
        self.crd.as_ref().is_some_and(|c| c.converts) || self.versions.is_some()
    }

    /// Conversion `None` between versions of a CRD: only `apiVersion` differs between
    /// the stored and the served object.
    pub fn rewrites_api_version(&self) -> bool {
        self.crd.as_ref().is_some_and(|c| c.converts) && self.conversion_webhook().is_none()
    }

    /// The webhook that converts this entry's objects, for a CRD with conversion `Webhook`.
    pub fn conversion_webhook(&self) -> Option<&crate::apiextensions::conversion::Webhook> {
        self.crd
            .as_ref()
            .filter(|c| c.converts)
            .and_then(|c| c.webhook.as_deref())
    }

    /// Whether objects live in a namespace.
    pub fn namespaced(&self) -> bool {
        self.def.scope == Scope::Namespaced
    }

    /// Whether objects are stored (every kind but the create-only ones): only those have
    /// storage keys, a watch cache and a storage version.
    pub fn stored(&self) -> bool {
        !self.def.create_only
    }

    /// The body kind of a create-only subresource.
    pub fn subresource_kind(&self, sub: Subresource) -> Option<&ApiResource> {
        match sub {
            Subresource::CreateOnly(i) => self.subresource_kinds.get(usize::from(i)),
            _ => None,
        }
    }

    /// Whether this is a Kubernetes built-in kind (strategic merge patch, protobuf,
    /// `Status` answers to deletes) rather than a custom one.
    pub fn builtin(&self) -> bool {
        self.def.builtin
    }

    /// The group-version path: `api/v1` or `apis/<group>/<version>`.
    pub fn group_version_path(&self) -> String {
        self.def.url_prefix().trim_start_matches('/').to_string()
    }

    /// Group-qualified resource for messages: `configmaps` or `widgets.example.dev`.
    pub fn qualified_resource(&self) -> String {
        if self.def.group.is_empty() {
            self.def.plural.clone()
        } else {
            format!("{}.{}", self.def.plural, self.def.group)
        }
    }

    /// The verbs served on the resource (`None`) or one of its subresources, sorted as
    /// discovery lists them.
    pub fn verbs(&self, subresource: Option<Subresource>) -> Vec<Verb> {
        endpoints::verbs(&self.endpoints, subresource)
    }

    /// The subresources the resource has, sorted by name.
    pub fn subresources(&self) -> Vec<Subresource> {
        endpoints::subresources(&self.def)
    }
}

/// Whether a schema (as JSON) has a protobuf field number anywhere (codegen's
/// `Schema::has_protobuf` on the JSON form).
fn has_field_numbers(schema: &serde_json::Value) -> bool {
    schema.get("x-protobuf-field").is_some()
        || schema
            .get("properties")
            .and_then(serde_json::Value::as_object)
            .is_some_and(|p| p.values().any(has_field_numbers))
        || ["items", "additionalProperties"]
            .iter()
            .any(|k| schema.get(k).is_some_and(has_field_numbers))
}

/// Gives the versions of each compiled-in kind defined more than once their family, so
/// they convert to and from its storage version (a family may span groups: codegen's
/// `storedAs`).
fn join_families(entries: &mut [ApiResource]) -> Result<(), String> {
    let defs: Vec<ResourceDef> = entries.iter().map(|e| e.def.clone()).collect();
    for ((group, kind), members) in codegen::versions::families(&defs) {
        let of_family = |e: &ApiResource| {
            codegen::versions::family_group(&e.def) == group
                && e.def.kind == kind
                && !e.def.create_only
        };
        let schemas = entries
            .iter()
            .filter(|e| of_family(e))
            .map(|e| (e.api_version().to_string(), e.schema.clone()))
            .collect();
        let family = crate::registry::versions::Family::new(&members, schemas)
            .map_err(|e| format!("the compiled-in catalog does not load: {e}"))?;
        let family = Arc::new(family);
        for e in entries.iter_mut().filter(|e| of_family(e)) {
            e.versions = Some(family.clone());
        }
    }
    Ok(())
}

/// A resource for unit tests: core group, namespaced, with `schema`.
#[cfg(test)]
pub(crate) fn test_resource(schema: serde_json::Value) -> ApiResource {
    let mut res = ApiResource::new(ResourceDef {
        location: codegen::Location {
            file: "test".into(),
            line: 1,
            column: 1,
        },
        origin: codegen::model::Origin::Yaml,
        group: String::new(),
        version: "v1".into(),
        kind: "ConfigMap".into(),
        list_kind: "ConfigMapList".into(),
        plural: "configmaps".into(),
        singular: "configmap".into(),
        scope: Scope::Namespaced,
        short_names: vec![],
        categories: vec![],
        schema: Default::default(),
        subresources: Default::default(),
        printer_columns: vec![],
        selectable_fields: vec![],
        builtin: false,
        strategy: None,
        create_only: false,
        open_api_prefix: None,
        verbs: vec![],
        storage: false,
        conversion: None,
    })
    .expect("the test definition is valid");
    res.schema = Arc::new(SchemaJson::parsed(schema));
    res
}

/// Why a definition cannot be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    /// Another entry already serves the resource, kind or short name.
    #[error("{0}")]
    Conflict(String),
    /// The definition cannot be served.
    #[error("{0}")]
    Invalid(String),
}

/// A change to the catalog, as observers hear of it.
#[derive(Debug, Clone)]
pub enum CatalogChange {
    Registered(Arc<ApiResource>),
    Unregistered(Arc<ApiResource>),
}

/// Something told of every change (after it is visible to lookups).
pub type Observer = Box<dyn Fn(&CatalogChange) + Send + Sync>;

/// `(group, version, kind)`.
type KindKey = (String, String, String);

/// One immutable view of the catalog; a change builds the next one.
#[derive(Default)]
struct Index {
    generation: u64,
    /// Sorted by group, version and kind.
    all: Vec<Arc<ApiResource>>,
    /// group → version → plural, so a request's lookup borrows its path's strings.
    by_resource: HashMap<String, HashMap<String, HashMap<String, Arc<ApiResource>>>>,
    by_kind: HashMap<KindKey, Arc<ApiResource>>,
    by_short_name: HashMap<String, Arc<ApiResource>>,
    by_category: HashMap<String, Vec<Arc<ApiResource>>>,
}

impl Index {
    fn build(generation: u64, mut all: Vec<Arc<ApiResource>>) -> Index {
        all.sort_by(|a, b| {
            (&a.def.group, &a.def.version, &a.def.kind).cmp(&(
                &b.def.group,
                &b.def.version,
                &b.def.kind,
            ))
        });
        let mut index = Index {
            generation,
            ..Index::default()
        };
        for r in &all {
            let d = &r.def;
            index
                .by_resource
                .entry(d.group.clone())
                .or_default()
                .entry(d.version.clone())
                .or_default()
                .insert(d.plural.clone(), r.clone());
            index.by_kind.insert(
                (d.group.clone(), d.version.clone(), d.kind.clone()),
                r.clone(),
            );
            for s in &d.short_names {
                // Versions of one kind share short names: they name the preferred one.
                let other_preferred = index.by_short_name.get(s).is_some_and(|other| {
                    crate::discovery::compare_versions(&other.def.version, &d.version).is_lt()
                });
                if !other_preferred {
                    index.by_short_name.insert(s.clone(), r.clone());
                }
            }
            for c in &d.categories {
                index
                    .by_category
                    .entry(c.clone())
                    .or_default()
                    .push(r.clone());
            }
        }
        index.all = all;
        index
    }

    /// Why `def` cannot join this index, if it cannot.
    fn conflict(&self, def: &ResourceDef) -> Option<String> {
        let gv = def.api_version();
        let key = |name: &str| (def.group.clone(), def.version.clone(), name.to_string());
        if self.get(&def.group, &def.version, &def.plural).is_some() {
            return Some(format!(
                "resource {:?} is already served in {gv}",
                def.plural
            ));
        }
        if self.by_kind.contains_key(&key(&def.kind)) {
            return Some(format!("kind {:?} is already served in {gv}", def.kind));
        }
        def.short_names.iter().find_map(|s| {
            let other = self.by_short_name.get(s)?;
            if other.versions.is_some() && codegen::versions::same_family(&other.def, def) {
                return None;
            }
            Some(format!(
                "short name {s:?} is already used by {}",
                other.qualified_resource()
            ))
        })
    }
}

/// The live catalog. Lookups take a snapshot (an `Arc` clone under a read lock), so a
/// request sees one consistent catalog while changes go on.
#[derive(Default)]
pub struct Catalog {
    index: RwLock<Arc<Index>>,
    /// Held while a change is made and announced, so observers hear changes in order.
    changes: Mutex<Vec<Observer>>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("resources", &self.snapshot().all.len())
            .finish()
    }
}

impl Catalog {
    /// A catalog of the compiled-in definitions (`generated::CATALOG`: codegen's model as
    /// JSON, `{"description": .., "definitions": [..]}`).
    ///
    /// Each schema is kept as its text in `json` ([`SchemaJson`], parsed when first read)
    /// and only the rest of the definition goes through codegen's model: reading ~15,000
    /// schema nodes into the model and writing them back out as JSON was most of the
    /// start-up time, and even as JSON trees the schemas were most of the idle heap.
    pub fn from_definitions(json: &'static str) -> Result<Self, String> {
        use serde_json::Value;
        /// A JSON object's members, unparsed.
        type Members = BTreeMap<String, &'static RawValue>;
        #[derive(serde::Deserialize)]
        struct Compiled<'a> {
            #[serde(borrow)]
            definitions: Vec<BTreeMap<String, &'a RawValue>>,
        }
        let fail =
            |e: &dyn std::fmt::Display| format!("the compiled-in catalog does not load: {e}");
        // Parsing into `RawValue`s checks that every schema is JSON.
        let compiled: Compiled = serde_json::from_str(json).map_err(|e| fail(&e))?;
        let parse = |raw: &'static RawValue| -> Result<Value, String> {
            serde_json::from_str(raw.get()).map_err(|e| fail(&e))
        };
        let object = |members: Members| -> Result<serde_json::Map<String, Value>, String> {
            members
                .into_iter()
                .map(|(k, raw)| Ok((k, parse(raw)?)))
                .collect()
        };
        // A definition (or a create-only body kind) as codegen's model reads it, with an
        // empty schema, and its schema kept as text.
        let definition = |mut members: Members| -> Result<(Value, SchemaJson), String> {
            let schema = match members.remove("schema") {
                Some(text) => SchemaJson::compiled_in(text),
                None => SchemaJson::parsed(Value::Null),
            };
            let mut def = object(members)?;
            def.insert("schema".into(), Value::Object(Default::default()));
            Ok((Value::Object(def), schema))
        };
        let mut entries = Vec::with_capacity(compiled.definitions.len());
        for mut members in compiled.definitions {
            // The create-only subresources' body schemas are kept as text too.
            let mut subresources = match members.remove("subresources") {
                Some(raw) => serde_json::from_str::<Members>(raw.get()).map_err(|e| fail(&e))?,
                None => Members::new(),
            };
            let create_only = subresources.remove("createOnly");
            let mut subs = object(subresources)?;
            let mut bodies = Vec::new();
            if let Some(raw) = create_only {
                let list: Vec<Members> = serde_json::from_str(raw.get()).map_err(|e| fail(&e))?;
                let mut kinds = Vec::with_capacity(list.len());
                for sub in list {
                    let (kind, schema) = definition(sub)?;
                    kinds.push(kind);
                    bodies.push(schema);
                }
                subs.insert("createOnly".into(), Value::Array(kinds));
            }
            let (mut def, schema) = definition(members)?;
            def["subresources"] = Value::Object(subs);
            let def: ResourceDef = serde_json::from_value(def).map_err(|e| fail(&e))?;
            entries.push(ApiResource::from_parts(def, schema, bodies).map_err(|e| fail(&e))?);
        }
        join_families(&mut entries)?;
        let catalog = Catalog::default();
        for entry in entries {
            catalog
                .register_resource(entry)
                .map_err(|e| e.to_string())?;
        }
        Ok(catalog)
    }

    fn snapshot(&self) -> Arc<Index> {
        self.index.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Adds an entry for `def`; observers hear of it once lookups find it.
    pub fn register(&self, def: ResourceDef) -> Result<Arc<ApiResource>, RegisterError> {
        self.register_resource(ApiResource::new(def).map_err(RegisterError::Invalid)?)
    }

    /// Registers a built entry (one a CRD's settings were added to), as
    /// [`Catalog::register`] does.
    pub fn register_resource(&self, entry: ApiResource) -> Result<Arc<ApiResource>, RegisterError> {
        let observers = self.changes.lock().unwrap_or_else(|e| e.into_inner());
        let current = self.snapshot();
        if let Some(why) = current.conflict(&entry.def) {
            return Err(RegisterError::Conflict(why));
        }
        let entry = Arc::new(entry);
        let mut all = current.all.clone();
        all.push(entry.clone());
        self.publish(Index::build(current.generation + 1, all));
        let change = CatalogChange::Registered(entry.clone());
        observers.iter().for_each(|o| o(&change));
        Ok(entry)
    }

    /// Removes the entry serving `group/version/plural`; its paths answer 404 from now on.
    /// Stored objects stay (registering it again serves them again).
    pub fn unregister(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ApiResource>> {
        let observers = self.changes.lock().unwrap_or_else(|e| e.into_inner());
        let current = self.snapshot();
        let gone = current.get(group, version, plural)?;
        let all = current
            .all
            .iter()
            .filter(|r| !Arc::ptr_eq(r, &gone))
            .cloned()
            .collect();
        self.publish(Index::build(current.generation + 1, all));
        let change = CatalogChange::Unregistered(gone.clone());
        observers.iter().for_each(|o| o(&change));
        Some(gone)
    }

    fn publish(&self, index: Index) {
        *self.index.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(index);
    }

    /// Calls `observer` on every later change.
    pub fn subscribe(&self, observer: Observer) {
        self.changes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(observer);
    }

    /// Counts changes: equal generations mean the same entries.
    pub fn generation(&self) -> u64 {
        self.snapshot().generation
    }

    /// The resource served at `group/version/plural`.
    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ApiResource>> {
        self.snapshot().get(group, version, plural)
    }

    /// The resource of kind `group/version/kind`.
    pub fn by_kind(&self, group: &str, version: &str, kind: &str) -> Option<Arc<ApiResource>> {
        let key = (group.to_string(), version.to_string(), kind.to_string());
        self.snapshot().by_kind.get(&key).cloned()
    }

    /// The resource a short name (`cm`) stands for.
    pub fn by_short_name(&self, short_name: &str) -> Option<Arc<ApiResource>> {
        self.snapshot().by_short_name.get(short_name).cloned()
    }

    /// The resources in a category (`all`), sorted by group, version and kind.
    pub fn in_category(&self, category: &str) -> Vec<Arc<ApiResource>> {
        let index = self.snapshot();
        index.by_category.get(category).cloned().unwrap_or_default()
    }

    /// Every resource, sorted by group, version and kind.
    pub fn all(&self) -> Vec<Arc<ApiResource>> {
        self.snapshot().all.clone()
    }

    /// The resources equivalent to `res` (upstream's equivalent resource mapper): the
    /// other served versions of the same stored objects (a CRD's versions, a
    /// compiled-in family's, in any group).
    pub fn equivalents(&self, res: &ApiResource) -> Vec<Arc<ApiResource>> {
        if !res.converts() {
            return Vec::new();
        }
        let index = self.snapshot();
        let mut found: Vec<Arc<ApiResource>> = index
            .all
            .iter()
            .filter(|e| e.api_version() != res.api_version() || e.def.plural != res.def.plural)
            .filter(|e| match (&e.versions, &res.versions) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => {
                    e.def.group == res.def.group
                        && e.def.plural == res.def.plural
                        && e.converts()
                        && e.storage_api_version() == res.storage_api_version()
                }
                _ => false,
            })
            .cloned()
            .collect();
        // The request's group first, then in Kubernetes' version priority (v2 before
        // v1beta1), as discovery lists them.
        found.sort_by(|a, b| {
            (a.def.group != res.def.group)
                .cmp(&(b.def.group != res.def.group))
                .then_with(|| a.def.group.cmp(&b.def.group))
                .then_with(|| crate::discovery::compare_versions(&a.def.version, &b.def.version))
        });
        found
    }
}

impl Index {
    fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ApiResource>> {
        self.by_resource
            .get(group)?
            .get(version)?
            .get(plural)
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compiled_in() -> Catalog {
        Catalog::from_definitions(crate::generated::CATALOG).expect("the compiled-in catalog loads")
    }

    fn widget_v2() -> ResourceDef {
        let mut def = compiled_in()
            .get("example.dev", "v1", "widgets")
            .expect("widgets are compiled in")
            .definition();
        def.version = "v2".into();
        def.short_names = vec!["wd2".into()];
        def
    }

    #[test]
    fn compiled_in_entries_hold_the_schemas_codegen_wrote() {
        #[derive(serde::Deserialize)]
        struct Compiled {
            definitions: Vec<ResourceDef>,
        }
        let compiled: Compiled = serde_json::from_str(crate::generated::CATALOG).unwrap();
        let c = compiled_in();
        assert_eq!(c.all().len(), compiled.definitions.len());
        for def in compiled.definitions {
            let entry = c.get(&def.group, &def.version, &def.plural).unwrap();
            assert_eq!(entry.schema(), &def.schema.to_json(true), "{}", def.kind);
            assert_eq!(entry.protobuf, def.has_protobuf(), "{}", def.kind);
            assert_eq!(entry.definition(), def, "{}", def.kind);
        }
    }

    #[test]
    fn compiled_in_schemas_are_parsed_when_first_read() {
        let c = compiled_in();
        let pods = c.get("", "v1", "pods").unwrap();
        assert!(c.all().iter().all(|e| e.schema.tree.get().is_none()));
        assert!(pods.protobuf, "field numbers are found in the text");
        assert!(pods
            .schema()
            .pointer("/properties/spec/properties/containers")
            .is_some());
        assert!(pods.schema.tree.get().is_some());
    }

    #[test]
    fn a_compiled_in_schema_that_is_not_json_fails_the_load() {
        let good = crate::generated::CATALOG;
        let bad = good.replacen("\"schema\":{", "\"schema\":{,", 1);
        let err = Catalog::from_definitions(Box::leak(bad.into_boxed_str())).unwrap_err();
        assert!(
            err.starts_with("the compiled-in catalog does not load"),
            "{err}"
        );
        // Rules are compiled when the catalog loads, even though schemas are not parsed.
        let rule = r#""x-kubernetes-validations":[{"rule":"self.x ==","message":"m"}],"#;
        let bad = good.replacen("\"schema\":{", &format!("\"schema\":{{{rule}"), 1);
        assert!(Catalog::from_definitions(Box::leak(bad.into_boxed_str())).is_err());
    }

    #[test]
    fn lookups_by_resource_kind_short_name_and_category() {
        let c = compiled_in();
        assert_eq!(c.get("", "v1", "configmaps").unwrap().def.kind, "ConfigMap");
        assert_eq!(c.by_kind("", "v1", "Secret").unwrap().def.plural, "secrets");
        assert_eq!(c.by_short_name("ns").unwrap().def.plural, "namespaces");
        let all: Vec<String> = c
            .in_category("examples")
            .iter()
            .map(|r| r.def.plural.clone())
            .collect();
        assert_eq!(all, ["gadgets", "widgets"]);
        assert_eq!(c.get("", "v1", "pods").unwrap().def.kind, "Pod");
        assert!(c.get("", "v1", "bananas").is_none());
    }

    #[test]
    fn register_and_unregister_change_lookups_and_tell_observers_in_order() {
        let c = compiled_in();
        let heard = Arc::new(Mutex::new(Vec::new()));
        let h = heard.clone();
        c.subscribe(Box::new(move |change| {
            let (what, r) = match change {
                CatalogChange::Registered(r) => ("+", r),
                CatalogChange::Unregistered(r) => ("-", r),
            };
            h.lock().unwrap().push(format!("{what}{}", r.def.version));
        }));
        let before = c.generation();
        c.register(widget_v2()).expect("v2 is new");
        assert!(c.get("example.dev", "v2", "widgets").is_some());
        assert_eq!(c.by_short_name("wd2").unwrap().def.version, "v2");
        assert!(c.generation() > before);
        assert!(c.unregister("example.dev", "v2", "widgets").is_some());
        assert!(c.get("example.dev", "v2", "widgets").is_none());
        assert!(c.by_short_name("wd2").is_none());
        assert!(c.unregister("example.dev", "v2", "widgets").is_none());
        assert_eq!(*heard.lock().unwrap(), ["+v2", "-v2"]);
    }

    #[test]
    fn conflicting_definitions_are_refused() {
        let c = compiled_in();
        let mut same = widget_v2();
        same.version = "v1".into();
        same.short_names.clear();
        assert!(
            matches!(c.register(same), Err(RegisterError::Conflict(m)) if m.contains("widgets"))
        );
        let mut short = widget_v2();
        short.short_names = vec!["cm".into()];
        assert!(
            matches!(c.register(short), Err(RegisterError::Conflict(m)) if m.contains("\"cm\""))
        );
        let mut hooks = widget_v2();
        hooks.strategy = Some("NoSuchHook".into());
        assert!(matches!(c.register(hooks), Err(RegisterError::Invalid(_))));
    }
}

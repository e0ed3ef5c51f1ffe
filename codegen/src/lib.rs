//! codegen: definitions in `api-defs/` → typed resources, the resource catalog, actix-web
//! route tables and OpenAPI v3 documents for the server crate.
//!
//! The library does no I/O: [`generate`] takes file contents and returns file contents.
//! Pipeline: load (YAML with positions; Rust via `syn`) → one model ([`model`]) →
//! validate (collecting every diagnostic) → emit.

pub mod attrs;
pub mod conversion;
pub mod diagnostics;
pub mod emit;
pub mod endpoints;
pub mod import;
pub mod load;
pub mod model;
pub mod names;
pub mod validate;
pub mod versions;

pub use diagnostics::{Code, Diagnostic, Diagnostics, Location};
pub use emit::{openapi_documents, GeneratedFile, OpenApiDocuments, GENERATED_DIR};

/// A definition file's path (relative to the workspace root) and text.
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub path: String,
    pub text: String,
}

/// Loads and validates every definition; all diagnostics at once on failure.
pub fn load_definitions(sources: &[SourceFile]) -> Result<Vec<model::ResourceDef>, Diagnostics> {
    let mut diags = Diagnostics::default();
    let mut defs = Vec::new();
    let mut keys = validate::KeyLocations::new();
    for src in sources {
        if src.path.ends_with(".yaml") || src.path.ends_with(".yml") {
            defs.extend(load::yaml::load_located(
                &src.path, &src.text, &mut diags, &mut keys,
            ));
        } else if src.path.ends_with(".rs") {
            let found = load::rust::load(&src.path, &src.text, &mut diags);
            if found.is_empty() && diags.is_empty() {
                diags.push(
                    Diagnostic::new(Code::RustShape, Location { file: src.path.clone(), line: 1, column: 1 }, "no #[derive(Resource)] struct in this file")
                        .with_help("add #[derive(Resource)] and #[resource(group = .., version = .., kind = ..)] to a struct, or move the file out of api-defs/"),
                );
            }
            defs.extend(found);
        }
    }
    defs.sort_by(|a, b| (&a.group, &a.version, &a.kind).cmp(&(&b.group, &b.version, &b.kind)));
    validate::validate_located(&defs, &keys, &mut diags);
    if diags.is_empty() {
        Ok(defs)
    } else {
        Err(diags.sorted())
    }
}

/// Every generated file for `sources`, or every diagnostic found.
pub fn generate(sources: &[SourceFile]) -> Result<Vec<GeneratedFile>, Diagnostics> {
    let defs = load_definitions(sources)?;
    Ok(emit::emit(&defs))
}

//! `patches`: a PATCH of a stored object. Header `<resource> <patch type>` (resource as
//! `plural` or `plural.group` of one of the fixture's objects, else one picked; patch
//! type `json`, `merge`, `strategic`, `apply` or a full content type), then the body:
//! parsed and applied as the PATCH handler does, through the real store with `dryRun`
//! (the kind's update strategy and validation). `apply` is server-side apply, by the
//! manager `fuzz`, forced when the header ends in ` force`.

use apiserver::endpoints::negotiation::{check_object_size, check_type_meta};
use apiserver::registry::apply as server_side_apply;
use apiserver::registry::patch::{
    Patch, APPLY_PATCH, JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH,
};
use apiserver::registry::schema::prune;
use apiserver::registry::store::Target;

use crate::fixture::{self, NAMESPACE};

/// Runs one input.
pub fn run(data: &[u8]) {
    let Some((header, body)) = crate::header_and_rest(data) else {
        return;
    };
    let mut words = header.split(' ');
    let resource = words.next().unwrap_or_default();
    let content_type = match words.next().unwrap_or_default() {
        "json" => JSON_PATCH,
        "merge" => MERGE_PATCH,
        "strategic" => STRATEGIC_MERGE_PATCH,
        "apply" => APPLY_PATCH,
        other => other,
    };
    let force = words.next() == Some("force");
    let fixture = fixture::get();
    let (res, live) = fixture.object(resource);
    let name = live["metadata"]["name"].as_str().unwrap_or_default();
    let ns = res.namespaced().then_some(NAMESPACE);
    let ctx = fixture::dry_run();
    let patched = if content_type == APPLY_PATCH {
        let intent = server_side_apply::parse_intent(body, res, name).map(|mut intent| {
            prune(&mut intent, res.schema());
            server_side_apply::clean_intent(intent)
        });
        crate::client_errors_only(&intent, header);
        let Ok(intent) = intent else {
            return;
        };
        fixture.runtime.block_on(
            fixture
                .store
                .patch(res, ns, name, Target::Main, &ctx, |old| {
                    let new = server_side_apply::apply(
                        Some(old),
                        &intent,
                        res,
                        "fuzz",
                        force,
                        None,
                        "2026-01-01T00:00:00Z",
                    )?;
                    check_object_size(&new)?;
                    Ok(new)
                }),
        )
    } else {
        let patch = Patch::parse(content_type, body, res);
        crate::client_errors_only(&patch, header);
        let Ok(patch) = patch else {
            return;
        };
        fixture.runtime.block_on(
            fixture
                .store
                .patch(res, ns, name, Target::Main, &ctx, |old| {
                    let mut new = patch.apply(old.clone(), res)?;
                    check_object_size(&new)?;
                    check_type_meta(&new, res)?;
                    prune(&mut new, res.schema());
                    Ok(new)
                }),
        )
    };
    crate::client_errors_only(&patched, header);
}

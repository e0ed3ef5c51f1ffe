//! `bodies`: an object body for a create. Header `<resource> <content type>` (resource
//! as `plural` or `plural.group`; a name that matches none picks a kind; content type
//! `application/json`, `application/yaml` or `application/vnd.kubernetes.protobuf`), then
//! the body: decoded as the handlers decode it, unknown fields pruned, and created with
//! `dryRun` through the real store (defaults, the kind's strategy, schema and CEL
//! validation). A protobuf body that decodes must encode again.

use apiserver::endpoints::negotiation::decode_body_as;
use apiserver::protobuf;
use apiserver::registry::schema::prune;

use crate::fixture::{self, NAMESPACE};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// Runs one input.
pub fn run(data: &[u8]) {
    let Some((header, body)) = crate::header_and_rest(data) else {
        return;
    };
    let (resource, content_type) = header
        .split_once(' ')
        .unwrap_or((header, "application/json"));
    let fixture = fixture::get();
    let res = fixture.resource(resource);
    let decoded = decode_body_as(content_type, body, &res);
    crate::client_errors_only(&decoded, header);
    let Ok(mut obj) = decoded else {
        return;
    };
    if content_type == PROTOBUF {
        protobuf::encode_object(&obj, res.schema())
            .unwrap_or_else(|e| panic!("a decoded protobuf body does not encode again: {e}"));
    }
    prune(&mut obj, res.schema());
    let ns = res.namespaced().then_some(NAMESPACE);
    let created =
        fixture
            .runtime
            .block_on(fixture.store.create(&res, ns, obj, &fixture::dry_run()));
    crate::client_errors_only(&created, header);
}

use apiserver_macros::Resource;

/// A box.
#[derive(Resource)]
#[resource(group = "fixtures.example.com", version = "v1", kind = "Box", namespaced, scale(spec_replicas_path = ".spec.copies", status_replicas_path = ".status.copies"))]
#[serde(rename_all = "camelCase")]
pub struct Box {
    pub spec: BoxSpec,
    pub status: Option<BoxStatus>,
}

pub struct BoxSpec {
    /// Number of copies.
    pub copies: i32,
    pub label_map: std::collections::BTreeMap<String, String>,
    #[serde(rename = "colour")]
    pub color: Option<String>,
}

pub struct BoxStatus {
    pub copies: i32,
}

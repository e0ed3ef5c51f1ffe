use apiserver_macros::Resource;

#[derive(Resource)]
#[resource(group = "example.dev", version = "v1", kind = "Widget", namespaced, cluster)]
pub struct Widget {
    pub spec: String,
}

fn main() {}

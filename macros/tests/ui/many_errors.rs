// Every bad attribute is reported in one compile, each at its own span.
use apiserver_macros::Resource;

#[derive(Resource)]
#[resource(group = 1, kind = "Widget", plurl = "widgets", status = true)]
#[resource(namespaced, cluster)]
pub struct Widget {
    pub spec: String,
}

fn main() {}

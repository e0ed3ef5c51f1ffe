use apiserver_macros::Resource;

#[derive(Resource)]
#[resource(
    group = "example.dev",
    version = "v1",
    kind = "Widget",
    printcolumn(name = "Size", type = "integer", jsonpath = ".spec.size")
)]
pub struct Widget {
    pub spec: String,
}

fn main() {}

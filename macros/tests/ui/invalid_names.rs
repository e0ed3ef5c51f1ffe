use apiserver_macros::Resource;

// codegen's identity checks run in the derive too: the same codes as `cargo run -p codegen`.
#[derive(Resource)]
#[resource(group = "Example_Dev", version = "version1", kind = "Widget",
           printcolumn(name = "Size", type = "int", json_path = "spec.size"))]
pub struct Widget {
    pub spec: String,
}

fn main() {}

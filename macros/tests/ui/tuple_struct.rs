use apiserver_macros::Resource;

#[derive(Resource)]
#[resource(group = "example.dev", version = "v1", kind = "Widget")]
pub struct Widget(pub String);

fn main() {}

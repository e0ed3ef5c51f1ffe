use apiserver_macros::Resource;

#[derive(Resource)]
#[resource(group = "example.dev", version = "v1", kind = "Mode")]
pub enum Mode {
    Manual,
    Automatic,
}

fn main() {}

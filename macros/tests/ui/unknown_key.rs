use apiserver_macros::Resource;

#[derive(Resource)]
#[resource(group = "example.dev", version = "v1", kind = "Widget", shortname = ["wd"], colour = "red")]
pub struct Widget {
    pub spec: String,
}

fn main() {}

use apiserver_macros::Resource;

#[derive(Resource)]
#[resource(group = 1, version = "v1", kind = "Widget", shortnames = "wd", categories = [all])]
pub struct Widget {
    pub spec: String,
}

fn main() {}

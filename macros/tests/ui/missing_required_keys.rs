// group, version and kind are all missing: every one is reported at once.
use apiserver_macros::Resource;

#[derive(Resource)]
#[resource(namespaced, status)]
pub struct Widget {
    pub spec: String,
}

fn main() {}

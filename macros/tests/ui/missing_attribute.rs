use apiserver_macros::Resource;

#[derive(Resource)]
pub struct Widget {
    pub spec: String,
}

fn main() {}

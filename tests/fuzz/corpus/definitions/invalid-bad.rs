use apiserver_macros::Resource;

#[derive(Resource)]
#[resource(group = "example.dev", version = "v1", kind = "Bad", namespaced, shortname = ["b"])]
pub struct Bad {
    pub spec: BadSpec,
}

#[derive(Resource)]
#[resource(group = "example.dev", version = "v1", kind = "Worse", namespaced, cluster)]
pub struct Worse {
    pub spec: (i32, i32),
}

pub struct BadSpec {
    pub when: std::time::Instant,
}

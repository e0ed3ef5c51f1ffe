//! `apiserver`: the server binary. Everything happens in [`apiserver::server::run`].

fn main() -> std::process::ExitCode {
    apiserver::server::run()
}

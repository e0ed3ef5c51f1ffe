#[test]
fn probe() {
    let out = std::process::Command::new(std::env::var("CARGO").unwrap())
        .args(["build", "-p", "apiserver", "--bin", "apiserver"])
        .current_dir(apiserver_tests::workspace_root())
        .env("CARGO_LOG", "cargo::core::compiler::fingerprint=info")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    for l in err
        .lines()
        .filter(|l| l.contains("dirty") || l.contains("Compiling") || l.contains("stale"))
        .take(30)
    {
        println!("{l}");
    }
    for (k, v) in std::env::vars() {
        if k.starts_with("CARGO") || k.contains("PATH") || k.starts_with("RUST") {
            println!("{k}={v}");
        }
    }
}

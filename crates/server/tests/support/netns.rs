//! A test that gives the server addresses off this machine (push URLs to 10.x, 169.254.x,
//! public names) runs in a network namespace of its own with only loopback, so nothing can
//! leave the machine even if a check is wrong: the test binary runs that one test again under
//! `unshare --net` (loopback brought up), and the outer run passes when the inner one does.
//! Inside, the test's database is SQLite: a PostgreSQL server on the machine's loopback is
//! out of reach there.

use std::process::Command;

/// Set in the environment of the run inside the namespace.
const INSIDE: &str = "SIGNOFF_TEST_LOOPBACK_ONLY";

/// Whether the calling test runs in a namespace with only loopback: there, `true` (and the
/// test goes on); outside, it runs `test` (`module_path!()::name` of the calling test) in a new
/// one, asserts that it passed, and answers `false` (the caller then returns).
pub fn loopback_only(test: &str) -> bool {
    if std::env::var_os(INSIDE).is_some() {
        assert_eq!(interfaces(), ["lo"], "the namespace holds loopback only");
        return true;
    }
    // The harness names a test by its path without the crate's name.
    let name = test.split_once("::").map_or(test, |(_, rest)| rest);
    let exe = std::env::current_exe().unwrap();
    let status = Command::new("unshare")
        .args([
            "--net",
            "--",
            "sh",
            "-c",
            "ip link set lo up && exec \"$@\"",
            "sh",
        ])
        .arg(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(INSIDE, "1")
        .env_remove("SIGNOFF_TEST_BACKEND")
        .status()
        .expect("unshare (util-linux) runs this test in a network namespace of its own");
    assert!(
        status.success(),
        "{name} in a loopback-only namespace: {status}"
    );
    false
}

/// The network interfaces this process sees (`/proc/net/dev` is its own namespace's).
fn interfaces() -> Vec<String> {
    let dev = std::fs::read_to_string("/proc/net/dev").unwrap();
    dev.lines()
        .skip(2)
        .filter_map(|line| line.split(':').next())
        .map(|name| name.trim().to_owned())
        .collect()
}

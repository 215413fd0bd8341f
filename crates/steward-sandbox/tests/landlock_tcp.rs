//! Landlock's TCP rule on its own (Landlock ABI 4 and later). The child's network namespace
//! already cuts it off, so "the connection failed" cannot tell which layer refused: in an
//! empty namespace binding `0.0.0.0` still works and a connect fails with "network
//! unreachable", while Landlock refuses both with `EACCES`. The test asks for `EACCES`.

use std::path::PathBuf;
use std::time::Duration;

use steward_sandbox::{ExecRequest, run};
use tokio_util::sync::CancellationToken;

/// Binds TCP `0.0.0.0:0` and connects to `127.0.0.1:9`; prints `bind RESULT` and
/// `connect RESULT`, each `ok` or the errno name.
const SCRIPT: &str = r#"
import errno, socket
def attempt(what, act):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        act(s)
        print(what, "ok")
    except OSError as e:
        print(what, errno.errorcode.get(e.errno, e.errno))
attempt("bind", lambda s: s.bind(("0.0.0.0", 0)))
attempt("connect", lambda s: s.connect(("127.0.0.1", 9)))
"#;

fn python() -> String {
    // The interpreter itself, not a version manager's shim that reads the home folder.
    ["/usr/bin/python3", "/bin/python3"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("python3 at /usr/bin/python3")
        .to_string()
}

async fn attempts(network: bool) -> (String, String) {
    let request = ExecRequest {
        timeout: Duration::from_secs(20),
        network,
        ..ExecRequest::new(vec![python(), "-c".into(), SCRIPT.into()], PathBuf::from("/"))
    };
    let out = run(request, CancellationToken::new()).await.unwrap();
    assert_eq!(out.exit_code, Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    (String::from_utf8_lossy(&out.stdout).trim().to_string(), out.profile)
}

#[tokio::test]
async fn landlock_denies_tcp_bind_and_connect_whatever_the_network_namespace_allows() {
    let (denied, profile) = attempts(false).await;
    assert!(profile.contains("+landlock-tcp"), "no Landlock TCP rules: {profile}");
    assert_eq!(denied, "bind EACCES\nconnect EACCES", "{profile}");
    // Control: with the network allowed (no namespace, no TCP rules) the same script binds,
    // and its connect reaches the (closed) port.
    let (allowed, profile) = attempts(true).await;
    assert!(profile.contains("net=allowed"), "{profile}");
    assert_eq!(allowed, "bind ok\nconnect ECONNREFUSED", "{profile}");
}

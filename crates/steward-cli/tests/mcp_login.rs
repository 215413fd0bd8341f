//! Logging in to an MCP server behind a login, end to end through the real binary: a server
//! built from the MCP TypeScript SDK's own authorization server and bearer-token code (Node
//! 22, `tests/fixtures/oauth-mcp-server.cjs`), `steward mcp login` with the test playing the
//! browser, a tool call through the gate with the token, a renewal after the token expired, a
//! logout; and the token never shows where Steward writes or where a sandboxed program looks.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;
use steward_peers::required_env;

/// Lifetime of the server's access tokens, in seconds.
const TOKEN_SECONDS: u64 = 4;

/// The protected server: its MCP address and its log (one JSON line per grant and request).
struct Protected {
    _child: Killed,
    url: String,
    log: PathBuf,
}

impl Protected {
    fn start(env: &Env) -> Protected {
        let node = required_env("STEWARD_TEST_NODE22");
        let suite = required_env("STEWARD_TEST_MCP_CONFORMANCE");
        let log = env.dir.path().join("server.log");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oauth-mcp-server.cjs");
        let mut child = Command::new(node)
            .arg(script)
            .env("SDK_FROM", suite)
            .env("LOG", &log)
            .env("TOKEN_SECONDS", TOKEN_SECONDS.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the protected MCP server");
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        let url =
            first.trim().strip_prefix("listening ").unwrap_or_else(|| panic!("server said {first:?}")).to_string();
        Protected { _child: Killed(child), url, log }
    }

    /// The log's lines.
    fn log(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// How many token requests of `grant` the server answered.
    fn grants(&self, grant: &str) -> usize {
        self.log().iter().filter(|e| e["grant"] == grant).count()
    }
}

/// `steward mcp login docs --no-browser`, with this test as the browser: it reads the address
/// Steward shows and follows the authorization server's redirect back to Steward's loopback
/// listener. Returns the command's output.
fn log_in(env: &Env) -> std::process::Output {
    let mut login = env
        .command(&["mcp", "login", "docs", "--no-browser"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut shown = String::new();
    let mut lines = BufReader::new(login.stderr.take().unwrap());
    let address = loop {
        let mut line = String::new();
        assert!(lines.read_line(&mut line).unwrap() > 0, "no address shown: {shown}");
        shown.push_str(&line);
        if let Some(address) = line.trim().strip_prefix("http://") {
            break format!("http://{address}");
        }
    };
    assert!(address.contains("code_challenge_method=S256") && address.contains("resource="), "{address}");
    // The browser: the authorization server approves at once and sends it back to Steward.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let page = runtime.block_on(async { reqwest::get(&address).await.unwrap().text().await.unwrap() });
    assert!(page.contains("Steward received the login"), "{page}");
    let out = login.wait_with_output().unwrap();
    assert!(out.status.success(), "{shown}{}", stderr(&out));
    out
}

/// The access tokens the server was sent (from its log).
fn tokens_sent(server: &Protected) -> Vec<String> {
    let mut tokens: Vec<String> = server
        .log()
        .iter()
        .filter_map(|e| e["authorization"].as_str().and_then(|a| a.strip_prefix("Bearer ")).map(String::from))
        .collect();
    tokens.dedup();
    tokens
}

#[test]
fn peer_a_login_is_used_renewed_kept_out_of_sight_and_forgotten() {
    let env = Env::new();
    let server = Protected::start(&env);
    env.user_config(&format!(
        "[shell]\nenabled = true\n\
         [mcp_servers.docs]\nurl = \"{}\"\noauth = {{}}\nread_only_tools = [\"whoami\"]\n\
         [[policy.rule]]\nname = \"whoami-ok\"\ntool = \"docs__whoami\"\ndecision = \"allow\"\n\
         [[policy.rule]]\nname = \"look-ok\"\ntool = \"shell_command\"\nargv = [\"sh\", \"look.sh\"]\ndecision = \"allow\"\n",
        server.url
    ));

    // Before a login: the call ends with a sentence naming the login command.
    let listed = env.steward(&["mcp", "list"]);
    assert!(stdout(&listed).contains("not logged in (`steward mcp login docs`)"), "{}", stdout(&listed));
    let refused = env.steward(&["mcp", "call", "docs__whoami", "--json"]);
    let text = format!("{}{}", stdout(&refused), stderr(&refused));
    assert!(text.contains("needs a login") && text.contains("steward mcp login docs"), "{text}");
    assert!(!text.contains("ERROR rmcp"), "the SDK's own log stays quiet: {text}");

    // The login: dynamic registration, PKCE, the resource indicator; stored owner-only.
    let out = log_in(&env);
    assert!(stdout(&out).contains("Logged in to `docs`"), "{}", stdout(&out));
    assert_eq!(server.grants("authorization_code"), 1);
    let logins = env.home().join("mcp-logins");
    let owner_dir = std::fs::read_dir(&logins).unwrap().next().unwrap().unwrap().path();
    let file = owner_dir.join("docs.json");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&owner_dir).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    let listed = env.steward(&["mcp", "list"]);
    assert!(stdout(&listed).contains("logged in (token expires"), "{}", stdout(&listed));

    // A call through the gate with the token; the server repeats the token, Steward does not.
    let call = env.steward(&["mcp", "call", "docs__whoami", "--json"]);
    assert_eq!(code(&call), 0, "{}{}", stdout(&call), stderr(&call));
    let result: Value = serde_json::from_str(stdout(&call).trim()).unwrap();
    assert_eq!(result["status"], "completed", "{result}");
    let first_token = tokens_sent(&server).pop().expect("the call carried a token");
    assert!(result["output"].as_str().unwrap().contains("client "), "{result}");
    assert!(!stdout(&call).contains(&first_token), "the token was shown: {result}");

    // After the token expired: renewed with the refresh token, without a person.
    std::thread::sleep(Duration::from_secs(TOKEN_SECONDS + 1));
    let renewed = env.steward(&["mcp", "call", "docs__whoami", "--json"]);
    assert_eq!(code(&renewed), 0, "{}{}", stdout(&renewed), stderr(&renewed));
    assert!(server.grants("refresh_token") >= 1, "{:?}", server.log());
    let all_tokens = tokens_sent(&server);
    assert!(all_tokens.len() >= 2, "{all_tokens:?}");

    // A sandboxed program of a run sees neither the login file nor a token in its environment.
    // A script the gate cannot look into reads the login file by name.
    env.write("look.sh", &format!("cat {}/mcp-logins/*/docs.json; env\n", env.home().display()));
    let look = "sh look.sh";
    let path = scenario(
        &env,
        &format!(
            "[[round]]\n[[round.tool_call]]\nid = \"look\"\nname = \"shell_command\"\n\
             arguments = {{ command = {:?} }}\n[[round]]\ntext = \"done\"\n",
            look
        ),
    );
    let run = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &path, "look around"]);
    assert_eq!(code(&run), 0, "{}", stderr(&run));
    let evs = events(&run);
    let look_out = evs
        .iter()
        .find(|e| e["event"] == "tool_completed" && e["call_id"] == "look")
        .map(|e| e["output"].to_string())
        .unwrap_or_else(|| panic!("the look did not run: {evs:?}"));
    assert!(look_out.contains("PATH=") && !look_out.contains("access_token"), "{look_out}");
    let config = env.steward(&["config", "show", "--json"]);
    let run_id = find(&evs, "run_started")["run_id"].as_str().unwrap().to_string();
    let records = audit(&env, &run_id);
    for token in &all_tokens {
        assert!(!look_out.contains(token), "a sandboxed program saw a token: {look_out}");
        assert!(!stdout(&config).contains(token), "config show");
        assert!(!records.iter().any(|r| r.to_string().contains(token)), "audit");
        assert!(!contains_bytes(&db(&env), token), "the database holds a token");
        for out in [&call, &renewed, &run] {
            assert!(!stdout(out).contains(token) && !stderr(out).contains(token), "printed");
        }
    }

    // The logout forgets it; the next call asks for a login again.
    let out = env.steward(&["mcp", "logout", "docs"]);
    assert!(stdout(&out).contains("Logged out of `docs`"), "{}", stdout(&out));
    assert!(!file.exists());
    let started = Instant::now();
    let after = env.steward(&["mcp", "call", "docs__whoami", "--json"]);
    let text = format!("{}{}", stdout(&after), stderr(&after));
    assert!(text.contains("needs a login"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(30), "a refused login never hangs");
}

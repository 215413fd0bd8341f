//! `steward bench sandbox`: wall time of one sandboxed `[[tool]]` call by network setting:
//! `network = false` against a host list (egress proxy started and stopped per call), with a
//! command that does nothing (`true`) and with one that makes one HTTP request (`curl`) to a
//! server of the benchmark on loopback (reached directly with `network = true`, through the
//! proxy with the host list naming its address `127.0.0.1:PORT`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use serde_json::json;
use steward_core::tools::command::{ArgItem, CommandTool, CommandToolConfig};
use steward_core::tools::network::Network;
use steward_core::tools::{Tool, ToolContext};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// `steward bench sandbox` options.
#[derive(Args)]
pub struct BenchSandboxArgs {
    /// Calls per measurement (at least 1).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    calls: u32,
}

/// Runs the measurements and prints one line each.
pub async fn run(args: BenchSandboxArgs) -> Result<u8> {
    let dir = tempfile::tempdir()?;
    let workspace = Arc::new(steward_policy::Workspace::open(dir.path(), &[])?);
    let ctx = ToolContext {
        workspace,
        cancel: CancellationToken::new(),
        env_allow: Vec::new(),
        timeout_ms: 30_000,
        snapshots: steward_core::rollback::Snapshots::new(&dir.path().join("snapshots"), "run_bench"),
        accept_weaker: Vec::new(),
        credentials: Default::default(),
        elicitor: None,
        egress: None,
    };
    let port = serve().await?;
    let url = format!("http://127.0.0.1:{port}/");
    let hosts = Network::Hosts(vec![format!("127.0.0.1:{port}")]);
    let curl = ["curl", "-sS", "-f", "-o", "/dev/null", url.as_str()];
    println!("steward bench sandbox: wall time per sandboxed [[tool]] call, {} calls per line", args.calls);
    let mut cases = Vec::new();
    for (label, command, network) in [
        ("`true`, network = false", &["true"][..], Network::Off),
        ("`true`, host list (proxy started and stopped)", &["true"][..], hosts.clone()),
        ("`curl` one request, network = true (direct)", &curl[..], Network::All),
        ("`curl` one request, host list (through the proxy)", &curl[..], hosts.clone()),
    ] {
        let tool = CommandTool::new(CommandToolConfig {
            name: "bench".into(),
            description: "benchmark".into(),
            command: command.iter().map(|a| ArgItem::Literal(a.to_string())).collect(),
            cwd: None,
            env: Default::default(),
            timeout_ms: None,
            risk: None,
            network,
            writes: Vec::new(),
            callable: Default::default(),
            compensate: None,
            inputs: Vec::new(),
        })?;
        cases.push((label, tool, Vec::with_capacity(args.calls as usize)));
    }
    // Round-robin, so that the machine's load changes weigh on every case alike.
    for _ in 0..args.calls {
        for (label, tool, times) in &mut cases {
            let started = Instant::now();
            tool.run(&json!({}), &ctx).await.map_err(|e| anyhow::anyhow!("{label}: {e}"))?;
            times.push(started.elapsed());
        }
    }
    let mut baseline = None;
    for (label, _, mut times) in cases {
        times.sort();
        let pick = |q: f64| times[((times.len() as f64 - 1.0) * q).round() as usize];
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let p50 = ms(pick(0.5));
        let extra = match baseline {
            None => {
                baseline = Some(p50);
                String::new()
            }
            Some(base) => format!(" ({:+.2} ms against the first line)", p50 - base),
        };
        println!("{label}: p50 {p50:.2} ms, p95 {:.2} ms, max {:.2} ms{extra}", ms(pick(0.95)), ms(pick(1.0)));
    }
    Ok(0)
}

/// A loopback HTTP server answering `ok` to every request; returns its port.
async fn serve() -> Result<u16> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.context("bench server")?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let mut head = Vec::new();
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok").await;
            });
        }
    });
    Ok(port)
}

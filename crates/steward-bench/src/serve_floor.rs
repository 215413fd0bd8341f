//! The floor of `steward-bench serve`'s event latency (`steward-bench serve --floor`): what
//! the machine, the kernel and the client process allow, without the server.
//!
//! A minimal server on plain blocking sockets (no hyper, no Steward runtime, no async tasks)
//! accepts the same clients ([`crate::serve_clients`]), answers each request with a
//! `text/event-stream` head in chunked transfer-encoding as `steward serve` does, and sends
//! one `tool_approval_required` event so that the client counts as subscribed. Once started,
//! every `interval` a ticker thread stamps a `stage_chunk` event (made exactly as the server
//! makes its frames, [`steward_server::live::LiveEvent`]) and hands the same bytes to the
//! writer threads, each of which writes them to its share of the sockets in a loop. After the
//! last tick a `run_completed` event ends every stream. The run's other events (tool calls,
//! model responses) are not sent: the floor is the cost of the ticks alone.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use steward_protocol::{Event, EventKind};
use steward_server::live::LiveEvent;

/// The run id the floor's events carry (the clients ask for it and ignore it).
pub const RUN_ID: &str = "run_floor";

/// The response head, as `steward serve` answers `GET /api/runs/{id}/events`.
const HEAD: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
content-security-policy: default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'\r\n\
x-frame-options: DENY\r\nx-content-type-options: nosniff\r\nreferrer-policy: same-origin\r\n\
transfer-encoding: chunked\r\n\r\n";

/// A floor server listening for its clients.
pub struct Floor {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Starts the ticks once every client has subscribed.
    start: mpsc::Sender<()>,
    /// Accepts, ticks and ends the streams.
    server: JoinHandle<Result<()>>,
}

impl Floor {
    /// Listens on a loopback port for `clients` clients; once started, sends `chunks` ticks,
    /// `interval` apart, through `writers` writer threads (at least 1).
    pub fn listen(clients: usize, chunks: u32, interval: Duration, writers: usize) -> Result<Floor> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let (start, started) = mpsc::channel();
        let server = std::thread::Builder::new()
            .name("floor-ticker".into())
            .spawn(move || serve(listener, clients, chunks, interval, writers.max(1), started))?;
        Ok(Floor { addr, start, server })
    }

    /// Starts the ticks.
    pub fn start(&self) -> Result<()> {
        self.start.send(()).context("the floor server stopped")
    }

    /// Waits until every stream has ended.
    pub fn finish(self) -> Result<()> {
        self.server.join().map_err(|_| anyhow::anyhow!("the floor server panicked"))?
    }
}

/// One chunk of a chunked body holding `frame`.
fn chunk(frame: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", frame.len()).into_bytes();
    out.extend_from_slice(frame);
    out.extend_from_slice(b"\r\n");
    out
}

fn event(seq: u64, kind: EventKind) -> LiveEvent {
    LiveEvent::new(Event { run_id: RUN_ID.into(), seq, at: chrono::Utc::now(), kind })
}

/// Reads one request head (up to the blank line) from `stream`.
fn read_head(stream: &mut TcpStream) -> Result<()> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            bail!("a client closed before sending its request");
        }
        head.extend_from_slice(&buf[..n]);
        if head.len() > 64 * 1024 {
            bail!("a request head over 64 KiB");
        }
    }
    Ok(())
}

fn serve(
    listener: TcpListener,
    clients: usize,
    chunks: u32,
    interval: Duration,
    writers: usize,
    started: mpsc::Receiver<()>,
) -> Result<()> {
    // The clients count a stream as subscribed once a `tool_approval_required` event arrives;
    // its data is not read.
    let subscribed = chunk(b"id: 1\nevent: tool_approval_required\ndata: {}\n\n");
    let mut sockets = Vec::with_capacity(clients);
    while sockets.len() < clients {
        let (mut stream, _) = listener.accept()?;
        stream.set_nodelay(true)?;
        read_head(&mut stream)?;
        stream.write_all(HEAD)?;
        stream.write_all(&subscribed)?;
        sockets.push(stream);
    }
    // Every writer owns its share of the sockets.
    let share = clients.div_ceil(writers).max(1);
    let mut feeds = Vec::with_capacity(writers);
    let mut threads = Vec::with_capacity(writers);
    while !sockets.is_empty() {
        let mine: Vec<TcpStream> = sockets.drain(..share.min(sockets.len())).collect();
        let (feed, frames) = mpsc::channel::<std::sync::Arc<[u8]>>();
        feeds.push(feed);
        threads.push(std::thread::Builder::new().name("floor-writer".into()).spawn(move || -> Result<()> {
            let mut mine = mine;
            for frame in frames {
                for socket in &mut mine {
                    socket.write_all(&frame)?;
                }
            }
            Ok(())
        })?);
    }
    started.recv().context("the floor was never started")?;
    let mut seq = 2;
    for i in 1..=chunks {
        std::thread::sleep(interval);
        let tick = event(seq, EventKind::StageChunk { stage: "planner".into(), text: format!("tick {i}\n") });
        let frame: std::sync::Arc<[u8]> = chunk(&tick.frame).into();
        for feed in &feeds {
            feed.send(frame.clone()).context("a floor writer stopped")?;
        }
        seq += 1;
    }
    let end =
        [&chunk(format!("id: {seq}\nevent: run_completed\ndata: {{}}\n\n").as_bytes())[..], &b"0\r\n\r\n"[..]].concat();
    for feed in &feeds {
        feed.send(end.clone().into()).context("a floor writer stopped")?;
    }
    drop(feeds);
    for thread in threads {
        thread.join().map_err(|_| anyhow::anyhow!("a floor writer panicked"))??;
    }
    Ok(())
}

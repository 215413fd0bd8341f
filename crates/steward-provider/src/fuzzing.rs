//! Entry points for the fuzz targets (`tests/fuzz_*.rs`): the stream and body readers of the
//! OpenAI-compatible and Anthropic wires on raw bytes, without a network. Not part of the
//! provider API; hidden from the documentation.

use bytes::Bytes;
use steward_protocol::{ChatRequest, ChatResponse, StreamDelta};

use crate::ProviderError;
use crate::assemble::ToolCallAssembler;
use crate::reply::ReplyBuilder;

/// Which wire protocol a body is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OpenAI-compatible chat completions (`data:` chunks, `[DONE]`).
    OpenAi,
    /// Anthropic Messages (`event:`/`data:` pairs, `message_stop`).
    Anthropic,
}

fn reply(protocol: Protocol, request: &ChatRequest, recover: bool) -> ReplyBuilder {
    let calls = match protocol {
        Protocol::OpenAi => ToolCallAssembler::default(),
        Protocol::Anthropic => ToolCallAssembler::with_closing(),
    };
    ReplyBuilder::new(recover, request, calls)
}

/// Reads a streamed reply to `request` whose body arrives as `pieces` (one network read
/// each), with text recovery of tool calls when `recover`. Returns the reply or its error,
/// and every delta passed on while reading.
pub fn read_stream(
    protocol: Protocol,
    pieces: &[Vec<u8>],
    request: &ChatRequest,
    recover: bool,
) -> (Result<ChatResponse, ProviderError>, Vec<StreamDelta>) {
    let body = futures::stream::iter(
        pieces.iter().map(|p| Ok::<_, std::io::Error>(Bytes::copy_from_slice(p))).collect::<Vec<_>>(),
    );
    let mut deltas = Vec::new();
    let reply = reply(protocol, request, recover);
    let result = futures::executor::block_on(async {
        match protocol {
            Protocol::OpenAi => crate::openai::read_stream("fuzz", body, reply, &mut |d| deltas.push(d)).await,
            Protocol::Anthropic => crate::anthropic::read_stream("fuzz", body, reply, &mut |d| deltas.push(d)).await,
        }
    });
    (result.map_err(|f| f.error), deltas)
}

/// Reads a non-streamed reply body to `request`; like [`read_stream`].
pub fn read_whole(
    protocol: Protocol,
    body: &str,
    request: &ChatRequest,
    recover: bool,
) -> (Result<ChatResponse, ProviderError>, Vec<StreamDelta>) {
    let mut deltas = Vec::new();
    let reply = reply(protocol, request, recover);
    let result = match protocol {
        Protocol::OpenAi => crate::openai::read_whole("fuzz", body, reply, &mut |d| deltas.push(d)),
        Protocol::Anthropic => crate::anthropic::read_whole("fuzz", body, reply, &mut |d| deltas.push(d)),
    };
    (result.map_err(|f| f.error), deltas)
}

//! A guard on what a language server writes: it watches the `Content-Length` of each message
//! passing through (async-lsp does the framing itself) and fails the stream when one is over
//! [`MAX_MESSAGE_BYTES`] or a header line runs on, so a server cannot make the client allocate
//! without bound. The server is then treated as dead and started again on the next call.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// Largest message accepted from a language server (16 MiB).
pub(crate) const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// Longest header line accepted.
const MAX_HEADER_LINE: usize = 1024;

enum State {
    /// In the headers: the current line so far and the length announced so far.
    Header { line: Vec<u8>, length: Option<usize> },
    /// In a body: bytes still to come.
    Body(usize),
}

/// See the module docs.
pub(crate) struct CappedReader<R> {
    inner: R,
    state: State,
}

impl<R> CappedReader<R> {
    /// Wraps `inner`.
    pub(crate) fn new(inner: R) -> Self {
        CappedReader { inner, state: State::Header { line: Vec::new(), length: None } }
    }

    /// Follows `bytes` through the framing; an error names what was over the limit.
    fn watch(&mut self, mut bytes: &[u8]) -> Result<(), String> {
        while !bytes.is_empty() {
            match &mut self.state {
                State::Body(left) => {
                    let take = (*left).min(bytes.len());
                    *left -= take;
                    bytes = &bytes[take..];
                    if *left == 0 {
                        self.state = State::Header { line: Vec::new(), length: None };
                    }
                }
                State::Header { line, length } => {
                    let byte = bytes[0];
                    bytes = &bytes[1..];
                    if byte != b'\n' {
                        line.push(byte);
                        if line.len() > MAX_HEADER_LINE {
                            return Err(format!("a header line is over {MAX_HEADER_LINE} bytes"));
                        }
                        continue;
                    }
                    let text = String::from_utf8_lossy(line).trim_end_matches('\r').to_string();
                    line.clear();
                    if text.is_empty() {
                        let body = length.unwrap_or(0);
                        self.state = if body == 0 {
                            State::Header { line: Vec::new(), length: None }
                        } else {
                            State::Body(body)
                        };
                        continue;
                    }
                    if let Some((name, value)) = text.split_once(':')
                        && name.trim().eq_ignore_ascii_case("content-length")
                    {
                        let value: usize = value.trim().parse().map_err(|_| format!("bad Content-Length `{value}`"))?;
                        if value > MAX_MESSAGE_BYTES {
                            return Err(format!("a message of {value} bytes is over the limit of {MAX_MESSAGE_BYTES}"));
                        }
                        *length = Some(value);
                    }
                }
            }
        }
        Ok(())
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for CappedReader<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let fresh = buf.filled()[before..].to_vec();
                match this.watch(&fresh) {
                    Ok(()) => Poll::Ready(Ok(())),
                    Err(why) => {
                        // A failed read hands back nothing.
                        buf.set_filled(before);
                        Poll::Ready(Err(std::io::Error::new(std::io::ErrorKind::InvalidData, why)))
                    }
                }
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn messages_pass_and_an_oversized_one_fails_the_stream() {
        let ok = b"Content-Length: 2\r\n\r\n{}Content-Length: 3\r\n\r\n[1]".to_vec();
        let mut reader = CappedReader::new(&ok[..]);
        let mut out = Vec::new();
        reader.read_to_end(&mut out).await.unwrap();
        assert_eq!(out, ok);

        let big = format!("Content-Length: {}\r\n\r\n", MAX_MESSAGE_BYTES + 1);
        let mut reader = CappedReader::new(big.as_bytes());
        let err = reader.read_to_end(&mut Vec::new()).await.unwrap_err();
        assert!(err.to_string().contains("over the limit"), "{err}");

        let long = vec![b'x'; 2000];
        let err = CappedReader::new(&long[..]).read_to_end(&mut Vec::new()).await.unwrap_err();
        assert!(err.to_string().contains("header line"), "{err}");
    }
}

//! The response body of the in-task client: decodes content-length, chunked (trailers
//! dropped) and read-to-close framing straight from the connection's buffer, and hands
//! the connection back to its pool at a clean end.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use super::conn::H1Conn;
use crate::upstream::pool::EndpointPool;

/// Largest chunk-size or trailer line.
const MAX_LINE: usize = 4 * 1024;

/// Where the response body stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum BodyFraming {
    /// This many bytes remain.
    Length(u64),
    Chunked(Chunk),
    /// Delimited by the upstream closing the connection.
    Eof,
}

/// Chunked decoding state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Chunk {
    Size,
    Data(u64),
    DataEnd,
    Trailers,
    Done,
}

/// The upstream's response body, read from the connection by the client's task.
pub(crate) struct DirectBody {
    pub(super) conn: Option<Box<H1Conn>>,
    pub(super) pool: Option<Arc<EndpointPool>>,
    pub(super) framing: BodyFraming,
    pub(super) keep_alive: bool,
}

impl DirectBody {
    fn done(&self) -> bool {
        matches!(
            self.framing,
            BodyFraming::Length(0) | BodyFraming::Chunked(Chunk::Done)
        )
    }

    /// At a clean end, the connection goes back to the pool (unless the upstream asked
    /// to close it or sent more than the response).
    pub(super) fn release_if_done(&mut self) {
        if !self.done() {
            return;
        }
        if let (Some(conn), Some(pool)) = (self.conn.take(), self.pool.take()) {
            if self.keep_alive && conn.start == conn.end {
                pool.put_back_direct(conn);
            }
        }
    }

    /// Decodes what is buffered: a data frame, `None` when more bytes are needed.
    fn decode(&mut self) -> Result<Option<Bytes>, io::Error> {
        let Some(conn) = self.conn.as_mut() else {
            return Ok(None);
        };
        loop {
            let pending = conn.pending();
            match &mut self.framing {
                BodyFraming::Length(0) | BodyFraming::Chunked(Chunk::Done) => return Ok(None),
                BodyFraming::Length(rem) => {
                    if pending.is_empty() {
                        return Ok(None);
                    }
                    let take = pending
                        .len()
                        .min(usize::try_from(*rem).unwrap_or(usize::MAX));
                    let data = Bytes::copy_from_slice(&pending[..take]);
                    *rem -= take as u64;
                    conn.consume(take);
                    return Ok(Some(data));
                }
                BodyFraming::Eof => {
                    if pending.is_empty() {
                        return Ok(None);
                    }
                    let data = Bytes::copy_from_slice(pending);
                    let n = pending.len();
                    conn.consume(n);
                    return Ok(Some(data));
                }
                BodyFraming::Chunked(state) => match *state {
                    Chunk::Size | Chunk::Trailers => {
                        let Some(eol) = pending.windows(2).position(|w| w == b"\r\n") else {
                            if pending.len() > MAX_LINE {
                                return Err(bad_chunk());
                            }
                            return Ok(None);
                        };
                        let line = &pending[..eol];
                        if *state == Chunk::Size {
                            let digits = line.split(|b| *b == b';').next().unwrap_or(b"");
                            let size = std::str::from_utf8(digits.trim_ascii())
                                .ok()
                                .and_then(|s| u64::from_str_radix(s, 16).ok())
                                .ok_or_else(bad_chunk)?;
                            *state = if size == 0 {
                                Chunk::Trailers
                            } else {
                                Chunk::Data(size)
                            };
                        } else if line.is_empty() {
                            *state = Chunk::Done;
                        }
                        conn.consume(eol + 2);
                    }
                    Chunk::Data(rem) => {
                        if pending.is_empty() {
                            return Ok(None);
                        }
                        let take = pending
                            .len()
                            .min(usize::try_from(rem).unwrap_or(usize::MAX));
                        let data = Bytes::copy_from_slice(&pending[..take]);
                        let left = rem - take as u64;
                        *state = if left == 0 {
                            Chunk::DataEnd
                        } else {
                            Chunk::Data(left)
                        };
                        conn.consume(take);
                        return Ok(Some(data));
                    }
                    Chunk::DataEnd => {
                        if pending.len() < 2 {
                            return Ok(None);
                        }
                        if &pending[..2] != b"\r\n" {
                            return Err(bad_chunk());
                        }
                        *state = Chunk::Size;
                        conn.consume(2);
                    }
                    Chunk::Done => return Ok(None),
                },
            }
        }
    }
}

fn bad_chunk() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        "bad chunked encoding from upstream",
    )
}

#[cfg(test)]
impl DirectBody {
    pub(super) fn empty_for_test() -> Self {
        DirectBody {
            conn: None,
            pool: None,
            framing: BodyFraming::Length(0),
            keep_alive: false,
        }
    }
}

impl Body for DirectBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = self.get_mut();
        loop {
            match this.decode() {
                Ok(Some(data)) => {
                    this.release_if_done();
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Ok(None) if this.done() => {
                    this.release_if_done();
                    return Poll::Ready(None);
                }
                Ok(None) => {}
                Err(e) => {
                    this.conn = None;
                    return Poll::Ready(Some(Err(e)));
                }
            }
            let Some(conn) = this.conn.as_mut() else {
                return Poll::Ready(None);
            };
            match ready!(conn.poll_fill(cx)) {
                Ok(0) if this.framing == BodyFraming::Eof => {
                    this.conn = None;
                    return Poll::Ready(None);
                }
                Ok(0) => {
                    this.conn = None;
                    return Poll::Ready(Some(Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "upstream closed the connection before the body ended",
                    ))));
                }
                Ok(_) => {}
                Err(e) => {
                    this.conn = None;
                    return Poll::Ready(Some(Err(e)));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done()
    }

    fn size_hint(&self) -> SizeHint {
        match self.framing {
            BodyFraming::Length(n) => SizeHint::with_exact(n),
            _ => SizeHint::default(),
        }
    }
}

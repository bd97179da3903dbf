//! The streamed answer's body: pre-rendered SSE events sent on a schedule, the way a
//! model emits tokens. Every event before the first token waits for the first-token delay
//! (so the first body byte is the first token, as with real providers); then each token
//! event follows the previous one by `1 / tokens_per_second` (no wait when unpaced).
//! Dropping the body before its end (the client went away) counts as a cancelled stream.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::Frame;
use tokio::time::{Instant, Sleep};

/// One SSE event and whether it carries a token (and so takes a token's time).
pub(super) struct Event {
    pub bytes: Bytes,
    pub token: bool,
}

impl Event {
    /// `event: NAME` (Anthropic) or none (OpenAI), then `data: JSON`.
    pub fn sse(name: Option<&str>, data: &str, token: bool) -> Event {
        let mut s = String::with_capacity(data.len() + 32);
        if let Some(name) = name {
            s.push_str("event: ");
            s.push_str(name);
            s.push('\n');
        }
        s.push_str("data: ");
        s.push_str(data);
        s.push_str("\n\n");
        Event {
            bytes: Bytes::from(s),
            token,
        }
    }
}

/// When tokens come out.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Pace {
    pub first_token: Duration,
    /// `None`: as fast as the connection takes them.
    pub per_token: Option<Duration>,
}

impl Pace {
    pub fn new(first_token: Duration, tokens_per_second: f64) -> Pace {
        let per_token = (tokens_per_second > 0.0 && tokens_per_second.is_finite())
            .then(|| Duration::from_secs_f64(1.0 / tokens_per_second));
        Pace {
            first_token,
            per_token,
        }
    }

    /// When the `n`th token (from 1) is due, after the start; events before the first
    /// token are due with it.
    pub fn due(&self, n: u64) -> Duration {
        let gaps = u32::try_from(n.saturating_sub(1)).unwrap_or(u32::MAX);
        let step = self
            .per_token
            .map_or(Duration::ZERO, |d| d.saturating_mul(gaps));
        self.first_token.saturating_add(step)
    }
}

/// The server's stream counters (`GET /_echo/stats`).
#[derive(Debug, Default)]
pub(super) struct StreamStats {
    pub started: AtomicU64,
    pub finished: AtomicU64,
    pub cancelled: AtomicU64,
}

pub(crate) struct PacedBody {
    events: std::vec::IntoIter<Event>,
    next: Option<Event>,
    /// Tokens sent so far, counting the pending one.
    tokens: u64,
    start: Instant,
    pace: Pace,
    sleep: Pin<Box<Sleep>>,
    stats: Arc<StreamStats>,
    finished: bool,
}

impl PacedBody {
    pub(super) fn new(events: Vec<Event>, pace: Pace, stats: Arc<StreamStats>) -> PacedBody {
        stats.started.fetch_add(1, Ordering::Relaxed);
        let start = Instant::now();
        PacedBody {
            events: events.into_iter(),
            next: None,
            tokens: 0,
            start,
            pace,
            sleep: Box::pin(tokio::time::sleep_until(start)),
            stats,
            finished: false,
        }
    }
}

impl http_body::Body for PacedBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        if this.next.is_none() {
            let Some(event) = this.events.next() else {
                return Poll::Ready(None);
            };
            this.tokens += u64::from(event.token);
            this.next = Some(event);
        }
        let due = this.start + this.pace.due(this.tokens.max(1));
        if due > Instant::now() {
            if this.sleep.deadline() != due {
                this.sleep.as_mut().reset(due);
            }
            if this.sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
        let event = this.next.take();
        if this.events.len() == 0 && !this.finished {
            // The last event is out: the stream is complete even if the client leaves
            // before reading the end of the body.
            this.finished = true;
            this.stats.finished.fetch_add(1, Ordering::Relaxed);
        }
        Poll::Ready(event.map(|e| Ok(Frame::data(e.bytes))))
    }

    fn is_end_stream(&self) -> bool {
        self.finished && self.next.is_none()
    }
}

impl Drop for PacedBody {
    fn drop(&mut self) {
        if !self.finished {
            self.stats.cancelled.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_due_after_the_first_token_delay_one_gap_apart() {
        let p = Pace::new(Duration::from_millis(100), 10.0);
        assert_eq!(p.due(0), Duration::from_millis(100));
        assert_eq!(p.due(1), Duration::from_millis(100));
        assert_eq!(p.due(3), Duration::from_millis(300));
        let unpaced = Pace::new(Duration::ZERO, 0.0);
        assert_eq!(unpaced.due(1000), Duration::ZERO);
    }
}

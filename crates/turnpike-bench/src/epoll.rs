//! The closed loop over plain HTTP/1.1 without an async runtime, as wrk runs it: one epoll
//! set per generator thread over nonblocking sockets (mio), each user a small state
//! machine: connect, write the request, read until [`Reader`] has the whole response,
//! record it, write the next. tokio's per-wake-up machinery (readiness bookkeeping, task
//! polls, a waker per read) cost ~1,000 of the ~3,000 user-space instructions the
//! generator spent per request after its own client (issue 32 item 4); here a response
//! costs one `read`, one scan and one `write`. TLS, HTTP/2 and the open loop (whose send
//! times need the runtime's timerfd) stay on tokio (`load`).

use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

use crate::client::RequestTemplate;
use crate::h1::{H1Error, Reader};
use crate::stats::{Outcome, Recorder, Sample};

/// A closed-loop run of some users on one thread.
pub struct ClosedLoop<'a> {
    pub addr: SocketAddr,
    pub request: &'a RequestTemplate,
    pub timeout: Duration,
    pub start: Instant,
    pub end: Instant,
    /// The run-wide ids of this thread's users (JTL thread names, token rotation).
    pub ids: Vec<usize>,
    /// After the last readiness event, poll without blocking for this long before
    /// sleeping in `epoll_wait` (zero: block at once).
    pub spin: Duration,
}

/// After a refused connect, a user waits this long before the next (the error is counted).
const RETRY: Duration = Duration::from_millis(10);
/// Readiness events taken per `epoll_wait`.
const EVENTS: usize = 1024;

struct Conn {
    tcp: TcpStream,
    reader: Reader,
    connected: bool,
    /// Bytes of `User::out` written so far.
    written: usize,
}

struct User {
    id: usize,
    /// The request number (token rotation).
    n: usize,
    conn: Option<Conn>,
    /// When the request in flight was started (its latency's origin).
    due: Instant,
    /// Set while a request (or its connect) is in flight; None while waiting to retry.
    busy: bool,
    retry_at: Option<Instant>,
    out: Vec<u8>,
}

/// Runs the users until `end`, recording into `rec`.
pub fn run(cl: &ClosedLoop, rec: &mut Recorder) -> std::io::Result<()> {
    let mut poll = Poll::new()?;
    let mut events = Events::with_capacity(EVENTS);
    let mut users = idle_users(&cl.ids);
    std::thread::sleep(cl.start.saturating_duration_since(Instant::now()));
    let head = *cl.request.method() == http::Method::HEAD;
    let mut run = Run {
        cl,
        poll: &mut poll,
        rec,
        head,
    };
    for (i, u) in users.iter_mut().enumerate() {
        run.begin(i, u, Instant::now());
    }
    // Timeouts and retries are checked this often (timeouts to within a tenth).
    let sweep = (cl.timeout / 10).clamp(Duration::from_millis(1), RETRY);
    let mut next_sweep = Instant::now() + sweep;
    // A blocked thread's core may halt, and a halted vCPU wakes late (the host deschedules
    // it after its halt-polling window): with `spin`, the loop polls without blocking
    // until `spin` has passed since the last event, as the kernel's own halt polling does.
    let mut spin_until = Instant::now();
    loop {
        let now = Instant::now();
        if now >= cl.end {
            return Ok(());
        }
        if now >= next_sweep {
            run.sweep(&mut users, now);
            next_sweep = now + sweep;
        }
        let wait = if now < spin_until {
            Duration::ZERO
        } else {
            next_sweep.min(cl.end).saturating_duration_since(now)
        };
        match run.poll.poll(&mut events, Some(wait)) {
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            other => other?,
        }
        if !cl.spin.is_zero() && !events.is_empty() {
            // After the poll: a blocking one may have slept past `now + spin`.
            spin_until = Instant::now() + cl.spin;
        }
        for ev in events.iter() {
            let i = ev.token().0;
            if let Some(u) = users.get_mut(i) {
                run.on_ready(i, u);
            }
        }
    }
}

/// A user per run-wide id, none started yet.
fn idle_users(ids: &[usize]) -> Vec<User> {
    let now = Instant::now();
    ids.iter()
        .map(|&id| User {
            id,
            n: id,
            conn: None,
            due: now,
            busy: false,
            retry_at: None,
            out: Vec::with_capacity(1024),
        })
        .collect()
}

/// What the event handlers share.
struct Run<'a, 'p> {
    cl: &'a ClosedLoop<'a>,
    poll: &'p mut Poll,
    rec: &'p mut Recorder,
    /// HEAD requests: responses without a body.
    head: bool,
}

impl Run<'_, '_> {
    /// Starts user `i`'s next request at `now`: on its connection, or a new one.
    fn begin(&mut self, i: usize, u: &mut User, now: Instant) {
        u.due = now;
        u.retry_at = None;
        if u.due >= self.cl.end {
            u.busy = false;
            return;
        }
        u.busy = true;
        u.out.clear();
        self.cl.request.write_h1(u.n, &mut u.out);
        match &mut u.conn {
            Some(c) if c.connected => {
                c.written = 0;
                if let Err(e) = write_out(c, &u.out) {
                    self.failed(i, u, &e);
                }
            }
            Some(_) => {}
            None => match self.connect(i) {
                Ok(c) => u.conn = Some(c),
                Err(e) => self.refused(u, &e),
            },
        }
    }

    fn connect(&mut self, i: usize) -> std::io::Result<Conn> {
        let mut tcp = TcpStream::connect(self.cl.addr)?;
        self.poll.registry().register(
            &mut tcp,
            Token(i),
            Interest::READABLE | Interest::WRITABLE,
        )?;
        Ok(Conn {
            tcp,
            reader: Reader::new(),
            connected: false,
            written: 0,
        })
    }

    /// User `i`'s socket is ready: finish a connect, a write, or read the response.
    fn on_ready(&mut self, i: usize, u: &mut User) {
        let Some(c) = u.conn.as_mut().filter(|_| u.busy) else {
            return;
        };
        if !c.connected {
            // mio: a connect has ended when the socket reports readiness; it failed if
            // the socket holds an error. No peer yet: a stale event, wait for the next.
            match c.tcp.take_error() {
                Ok(Some(e)) | Err(e) => return self.refused_conn(u, &e),
                Ok(None) => {}
            }
            match c.tcp.peer_addr() {
                Ok(_) => {
                    c.connected = true;
                    let _ = c.tcp.set_nodelay(true);
                }
                Err(e) if e.kind() == ErrorKind::NotConnected => return,
                Err(e) => return self.refused_conn(u, &e),
            }
        }
        if c.written < u.out.len() {
            if let Err(e) = write_out(c, &u.out) {
                return self.failed(i, u, &e);
            }
            if c.written < u.out.len() {
                return;
            }
        }
        match read_response(c, self.head) {
            Ok(None) => {}
            Ok(Some((status, received))) => {
                let closed = c.reader.is_closed();
                let sent = u.out.len() as u64;
                // The response's time is the next request's start (one clock read).
                let now = self.record(u, Outcome::Status(status), sent, received);
                u.n = u.n.wrapping_add(1);
                if closed {
                    u.conn = None;
                }
                self.begin(i, u, now);
            }
            Err(e) => self.failed(i, u, &e),
        }
    }

    /// A request failed: counted, its connection dropped, the next one started.
    fn failed(&mut self, i: usize, u: &mut User, e: &dyn std::fmt::Display) {
        tracing::debug!(error = %e, "request failed");
        let now = self.record(u, Outcome::Failed, 0, 0);
        u.conn = None;
        self.begin(i, u, now);
    }

    /// A connect failed: counted, retried after [`RETRY`].
    fn refused_conn(&mut self, u: &mut User, e: &std::io::Error) {
        u.conn = None;
        self.refused(u, e);
    }

    fn refused(&mut self, u: &mut User, e: &std::io::Error) {
        tracing::debug!(error = %e, "connect failed");
        self.record(u, Outcome::Failed, 0, 0);
        u.busy = false;
        u.retry_at = Some(Instant::now() + RETRY);
    }

    /// Times out requests past their deadline and starts the users whose retry is due.
    fn sweep(&mut self, users: &mut [User], now: Instant) {
        for (i, u) in users.iter_mut().enumerate() {
            if u.busy && now >= u.due + self.cl.timeout {
                let e = std::io::Error::from(ErrorKind::TimedOut);
                self.failed(i, u, &e);
            } else if u.retry_at.is_some_and(|at| now >= at) {
                self.begin(i, u, now);
            }
        }
    }

    /// Records user `u`'s request as ending now; returns now.
    fn record(&mut self, u: &User, outcome: Outcome, sent: u64, received: u64) -> Instant {
        let now = Instant::now();
        self.rec.record_sample(Sample {
            start: u.due.saturating_duration_since(self.cl.start),
            elapsed: now.saturating_duration_since(u.due),
            outcome,
            sent,
            received,
            user: u.id as u32,
        });
        now
    }
}

/// Writes what is left of `out`; stops (Ok) when the socket is full.
fn write_out(c: &mut Conn, out: &[u8]) -> std::io::Result<()> {
    while c.written < out.len() {
        match c.tcp.write(&out[c.written..]) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => c.written += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads what has arrived; the response once it is complete.
fn read_response(c: &mut Conn, head: bool) -> Result<Option<(u16, u64)>, H1Error> {
    loop {
        if let Some(done) = c.reader.advance(head)? {
            return Ok(Some(done));
        }
        let space = c.reader.space();
        let room = space.len();
        match c.tcp.read(space) {
            Ok(0) => return c.reader.ended().map(Some),
            Ok(n) => {
                c.reader.filled(n);
                // A short read drained the socket: a complete response needs no second
                // read. An incomplete one reads on until the socket says it would block,
                // since an end of stream that came with the data raises no new event.
                if n < room {
                    if let Some(done) = c.reader.advance(head)? {
                        return Ok(Some(done));
                    }
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(None),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
}

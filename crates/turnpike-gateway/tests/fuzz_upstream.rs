//! Fuzzing the in-house HTTP/1.1 client's response parser (`src/h1`) over real sockets,
//! on stable Rust: an upstream answers each request with a mutated response (bytes
//! flipped, cut, repeated, framing tokens spliced in: lengths, chunk sizes, 1xx heads,
//! folded headers). The gateway must answer every request (200, or a 5xx from the error
//! table), never hang past the response timeout, never panic, and keep serving.
//!
//! Cases: `TURNPIKE_FUZZ_CASES` (default 200, seconds in CI); `bench/fuzz.sh` runs
//! thousands. The seed is printed, and `TURNPIKE_FUZZ_SEED` replays a run.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// xorshift64*: small, seedable, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const SEEDS: &[&[u8]] = &[
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    b"HTTP/1.0 200 OK\r\n\r\nuntil close",
    b"HTTP/1.1 204 No Content\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nTrailer: v\r\n\r\n",
];

const TOKENS: &[&[u8]] = &[
    b"\r\n",
    b"\r\n\r\n",
    b"Content-Length: ",
    b"Transfer-Encoding: chunked\r\n",
    b"Content-Length: 99999999999999999999\r\n",
    b"ffffffffffffffff\r\n",
    b"-1",
    b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
    b"HTTP/1.1 103 Early Hints\r\n\r\n",
    b" folded\r\n",
    b"\0",
    b":",
    b";",
    b"0\r\n\r\n",
    b"Connection: close\r\n",
    b"HTTP/1.1 999 X\r\n",
];

fn mutate(rng: &mut Rng) -> Vec<u8> {
    let mut out = SEEDS[rng.below(SEEDS.len())].to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(out.len() + 1);
        match rng.below(5) {
            0 => {
                if let Some(b) = out.get_mut(at) {
                    *b ^= 1 << rng.below(8);
                }
            }
            1 => out.truncate(at),
            2 => {
                let t = TOKENS[rng.below(TOKENS.len())];
                out.splice(at..at, t.iter().copied());
            }
            3 => {
                let end = (at + rng.below(16)).min(out.len());
                let piece = out[at.min(end)..end].to_vec();
                out.splice(at..at, piece);
            }
            _ => {
                let n = rng.below(3) + 1;
                let end = (at + n).min(out.len());
                out.drain(at.min(end)..end);
            }
        }
    }
    out
}

/// An upstream that answers each connection's first request with the next scripted
/// bytes, then closes.
async fn scripted(script: Arc<Mutex<Vec<u8>>>) -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = l.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let bytes = script.lock().map(|b| b.clone()).unwrap_or_default();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = s.write_all(&bytes).await;
                let _ = s.shutdown().await;
            });
        }
    });
    addr
}

#[tokio::test]
async fn mutated_upstream_responses_never_hang_or_break_the_gateway() {
    let cases: usize = std::env::var("TURNPIKE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let seed = std::env::var("TURNPIKE_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64 | 1)
                .unwrap_or(0x9e37_79b9)
        });
    eprintln!("fuzz_upstream: {cases} cases, TURNPIKE_FUZZ_SEED={seed}");
    let script = Arc::new(Mutex::new(Vec::new()));
    let up = scripted(script.clone()).await;
    let extra = "    timeouts: { response: 2s }\n";
    let gw = gateway(&config(&[api("f", &[http(up)], extra)])).await;
    let c = client();
    let mut rng = Rng(seed);
    for case in 0..cases {
        let bytes = mutate(&mut rng);
        if let Ok(mut s) = script.lock() {
            *s = bytes.clone();
        }
        let sent = tokio::time::timeout(
            Duration::from_secs(10),
            c.get(gw.url(&format!("/f/v1/{case}"))).send(),
        )
        .await
        .unwrap_or_else(|_| panic!("case {case} hung: {:?}", String::from_utf8_lossy(&bytes)));
        if let Ok(r) = sent {
            let status = r.status().as_u16();
            // The body may be cut short by a broken upstream: that is an error on the
            // body, not a hang.
            let body = tokio::time::timeout(Duration::from_secs(10), r.bytes()).await;
            assert!(body.is_ok(), "case {case}: body hung");
            assert!((100..600).contains(&status), "case {case}: status {status}");
        }
    }
    // Still serving, and with the right answer.
    if let Ok(mut s) = script.lock() {
        *s = SEEDS[0].to_vec();
    }
    let r = c.get(gw.url("/f/v1/after")).send().await.expect("send");
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.expect("body"), "hello");
}

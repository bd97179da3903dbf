//! The closed loop's two HTTP/1.1 engines (the epoll loop, the default for plain HTTP, with
//! and without `--spin-us`, and the tokio runtime, `--tokio-h1`) against a raw server on
//! 127.0.0.1:0 that frames its responses every way HTTP/1.1 allows, in small writes:
//! Content-Length, chunked with trailers, and a body to the end of the stream with
//! `Connection: close` (each head differs from the one before, so none is taken for the
//! previous). All count every response, no error, and the same bytes per response.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use turnpike_bench::run::{execute, RunArgs};

/// The responses, in turn on each connection; the third closes it.
const ANSWERS: [&[u8]; 3] = [
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nT: 1\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end",
];

fn serve(mut s: TcpStream) {
    let _ = s.set_nodelay(true);
    let mut buf = [0u8; 4096];
    let mut have = Vec::new();
    for answer in ANSWERS.iter().cycle() {
        while !have.windows(4).any(|w| w == b"\r\n\r\n") {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => have.extend_from_slice(&buf[..n]),
            }
        }
        have.clear();
        // Small writes: heads, chunk lines and bodies arrive in pieces.
        for part in answer.chunks(9) {
            if s.write_all(part).is_err() {
                return;
            }
        }
        if answer.ends_with(b"until the end") {
            return;
        }
    }
}

fn server() -> String {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || serve(s));
        }
    });
    format!("http://{addr}/")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_engines_read_every_framing_without_errors() {
    let url = server();
    let average = ANSWERS.iter().map(|a| a.len()).sum::<usize>() as f64 / 3.0;
    for (tokio_h1, spin_us) in [(false, 0), (false, 200), (true, 0)] {
        let mut args = RunArgs::closed(url.clone(), 4, Duration::from_millis(600), Duration::ZERO);
        args.threads = Some(1);
        args.tokio_h1 = tokio_h1;
        args.spin_us = spin_us;
        let r = execute(&args).await.expect("run");
        let s = &r.summary;
        assert!(
            s.samples >= 30,
            "tokio_h1={tokio_h1} spin_us={spin_us}: {s:?}"
        );
        assert_eq!(s.errors, 0, "tokio_h1={tokio_h1} spin_us={spin_us}: {s:?}");
        // Bytes received per response: the three framings' average (the window cuts at
        // any point in the rotation, so within a response's share).
        let per = s.received_kbps * 1024.0 / s.throughput_rps;
        assert!(
            (per - average).abs() < average * 0.1,
            "tokio_h1={tokio_h1} spin_us={spin_us}: {per} bytes per response, expected ~{average}"
        );
    }
}

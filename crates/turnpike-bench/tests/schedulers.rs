//! The schedulers against a delayed echo back end on 127.0.0.1:0: the closed loop's
//! throughput follows users / latency; the open loop holds its rate and measures from the
//! due time, so an overloaded server shows queueing instead of hiding it.

use std::time::Duration;

use turnpike_bench::echo::{spawn, EchoConfig};
use turnpike_bench::run::{execute, RunArgs};

async fn echo(delay_ms: u64) -> String {
    let cfg = EchoConfig {
        delay: Duration::from_millis(delay_ms),
        ..EchoConfig::default()
    };
    let addr = spawn(cfg).await.expect("echo");
    format!("http://{addr}/bench")
}

/// 100 users x 30 ms back-end delay: at most 100 / 0.030 = 3,333 req/s. Tolerance: the
/// result must be within -30 % / +3 % of that (the lower side absorbs a debug build on a
/// loaded 2-core machine; nothing can beat the bound by more than timer jitter).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_throughput_is_users_over_latency() {
    let url = echo(30).await;
    let mut args = RunArgs::closed(url, 100, Duration::from_secs(2), Duration::from_millis(500));
    args.threads = Some(1);
    let r = execute(&args).await.expect("run");
    let s = &r.summary;
    assert_eq!(s.errors, 0, "{s:?}");
    let expected = 100.0 / 0.030;
    assert!(
        s.throughput_rps > expected * 0.70 && s.throughput_rps < expected * 1.03,
        "throughput {} vs {expected}",
        s.throughput_rps
    );
    assert!(
        s.min_ms >= 29.9,
        "min {} below the back-end delay",
        s.min_ms
    );
    // Little's law ties the two numbers together.
    assert!(s.send_lag.is_none(), "a closed loop has no due times");
    let users = s.throughput_rps * s.avg_ms / 1000.0;
    assert!(
        (users - 100.0).abs() < 10.0,
        "throughput x latency = {users} users"
    );
}

/// 400 req/s over 20 connections at a 10 ms back end (capacity 2,000 req/s): the rate is
/// held within 5 % and latency stays near the back-end delay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_holds_its_rate() {
    let url = echo(10).await;
    let mut args = RunArgs::closed(url, 1, Duration::from_secs(2), Duration::from_millis(300));
    args.users = None;
    args.rate = Some(400.0);
    args.connections = 20;
    // One thread: the open loop spends each request's last millisecond yielding and
    // spinning for an exact send time, and the tests beside this one need the other core.
    args.threads = Some(1);
    let r = execute(&args).await.expect("run");
    let s = &r.summary;
    assert_eq!(s.errors, 0);
    assert!(
        (s.throughput_rps - 400.0).abs() < 20.0,
        "throughput {}",
        s.throughput_rps
    );
    assert!(s.p50_ms >= 10.0 && s.p50_ms < 100.0, "p50 {}", s.p50_ms);
    // The open loop reports how late its writes were; never early, so p50 <= p99 <= max.
    let lag = s.send_lag.as_ref().expect("open loop reports its send lag");
    assert!(
        lag.p50_us <= lag.p99_us && lag.p99_us <= lag.max_us,
        "{lag:?}"
    );
    assert!(r.summary.to_text().contains("send lag us"));
}

/// 200 req/s offered to 2 connections at a 50 ms back end (capacity 40 req/s): requests
/// queue, and latency counted from the due time grows far past the 50 ms a closed-loop
/// tool would report (no coordinated omission).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_counts_queueing_from_the_due_time() {
    let url = echo(50).await;
    let mut args = RunArgs::closed(url, 1, Duration::from_secs(1), Duration::ZERO);
    args.users = None;
    args.rate = Some(200.0);
    args.connections = 2;
    args.threads = Some(1);
    let r = execute(&args).await.expect("run");
    let s = &r.summary;
    assert!(s.throughput_rps <= 45.0, "throughput {}", s.throughput_rps);
    assert!(s.p90_ms > 250.0, "p90 {} does not show the queue", s.p90_ms);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_post_with_body_counts_bytes_both_ways() {
    let url = echo(0).await;
    let mut args = RunArgs::closed(
        url,
        4,
        Duration::from_millis(500),
        Duration::from_millis(100),
    );
    args.http2 = true;
    args.size = Some(1024);
    args.threads = Some(1);
    let r = execute(&args).await.expect("run");
    let s = &r.summary;
    assert_eq!(r.method, "POST");
    assert!(s.samples > 10 && s.errors == 0, "{s:?}");
    // Each echoed response carries the 1 KiB body back.
    let per_req_kb = s.received_kbps / s.throughput_rps;
    assert!(
        per_req_kb > 1.0 && per_req_kb < 1.5,
        "received {per_req_kb} KB per request"
    );
    assert!(s.sent_kbps / s.throughput_rps > 1.0);
}

#[tokio::test]
async fn refused_connections_are_errors_not_hangs() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let url = format!("http://127.0.0.1:{port}/");
    let mut args = RunArgs::closed(url, 2, Duration::from_millis(300), Duration::ZERO);
    args.threads = Some(1);
    let r = execute(&args).await.expect("run");
    assert!(r.summary.samples > 0);
    assert_eq!(r.summary.errors, r.summary.samples);
    assert!((r.summary.error_pct - 100.0).abs() < 1e-9);
}

#[tokio::test]
async fn bad_arguments_are_refused_before_any_load() {
    let mut args = RunArgs::closed("ftp://x/".into(), 1, Duration::from_secs(1), Duration::ZERO);
    assert!(execute(&args).await.is_err());
    args.url = "http://127.0.0.1:1/".into();
    args.users = Some(0);
    let err = execute(&args).await.expect_err("zero users");
    assert!(err.to_string().contains("--users"), "{err}");
}

/// A back end slower than `--timeout`: every request is an error, and the users go on
/// sending (a new connection each time) instead of waiting for the slow answers.
#[tokio::test]
async fn a_response_slower_than_the_timeout_is_an_error() {
    let url = echo(2000).await;
    let mut args = RunArgs::closed(url, 2, Duration::from_millis(700), Duration::ZERO);
    args.timeout = Duration::from_millis(100);
    args.threads = Some(1);
    let r = execute(&args).await.expect("run");
    let s = &r.summary;
    assert!(s.samples >= 6, "{s:?}");
    assert_eq!(s.errors, s.samples);
}

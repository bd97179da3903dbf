//! Listener and lifecycle stories: TLS with HTTP/2 by ALPN, hot swap under load, a bad
//! reload refused, graceful drain, and slow clients.

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn https_negotiates_http2_by_alpn_and_http1_too() {
    let up = echo().await;
    let gw = gateway(&config(&[api("e", &[http(up)], "")])).await;
    let pem = std::fs::read(gw.dir.path().join("tls/cert.pem")).expect("generated cert");
    let cert = reqwest::Certificate::from_pem(&pem).expect("pem");
    let url = format!("https://localhost:{}/e/v1/x", gw.https.port());
    for (h1, want) in [
        (false, reqwest::Version::HTTP_2),
        (true, reqwest::Version::HTTP_11),
    ] {
        let mut b = reqwest::Client::builder()
            .no_proxy()
            .use_rustls_tls()
            .add_root_certificate(cert.clone())
            .resolve("localhost", gw.https);
        if h1 {
            b = b.http1_only();
        }
        let r = b
            .build()
            .expect("client")
            .post(&url)
            .body("hello")
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 200);
        assert_eq!(r.version(), want);
        assert!(r.headers().contains_key("x-request-id"));
        assert_eq!(r.text().await.expect("body"), "hello");
    }
}

#[tokio::test]
async fn hot_swap_under_concurrent_load_fails_no_request() {
    let a = inspect("a").await;
    let b = inspect("b").await;
    let cfg_a = config(&[api("s", &[http(a)], "")]);
    let cfg_b = config(&[api("s", &[http(b)], "")]);
    let gw = Arc::new(gateway(&cfg_a).await);
    let ok = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(tokio::sync::Notify::new());
    let mut workers = Vec::new();
    for _ in 0..8 {
        let (gw, ok, stop) = (gw.clone(), ok.clone(), stop.clone());
        workers.push(tokio::spawn(async move {
            let c = client();
            let stopped = stop.notified();
            tokio::pin!(stopped);
            let mut seen = std::collections::HashSet::new();
            loop {
                tokio::select! {
                    _ = &mut stopped => return seen,
                    r = c.post(gw.url("/s/v1/x")).body("ping").send() => {
                        let r = r.expect("request failed during a swap");
                        assert_eq!(r.status(), 200, "non-200 during a swap");
                        let v = json_of(r).await;
                        seen.insert(v["upstream"].as_str().unwrap_or("").to_owned());
                        ok.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    // Swap back and forth while the workers run; wait on progress, not on time.
    for i in 0..40 {
        gw.swap(if i % 2 == 0 { &cfg_b } else { &cfg_a });
        let target = ok.load(Ordering::Relaxed) + 5;
        while ok.load(Ordering::Relaxed) < target {
            tokio::task::yield_now().await;
        }
    }
    stop.notify_waiters();
    let mut upstreams = std::collections::HashSet::new();
    for w in workers {
        upstreams.extend(w.await.expect("worker"));
    }
    assert!(
        upstreams.contains("a") && upstreams.contains("b"),
        "{upstreams:?}"
    );
}

#[tokio::test]
async fn bad_reload_is_refused_and_old_config_keeps_serving() {
    let up = inspect("a").await;
    let good = config(&[api("r", &[http(up)], "")]);
    let gw = gateway(&good).await;
    let file = gw.dir.path().join("apis.yaml");
    std::fs::write(&file, "apis:\n  - name: r\n    contxt: /oops\n").expect("write");
    let err = turnpike_gateway::reload::reload(
        &file,
        gw.snapshots(),
        &Default::default(),
        Default::default(),
    )
    .await
    .expect_err("invalid file refused");
    assert!(err.to_string().contains("contxt"), "{err}");
    let r = client().get(gw.url("/r/v1/x")).send().await.expect("send");
    assert_eq!(r.status(), 200, "old snapshot still serves");

    // A good file is taken.
    let moved = good.replace("/r\n", "/moved\n");
    std::fs::write(&file, moved).expect("write");
    turnpike_gateway::reload::reload(
        &file,
        gw.snapshots(),
        &Default::default(),
        Default::default(),
    )
    .await
    .expect("valid file taken");
    let r = client()
        .get(gw.url("/moved/v1/x"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn an_empty_or_api_less_file_is_refused_on_reload_unless_allowed() {
    use turnpike_gateway::reload::{reload, EmptyFile};
    let up = inspect("a").await;
    let gw = gateway(&config(&[api("r", &[http(up)], "")])).await;
    let file = gw.dir.path().join("apis.yaml");
    let runtime = Default::default();
    for truncated in ["", "# only a comment\n", "apis: []\n", "apis:\n"] {
        std::fs::write(&file, truncated).expect("write");
        let err = reload(&file, gw.snapshots(), &runtime, EmptyFile::Refuse)
            .await
            .expect_err("a file with no API is refused");
        assert!(err.to_string().contains("--allow-empty"), "{err}");
        let r = client().get(gw.url("/r/v1/x")).send().await.expect("send");
        assert_eq!(r.status(), 200, "{truncated:?}: the running APIs stay");
    }
    // Asked for: swapped in, and the API is gone.
    reload(&file, gw.snapshots(), &runtime, EmptyFile::Allow)
        .await
        .expect("--allow-empty takes it");
    let r = client().get(gw.url("/r/v1/x")).send().await.expect("send");
    assert_eq!(r.status(), 404);
}

/// A config file rewritten in place in pieces is valid at a piece boundary with only
/// its first API: the watcher must wait for the file to settle, never swap in that
/// moment (which would answer 404 for the second API).
#[tokio::test]
async fn a_file_caught_half_written_is_not_loaded_until_it_settles() {
    let up = echo().await;
    let (a, b, c) = (
        api("a", &[http(up)], ""),
        api("b", &[http(up)], ""),
        api("c", &[http(up)], ""),
    );
    let gw = gateway(&config(&[a.clone(), b.clone()])).await;
    let file = gw.dir.path().join("apis.yaml");
    std::fs::write(&file, config(&[a.clone(), b.clone()])).expect("write");
    let watcher = turnpike_gateway::reload::spawn_watcher(
        file.clone(),
        gw.snapshots().clone(),
        Default::default(),
        Default::default(),
    );
    // Let the watcher take its first fingerprint.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let writer = tokio::spawn(async move {
        use std::io::Write as _;
        let mut f = std::fs::File::create(&file).expect("truncate");
        f.write_all(config(&[a]).as_bytes()).expect("first piece");
        // Valid with one API for 1.8 s (longer than a poll), never quiet for 250 ms.
        for _ in 0..15 {
            tokio::time::sleep(Duration::from_millis(120)).await;
            f.write_all(b"# still writing\n").expect("piece");
        }
        f.write_all(format!("{b}{c}").as_bytes())
            .expect("last piece");
    });
    let client = client();
    let mut wrong = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let b = client.get(gw.url("/b/v1/x")).send().await.expect("send");
        if b.status() != 200 {
            wrong += 1;
        }
        let c = client.get(gw.url("/c/v1/x")).send().await.expect("send");
        if c.status() == 200 && writer.is_finished() {
            break;
        }
        assert!(Instant::now() < deadline, "the finished file never loaded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    watcher.abort();
    assert_eq!(
        wrong, 0,
        "the half-written file was loaded: /b/v1 answered non-200"
    );
}

#[tokio::test]
async fn graceful_drain_finishes_in_flight_and_refuses_new_connections() {
    let mut hold = holding().await;
    let mut gw = gateway(&config(&[api("d", &[http(hold.addr)], "")])).await;
    let url = gw.url("/d/v1/slow");
    let in_flight = tokio::spawn(async move { client().get(url).send().await });
    hold.arrivals
        .recv()
        .await
        .expect("request reached the upstream");

    gw.handle.begin_shutdown();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match tokio::net::TcpStream::connect(gw.http).await {
            Err(_) => break,
            Ok(_) if Instant::now() > deadline => panic!("still accepting after shutdown"),
            Ok(_) => tokio::task::yield_now().await,
        }
    }
    hold.release.notify_one();
    let r = in_flight
        .await
        .expect("task")
        .expect("in-flight request completes");
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.expect("body"), "released");
    tokio::time::timeout(Duration::from_secs(10), gw.handle.shutdown())
        .await
        .expect("drain finishes")
        .expect("clean shutdown");
}

#[tokio::test]
async fn a_drain_fails_readiness_first_and_keeps_accepting_for_the_drain_delay() {
    use turnpike_gateway::health::NotReady;
    let up = echo().await;
    let mut gw = gateway_with(&config(&[api("d", &[http(up)], "")]), |s| {
        s.drain_delay = Duration::from_secs(2)
    })
    .await;
    let health = gw.handle.health.clone();
    assert_eq!(health.ready(), Ok(()));
    gw.handle.begin_shutdown();
    while health.ready().is_ok() {
        tokio::task::yield_now().await;
    }
    assert_eq!(health.ready(), Err(NotReady::Draining));
    // Readiness fails, yet a new connection is still accepted and served; the answer
    // closes the connection so a balancer's pool leaves too.
    let r = client()
        .post(gw.url("/d/v1/x"))
        .body("late")
        .send()
        .await
        .expect("accepted during the drain delay");
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers().get("connection").map(|v| v.as_bytes()),
        Some(&b"close"[..])
    );
    // Then accepting stops and the gateway ends.
    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(gw.http).await.is_ok() {
        assert!(
            Instant::now() < deadline,
            "still accepting long after the delay"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::timeout(Duration::from_secs(10), gw.handle.shutdown())
        .await
        .expect("drain finishes")
        .expect("clean shutdown");
}

#[tokio::test]
async fn slow_client_gets_408_or_is_closed_after_header_read_timeout() {
    let up = echo().await;
    let gw = gateway_with(&config(&[api("e", &[http(up)], "")]), |s| {
        s.header_read_timeout = Duration::from_millis(300)
    })
    .await;
    let mut s = tokio::net::TcpStream::connect(gw.http)
        .await
        .expect("connect");
    s.write_all(b"GET /e/v1/x HTTP/1.1\r\nHost: a\r\n")
        .await
        .expect("partial head");
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf)).await;
    let outcome = read.expect("the gateway must not wait forever on a slow client");
    let text = String::from_utf8_lossy(&buf);
    assert!(
        outcome.is_err() || buf.is_empty() || text.starts_with("HTTP/1.1 408"),
        "unexpected answer: {text}"
    );
}

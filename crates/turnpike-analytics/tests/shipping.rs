//! Shipping across a control-plane outage, over real sockets: a stand-in control plane
//! on 127.0.0.1:0 that answers `503` while "down" and records every body it accepts.
//! Shipments made meanwhile wait (in memory, or on disk across a restart) and arrive,
//! all of them and in order, once it answers again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use turnpike_analytics::rollup::{Rollup, RollupKey, Row};
use turnpike_analytics::ship::ShipSink;
use turnpike_analytics::{Sink, SpoolSettings};

/// The stand-in control plane: `up` decides the answer; accepted bodies in order.
struct ControlPlane {
    url: String,
    up: Arc<AtomicBool>,
    got: Arc<Mutex<Vec<serde_json::Value>>>,
}

async fn control_plane() -> ControlPlane {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let up = Arc::new(AtomicBool::new(false));
    let got = Arc::new(Mutex::new(Vec::new()));
    let (up2, got2) = (up.clone(), got.clone());
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            let (up, got) = (up2.clone(), got2.clone());
            tokio::spawn(async move {
                let mut s = BufReader::new(s);
                loop {
                    let mut len = 0usize;
                    loop {
                        let mut line = String::new();
                        if s.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        let l = line.trim_end().to_ascii_lowercase();
                        if l.is_empty() {
                            break;
                        }
                        if let Some(v) = l.strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0u8; len];
                    if s.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    let status = if up.load(Ordering::SeqCst) {
                        if let (Ok(v), Ok(mut g)) = (serde_json::from_slice(&body), got.lock()) {
                            g.push(v);
                        }
                        "200 OK"
                    } else {
                        "503 Service Unavailable"
                    };
                    let answer = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n");
                    if s.get_mut().write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    ControlPlane { url, up, got }
}

impl ControlPlane {
    /// The API names of the rows received, in arrival order, and their requests.
    fn received(&self) -> (Vec<String>, u64) {
        let got = self.got.lock().map(|g| g.clone()).unwrap_or_default();
        let rows: Vec<serde_json::Value> = got
            .iter()
            .flat_map(|b| b["rollups"].as_array().cloned().unwrap_or_default())
            .collect();
        let names = rows
            .iter()
            .map(|r| r["api_name"].as_str().unwrap_or("").to_owned())
            .collect();
        let requests = rows
            .iter()
            .map(|r| r["requests"].as_u64().unwrap_or(0))
            .sum();
        (names, requests)
    }
}

fn row(i: u64) -> Row {
    Row {
        bucket: 1_700_000_040,
        period: 60,
        key: RollupKey {
            api_name: format!("b{i}"),
            ..Default::default()
        },
        sums: Rollup {
            requests: i + 1,
            ..Default::default()
        },
    }
}

fn names(range: std::ops::Range<u64>) -> Vec<String> {
    range.map(|i| format!("b{i}")).collect()
}

#[tokio::test]
async fn shipments_made_during_an_outage_all_arrive_in_order_once_it_answers() {
    let cp = control_plane().await;
    let mut sink = ShipSink::new(&cp.url, "t");
    let stats = sink.spool_stats();
    for i in 0..20 {
        sink.write_rollups(&[row(i)])
            .await
            .expect("kept, not failed");
    }
    assert_eq!(cp.received().0.len(), 0, "the control plane is down");
    assert_eq!(stats.waiting_requests.load(Ordering::Relaxed), 210);

    cp.up.store(true, Ordering::SeqCst);
    // An interval with nothing new still sends the backlog.
    sink.flush().await.expect("backlog sent");
    sink.write_rollups(&[row(20)]).await.expect("sent");
    let (got, requests) = cp.received();
    assert_eq!(got, names(0..21), "all, in order");
    assert_eq!(requests, (1..=21).sum::<u64>());
    assert_eq!(stats.waiting_requests.load(Ordering::Relaxed), 0);
    assert_eq!(stats.dropped_age.load(Ordering::Relaxed), 0);
    assert_eq!(stats.dropped_size.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn a_new_shipment_waits_behind_the_backlog() {
    let cp = control_plane().await;
    let mut sink = ShipSink::new(&cp.url, "t");
    sink.write_rollups(&[row(0)]).await.expect("kept");
    sink.write_rollups(&[row(1)]).await.expect("kept");
    cp.up.store(true, Ordering::SeqCst);
    sink.write_rollups(&[row(2)]).await.expect("sent");
    assert_eq!(cp.received().0, names(0..3));
}

#[tokio::test]
async fn on_disk_the_backlog_survives_a_gateway_restart() {
    let cp = control_plane().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let settings = SpoolSettings {
        dir: Some(dir.path().join("analytics-spool")),
        ..Default::default()
    };
    let mut sink = ShipSink::new(&cp.url, "t").with_spool(settings.clone());
    for i in 0..5 {
        sink.write_rollups(&[row(i)]).await.expect("kept");
    }
    drop(sink); // the gateway stops while the control plane is still down

    cp.up.store(true, Ordering::SeqCst);
    let mut again = ShipSink::new(&cp.url, "t").with_spool(settings);
    assert_eq!(
        again.spool_stats().waiting_requests.load(Ordering::Relaxed),
        15
    );
    again.flush().await.expect("sent");
    assert_eq!(cp.received().0, names(0..5));
    let left = std::fs::read_dir(dir.path().join("analytics-spool"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(left, 0, "delivered shipments leave the disk");
}

#[tokio::test]
async fn past_the_bounds_the_oldest_are_dropped_and_counted() {
    let cp = control_plane().await;
    let mut sink = ShipSink::new(&cp.url, "t").with_spool(SpoolSettings {
        max_age: Duration::from_millis(200),
        ..Default::default()
    });
    let stats = sink.spool_stats();
    sink.write_rollups(&[row(0)]).await.expect("kept");
    tokio::time::sleep(Duration::from_millis(300)).await;
    cp.up.store(true, Ordering::SeqCst);
    sink.write_rollups(&[row(1)]).await.expect("sent");
    assert_eq!(cp.received().0, names(1..2), "the expired one is not sent");
    assert_eq!(stats.dropped_age.load(Ordering::Relaxed), 1);
    let mut text = String::new();
    stats.render_metrics(&mut text);
    assert!(
        text.contains("turnpike_analytics_spool_dropped_total{reason=\"age\"} 1"),
        "{text}"
    );
}

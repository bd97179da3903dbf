//! How fast a commit on one control plane reaches another's version watch on one real
//! PostgreSQL (LISTEN/NOTIFY, with the 1 s poll as fallback): two stores (two pools, two
//! sessions, as two processes have), 200 commits on the first, each timed until the
//! second sees it. `cargo run -p turnpike-store --example notify_latency`.

use std::time::{Duration, Instant};

use turnpike_store::testing::PgServer;
use turnpike_store::{PasswordParams, Store};

#[tokio::main]
async fn main() {
    let pg = PgServer::start();
    let url = pg.create_database("latency").await;
    let a = Store::open_with(&url, PasswordParams::insecure_fast())
        .await
        .expect("open a");
    let b = Store::open_with(&url, PasswordParams::insecure_fast())
        .await
        .expect("open b");
    let mut rx = b.watch_version();
    let mut took = Vec::new();
    for i in 0..200 {
        let started = Instant::now();
        let v = a
            .begin_write()
            .await
            .expect("begin")
            .commit("bench", &format!("change {i}"))
            .await
            .expect("commit");
        let commit = started.elapsed();
        tokio::time::timeout(Duration::from_secs(5), rx.wait_for(|x| *x >= v))
            .await
            .expect("seen within 5 s")
            .expect("watch open");
        took.push((started.elapsed() - commit).as_micros() as u64);
    }
    took.sort_unstable();
    let at = |q: f64| took[((took.len() as f64 * q) as usize).min(took.len() - 1)];
    println!(
        "commit on A -> seen by B, after the commit returned: p50 {} us, p99 {} us, max {} us ({} commits)",
        at(0.5),
        at(0.99),
        took[took.len() - 1],
        took.len()
    );
}

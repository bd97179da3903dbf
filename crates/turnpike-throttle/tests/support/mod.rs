//! A real redis-server for the cluster tests: started on a free port in a temp dir, no
//! persistence, killed on drop; `stop` and `start` again on the same port simulate an
//! outage.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const REDIS: &str = "/usr/bin/redis-server";

pub struct Redis {
    port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl Redis {
    pub fn start() -> Redis {
        assert!(
            Path::new(REDIS).exists(),
            "{REDIS} is missing: run scripts/install-test-deps.sh (it installs redis-server)"
        );
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let dir = tempfile::tempdir().expect("temp dir");
        let mut r = Redis {
            port,
            dir,
            child: None,
        };
        r.restart();
        r
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Kills the server (SIGKILL: no goodbye to clients) and waits for it to exit.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the server (again) on the same port, empty, and waits until it accepts.
    pub fn restart(&mut self) {
        self.stop();
        let child = Command::new(REDIS)
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn redis-server");
        self.child = Some(child);
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_err() {
            assert!(
                Instant::now() < deadline,
                "redis-server did not start on {addr}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The `_total` of every lease hash (one per counter key and window).
    pub async fn totals(&self) -> Vec<u64> {
        let client = redis::Client::open(self.url()).expect("url");
        let mut c = client
            .get_multiplexed_async_connection()
            .await
            .expect("connect");
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("turnpike:throttle:*")
            .query_async(&mut c)
            .await
            .expect("keys");
        let mut out = Vec::new();
        for k in keys {
            let t: Option<u64> = redis::cmd("HGET")
                .arg(&k)
                .arg("_total")
                .query_async(&mut c)
                .await
                .expect("hget");
            out.push(t.unwrap_or(0));
        }
        out
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

//! Test harness (feature `test-support`): fresh databases for one suite of cases run
//! against SQLite and against a real PostgreSQL server that the harness starts itself
//! (initdb + pg_ctl from Debian's `postgresql` package, in a temp dir, on a free port,
//! trust auth, its unix socket in the temp dir). Missing binaries fail the test loudly.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use tempfile::TempDir;

/// A pool on `url` with the migrations up to `version` applied and no later one: an older
/// release's schema, for the upgrade tests to fill with rows before opening it with
/// [`crate::Store::open`] (which migrates it to the head).
pub async fn migrate_to(url: &str, version: i64) -> sqlx::AnyPool {
    let (pool, backend) = crate::connect(url, &crate::StoreOptions::default(), Default::default())
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e}"));
    crate::migrate::run_to(&pool, backend, version)
        .await
        .unwrap_or_else(|e| panic!("migrate {url} to {version}: {e}"));
    pool
}

/// A test case: receives a fresh database URL.
pub type Case = fn(String) -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// Builds `&[(name, Case)]` from async fns taking the database URL.
#[macro_export]
macro_rules! cases {
    ($($name:path),* $(,)?) => {
        &[$((stringify!($name), (|url: String| Box::pin($name(url)) as std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>) as $crate::testing::Case)),*]
    };
}

/// Where fresh databases come from.
pub enum TestDbs {
    Sqlite { dir: TempDir, next: AtomicUsize },
    Postgres { server: PgServer, next: AtomicUsize },
}

impl TestDbs {
    pub fn sqlite() -> TestDbs {
        TestDbs::Sqlite {
            dir: tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}")),
            next: AtomicUsize::new(0),
        }
    }

    pub fn postgres() -> TestDbs {
        TestDbs::Postgres {
            server: PgServer::start(),
            next: AtomicUsize::new(0),
        }
    }

    pub fn label(&self) -> &'static str {
        match self {
            TestDbs::Sqlite { .. } => "sqlite",
            TestDbs::Postgres { .. } => "postgres",
        }
    }

    /// A URL of a new, empty database.
    pub async fn fresh_url(&self) -> String {
        match self {
            TestDbs::Sqlite { dir, next } => {
                let n = next.fetch_add(1, Ordering::SeqCst);
                format!("sqlite://{}/t{n}.db", dir.path().display())
            }
            TestDbs::Postgres { server, next } => {
                let n = next.fetch_add(1, Ordering::SeqCst);
                server.create_database(&format!("t{n}")).await
            }
        }
    }

    /// Runs every case on its own fresh database, each in its own task so one panic does
    /// not hide the others; fails listing every failed case.
    pub async fn run(&self, cases: &[(&str, Case)]) {
        let mut failed = Vec::new();
        for (name, case) in cases {
            let url = self.fresh_url().await;
            if tokio::spawn(case(url)).await.is_err() {
                failed.push(*name);
            }
        }
        assert!(
            failed.is_empty(),
            "{} of {} cases failed on {}: {failed:?}",
            failed.len(),
            cases.len(),
            self.label()
        );
        eprintln!("{} cases passed on {}", cases.len(), self.label());
    }
}

/// A PostgreSQL server owned by a test; stopped (immediate mode) on drop.
pub struct PgServer {
    dir: TempDir,
    bin: PathBuf,
    port: u16,
    as_postgres: bool,
}

const INSTALL_HINT: &str = "PostgreSQL server binaries (initdb, pg_ctl) were not found under /usr/lib/postgresql/*/bin. Install them with `apt-get install postgresql` (scripts/install-test-deps.sh does this).";

fn pg_bin_dir() -> PathBuf {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .unwrap_or_else(|_| panic!("{INSTALL_HINT}"))
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let v = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    found.sort();
    found
        .pop()
        .map(|(_, b)| b)
        .unwrap_or_else(|| panic!("{INSTALL_HINT}"))
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port: {e}"))
}

impl PgServer {
    /// Starts a fresh server; panics with the server log (or how to install PostgreSQL).
    pub fn start() -> PgServer {
        let bin = pg_bin_dir();
        let as_postgres = is_root();
        let dir = tempfile::Builder::new()
            .prefix("turnpike-pg")
            .tempdir()
            .unwrap_or_else(|e| panic!("temp dir: {e}"));
        std::fs::create_dir(dir.path().join("sock")).unwrap_or_else(|e| panic!("mkdir: {e}"));
        if as_postgres {
            // PostgreSQL refuses to run as root: hand the directory to the postgres user.
            let ok = Command::new("chown")
                .args(["-R", "postgres:"])
                .arg(dir.path())
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            assert!(
                ok,
                "chown of the PostgreSQL temp dir to user postgres failed"
            );
        }
        let server = PgServer {
            dir,
            bin,
            port: free_port(),
            as_postgres,
        };
        let data = server.dir.path().join("data");
        server.run_tool(
            "initdb",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-U".as_ref(),
                "postgres".as_ref(),
                "--auth=trust".as_ref(),
                "-E".as_ref(),
                "UTF8".as_ref(),
                "--locale=C".as_ref(),
                "--no-sync".as_ref(),
            ],
        );
        server.pg_ctl_start();
        server
    }

    fn pg_ctl_start(&self) {
        let data = self.data_dir();
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
            self.port,
            self.dir.path().join("sock").display()
        );
        let log = self.dir.path().join("log");
        self.run_tool(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-l".as_ref(),
                log.as_os_str(),
                "-o".as_ref(),
                opts.as_ref(),
                "-w".as_ref(),
                "-t".as_ref(),
                "60".as_ref(),
                "start".as_ref(),
            ],
        );
    }

    /// Stops the server as an outage would (fast mode: clients are disconnected).
    pub fn stop(&self) {
        let data = self.data_dir();
        self.run_tool(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-m".as_ref(),
                "fast".as_ref(),
                "-w".as_ref(),
                "stop".as_ref(),
            ],
        );
    }

    /// Starts a stopped server again: same port, same data.
    pub fn start_again(&self) {
        self.pg_ctl_start();
    }

    fn run_tool(&self, tool: &str, args: &[&std::ffi::OsStr]) {
        let exe = self.bin.join(tool);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        let out = cmd
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}. {INSTALL_HINT}", exe.display()));
        if !out.status.success() {
            let log = std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default();
            panic!(
                "{tool} failed: {}\n{}\nserver log:\n{log}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// URL of the maintenance database.
    pub fn admin_url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Creates database `name` and returns its URL.
    pub async fn create_database(&self, name: &str) -> String {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&self.admin_url())
            .await
            .unwrap_or_else(|e| panic!("connect to test PostgreSQL: {e}"));
        sqlx::query(&format!("CREATE DATABASE \"{name}\""))
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("create database {name}: {e}"));
        let _ = conn.close().await;
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let data = self.data_dir();
        let exe = self.bin.join("pg_ctl");
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        let _ = cmd
            .arg("-D")
            .arg(&data)
            .args(["-m", "immediate", "-w", "stop"])
            .output();
    }
}

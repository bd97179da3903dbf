//! A plan that targets a running gateway by URL (issue 32): nginx, started here in front
//! of the kit's echo, with an API-key check on `/secured/v1/` (the "other gateway" of
//! docs/capacity-planning.md). The plan's token source (a file of keys, sent through a
//! header template) gets the secured cells through; a wrong key gets every request
//! refused, which shows the header is what nginx checked. Baselines go to the echo
//! named as the target's back end.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use turnpike_bench::echo::{spawn, EchoConfig};
use turnpike_bench::matrix::{self, MatrixArgs, MatrixResults};
use turnpike_bench::plan::{Scenario, Via};

struct Nginx(Child);

impl Drop for Nginx {
    /// A graceful stop (SIGQUIT): a killed master leaves its worker behind, holding the
    /// test's output pipe.
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-QUIT", &self.0.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// nginx on a free port proxying `/echo/v1/` and, with `apikey: k1` or `k2`,
/// `/secured/v1/` to `echo`.
fn nginx(dir: &Path, echo: &str) -> (Nginx, String) {
    let port = free_port();
    let d = dir.display();
    let conf = format!(
        "worker_processes 1;\nerror_log {d}/error.log;\npid {d}/nginx.pid;\nevents {{ worker_connections 256; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
         fastcgi_temp_path {d}/fcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
         upstream echo {{ server {echo}; keepalive 16; }}\n\
         map $http_apikey $key_ok {{ default 0; k1 1; k2 1; }}\n\
         server {{\n    listen 127.0.0.1:{port};\n\
         location /echo/v1/ {{ proxy_http_version 1.1; proxy_set_header Connection \"\"; proxy_pass http://echo/; }}\n\
         location /secured/v1/ {{ if ($key_ok = 0) {{ return 401; }} proxy_http_version 1.1; proxy_set_header Connection \"\"; proxy_pass http://echo/; }}\n\
         }}\n}}\n"
    );
    let path = dir.join("nginx.conf");
    std::fs::write(&path, conf).expect("nginx.conf");
    let bin = ["/usr/sbin/nginx", "nginx"]
        .into_iter()
        .find(|b| Path::new(b).exists())
        .unwrap_or("nginx");
    let child = Command::new(bin)
        .arg("-p")
        .arg(dir)
        .arg("-c")
        .arg(&path)
        .arg("-e")
        .arg(dir.join("error.log"))
        .args(["-g", "daemon off;"])
        .spawn()
        .expect("nginx (scripts/install-test-deps.sh installs it)");
    let proc = Nginx(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nginx did not listen on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
    (proc, format!("http://127.0.0.1:{port}"))
}

async fn run_plan(dir: &Path, name: &str, body: &str) -> MatrixResults {
    let plan = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &plan,
        format!(
            "name: {name}\nscenarios: [passthrough, secured-passthrough]\nusers: [2]\nsizes: [50]\n\
             delays_ms: [0]\nwarmup: 50ms\nduration: 300ms\npin: off\n{body}"
        ),
    )
    .expect("plan");
    let out: PathBuf = dir.join(name);
    let args = MatrixArgs {
        plan: plan.to_string_lossy().into_owned(),
        out: out.clone(),
        turnpike: None,
        echo_url: None,
        gateway_url: None,
        gateway_pid: None,
        insecure: false,
        no_gateway: false,
        threads: Some(1),
        slo: vec!["avg=100ms".into()],
        label: Some("test".into()),
        compare: Vec::new(),
    };
    matrix::run(args).await.expect("matrix");
    let text = std::fs::read_to_string(out.join("results.json")).expect("results");
    serde_json::from_str(&text).expect("json")
}

fn error_pct(r: &MatrixResults, s: Scenario) -> f64 {
    let c = r
        .cells
        .iter()
        .find(|c| c.via == Via::Gateway && c.scenario == Some(s))
        .expect("cell");
    let res = c.result.as_ref().unwrap_or_else(|| panic!("{c:?}"));
    assert!(res.summary.samples > 0, "{c:?}");
    res.summary.error_pct
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_drives_nginx_by_url_with_keys_from_a_token_file() {
    let echo = spawn(EchoConfig::default()).await.expect("echo");
    let dir = tempfile::tempdir().expect("tmp");
    let (_nginx, url) = nginx(dir.path(), &echo.to_string());
    std::fs::write(dir.path().join("keys.txt"), "k1\nk2\n").expect("keys");
    let keys = dir.path().join("keys.txt");
    let target = |token: &str| {
        format!(
            "target:\n  url: {url}\n  backend: http://{echo}\n  token: {{ {token}, header: \"apikey: {{token}}\" }}\n"
        )
    };
    let ok = run_plan(
        dir.path(),
        "nginx",
        &target(&format!("file: \"{}\"", keys.display())),
    )
    .await;
    assert_eq!(ok.gateway, url);
    assert_eq!(error_pct(&ok, Scenario::Passthrough), 0.0);
    assert_eq!(error_pct(&ok, Scenario::SecuredPassthrough), 0.0);
    assert!(ok.setup.credential.contains("apikey"), "{:?}", ok.setup);
    let direct = ok
        .cells
        .iter()
        .find(|c| c.via == Via::Direct)
        .expect("baseline");
    let d = direct.result.as_ref().expect("baseline ran");
    assert!(d.url.starts_with(&format!("http://{echo}")), "{}", d.url);
    let md = std::fs::read_to_string(dir.path().join("nginx/summary.md")).expect("md");
    assert!(md.contains(&format!("- Gateway: {url}")), "{md}");

    let refused = run_plan(dir.path(), "nginx-wrong-key", &target("value: nope")).await;
    assert_eq!(error_pct(&refused, Scenario::Passthrough), 0.0);
    assert_eq!(error_pct(&refused, Scenario::SecuredPassthrough), 100.0);
}

//! Secrets given by environment stay out of the output (issue 11, defect 9): a control
//! plane started with `TURNPIKE_ADMIN_PASSWORD` at debug log level, used with that
//! password, never prints it on stdout or stderr.

mod support;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{TempDir, BIN};

const PASSWORD: &str = "s3cret-from-the-environment-9d1f";

#[test]
fn the_admin_password_from_the_environment_is_never_printed() {
    let dir = TempDir::new();
    let db = format!("sqlite://{}", dir.path().join("turnpike.db").display());
    let out_file = dir.path().join("out.log");
    let out = std::fs::File::create(&out_file).expect("log file");
    let child = Command::new(BIN)
        .args(["control-plane", "--database", &db, "--port", "0"])
        .env("TURNPIKE_ADMIN_PASSWORD", PASSWORD)
        .env("TURNPIKE_LOG", "debug")
        .stdout(out.try_clone().expect("dup"))
        .stderr(out)
        .stdin(Stdio::null())
        .spawn()
        .expect("spawn turnpike");
    let child_guard = support::Proc(child);
    // Wait for the listening line, then use the password once (a login).
    let deadline = Instant::now() + Duration::from_secs(30);
    let addr = loop {
        let text = std::fs::read_to_string(&out_file).unwrap_or_default();
        if let Some(rest) = text.split("control plane listening on http://").nth(1) {
            break rest.lines().next().unwrap_or_default().trim().to_owned();
        }
        assert!(Instant::now() < deadline, "never listened:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let login = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-u"])
        .arg(format!("admin:{PASSWORD}"))
        .arg(format!("http://{addr}/api/am/publisher/v1/apis"))
        .output()
        .expect("curl");
    assert_eq!(
        String::from_utf8_lossy(&login.stdout),
        "200",
        "the password works"
    );
    std::thread::sleep(Duration::from_millis(300));
    drop(child_guard); // kills and waits
    let mut text = String::new();
    std::fs::File::open(&out_file)
        .and_then(|mut f| f.read_to_string(&mut text))
        .expect("read output");
    assert!(text.contains("DEBUG"), "debug logging was on:\n{text}");
    assert!(
        !text.contains(PASSWORD),
        "the password leaked into the output:\n{text}"
    );
}

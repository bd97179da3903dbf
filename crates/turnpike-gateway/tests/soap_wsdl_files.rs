//! A SOAP API whose WSDL imports its types from other files (`soap.files`), over real
//! sockets: `?wsdl` serves the root with every relative `schemaLocation` pointing at the
//! API (`?xsd=PATH`), each imported file is served there with its own references
//! rewritten, an unknown file is 404; and zeep, a real SOAP client, loads the served WSDL
//! (fetching every file through the gateway) and calls the service through it.
//! zeep comes from scripts/install-test-deps.sh (Debian's python3-zeep, for the system
//! interpreter `/usr/bin/python3`, which a pyenv `python3` on PATH would not see).

mod support;

use std::collections::BTreeMap;

use serde_json::json;
use support::{client, gateway};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/soap_multifile");
const ROOT: &str = include_str!("data/soap_multifile/echo.wsdl");
const ECHO_XSD: &str = include_str!("data/soap_multifile/xsd/echo.xsd");
const TEXT_XSD: &str = include_str!("data/soap_multifile/xsd/common/text.xsd");

fn soap_api(endpoint: &str) -> String {
    let files: BTreeMap<&str, &str> = BTreeMap::from([
        ("xsd/echo.xsd", ECHO_XSD),
        ("xsd/common/text.xsd", TEXT_XSD),
    ]);
    let soap = json!({"type": "SOAP", "port": "Echo11", "wsdl": ROOT, "files": files});
    format!(
        "apis:\n  - name: multi\n    context: /multi\n    version: v1\n    endpoints: [\"{endpoint}\"]\n    soap: {soap}\n"
    )
}

async fn get(url: String) -> (u16, String) {
    let r = client().get(url).send().await.expect("send");
    (r.status().as_u16(), r.text().await.expect("text"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_file_wsdl_is_served_whole_and_zeep_calls_through_it() {
    let echo = turnpike_bench::echo::spawn(turnpike_bench::echo::EchoConfig {
        soap: true,
        ..Default::default()
    })
    .await
    .expect("echo starts");
    let gw = gateway(&soap_api(&format!("http://{echo}/soap"))).await;
    let base = format!("http://{}/multi/v1", gw.http);

    let (status, root) = get(gw.url("/multi/v1?wsdl")).await;
    assert_eq!(status, 200, "{root}");
    assert!(
        root.contains(&format!("schemaLocation=\"{base}?xsd=xsd/echo.xsd\"")),
        "{root}"
    );
    assert!(root.contains(&format!("location=\"{base}\"")), "{root}");
    let (status, echo_xsd) = get(format!("{base}?xsd=xsd/echo.xsd")).await;
    assert_eq!(status, 200, "{echo_xsd}");
    // Relative to its own folder, as the file wrote it.
    assert!(
        echo_xsd.contains(&format!(
            "schemaLocation=\"{base}?xsd=xsd/common/text.xsd\""
        )),
        "{echo_xsd}"
    );
    let (status, text_xsd) = get(format!("{base}?xsd=xsd%2Fcommon%2Ftext.xsd")).await;
    assert_eq!((status, text_xsd.as_str()), (200, TEXT_XSD));
    let (status, _) = get(format!("{base}?xsd=xsd/none.xsd")).await;
    assert_eq!(status, 404);

    // A real SOAP client loads it all through the gateway and calls the service.
    let url = format!("{base}?wsdl");
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("/usr/bin/python3")
            .arg(format!("{DIR}/zeep_echo.py"))
            .arg(&url)
            .arg("hello from zeep")
            .output()
    })
    .await
    .expect("join")
    .expect("python3 runs (scripts/install-test-deps.sh installs python3-zeep)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "zeep failed: {stderr}");
    assert!(stdout.contains("hello from zeep"), "{stdout} {stderr}");
}

//! SOAP end to end with real processes: `turnpike echo --soap` as the SOAP service,
//! `turnpike control-plane`, where the echo's WSDL is imported through the Publisher API
//! (`POST /apis/import-wsdl`, pass-through) and `turnpike apply` (a `soap:` section,
//! SOAP-to-REST) and published,
//! and `turnpike gateway --control-plane`, which then serves SOAP envelopes, JSON calls
//! turned into SOAP and back, `?wsdl` with its own address, and gateway errors as Faults.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{start, start_env, TempDir};

const TOKEN: &str = "e2e-soap-gateway-token";
const PASSWORD: &str = "e2e-soap-admin-password";
const WSDL: &str = include_str!("../../../bench/soap/echo.wsdl");

async fn import(c: &reqwest::Client, cp: &str, body: Value) -> String {
    let r = c
        .post(format!("http://{cp}/api/am/publisher/v1/apis/import-wsdl"))
        .basic_auth("admin", Some(PASSWORD))
        .json(&body)
        .send()
        .await
        .expect("import");
    assert_eq!(r.status(), 201);
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["soap"]["problems"], json!([]), "{v}");
    let id = v["id"].as_str().expect("id").to_owned();
    let r = c
        .post(format!(
            "http://{cp}/api/am/publisher/v1/apis/change-lifecycle?apiId={id}&action=Publish"
        ))
        .basic_auth("admin", Some(PASSWORD))
        .send()
        .await
        .expect("publish");
    assert_eq!(r.status(), 200);
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imported_wsdl_apis_serve_soap_through_the_real_binary() {
    let dir = TempDir::new();
    let (_echo, echo) = start(
        &["echo", "--soap", "--port", "0"],
        "echo listening on http://",
    );
    let db = format!("sqlite://{}", dir.path().join("turnpike.db").display());
    let (_cp, cp) = start_env(
        &[
            "control-plane",
            "--database",
            &db,
            "--port",
            "0",
            "--gateway-token",
            TOKEN,
        ],
        &[("TURNPIKE_ADMIN_PASSWORD", PASSWORD)],
        "control plane listening on http://",
    );
    let data = dir.path().join("gw");
    let (_gw, gw) = start(
        &[
            "gateway",
            "--control-plane",
            &format!("http://{cp}"),
            "--gateway-token",
            TOKEN,
            "--gateway-id",
            "gw1",
            "--http-port",
            "0",
            "--https-port",
            "off",
            "--data-dir",
            data.to_str().expect("utf-8 path"),
        ],
        "gateway listening on http://",
    );
    let c = reqwest::Client::new();
    let endpoint = format!("http://{echo}/soap");
    let soap_id = import(
        &c,
        &cp,
        json!({"wsdl": WSDL, "type": "SOAP", "port": "Echo12",
               "additionalProperties": {"context": "/soap", "endpoints": [endpoint]}}),
    )
    .await;
    // The SOAP-to-REST API through `turnpike apply` and a file's `soap:` section.
    let file = dir.path().join("apis.yaml");
    let wsdl = Value::String(WSDL.to_owned()).to_string();
    std::fs::write(
        &file,
        format!(
            "apis:\n  - name: soaprest\n    context: /soaprest\n    version: v1\n    \
             endpoints: [\"{endpoint}\"]\n    auth: none\n    soap: {{ type: SOAP_TO_REST, port: Echo11, wsdl: {wsdl} }}\n"
        ),
    )
    .expect("write apis file");
    for run in 0..2 {
        let out = std::process::Command::new(support::BIN)
            .args(["apply", "-f", file.to_str().expect("utf-8 path")])
            .args([
                "--control-plane",
                &format!("http://{cp}"),
                "--user",
                "admin",
            ])
            .env("TURNPIKE_PASSWORD", PASSWORD)
            .env("TURNPIKE_LOG", "warn")
            .output()
            .expect("run turnpike apply");
        let printed = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{printed} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The first run creates and publishes; the second finds nothing to change.
        assert_eq!(
            printed.contains("create") && printed.contains("publish"),
            run == 0,
            "{printed}"
        );
    }
    // SOAP-to-REST: JSON in, SOAP 1.1 to the echo, JSON back (once the gateway has it).
    let call = || {
        c.post(format!("http://{gw}/soaprest/v1/echo"))
            .header("content-type", "application/json")
            .body(json!({"p": "a < b & \"c\""}).to_string())
            .send()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let r = loop {
        let r = call().await.expect("call");
        if r.status() != 404 || std::time::Instant::now() > deadline {
            break r;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.expect("json");
    assert_eq!(v, json!({"p": "a < b & \"c\""}));
    // Pass-through: a SOAP 1.2 envelope forwarded and answered by the echo service.
    let envelope = "<s:Envelope xmlns:s=\"http://www.w3.org/2003/05/soap-envelope\"><s:Body>\
        <e:echo xmlns:e=\"urn:tp:echo\"><e:p>hello</e:p></e:echo></s:Body></s:Envelope>";
    let send = || {
        c.post(format!("http://{gw}/soap/v1"))
            .header(
                "content-type",
                "application/soap+xml; charset=utf-8; action=\"urn:tp:echo#echo\"",
            )
            .body(envelope)
            .send()
    };
    let until_not = |status: u16| async move {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let r = send().await.expect("call");
            if r.status() != status || std::time::Instant::now() > deadline {
                break r;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    // The control plane secures new APIs: without a credential, the gateway's 401 is a
    // SOAP 1.2 Fault carrying the status.
    let r = until_not(404).await;
    assert_eq!(r.status(), 401);
    let text = r.text().await.expect("text");
    assert!(
        text.contains("soapenv:Sender") && text.contains("<turnpike:status>401</turnpike:status>"),
        "{text}"
    );
    let r = c
        .put(format!(
            "http://{cp}/api/am/publisher/v1/apis/{soap_id}/security"
        ))
        .basic_auth("admin", Some(PASSWORD))
        .json(&json!("none"))
        .send()
        .await
        .expect("open the API");
    assert_eq!(r.status(), 200);
    let r = until_not(401).await;
    assert_eq!(r.status(), 200);
    let text = r.text().await.expect("text");
    assert!(
        text.contains("echoResponse") && text.contains(">hello<"),
        "{text}"
    );
    // `?wsdl` names the gateway.
    let r = c
        .get(format!("http://{gw}/soap/v1?wsdl"))
        .send()
        .await
        .expect("wsdl");
    assert_eq!(r.status(), 200);
    let text = r.text().await.expect("text");
    assert!(
        text.contains(&format!("location=\"http://{gw}/soap/v1\"")),
        "{text}"
    );
    // A refused envelope is a SOAP 1.2 Fault.
    let r = c
        .post(format!("http://{gw}/soap/v1"))
        .header("content-type", "application/soap+xml; charset=utf-8")
        .body("<notsoap/>")
        .send()
        .await
        .expect("call");
    assert_eq!(r.status(), 400);
    let text = r.text().await.expect("text");
    assert!(text.contains("soapenv:Sender"), "{text}");
}

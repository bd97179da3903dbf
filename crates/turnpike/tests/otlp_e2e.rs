//! OpenTelemetry traces through the real binary: `turnpike gateway --otlp-endpoint`
//! against a minimal OTLP/HTTP collector started here (decoding the official protobuf
//! messages) and an upstream that records the `traceparent` it receives. A caller's
//! trace is continued (its span is the parent of the gateway's; the upstream's parent is
//! the gateway's upstream span), a request without one (or with an invalid one) starts a
//! new trace, and the collector receives both spans of each request. The request's
//! analytics event carries its trace id.

mod support;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::{span::SpanKind, Span};
use prost::Message;
use support::{start, TempDir};

/// Serves HTTP/1.1 keep-alive connections on a thread each; `handle` gets the headers
/// (lower-cased names) and body of each request and returns the response body.
fn serve(
    handle: impl Fn(&HashMap<String, String>, &[u8]) -> &'static str + Send + Sync + 'static,
) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let handle = Arc::new(handle);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let handle = handle.clone();
            std::thread::spawn(move || connection(stream, &*handle));
        }
    });
    addr
}

fn connection(stream: TcpStream, handle: &dyn Fn(&HashMap<String, String>, &[u8]) -> &'static str) {
    let mut out = stream.try_clone().expect("clone");
    let mut r = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut headers = HashMap::new();
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
            }
        }
        let len: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0u8; len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        let answer = handle(&headers, &body);
        let resp = format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{answer}",
            answer.len()
        );
        if out.write_all(resp.as_bytes()).is_err() {
            return;
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

struct Lab {
    dir: TempDir,
    _gw: support::Proc,
    gateway: String,
    spans: Arc<Mutex<Vec<Span>>>,
    seen: Arc<Mutex<Vec<String>>>,
}

fn lab() -> Lab {
    let spans = Arc::new(Mutex::new(Vec::new()));
    let got = spans.clone();
    let collector = serve(move |h, body| {
        assert_eq!(
            h.get("content-type").map(String::as_str),
            Some("application/x-protobuf")
        );
        let req = ExportTraceServiceRequest::decode(body).expect("an OTLP export request");
        for rs in req.resource_spans {
            for ss in rs.scope_spans {
                got.lock().expect("spans").extend(ss.spans);
            }
        }
        ""
    });
    let seen = Arc::new(Mutex::new(Vec::new()));
    let saw = seen.clone();
    let upstream = serve(move |h, _| {
        saw.lock()
            .expect("seen")
            .push(h.get("traceparent").cloned().unwrap_or_default());
        "ok"
    });
    let dir = TempDir::new();
    let cfg = dir.path().join("apis.yaml");
    std::fs::write(
        &cfg,
        format!(
            "apis:\n  - name: traced\n    context: /t\n    version: v1\n    \
             endpoints: [\"http://{upstream}\"]\n    resources:\n      \
             - {{ path: \"/items/{{id}}\", methods: [GET] }}\n"
        ),
    )
    .expect("config");
    let cfg = cfg.to_string_lossy().into_owned();
    let data = dir.path().join("data").to_string_lossy().into_owned();
    let endpoint = format!("http://{collector}");
    let events = dir
        .path()
        .join("events.jsonl")
        .to_string_lossy()
        .into_owned();
    let (gw, gateway) = start(
        &[
            "gateway",
            "--config",
            &cfg,
            "--http-port",
            "0",
            "--https-port",
            "off",
            "--data-dir",
            &data,
            "--otlp-endpoint",
            &endpoint,
            "--analytics-file",
            &events,
        ],
        "gateway listening on http://",
    );
    Lab {
        dir,
        _gw: gw,
        gateway,
        spans,
        seen,
    }
}

fn get(url: &str, traceparent: Option<&str>) -> u16 {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-o", "/dev/null", "-w", "%{http_code}"]);
    if let Some(tp) = traceparent {
        cmd.args(["-H", &format!("traceparent: {tp}")]);
    }
    let out = cmd.arg(url).output().expect("curl");
    String::from_utf8_lossy(&out.stdout).parse().unwrap_or(0)
}

/// The spans of trace `trace_id` once both (server and client) arrived.
fn spans_of(lab: &Lab, trace_id: &str) -> (Span, Span) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        {
            let spans = lab.spans.lock().expect("spans");
            let mine: Vec<&Span> = spans
                .iter()
                .filter(|s| hex(&s.trace_id) == trace_id)
                .collect();
            let server = mine.iter().find(|s| s.kind == SpanKind::Server as i32);
            let client = mine.iter().find(|s| s.kind == SpanKind::Client as i32);
            if let (Some(s), Some(c)) = (server, client) {
                return ((*s).clone(), (*c).clone());
            }
        }
        assert!(
            Instant::now() < deadline,
            "no spans of trace {trace_id} arrived"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The upstream's last `traceparent`: (trace id, parent id).
fn last_seen(lab: &Lab) -> (String, String) {
    let tp = lab
        .seen
        .lock()
        .expect("seen")
        .last()
        .cloned()
        .unwrap_or_default();
    let parts: Vec<&str> = tp.split('-').collect();
    assert_eq!(parts.len(), 4, "a traceparent reached the upstream: {tp:?}");
    assert_eq!(parts[0], "00");
    (parts[1].to_owned(), parts[2].to_owned())
}

#[test]
fn a_callers_trace_is_continued_and_both_spans_are_exported() {
    let lab = lab();
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let url = format!("http://{}/t/v1/items/7", lab.gateway);
    assert_eq!(
        get(&url, Some(&format!("00-{trace}-{caller_span}-01"))),
        200
    );
    let (seen_trace, seen_parent) = last_seen(&lab);
    assert_eq!(
        seen_trace, trace,
        "the upstream continues the caller's trace"
    );
    assert_ne!(
        seen_parent, caller_span,
        "the upstream's parent is the gateway's span"
    );

    let (server, client) = spans_of(&lab, trace);
    assert_eq!(hex(&server.parent_span_id), caller_span);
    assert_eq!(hex(&client.parent_span_id), hex(&server.span_id));
    assert_eq!(hex(&client.span_id), seen_parent);
    assert_eq!(server.name, "GET /items/{id}");
    assert!(server.start_time_unix_nano <= client.start_time_unix_nano);
    assert!(client.end_time_unix_nano <= server.end_time_unix_nano);
    let status = server
        .attributes
        .iter()
        .find(|a| a.key == "http.response.status_code")
        .and_then(|a| a.value.clone())
        .and_then(|v| v.value);
    assert_eq!(
        status,
        Some(opentelemetry_proto::tonic::common::v1::any_value::Value::IntValue(200))
    );

    // The analytics event of the request names the same trace.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(lab.dir.path().join("events.jsonl")).unwrap_or_default();
        let found = text.lines().any(|l| {
            serde_json::from_str::<serde_json::Value>(l).is_ok_and(|e| e["trace_id"] == trace)
        });
        if found {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no analytics event with trace {trace}: {text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn without_a_valid_traceparent_a_new_trace_starts() {
    let lab = lab();
    let url = format!("http://{}/t/v1/items/1", lab.gateway);
    assert_eq!(get(&url, None), 200);
    let (first, _) = last_seen(&lab);
    let (server, _) = spans_of(&lab, &first);
    assert!(server.parent_span_id.is_empty(), "a root span");

    // Upper-case hex is not a valid traceparent: ignored, a new trace starts.
    let bad = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01";
    assert_eq!(get(&url, Some(bad)), 200);
    let (second, _) = last_seen(&lab);
    assert_ne!(second, first);
    assert_ne!(second, "4bf92f3577b34da6a3ce929d0e0e4736");
    let (server, _) = spans_of(&lab, &second);
    assert!(server.parent_span_id.is_empty());
}

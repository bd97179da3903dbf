//! JMeter's CSV results (JTL): the kit writes its samples in JMeter's default columns and
//! reads them back to the same statistics; a JTL as JMeter writes it (failures with "Non
//! HTTP response code", quoted labels, 4xx marked unsuccessful) reads into per-label rows.

use std::time::Duration;

use turnpike_bench::echo::{spawn, EchoConfig};
use turnpike_bench::jtl::{self, TOTAL};
use turnpike_bench::run::{execute, RunArgs};

fn close(a: f64, b: f64, abs: f64) -> bool {
    (a - b).abs() <= abs
}

/// 8 users against a 3 ms echo for 1 s: the JTL the run writes has JMeter's header and
/// 17 fields a row, and the report built from it equals the run's own summary: samples,
/// errors and bytes exactly, latencies within the JTL's 1 ms rounding, throughput within
/// the difference between the configured window and the samples' span.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kit_to_jtl_to_report_round_trip() {
    let cfg = EchoConfig {
        delay: Duration::from_millis(3),
        ..EchoConfig::default()
    };
    let url = format!("http://{}/bench", spawn(cfg).await.expect("echo"));
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("run.jtl");
    let mut args = RunArgs::closed(url, 8, Duration::from_secs(1), Duration::from_millis(200));
    args.threads = Some(1);
    args.size = Some(100);
    args.jtl = Some(path.clone());
    let kit = execute(&args).await.expect("run").summary;
    assert!(kit.samples > 100, "{kit:?}");

    let text = std::fs::read_to_string(&path).expect("jtl");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(jtl::HEADER));
    let first: Vec<&str> = lines.next().expect("a row").split(',').collect();
    assert_eq!(first.len(), 17, "{first:?}");
    assert_eq!(
        (first[2], first[3], first[4], first[7]),
        ("POST /bench", "200", "OK", "true")
    );
    assert_eq!(text.lines().count() as u64, kit.samples + 1);

    let rows = jtl::summaries(&path).expect("read back");
    let (label, back) = rows.last().expect("total");
    assert_eq!(label, TOTAL);
    assert_eq!((back.samples, back.errors), (kit.samples, kit.errors));
    let bytes = |kbps: f64, s: &turnpike_bench::stats::Summary| kbps * s.duration_s;
    assert!(close(
        bytes(back.received_kbps, back),
        bytes(kit.received_kbps, &kit),
        0.01
    ));
    assert!(close(
        bytes(back.sent_kbps, back),
        bytes(kit.sent_kbps, &kit),
        0.01
    ));
    for (a, b, what) in [
        (back.avg_ms, kit.avg_ms, "avg"),
        (back.p50_ms, kit.p50_ms, "p50"),
        (back.p90_ms, kit.p90_ms, "p90"),
        (back.max_ms, kit.max_ms, "max"),
    ] {
        assert!(close(a, b, 1.0), "{what}: JTL {a} ms, kit {b} ms");
    }
    assert!(
        (back.throughput_rps / kit.throughput_rps - 1.0).abs() < 0.05,
        "throughput JTL {} kit {}",
        back.throughput_rps,
        kit.throughput_rps
    );
}

/// Rows as JMeter 5.6 writes them with its default settings (start time stamps, a header
/// line, `sampleresult.timestamp.start=true`): a connection failure, a quoted label, a 401.
const JMETER_JTL: &str = "\
timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect
1764230400000,12,GET echo,200,OK,Thread Group 1-1,text,true,,245,118,2,2,http://127.0.0.1:9000/echo,11,0,3
1764230400010,20,GET echo,200,OK,Thread Group 1-2,text,true,,245,118,2,2,http://127.0.0.1:9000/echo,19,0,0
1764230400020,1003,GET echo,Non HTTP response code: java.net.SocketTimeoutException,Non HTTP response message: Read timed out,Thread Group 1-1,text,false,,2431,118,2,2,http://127.0.0.1:9000/echo,0,0,1
1764230400030,8,\"Login, step 1\",401,Unauthorized,Thread Group 1-2,text,false,,180,130,2,2,http://127.0.0.1:9000/login,8,0,0
1764230401990,10,\"Login, step 1\",200,OK,Thread Group 1-2,text,true,,180,130,2,2,http://127.0.0.1:9000/login,10,0,0
";

#[test]
fn a_jtl_as_jmeter_writes_it_reads_per_label() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("jmeter.jtl");
    std::fs::write(&path, JMETER_JTL).expect("write");
    let rows = jtl::summaries(&path).expect("read");
    let names: Vec<&str> = rows.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(names, ["GET echo", "Login, step 1", TOTAL]);
    let echo = &rows[0].1;
    // The timeout is a sample and an error; its elapsed time is not a latency.
    assert_eq!((echo.samples, echo.errors), (3, 1));
    assert!(close(echo.avg_ms, 16.0, 0.05), "avg {}", echo.avg_ms);
    let login = &rows[1].1;
    assert_eq!(
        (login.samples, login.errors),
        (2, 1),
        "a 401 is unsuccessful"
    );
    let total = &rows[2].1;
    assert_eq!((total.samples, total.errors), (5, 2));
    // JMeter's window: first start (…400000) to last end (…402000), 2.001 s with the
    // kit's inclusive last millisecond.
    assert!(
        close(total.throughput_rps, 5.0 / 2.001, 1e-6),
        "{}",
        total.throughput_rps
    );
    let table = jtl::markdown(&rows);
    assert!(
        table.starts_with("| Label | # Samples | Average ms |"),
        "{table}"
    );
    assert!(table.contains("| Login, step 1 | 2 |"), "{table}");
}

#[test]
fn a_file_that_is_not_a_jtl_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("x.csv");
    std::fs::write(&path, "a,b\n1,2\n").expect("write");
    let err = jtl::summaries(&path).expect_err("not a JTL").to_string();
    assert!(err.contains("timeStamp"), "{err}");
    std::fs::write(&path, format!("{}\n2026/11/27 10:00:00,5,x\n", jtl::HEADER)).expect("write");
    let err = jtl::summaries(&path).expect_err("date stamps").to_string();
    assert!(err.contains("line 2") && err.contains("epoch ms"), "{err}");
}

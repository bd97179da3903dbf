//! The matrix plumbing end to end without a gateway: a small plan against an in-process
//! echo back end (delays sent as `?delay_ms=`), baselines measured, gateway cells and
//! unbuilt scenarios skipped with a reason, and the report left in the output directory.

use turnpike_bench::echo::{spawn, EchoConfig};
use turnpike_bench::matrix::{self, MatrixArgs, MatrixResults};
use turnpike_bench::plan::Via;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn baseline_only_matrix_leaves_results_and_report() {
    let echo = spawn(EchoConfig::default()).await.expect("echo");
    let dir = tempfile::tempdir().expect("tmp");
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "name: tiny\nscenarios: [passthrough, get, transformation]\nusers: [1, 2, 4]\nsizes: [50, 100]\n\
         delays_ms: [0, 20]\nwarmup: 50ms\nduration: 200ms\npin: off\n",
    )
    .expect("plan");
    let out = dir.path().join("out");
    let args = MatrixArgs {
        plan: plan.to_string_lossy().into_owned(),
        out: out.clone(),
        turnpike: None,
        echo_url: Some(format!("http://{echo}")),
        gateway_url: None,
        gateway_pid: None,
        insecure: false,
        no_gateway: true,
        threads: Some(1),
        slo: vec!["avg=10ms".into()],
        label: Some("test".into()),
        compare: Vec::new(),
    };
    matrix::run(args).await.expect("matrix");

    let results: MatrixResults =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).expect("results"))
            .expect("json");
    let direct: Vec<_> = results
        .cells
        .iter()
        .filter(|c| c.via == Via::Direct)
        .collect();
    // GET and POST baselines for 3 users x 2 sizes x 2 delays.
    assert_eq!(direct.len(), 24);
    for c in &direct {
        let r = c.result.as_ref().expect("baseline measured");
        assert!(r.summary.samples > 0 && r.summary.errors == 0, "{c:?}");
        if c.delay_ms == 20 {
            assert!(
                r.summary.min_ms >= 19.9,
                "delay not applied: {}",
                r.summary.min_ms
            );
        }
        if c.method == "GET" {
            // The echo answered GET with the cell's size.
            let per_req = r.summary.received_kbps * 1024.0 / r.summary.throughput_rps;
            assert!(
                per_req >= c.size as f64,
                "{per_req} B per GET of size {}",
                c.size
            );
        }
    }
    let skipped: Vec<_> = results
        .cells
        .iter()
        .filter(|c| c.via == Via::Gateway)
        .collect();
    assert_eq!(skipped.len(), 36);
    assert!(skipped
        .iter()
        .all(|c| c.result.is_none() && c.skipped.is_some()));
    // The transformation scenario is built: without a gateway it is skipped for that.
    assert!(skipped
        .iter()
        .filter(|c| c.scenario == Some(turnpike_bench::plan::Scenario::Transformation))
        .all(|c| c
            .skipped
            .as_deref()
            .is_some_and(|s| s.contains("--no-gateway"))));
    for f in [
        "summary.md",
        "summary.csv",
        "index.html",
        "charts/throughput-size-d0.svg",
        "charts/avg-delay-s50.svg",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let csv = std::fs::read_to_string(out.join("summary.csv")).expect("csv");
    assert_eq!(csv.lines().count(), 1 + 24);
}

//! Cost of recording one request in the gateway's metrics (`GatewayMetrics::observe`):
//! the per-API table lookup, the status-class counter and the duration histogram, on a
//! hit (the common case) and for a request that matched no API.
//!
//! `cargo bench -p turnpike-gateway --bench metrics`

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use http::StatusCode;
use turnpike_config::Snapshot;
use turnpike_gateway::GatewayMetrics;

fn snapshot(apis: usize) -> Snapshot {
    let mut yaml = String::from("apis:\n");
    for i in 0..apis {
        yaml.push_str(&format!(
            "  - name: api{i}\n    context: /api{i}\n    version: v1\n    \
             endpoints: [\"http://127.0.0.1:1\"]\n    resources: [ {{ path: \"/*\", methods: [GET] }} ]\n"
        ));
    }
    match Snapshot::from_yaml(&yaml, "bench") {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    }
}

fn bench(c: &mut Criterion) {
    for apis in [1, 1000] {
        let snaps = Arc::new(ArcSwap::from_pointee(snapshot(apis)));
        let m = GatewayMetrics::new(snaps.clone());
        let api = snaps.load().apis.last().cloned();
        c.bench_function(&format!("observe/hit/{apis}-apis"), |b| {
            b.iter(|| {
                m.observe(
                    black_box(api.as_ref()),
                    StatusCode::OK,
                    Duration::from_micros(700),
                    None,
                )
            })
        });
    }
    let snaps = Arc::new(ArcSwap::from_pointee(snapshot(1)));
    let m = GatewayMetrics::new(snaps);
    c.bench_function("observe/unmatched", |b| {
        b.iter(|| m.observe(black_box(None), StatusCode::NOT_FOUND, Duration::ZERO, None))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! Routing cost against the number of APIs: 1, 100 and 10,000 APIs, each with a few
//! templated resources, a default version, and a host-limited tenth. The lookups hit
//! the last API compiled, a templated path, a 405 and a 404, so a linear scan would
//! show. `cargo bench -p turnpike-config --bench route`

use std::fmt::Write;

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use http::Method;
use turnpike_config::{RouteResult, Snapshot};

fn file(n: usize) -> String {
    let mut y = String::from("apis:\n");
    for i in 0..n {
        let host = if i % 10 == 9 {
            format!("    host: t{i}.example.com\n")
        } else {
            String::new()
        };
        let _ = write!(
            y,
            "  - name: api{i}
    context: /svc{i}/things
    version: v1
    default: true
{host}    endpoints: [\"http://127.0.0.1:9000\"]
    resources:
      - {{ path: \"/items\", methods: [GET, POST] }}
      - {{ path: \"/items/{{id}}\", methods: [GET, PUT, DELETE] }}
      - {{ path: \"/items/{{id}}/parts/{{part}}\", methods: [GET] }}
      - {{ path: \"/files/*\", methods: [GET] }}
"
        );
    }
    y
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("route");
    for n in [1usize, 100, 10_000] {
        let snap = match Snapshot::from_yaml(&file(n), "bench.yaml") {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        let last = n - 1;
        let item = format!("/svc{last}/things/v1/items/12345/parts/abc");
        let default = format!("/svc{last}/things/items/12345");
        let wildcard = format!("/svc{last}/things/v1/files/a/b/c.txt");
        let missing = format!("/svc{last}/thingz/v1/items");
        let cases: [(&str, Method, &str, Option<&str>); 5] = [
            ("templated", Method::GET, &item, Some("api.example.com")),
            ("default_version", Method::PUT, &default, None),
            ("wildcard", Method::GET, &wildcard, None),
            ("not_found", Method::GET, &missing, None),
            ("method_not_allowed", Method::PATCH, &item, None),
        ];
        for (name, method, path, host) in cases {
            g.bench_with_input(BenchmarkId::new(name, n), &n, |b, _| {
                b.iter(|| {
                    let r = snap.route(black_box(host), black_box(&method), black_box(path));
                    black_box(matches!(r, RouteResult::Matched { .. }))
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

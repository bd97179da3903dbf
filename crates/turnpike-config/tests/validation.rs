//! Every validation rule: each bad value is refused with its line, column and a plain
//! message, and all problems of a file are reported at once.

use turnpike_auth::policy::{AuthPolicy, ResourceRule};
use turnpike_config::{ConfigError, Location, Snapshot};

/// The problems of a file that must be refused, as "line:col message".
fn problems(yaml: &str) -> Vec<String> {
    match Snapshot::from_yaml(yaml, "bad.yaml") {
        Ok(_) => panic!("file was accepted:\n{yaml}"),
        Err(ConfigError::Problems(p)) => p
            .list
            .iter()
            .map(|p| match p.location {
                Some(Location { line, column }) => format!("{line}:{column} {}", p.message),
                None => format!("?:? {}", p.message),
            })
            .collect(),
        Err(e) => panic!("unexpected error {e}"),
    }
}

/// Asserts exactly one problem, at `line:col`, whose message contains `needle`.
fn refused_at(yaml: &str, at: &str, needle: &str) {
    let p = problems(yaml);
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(p[0].starts_with(&format!("{at} ")), "want {at}: {p:#?}");
    assert!(p[0].contains(needle), "want {needle:?}: {p:#?}");
}

/// A valid API at lines 2-8, with `field` replaced (line numbers stay put).
fn api_with(replace: &str, with: &str) -> String {
    let base = "apis:
  - name: echo
    context: /echo
    version: v1
    endpoints: [\"http://127.0.0.1:9000\"]
    resources:
      - { path: \"/*\", methods: [GET] }
";
    assert!(base.contains(replace), "{replace}");
    base.replacen(replace, with, 1)
}

#[test]
fn unknown_fields_are_refused_with_their_position() {
    refused_at(
        &api_with("    version: v1\n", "    version: v1\n    retries: 3\n"),
        "5:5",
        "unknown field `retries`",
    );
    refused_at("consumers: []\n", "1:1", "unknown field `consumers`");
    refused_at(
        &api_with("methods: [GET] }", "methods: [GET], mock: none }"),
        "7:39",
        "unknown field `mock`",
    );
}

#[test]
fn wrong_shapes_and_syntax_are_refused_with_their_position() {
    refused_at(
        &api_with("version: v1", "version: [v1]"),
        "4:14",
        "invalid type",
    );
    refused_at(
        &api_with("    context: /echo\n", ""),
        "2:5",
        "missing field `context`",
    );
    refused_at("apis:\n  - name: [\n", "2:11", "");
    refused_at("apis: 3\n", "1:7", "invalid type");
    refused_at(
        &api_with(
            "    version: v1\n",
            "    version: v1\n    load_balancing: random\n",
        ),
        "5:21",
        "unknown variant `random`",
    );
}

#[test]
fn context_must_be_a_path() {
    refused_at(
        &api_with("context: /echo", "context: echo"),
        "3:14",
        "must start with '/'",
    );
    refused_at(
        &api_with("context: /echo", "context: /"),
        "3:14",
        "cannot be \"/\"",
    );
    refused_at(
        &api_with("context: /echo", "context: /echo/"),
        "3:14",
        "empty segment",
    );
    refused_at(
        &api_with("context: /echo", "context: /e{x}"),
        "3:14",
        "may only use",
    );
}

#[test]
fn version_must_be_one_segment() {
    refused_at(
        &api_with("version: v1", "version: v/1"),
        "4:14",
        "version \"v/1\"",
    );
    refused_at(
        &api_with("version: v1", "version: \"\""),
        "4:14",
        "version \"\"",
    );
}

#[test]
fn endpoints_must_be_http_urls() {
    refused_at(
        &api_with("[\"http://127.0.0.1:9000\"]", "[\"127.0.0.1:9000\"]"),
        "5:17",
        "needs a scheme",
    );
    refused_at(
        &api_with("[\"http://127.0.0.1:9000\"]", "[\"http://a\", \"ftp://b\"]"),
        "5:29",
        "http or https",
    );
    refused_at(
        &api_with("[\"http://127.0.0.1:9000\"]", "[]"),
        "5:16",
        "at least one endpoint",
    );
}

#[test]
fn endpoint_ports_out_of_range_are_refused() {
    // Was accepted, and the traffic went to port 80.
    refused_at(
        &api_with(
            "[\"http://127.0.0.1:9000\"]",
            "[\"http://127.0.0.1:99999\"]",
        ),
        "5:17",
        "port \"99999\" is not a port number",
    );
    refused_at(
        &api_with(
            "[\"http://127.0.0.1:9000\"]",
            "[\"http://a:1\", \"https://b:0/x\"]",
        ),
        "5:31",
        "not a port number",
    );
}

#[test]
fn resources_need_valid_templates_and_methods() {
    refused_at(
        &api_with("path: \"/*\"", "path: \"pets\""),
        "7:17",
        "must start with '/'",
    );
    refused_at(
        &api_with("path: \"/*\"", "path: \"/a/*/b\""),
        "7:17",
        "last segment",
    );
    refused_at(
        &api_with("path: \"/*\"", "path: \"/{id\""),
        "7:17",
        "whole segment",
    );
    refused_at(
        &api_with("[GET]", "[GET, FETCH]"),
        "7:38",
        "unknown method \"FETCH\"",
    );
    refused_at(&api_with("[GET]", "[get]"), "7:33", "upper case");
    refused_at(&api_with("[GET]", "[]"), "7:32", "at least one method");
    refused_at(
        &api_with("      - { path: \"/*\", methods: [GET] }\n", ""),
        "6:14",
        "at least one resource",
    );
}

#[test]
fn limits_and_timeouts_need_units() {
    let with = |extra: &str| api_with("    version: v1\n", &format!("    version: v1\n{extra}"));
    refused_at(
        &with("    max_body_size: 10 parsecs\n"),
        "5:20",
        "unknown size unit",
    );
    refused_at(&with("    max_body_size: [1]\n"), "5:20", "invalid type");
    refused_at(&with("    timeouts: { connect: 5 }\n"), "5:26", "no unit");
    refused_at(&with("    timeouts: { response: 0s }\n"), "5:27", "zero");
    refused_at(
        &with("    timeouts: { idle: 1s }\n"),
        "5:17",
        "unknown field `idle`",
    );
    refused_at(&with("    host: \"a.*.com\"\n"), "5:11", "not a host name");
}

#[test]
fn the_same_context_and_version_twice_is_refused() {
    let yaml = "apis:
  - { name: a, context: /x, version: v1, endpoints: [\"http://h\"], resources: [{ path: /, methods: [GET] }] }
  - { name: b, context: /x, version: v1, endpoints: [\"http://h\"], resources: [{ path: /, methods: [GET] }] }
  - { name: c, context: /x, version: v1, host: a.com, endpoints: [\"http://h\"], resources: [{ path: /, methods: [GET] }] }
";
    refused_at(yaml, "3:38", "already declared by apis[0]");
}

#[test]
fn two_default_versions_of_one_context_are_refused() {
    let yaml = "apis:
  - { name: a, context: /x, version: v1, default: true, endpoints: [\"http://h\"], resources: [{ path: /, methods: [GET] }] }
  - { name: b, context: /x, version: v2, default: true, endpoints: [\"http://h\"], resources: [{ path: /, methods: [GET] }] }
";
    refused_at(yaml, "3:51", "already the default version");
}

#[test]
fn overlapping_routes_are_refused() {
    // /a default with /b/* overlaps /a/b's default /*.
    let yaml = "apis:
  - { name: a, context: /a, version: v1, default: true, endpoints: [\"http://h\"], resources: [{ path: \"/b/*\", methods: [GET] }] }
  - { name: b, context: /a/b, version: v1, default: true, endpoints: [\"http://h\"], resources: [{ path: \"/*\", methods: [GET] }] }
";
    refused_at(yaml, "3:104", "would match both apis[0]");
    // The same path and method twice in one API.
    refused_at(
        &api_with("      - { path: \"/*\", methods: [GET] }\n", "      - { path: \"/{id}\", methods: [GET] }\n      - { path: \"/{x}\", methods: [POST, GET] }\n"),
        "8:17",
        "already declared by apis[0].resources[0].path",
    );
}

#[test]
fn every_problem_is_reported_at_once_in_document_order() {
    let yaml = "apis:
  - name: \"\"
    context: echo
    version: v1
    endpoints: [\"nope\"]
    max_body_size: lots
    resources:
      - { path: \"x\", methods: [FETCH] }
";
    let p = problems(yaml);
    let at: Vec<&str> = p.iter().filter_map(|p| p.split(' ').next()).collect();
    assert_eq!(
        at,
        ["2:11", "3:14", "5:17", "6:20", "8:17", "8:32"],
        "{p:#?}"
    );
}

#[test]
fn the_error_display_lists_every_problem_on_its_own_line() {
    let err = Snapshot::from_yaml(
        "apis:\n  - { name: a, context: x, version: v1, endpoints: [], resources: [] }\n",
        "f.yaml",
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines[0], "f.yaml: 3 problems", "{err}");
    assert!(
        lines[1]
            .starts_with("  line 2, column 25: apis[0].context: context \"x\" must start with '/'"),
        "{err}"
    );
    assert!(lines[2].contains("apis[0].endpoints"), "{err}");
    assert!(lines[3].contains("apis[0].resources"), "{err}");
}

#[test]
fn compile_without_text_names_paths() {
    let file = turnpike_config::GatewayFile {
        apis: vec![turnpike_model::ApiSpec {
            name: "a".into(),
            context: "/a".into(),
            version: "v1".into(),
            endpoints: vec!["http://h".into()],
            ..Default::default()
        }],
        ..Default::default()
    };
    let err = turnpike_config::compile(file, 1)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("apis[0].resources: an API needs at least one resource"),
        "{err}"
    );
}

#[test]
fn an_unreadable_file_is_an_io_error() {
    let e = Snapshot::load(std::path::Path::new("/nonexistent/turnpike.yaml"));
    assert!(matches!(e, Err(ConfigError::Io { .. })));
}

#[test]
fn an_unsupported_format_version_is_refused() {
    refused_at("format_version: 2\napis: []\n", "1:17", "not supported");
}

#[test]
fn security_problems_have_document_paths_and_lines() {
    let yaml = "security:\n  api_keys:\n    - { sha256: nothex, application: a, subscriber: b }\n\
                apis:\n  - name: x\n    context: /x\n    version: v1\n    endpoints: [\"http://127.0.0.1:1\"]\n    \
                auth: { oauth2: false, api_key: true, api_key_header: \"bad header\" }\n    \
                resources: [{ path: \"/*\", methods: [\"*\"] }]\n";
    let p = problems(yaml);
    assert!(
        p.iter()
            .any(|p| p.starts_with("3:") && p.contains("64 hex")),
        "{p:#?}"
    );
    // The API's own problems are reported too, in the same run.
    let open_scopes = "apis:\n  - name: x\n    context: /x\n    version: v1\n    endpoints: [\"http://127.0.0.1:1\"]\n    \
                       resources: [{ path: \"/*\", methods: [\"*\"], scopes: [a] }]\n";
    let p = problems(open_scopes);
    assert!(p[0].contains("scopes need a secured API"), "{p:#?}");
}

#[test]
fn the_secured_example_compiles() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/secured.yaml");
    let snap = Snapshot::load(std::path::Path::new(path)).expect("examples/secured.yaml");
    let api = &snap.apis[0];
    let auth = api.chain.find::<AuthPolicy>().expect("secured");
    let sec = auth.security();
    assert_eq!(sec.api_id, "/shop/v1");
    assert!(sec.authenticator.is_some() && sec.backend_jwt.is_some());
    assert_eq!(
        sec.resource_rule(&http::Method::GET, "/health"),
        Some(&ResourceRule::Open)
    );
    assert!(matches!(
        sec.resource_rule(&http::Method::POST, "/pets"),
        Some(ResourceRule::Scopes(_))
    ));
}

#[test]
fn every_broken_api_is_reported_with_its_line() {
    let yaml = "apis:
  - name: one
    context: /one
    version: [v1]
    endpoints: [\"http://127.0.0.1:9000\"]
  - name: two
    context: /two
    version: v1
    endpoints: [\"http://127.0.0.1:9000\"]
  - name: three
    context: /three
    version: v1
    endpoints: [\"http://127.0.0.1:9000\"]
    retries: 3
  - name: four
    context: 4
    version: v1
    endpoints: \"http://127.0.0.1:9000\"
throttling: { tiers: 7 }
";
    let p = problems(yaml);
    assert_eq!(p.len(), 4, "{p:#?}");
    assert!(
        p[0].starts_with("4:14 ") && p[0].contains("invalid type"),
        "{p:#?}"
    );
    assert!(
        p[1].starts_with("14:") && p[1].contains("unknown field `retries`"),
        "{p:#?}"
    );
    assert!(
        p[2].starts_with("16:") && p[2].contains("expected a string"),
        "{p:#?}"
    );
    assert!(
        p[3].starts_with("19:") && p[3].contains("unknown field `tiers`"),
        "{p:#?}"
    );
    // Each problem names its place in the document too.
    match Snapshot::from_yaml(yaml, "bad.yaml") {
        Err(ConfigError::Problems(list)) => {
            let paths: Vec<&str> = list.list.iter().map(|p| p.path.as_str()).collect();
            assert_eq!(
                paths[1..],
                ["apis[2].retries", "apis[3].context", "throttling.tiers"]
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn deep_nesting_is_refused_before_parsing() {
    for text in [
        format!("apis: {}", "[".repeat(200_000)),
        format!("{{\"apis\": {}", "[".repeat(200_000)),
        format!("apis:\n{}x\n", "- ".repeat(100_000)),
    ] {
        let p = problems(&text);
        assert_eq!(p.len(), 1, "{p:#?}");
        assert!(p[0].contains("nests deeper than 64 levels"), "{p:#?}");
    }
    refused_at(
        &format!("apis: {}\n", "[".repeat(65)),
        "1:71",
        "nests deeper than 64 levels",
    );
}

/// `paths:` (issue 25 item 1): a case-insensitive API is matched in lower case, so what it
/// declares must be lower case; templates that no accepted path can match are refused;
/// unknown values are refused.
#[test]
fn path_options_and_unreachable_templates_are_checked() {
    let ci = |field: &str, with: &str| {
        api_with(field, with).replacen(
            "    version: v1\n",
            "    version: v1\n    paths: { case_insensitive: true }\n",
            1,
        )
    };
    let p = problems(&ci("context: /echo", "context: /Echo"));
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(p[0].contains("write this in lower case"), "{p:#?}");
    let p = problems(&ci("path: \"/*\"", "path: \"/Admin/*\""));
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(p[0].contains("write this in lower case"), "{p:#?}");
    assert!(Snapshot::from_yaml(&ci("path: \"/*\"", "path: \"/admin/{Id}\""), "ok.yaml").is_ok());
    refused_at(
        &api_with("path: \"/*\"", "path: \"/admin;x/*\""),
        "7:17",
        "can never match",
    );
    refused_at(
        &api_with("path: \"/*\"", "path: \"/admin./*\""),
        "7:17",
        "can never match",
    );
    refused_at(
        &api_with(
            "    version: v1\n",
            "    version: v1\n    paths: { matrix_parameters: keep }\n",
        ),
        "5:33",
        "unknown variant `keep`",
    );
}

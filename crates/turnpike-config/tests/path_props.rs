//! Properties of the path decision (issue 25, item 1) over generated input: any path is
//! either refused or becomes one normal path that is a fixed point of the normaliser and
//! holds none of the forms back ends read differently; and the resource the router picks
//! for that path is the one a lenient back end (servlet, IIS, double decoder, NFKC:
//! `support/lenient_backend.rs`) would serve it from, so a scoped `/admin/*` cannot be
//! reached through the open `/*`.

#[path = "support/lenient_backend.rs"]
mod lenient_backend;

use std::borrow::Cow;

use http::Method;
use proptest::prelude::*;
use turnpike_config::{
    fold_case, normalise_path, normalise_path_stripping_parameters, PathError, RouteResult,
    Snapshot,
};

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// What every accepted path must satisfy.
fn normal_form_holds(input: &str, out: &str, strip: bool) {
    let again = if strip {
        normalise_path_stripping_parameters(out)
    } else {
        normalise_path(out)
    };
    assert_eq!(
        again.as_deref(),
        Ok(out),
        "{input:?} -> {out:?} is not a fixed point"
    );
    assert!(out.starts_with('/'), "{input:?} -> {out:?}");
    assert!(!out.contains("//"), "{input:?} -> {out:?}");
    assert!(!out.contains(';'), "{input:?} -> {out:?}");
    assert!(!out.contains('\\'), "{input:?} -> {out:?}");
    assert!(!out.chars().any(char::is_control), "{input:?} -> {out:?}");
    for seg in out.split('/').skip(1) {
        assert!(seg != "." && seg != "..", "{input:?} -> {out:?}");
        assert!(!seg.ends_with('.'), "{input:?} -> {out:?}");
        assert!(
            !seg.ends_with("%20") && !seg.starts_with("%20"),
            "{input:?} -> {out:?}"
        );
    }
    let upper = out.to_ascii_uppercase();
    for bad in ["%2E", "%2F", "%5C", "%3B", "%00", "%09"] {
        assert!(!upper.contains(bad), "{input:?} -> {out:?}");
    }
    // The back end decodes once and finds no further escape of a separator or dot.
    let once = lenient_backend::lenient_view(out, false);
    assert_eq!(
        lenient_backend::lenient_view(&once, false),
        once,
        "{input:?} -> {out:?} reads differently when decoded twice"
    );
    if let Ok(folded) = fold_case(out) {
        assert_eq!(normalise_path(&folded).as_deref(), Ok(&*folded), "{out:?}");
        assert_eq!(fold_case(&folded).as_deref(), Ok(&*folded), "{out:?}");
    }
}

/// Percent-encodes every byte that is not printable ASCII, so any byte string is a path.
fn as_path(bytes: &[u8]) -> String {
    let mut p = String::from("/");
    for b in bytes {
        match b {
            0x21..=0x7e => p.push(char::from(*b)),
            b => p.push_str(&format!("%{b:02X}")),
        }
    }
    p
}

proptest! {
    #![proptest_config(config(4000))]

    #[test]
    fn any_text_is_refused_or_normal(s in "/\\PC{0,40}|/[a-z./;%2eEfF5cC0-9 \\t]{0,30}") {
        for strip in [false, true] {
            let r = if strip {
                normalise_path_stripping_parameters(&s)
            } else {
                normalise_path(&s)
            };
            if let Ok(out) = r {
                normal_form_holds(&s, &out, strip);
            }
        }
    }

    #[test]
    fn any_bytes_are_refused_or_normal(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
        let p = as_path(&bytes);
        for strip in [false, true] {
            let r = if strip {
                normalise_path_stripping_parameters(&p)
            } else {
                normalise_path(&p)
            };
            if let Ok(out) = r {
                normal_form_holds(&p, &out, strip);
            }
        }
    }
}

/// Pieces of paths that lenient back ends read as `admin` or as a separator.
const PIECES: &[&str] = &[
    "/",
    "/",
    "/",
    "admin",
    "Admin",
    "ADMIN",
    "x",
    "public",
    ";",
    ";jsessionid=x",
    ";a=b;c=d",
    ".",
    "..",
    "%2e",
    "%2E%2e",
    "%20",
    "%09",
    "\t",
    "%252f",
    "%252F",
    "%252e%252e",
    "%2561",
    "%C0%AF",
    "%E0%80%AF",
    "%C0%AE",
    "%EF%BD%81",
    "ａｄｍｉｎ",
    "%EF%BC%8F",
    "%E2%88%95",
    "ı",
    "adm%C4%B1n",
    "%E2%84%AA",
    "%3B",
    "%3b",
    "%25",
    "dmin",
];

const FILE: &str = r#"
apis:
  - name: strict
    context: /t
    version: v1
    endpoints: ["http://127.0.0.1:9/"]
    resources:
      - { path: "/admin/*", methods: [GET], scopes: [admin] }
      - { path: "/*", methods: [GET], auth: none }
    auth: { api_key: true }
  - name: lax
    context: /c
    version: v1
    endpoints: ["http://127.0.0.1:9/"]
    paths: { matrix_parameters: strip, case_insensitive: true }
    resources:
      - { path: "/admin/*", methods: [GET], scopes: [admin] }
      - { path: "/*", methods: [GET], auth: none }
    auth: { api_key: true }
"#;

/// The resource template the router picks for `path`.
fn resource(snap: &Snapshot, path: &str) -> String {
    match snap.route(None, &Method::GET, path) {
        RouteResult::Matched { resource, .. } => resource.to_string(),
        other => panic!("{path}: {other:?}"),
    }
}

fn pieces_path(picks: &[usize]) -> String {
    let mut p = String::from("/");
    for i in picks {
        p.push_str(PIECES[i % PIECES.len()]);
    }
    p
}

proptest! {
    #![proptest_config(config(6000))]

    /// Strict API: whatever the gateway accepts, the router's resource and the lenient
    /// (case-sensitive) back end agree about `/admin`.
    #[test]
    fn the_router_and_a_lenient_backend_agree(picks in proptest::collection::vec(0usize..64, 0..8)) {
        let snap = Snapshot::from_yaml(FILE, "props.yaml").expect("file compiles");
        let p = pieces_path(&picks);
        if let Ok(out) = normalise_path(&p) {
            let full = format!("/t/v1{out}");
            let admin = resource(&snap, &full) == "/admin/*";
            let backend = lenient_backend::is_admin(&full, "t/v1", false);
            prop_assert_eq!(admin, backend, "{:?} -> {:?}", p, full);
        }
    }

    /// The lax API (`;` stripped, any case): the same agreement with a case-insensitive
    /// back end, on the path the gateway forwards (stripped, then lower-cased).
    #[test]
    fn a_lax_api_agrees_with_a_case_insensitive_backend(picks in proptest::collection::vec(0usize..64, 0..8)) {
        let snap = Snapshot::from_yaml(FILE, "props.yaml").expect("file compiles");
        let p = pieces_path(&picks);
        let decided = normalise_path_stripping_parameters(&p)
            .and_then(|out| fold_case(&out).map(Cow::into_owned));
        if let Ok(out) = decided {
            let full = format!("/c/v1{out}");
            let admin = resource(&snap, &full) == "/admin/*";
            let backend = lenient_backend::is_admin(&full, "c/v1", true);
            prop_assert_eq!(admin, backend, "{:?} -> {:?}", p, full);
        }
    }
}

/// The forms of the issue, one by one: each is refused, or judged as `/admin`.
#[test]
fn the_issues_forms_are_refused_or_judged_as_admin() {
    let snap = Snapshot::from_yaml(FILE, "props.yaml").expect("file compiles");
    for form in [
        "/admin;/users",
        "/admin;jsessionid=x/users",
        "/admin;a=b;c=d/users",
        "/admin./users",
        "/admin%20/users",
        "/admin%09/users",
        "/x%252f..%252fadmin/users",
        "/x/%252e%252e/admin/users",
        "/x%C0%AF..%C0%AFadmin/users",
        "/%EF%BD%81dmin/users",
        "/ａｄｍｉｎ/users",
    ] {
        assert!(
            lenient_backend::is_admin(&format!("/t/v1{form}"), "t/v1", false),
            "the model back end must read {form} as admin"
        );
        match normalise_path(form) {
            Err(_) => {}
            Ok(out) => assert_eq!(
                resource(&snap, &format!("/t/v1{out}")),
                "/admin/*",
                "{form}"
            ),
        }
    }
    // Opted in, the parameters go and the admin rules apply; any case is admin.
    for form in [
        "/admin;jsessionid=x/users",
        "/Admin/users",
        "/ADMIN;a=b;c=d/x",
    ] {
        let out = normalise_path_stripping_parameters(form).expect(form);
        let out = fold_case(&out).expect(form);
        assert_eq!(
            resource(&snap, &format!("/c/v1{out}")),
            "/admin/*",
            "{form}"
        );
    }
    assert_eq!(fold_case("/adm%C4%B1n/users"), Err(PathError::Lookalike));
}

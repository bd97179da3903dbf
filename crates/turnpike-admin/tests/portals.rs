//! The web portals' server side over real sockets: the app's files at `/` (SPA paths
//! answered by `index.html`, hashed assets cached, nothing outside the directory), the
//! browser login's discovery and login page for the built-in `turnpike-ui` client, and
//! the try-it relay through a real gateway: 200 with the application's own token while
//! subscribed, 403 once the publisher blocks the subscription, and refusals for
//! someone else's application or an application without keys.

mod km_support;

use std::time::{Duration, Instant};

use http::Method;
use km_support::{control_plane, converge, gateway, Auth, Cp};
use serde_json::{json, Value};

const CONVERGE: Duration = Duration::from_secs(5);

/// A raw GET: (status, headers, body text).
async fn get(url: &str) -> (u16, http::HeaderMap, String) {
    use http_body_util::{BodyExt, Empty};
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Empty<bytes::Bytes>>();
    let resp = client.get(url.parse().expect("uri")).await.expect("get");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    (status, headers, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_portals_files_are_served_with_spa_fallback_and_nothing_outside() {
    let cp = control_plane(false).await;
    let (status, _, body) = get(&cp.url("/")).await;
    assert_eq!(status, 503, "no directory configured yet");
    assert!(body.contains("npm run build"));

    let dir = tempfile::tempdir().expect("tmp");
    let dist = dir.path().join("dist");
    std::fs::create_dir_all(dist.join("assets")).expect("mkdir");
    std::fs::write(
        dist.join("index.html"),
        "<!doctype html><title>portals</title>",
    )
    .expect("w");
    std::fs::write(dist.join("assets/app-1a2b.js"), "console.log(1)").expect("w");
    std::fs::write(dir.path().join("secret.txt"), "outside").expect("w");
    turnpike_admin::ui::configure(
        &cp.state,
        &turnpike_admin::ui::UiArgs {
            ui_dir: Some(dist),
            gateway_url: None,
        },
    );

    for path in [
        "/",
        "/devportal",
        "/publisher/apis/x",
        "/admin/users",
        "/callback",
    ] {
        let (status, headers, body) = get(&cp.url(path)).await;
        assert_eq!(status, 200, "{path}");
        assert!(body.contains("<title>portals</title>"), "{path}");
        assert_eq!(headers["cache-control"], "no-cache");
        let csp = headers["content-security-policy"].to_str().expect("csp");
        assert!(csp.contains("default-src 'self'") && csp.contains("frame-ancestors 'none'"));
    }
    let (status, headers, body) = get(&cp.url("/assets/app-1a2b.js")).await;
    assert_eq!(status, 200);
    assert_eq!(body, "console.log(1)");
    assert!(headers["content-type"]
        .to_str()
        .expect("ct")
        .starts_with("text/javascript"));
    assert!(headers["cache-control"]
        .to_str()
        .expect("cc")
        .contains("immutable"));
    for path in [
        "/assets/missing.js",
        "/assets/../../secret.txt",
        "/assets/%2e%2e/%2e%2e/secret.txt",
    ] {
        let (status, _, body) = get(&cp.url(path)).await;
        assert_eq!(status, 404, "{path}");
        assert!(!body.contains("outside"));
    }
    // The REST APIs' own 404 is untouched.
    let (status, _, body) = get(&cp.url("/nothing")).await;
    assert_eq!(status, 404);
    assert!(body.contains("\"code\""));
}

/// A GET with one request header: (status, headers, body bytes).
async fn get_with(url: &str, name: &str, value: &str) -> (u16, http::HeaderMap, Vec<u8>) {
    use http_body_util::{BodyExt, Empty};
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Empty<bytes::Bytes>>();
    let req = http::Request::get(url)
        .header(name, value)
        .body(Empty::new())
        .expect("request");
    let resp = client.request(req).await.expect("get");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    (status, headers, body.to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assets_go_out_precompressed_by_accept_encoding_and_cached_by_hash() {
    use std::io::{Read, Write};
    let cp = control_plane(false).await;
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::create_dir_all(dir.path().join("assets")).expect("mkdir");
    std::fs::write(dir.path().join("index.html"), "<!doctype html>").expect("w");
    let js = "console.log('portal');".repeat(200);
    std::fs::write(dir.path().join("assets/app-9f8e.js"), &js).expect("w");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(js.as_bytes()).expect("gzip");
    let gz = gz.finish().expect("gzip");
    std::fs::write(dir.path().join("assets/app-9f8e.js.gz"), &gz).expect("w");
    // What the build's brotli step wrote; the server must send these bytes as they are.
    let br = b"\x1b\x0fprecompressed-brotli".to_vec();
    std::fs::write(dir.path().join("assets/app-9f8e.js.br"), &br).expect("w");
    std::fs::write(dir.path().join("assets/plain-1234.css"), "body{}").expect("w");
    turnpike_admin::ui::configure(
        &cp.state,
        &turnpike_admin::ui::UiArgs {
            ui_dir: Some(dir.path().to_path_buf()),
            gateway_url: None,
        },
    );
    let url = cp.url("/assets/app-9f8e.js");
    let immutable = "public, max-age=31536000, immutable";

    let (status, h, body) = get_with(&url, "accept-encoding", "gzip, deflate, br").await;
    assert_eq!(status, 200);
    assert_eq!(h["content-encoding"], "br");
    assert_eq!(h["vary"], "Accept-Encoding");
    assert_eq!(h["cache-control"], immutable);
    assert!(h["content-type"]
        .to_str()
        .expect("ct")
        .starts_with("text/javascript"));
    assert_eq!(body, br);

    let (_, h, body) = get_with(&url, "accept-encoding", "gzip;q=0.8, br;q=0").await;
    assert_eq!(h["content-encoding"], "gzip");
    assert!(body.len() < js.len() / 4, "gzip is smaller: {}", body.len());
    let mut plain = String::new();
    flate2::read::GzDecoder::new(&body[..])
        .read_to_string(&mut plain)
        .expect("gunzip");
    assert_eq!(plain, js);

    let (_, h, body) = get_with(&url, "accept-encoding", "identity").await;
    assert!(h.get("content-encoding").is_none());
    assert_eq!(body, js.as_bytes());
    assert_eq!(h["cache-control"], immutable);

    // A file without precompressed siblings goes out as it is, even to a gzip client.
    let (_, h, body) = get_with(&cp.url("/assets/plain-1234.css"), "accept-encoding", "gzip").await;
    assert!(h.get("content-encoding").is_none());
    assert_eq!(body, b"body{}");
    // index.html: never cached, so a new build is picked up at once.
    let (_, h, _) = get_with(&cp.url("/devportal"), "accept-encoding", "gzip").await;
    assert_eq!(h["cache-control"], "no-cache");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_and_login_page_serve_the_portals_client() {
    let cp = control_plane(false).await;
    let (_, _, body) = get(&cp.url("/.well-known/openid-configuration")).await;
    let doc: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(doc["authorization_endpoint"], cp.url("/oauth2/authorize"));
    assert_eq!(doc["code_challenge_methods_supported"], json!(["S256"]));
    let redirect = km_support::urlencode(&cp.url("/callback"));
    let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
    let (status, headers, body) = get(&cp.url(&format!(
        "/oauth2/authorize?response_type=code&client_id=turnpike-ui&redirect_uri={redirect}\
         &code_challenge={challenge}&code_challenge_method=S256&state=s"
    )))
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("<form method=\"post\" action=\"/oauth2/authorize\">"));
    assert!(
        body.contains("<a href=\"/signup\">Sign up</a>"),
        "the portals' login page leads to sign-up"
    );
    assert!(headers["set-cookie"]
        .to_str()
        .expect("cookie")
        .starts_with("tp_csrf="));
    // The localhost twin of the loopback URL is registered too; another host is not.
    let twin = km_support::urlencode(&cp.url("/callback").replace("127.0.0.1", "localhost"));
    let (status, _, _) = get(&cp.url(&format!(
        "/oauth2/authorize?response_type=code&client_id=turnpike-ui&redirect_uri={twin}\
         &code_challenge={challenge}&code_challenge_method=S256"
    )))
    .await;
    assert_eq!(status, 200);
    let (status, headers, _) = get(&cp.url(&format!(
        "/oauth2/authorize?response_type=code&client_id=turnpike-ui\
         &redirect_uri=http%3A%2F%2Fevil.test%2Fcallback&code_challenge={challenge}&code_challenge_method=S256"
    )))
    .await;
    assert_eq!(status, 400);
    assert!(headers.get("location").is_none());
}

async fn try_it(cp: &Cp, who: &str, app: &str, body: Value) -> km_support::Resp {
    cp.call(
        Method::POST,
        &format!("/api/am/devportal/v1/applications/{app}/try-it"),
        Auth::Basic(who),
        Some(body),
    )
    .await
}

/// Tries until the relayed status is `want` (a subscription change reaches the gateway
/// with the next snapshot).
async fn relayed_until(cp: &Cp, app: &str, want: u64) -> Value {
    let started = Instant::now();
    loop {
        let r = try_it(
            cp,
            "sub",
            app,
            json!({"method": "POST", "path": "/pets/v1/pets?x=1",
                   "headers": {"Content-Type": "application/json", "X-Trace": "t1"},
                   "body": "{\"name\": \"rex\"}"}),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.json);
        if r.json["status"] == want {
            return r.json;
        }
        assert!(
            started.elapsed() < CONVERGE,
            "relayed {} instead of {want}",
            r.json
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_it_relays_with_the_applications_token_until_the_subscription_is_blocked() {
    let cp = control_plane(false).await;
    let dir = tempfile::tempdir().expect("tmp");
    let echo = turnpike_bench::echo::spawn(Default::default())
        .await
        .expect("echo");
    let (_gw, follower, gw) = gateway(cp.addr, dir.path()).await;
    let api = cp
        .ok(
            Method::POST,
            "/api/am/publisher/v1/apis",
            Auth::Basic("pub"),
            Some(json!({"name": "Pets", "context": "/pets", "version": "v1",
                "endpoints": [format!("http://{echo}")], "policies": ["Unlimited"],
                "resources": [{"path": "/*", "methods": ["GET", "POST"]}]})),
        )
        .await;
    let api_id = api["id"].as_str().expect("id").to_string();
    cp.ok(
        Method::POST,
        &format!("/api/am/publisher/v1/apis/change-lifecycle?apiId={api_id}&action=Publish"),
        Auth::Basic("pub"),
        None,
    )
    .await;
    let (app, _, _) = cp.subscribed_app("sub", &api_id, json!({})).await;
    let body = json!({"method": "GET", "path": "/pets/v1/pets"});

    // No gateway URL yet: a clear 503.
    let r = try_it(&cp, "sub", &app, body.clone()).await;
    assert_eq!(r.status, 503, "{}", r.json);
    assert_eq!(r.json["code"], "no_gateway");
    turnpike_admin::ui::set_gateway_url(&cp.state, &format!("http://{gw}"));
    converge(&follower, cp.version().await, CONVERGE).await;

    let ok = relayed_until(&cp, &app, 200).await;
    // The echo back end answers the body and content type it was sent.
    assert_eq!(ok["body"], "{\"name\": \"rex\"}");
    assert!(ok["timeMs"].as_f64().expect("time") > 0.0);
    assert!(ok["headers"]
        .as_array()
        .expect("headers")
        .iter()
        .any(|h| h[0] == "content-type"));

    // Someone else's application is "not found"; so is a made-up one.
    let r = try_it(&cp, "sub2", &app, body.clone()).await;
    assert_eq!(r.status, 404, "{}", r.json);
    // An application without keys cannot try.
    let other = cp
        .ok(
            Method::POST,
            "/api/am/devportal/v1/applications",
            Auth::Basic("sub"),
            Some(json!({"name": "no-keys"})),
        )
        .await;
    let r = try_it(&cp, "sub", other["id"].as_str().expect("id"), body.clone()).await;
    assert_eq!(r.status, 409, "{}", r.json);
    // The relay owns the credentials and the host.
    let r = try_it(
        &cp,
        "sub",
        &app,
        json!({"method": "GET", "path": "//evil.test/x", "headers": {"Authorization": "Bearer x"}}),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.json);
    assert_eq!(r.json["errors"].as_array().map(Vec::len), Some(2));

    // The publisher blocks the subscription: the gateway refuses the application.
    let subs = cp
        .ok(
            Method::GET,
            &format!("/api/am/publisher/v1/subscriptions?apiId={api_id}"),
            Auth::Basic("pub"),
            None,
        )
        .await;
    let sub_id = subs["list"][0]["id"].as_str().expect("subscription id");
    cp.ok(
        Method::POST,
        &format!(
            "/api/am/publisher/v1/subscriptions/block-subscription?subscriptionId={sub_id}&blockState=BLOCKED"
        ),
        Auth::Basic("pub"),
        None,
    )
    .await;
    converge(&follower, cp.version().await, CONVERGE).await;
    let blocked = relayed_until(&cp, &app, 403).await;
    assert!(blocked["body"].as_str().expect("body").contains("code"));

    // A gateway that does not answer: 502 with the reason.
    turnpike_admin::ui::set_gateway_url(&cp.state, "http://127.0.0.1:9");
    let r = try_it(&cp, "sub", &app, body).await;
    assert_eq!(r.status, 502, "{}", r.json);
    assert_eq!(r.json["code"], "gateway_unreachable");
}

/// The public catalogue: without credentials the DevPortal lists and shows published APIs
/// (never drafts) while anonymous browsing is on (the default); a bad token is still a
/// 401; applications stay private; an admin closes the catalogue and it answers 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_catalogue_is_browsable_anonymously_until_an_admin_closes_it() {
    let cp = control_plane(false).await;
    let mut ids = Vec::new();
    for name in ["Shown", "Draft"] {
        let api = cp
            .ok(
                Method::POST,
                "/api/am/publisher/v1/apis",
                Auth::Basic("pub"),
                Some(
                    json!({"name": name, "context": format!("/{}", name.to_lowercase()),
                    "version": "v1", "endpoints": ["http://127.0.0.1:9"],
                    "sandboxEndpoints": ["http://127.0.0.1:10"],
                    "resources": [{"path": "/*", "methods": ["GET"]}],
                    "mediation": {"request": {"headers": {"set": {"x-backend-key": "s3cret"}}}},
                    "timeouts": {"connect": "2s"}}),
                ),
            )
            .await;
        ids.push(api["id"].as_str().expect("id").to_string());
    }
    cp.ok(
        Method::POST,
        &format!(
            "/api/am/publisher/v1/apis/change-lifecycle?apiId={}&action=Publish",
            ids[0]
        ),
        Auth::Basic("pub"),
        None,
    )
    .await;

    let list = cp
        .call(Method::GET, "/api/am/devportal/v1/apis", Auth::None, None)
        .await;
    assert_eq!(list.status, 200, "{}", list.json);
    let names: Vec<&str> = list.json["list"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|a| a["name"].as_str())
        .collect();
    assert_eq!(names, ["Shown"], "published only");
    // The publisher's gateway settings stay the publisher's: no back end (production or
    // sandbox), no
    // transformation (it may carry the back end's credentials), no timeouts.
    let shown = cp
        .call(
            Method::GET,
            &format!("/api/am/devportal/v1/apis/{}", ids[0]),
            Auth::None,
            None,
        )
        .await;
    assert_eq!(shown.json["name"], "Shown");
    for hidden in ["endpoints", "sandboxEndpoints", "mediation", "timeouts"] {
        assert!(
            shown.json.get(hidden).is_none(),
            "{hidden} leaked: {}",
            shown.json
        );
    }
    assert!(!shown.json.to_string().contains("s3cret"));
    for (path, want) in [
        (format!("/api/am/devportal/v1/apis/{}", ids[0]), 200),
        (format!("/api/am/devportal/v1/apis/{}/swagger", ids[0]), 200),
        (format!("/api/am/devportal/v1/apis/{}", ids[1]), 404),
        ("/api/am/devportal/v1/applications".to_string(), 401),
    ] {
        let r = cp.call(Method::GET, &path, Auth::None, None).await;
        assert_eq!(r.status, want, "anonymous GET {path}: {}", r.json);
    }
    let bad = cp
        .call(
            Method::GET,
            "/api/am/devportal/v1/apis",
            Auth::Bearer("not-a-token"),
            None,
        )
        .await;
    assert_eq!(bad.status, 401, "credentials sent are checked");

    let settings = "/api/am/admin/v1/settings/devportal";
    let r = cp
        .call(
            Method::PUT,
            settings,
            Auth::Basic("pub"),
            Some(json!({"anonymousBrowsing": false})),
        )
        .await;
    assert_eq!(r.status, 403, "only admins: {}", r.json);
    let r = cp
        .call(
            Method::PUT,
            settings,
            Auth::Basic("admin"),
            Some(json!({"anonymousBrowsing": "no"})),
        )
        .await;
    assert_eq!(
        (r.status, r.json["errors"][0]["field"].as_str()),
        (400, Some("anonymousBrowsing")),
        "{}",
        r.json
    );
    let off = cp
        .ok(
            Method::PUT,
            settings,
            Auth::Basic("admin"),
            Some(json!({"anonymousBrowsing": false})),
        )
        .await;
    assert_eq!(off, json!({"anonymousBrowsing": false}));
    let r = cp
        .call(Method::GET, "/api/am/devportal/v1/apis", Auth::None, None)
        .await;
    assert_eq!(r.status, 401, "closed: {}", r.json);
    let r = cp
        .call(
            Method::GET,
            "/api/am/devportal/v1/apis",
            Auth::Basic("sub"),
            None,
        )
        .await;
    assert_eq!(r.status, 200, "signed-in users still browse");
}

//! Bearer tokens on the REST APIs, over real sockets: a user logs in through the built-in
//! public client `turnpike-cli` (password grant) and gets the `apim:` scopes their roles
//! allow; the token works on `/api/am/*`; wrong scope -> 403 `insufficient_scope`, wrong
//! role -> 403; expired, revoked, tampered, wrong-audience (an application's token) and
//! deleted-user tokens -> 401 with a Bearer challenge; every documented operation
//! enforces its documented scope.

mod km_support;

use http::Method;
use km_support::{control_plane, Auth};
use serde_json::json;
use turnpike_admin::scopes::Scope;

const APIS: &str = "/api/am/publisher/v1/apis";

fn api_body(context: &str) -> serde_json::Value {
    json!({"name": "Pets", "context": context, "version": "v1",
           "endpoints": ["http://127.0.0.1:9"], "resources": [{"path": "/*", "methods": ["GET"]}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_grants_the_scopes_of_the_users_roles() {
    let cp = control_plane(false).await;
    let sub = cp.login("sub", None).await;
    assert_eq!(sub["scope"], "apim:subscribe");
    assert_eq!(sub["token_type"], "Bearer");
    // The CLI refreshes like any client, with its id alone; the new token works.
    let r = cp
        .token_form(
            &[
                ("grant_type", "refresh_token"),
                ("client_id", "turnpike-cli"),
                (
                    "refresh_token",
                    sub["refresh_token"].as_str().expect("refresh token"),
                ),
            ],
            None,
        )
        .await;
    assert_eq!(
        (r.status, r.json["scope"].as_str()),
        (200, Some("apim:subscribe")),
        "{}",
        r.json
    );
    let refreshed = r.json["access_token"].as_str().expect("token");
    let r = cp
        .call(
            Method::GET,
            "/api/am/devportal/v1/applications",
            Auth::Bearer(refreshed),
            None,
        )
        .await;
    assert_eq!(r.status, 200);
    let publisher = cp.login("pub", None).await;
    let scopes: Vec<&str> = publisher["scope"]
        .as_str()
        .unwrap_or_default()
        .split(' ')
        .collect();
    assert!(scopes.contains(&"apim:api_create") && !scopes.contains(&"apim:admin"));
    let admin = cp.login("admin", None).await;
    assert_eq!(
        admin["scope"]
            .as_str()
            .unwrap_or_default()
            .split(' ')
            .count(),
        Scope::ALL.len()
    );
    // Asking for more than the roles allow is refused, not trimmed.
    let r = cp
        .token_form(
            &[
                ("grant_type", "password"),
                ("client_id", "turnpike-cli"),
                ("username", "pub"),
                ("password", km_support::PASSWORD),
                ("scope", "apim:admin"),
            ],
            None,
        )
        .await;
    assert_eq!(
        (r.status, r.json["error"].as_str()),
        (400, Some("invalid_scope"))
    );
    // No client_credentials for the public client.
    let r = cp
        .token_form(
            &[
                ("grant_type", "client_credentials"),
                ("client_id", "turnpike-cli"),
            ],
            None,
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.json);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_tokens_are_authorised_by_scope_and_role() {
    let cp = control_plane(false).await;
    let token = cp.bearer("pub", None).await;
    let r = cp
        .call(
            Method::POST,
            APIS,
            Auth::Bearer(&token),
            Some(api_body("/pets")),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.json);
    assert_eq!(r.json["provider"], "pub", "acts as the token's user");
    assert_eq!(
        cp.call(Method::GET, APIS, Auth::Bearer(&token), None)
            .await
            .status,
        200
    );
    // The role decides: a publisher's token cannot reach the Admin API.
    let r = cp
        .call(
            Method::GET,
            "/api/am/admin/v1/users",
            Auth::Bearer(&token),
            None,
        )
        .await;
    assert_eq!(
        (r.status, r.json["code"].as_str()),
        (403, Some("forbidden"))
    );

    // A token narrowed to apim:api_view reads but cannot create: 403 insufficient_scope.
    let view = cp.bearer("pub", Some("apim:api_view")).await;
    assert_eq!(
        cp.call(Method::GET, APIS, Auth::Bearer(&view), None)
            .await
            .status,
        200
    );
    let r = cp
        .call(
            Method::POST,
            APIS,
            Auth::Bearer(&view),
            Some(api_body("/other")),
        )
        .await;
    assert_eq!(r.status, 403);
    assert_eq!(r.json["code"], "insufficient_scope");
    let challenge = r.challenge();
    assert!(
        challenge.contains("error=\"insufficient_scope\"")
            && challenge.contains("scope=\"apim:api_create\""),
        "{challenge}"
    );

    // A subscriber's token: the DevPortal yes, the Publisher no.
    let sub = cp.bearer("sub", None).await;
    let r = cp
        .call(
            Method::POST,
            "/api/am/devportal/v1/applications",
            Auth::Bearer(&sub),
            Some(json!({"name": "shop"})),
        )
        .await;
    assert_eq!((r.status, r.json["owner"].as_str()), (201, Some("sub")));
    assert_eq!(
        cp.call(Method::GET, APIS, Auth::Bearer(&sub), None)
            .await
            .status,
        403
    );
    // A publisher's token narrowed to api_view has no apim:subscribe: no DevPortal.
    let r = cp
        .call(
            Method::GET,
            "/api/am/devportal/v1/applications",
            Auth::Bearer(&view),
            None,
        )
        .await;
    assert_eq!(
        (r.status, r.json["code"].as_str()),
        (403, Some("insufficient_scope"))
    );
}

fn assert_invalid_token(r: &km_support::Resp, what: &str, needle: &str) {
    assert_eq!(r.status, 401, "{what}: {}", r.json);
    assert_eq!(r.json["code"], "invalid_token", "{what}");
    assert!(
        r.json["message"]
            .as_str()
            .unwrap_or_default()
            .contains(needle),
        "{what}: {}",
        r.json
    );
    let c = r.challenge();
    assert!(
        c.starts_with("Bearer") && c.contains("error=\"invalid_token\""),
        "{what}: {c}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_revoked_tampered_and_foreign_tokens_get_401() {
    let cp = control_plane(true).await;
    let get = |t: String| {
        let cp = &cp;
        async move { cp.call(Method::GET, APIS, Auth::Bearer(&t), None).await }
    };

    // No credentials: both challenges.
    let r = cp.call(Method::GET, APIS, Auth::None, None).await;
    assert_eq!(r.status, 401);
    let c = r.challenge();
    assert!(
        c.contains("Basic realm") && c.contains("Bearer realm"),
        "{c}"
    );

    // Expired: the key manager's clock moves past the one-hour lifetime.
    let token = cp.bearer("pub", None).await;
    assert_eq!(get(token.clone()).await.status, 200);
    cp.clock
        .as_ref()
        .expect("manual clock")
        .advance(std::time::Duration::from_secs(3601));
    assert_invalid_token(&get(token).await, "expired", "expired");

    // Revoked (RFC 7009, by the public client that holds it).
    let token = cp.bearer("pub", None).await;
    let r = cp.token_form(&[("grant_type", "password")], None).await;
    assert_eq!(r.status, 401, "client_id is required: {}", r.json);
    let revoke = km_support::send(
        Method::POST,
        &cp.url("/oauth2/revoke"),
        Auth::None,
        Some((
            "application/x-www-form-urlencoded",
            format!("client_id=turnpike-cli&token={token}"),
        )),
    )
    .await;
    assert_eq!(revoke.status, 200, "{}", revoke.json);
    assert_invalid_token(&get(token).await, "revoked", "revoked");

    // Tampered: another user's name in the payload breaks the signature.
    let token = cp.bearer("sub", None).await;
    let parts: Vec<&str> = token.split('.').collect();
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut claims: serde_json::Value =
        serde_json::from_slice(&b64.decode(parts[1]).expect("b64")).expect("claims");
    claims["username"] = json!("admin");
    let forged = format!(
        "{}.{}.{}",
        parts[0],
        b64.encode(claims.to_string()),
        parts[2]
    );
    assert_invalid_token(&get(forged).await, "tampered", "signature");
    assert_invalid_token(&get("not-a-jwt".into()).await, "garbage", "not a JWT");

    // Wrong audience: an application's token is for gateways, not for the REST APIs.
    let api = cp
        .ok(
            Method::POST,
            APIS,
            Auth::Basic("pub"),
            Some(api_body("/aud")),
        )
        .await;
    cp.ok(
        Method::POST,
        &format!(
            "{APIS}/change-lifecycle?apiId={}&action=Publish",
            api["id"].as_str().unwrap_or_default()
        ),
        Auth::Basic("pub"),
        None,
    )
    .await;
    let (_, ck, cs) = cp
        .subscribed_app("sub", api["id"].as_str().unwrap_or_default(), json!({}))
        .await;
    let app_token = cp.app_token(&ck, &cs, None).await;
    assert_invalid_token(&get(app_token).await, "application token", "audience");

    // A deleted user's token stops at once.
    cp.ok(
        Method::POST,
        "/api/am/admin/v1/users",
        Auth::Basic("admin"),
        Some(json!({"name": "temp", "password": km_support::PASSWORD, "roles": ["publisher"]})),
    )
    .await;
    let token = cp.bearer("temp", None).await;
    assert_eq!(get(token.clone()).await.status, 200);
    let r = cp
        .call(
            Method::DELETE,
            "/api/am/admin/v1/users/temp",
            Auth::Basic("admin"),
            None,
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.json);
    assert_invalid_token(&get(token).await, "deleted user", "no longer exists");
}

/// Every operation in the OpenAPI document checks the scope the document names: an admin
/// token holding every other scope gets 403 `insufficient_scope`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_enforces_its_documented_scope() {
    let cp = control_plane(false).await;
    let mut checked = 0;
    for missing in Scope::ALL {
        let others: Vec<&str> = Scope::ALL
            .iter()
            .filter(|s| **s != missing)
            .map(|s| s.as_str())
            .collect();
        let token = cp.bearer("admin", Some(&others.join(" "))).await;
        for op in turnpike_admin::OPERATIONS {
            // The public catalogue's reads: anonymous callers may, a token needs apim:subscribe.
            let scope = if op.scope == "catalogue" {
                "apim:subscribe"
            } else {
                op.scope
            };
            let (method, path) = (op.method, op.path);
            if scope != missing.as_str() {
                continue;
            }
            let concrete = path
                .replace("{kind}", "subscription")
                .replace('{', "x")
                .replace('}', "");
            let m = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
            let r = cp
                .call(m, &concrete, Auth::Bearer(&token), Some(json!({})))
                .await;
            assert_eq!(
                (r.status, r.json["code"].as_str()),
                (403, Some("insufficient_scope")),
                "{method} {path} must need {scope}"
            );
            checked += 1;
        }
    }
    let documented = turnpike_admin::OPERATIONS
        .iter()
        .filter(|o| o.scope != "gateway" && o.scope != "none")
        .count();
    assert_eq!(checked, documented, "every operation names an apim: scope");
}

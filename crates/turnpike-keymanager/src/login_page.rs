//! The HTML of the login page, the consent page (an application asks to act as the
//! signed-in user) and the authorization error page: self-contained (inline
//! style, no script, no external request), every value HTML-escaped, labelled inputs,
//! light and dark colour schemes.

use crate::authorize::{AuthRequest, ConsentFor};

pub(crate) struct LoginPage<'a> {
    pub(crate) request: &'a AuthRequest,
    pub(crate) csrf: &'a str,
    pub(crate) error: Option<&'a str>,
}

/// Escapes text for HTML element content and double-quoted attributes.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = r#"
:root { color-scheme: light dark; --bg:#f4f6fb; --card:#fff; --fg:#1a1b1e; --muted:#5c5f66; --accent:#1c7ed6; --err:#c92a2a; --border:#dee2e6; }
@media (prefers-color-scheme: dark) { :root { --bg:#141517; --card:#1a1b1e; --fg:#e9ecef; --muted:#a6a7ab; --accent:#4dabf7; --err:#ff8787; --border:#373a40; } }
* { box-sizing: border-box; }
body { margin:0; min-height:100vh; display:flex; align-items:center; justify-content:center; background:var(--bg); color:var(--fg); font:16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { width:100%; max-width:380px; margin:16px; padding:32px; background:var(--card); border:1px solid var(--border); border-radius:12px; box-shadow:0 4px 24px rgba(0,0,0,.08); }
h1 { margin:0 0 4px; font-size:1.5rem; }
p.sub { margin:0 0 24px; color:var(--muted); }
label { display:block; font-weight:600; margin:16px 0 6px; font-size:.9rem; }
input[type=text], input[type=password] { width:100%; padding:10px 12px; font:inherit; color:inherit; background:transparent; border:1px solid var(--border); border-radius:8px; }
input:focus, button:focus { outline:2px solid var(--accent); outline-offset:2px; }
button { margin-top:24px; width:100%; padding:10px; font:inherit; font-weight:600; color:#fff; background:var(--accent); border:0; border-radius:8px; cursor:pointer; }
p.alt { margin:20px 0 0; text-align:center; color:var(--muted); font-size:.9rem; }
a { color:var(--accent); }
button.secondary { margin-top:12px; color:var(--fg); background:transparent; border:1px solid var(--border); }
code { overflow-wrap:anywhere; }
.error { margin:0 0 8px; padding:10px 12px; border-radius:8px; color:var(--err); border:1px solid var(--err); }
"#;

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title><style>{STYLE}</style></head><body><main>{body}</main></body></html>"
    )
}

fn hidden(name: &str, value: &str) -> String {
    format!(
        "<input type=\"hidden\" name=\"{name}\" value=\"{}\">",
        escape(value)
    )
}

/// The authorization request as hidden fields, so the form's POST carries it again.
fn request_fields(r: &AuthRequest, csrf: &str) -> String {
    let mut fields = String::new();
    for (name, value) in [
        ("response_type", Some("code")),
        ("client_id", Some(r.client_id.as_str())),
        ("redirect_uri", Some(r.redirect_uri.as_str())),
        ("code_challenge", Some(r.code_challenge.as_str())),
        ("code_challenge_method", Some("S256")),
        ("state", r.state.as_deref()),
        ("scope", r.scope.as_deref()),
        ("resource", r.resource.as_deref()),
        ("prompt", r.force_consent.then_some("consent")),
        ("csrf", Some(csrf)),
    ] {
        if let Some(v) = value {
            fields.push_str(&hidden(name, v));
        }
    }
    fields
}

/// "APP (by OWNER)" for an application's pages.
fn requester(c: &ConsentFor) -> String {
    format!(
        "<strong>{}</strong> (an application of {})",
        escape(&c.application),
        escape(&c.owner)
    )
}

pub(crate) fn render(p: &LoginPage<'_>) -> String {
    let r = p.request;
    let fields = request_fields(r, p.csrf);
    let error = p
        .error
        .map(|e| format!("<p class=\"error\" role=\"alert\">{}</p>", escape(e)))
        .unwrap_or_default();
    // The portals' own client: new subscribers find the portals' sign-up page from here
    // (it says so when an admin keeps self sign-up off).
    let signup = if r.client_id == crate::PORTAL_CLIENT_ID {
        "<p class=\"alt\">No account yet? <a href=\"/signup\">Sign up</a></p>"
    } else {
        ""
    };
    let sub = match &r.consent {
        Some(c) => format!("to continue to {}", requester(c)),
        None => "to Turnpike".to_owned(),
    };
    let body = format!(
        "<h1>Sign in</h1><p class=\"sub\">{sub}</p>{error}\
         <form method=\"post\" action=\"/oauth2/authorize\">{fields}\
         <label for=\"username\">Username</label>\
         <input id=\"username\" name=\"username\" type=\"text\" autocomplete=\"username\" required autofocus>\
         <label for=\"password\">Password</label>\
         <input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"current-password\" required>\
         <button type=\"submit\">Sign in</button></form>{signup}"
    );
    page("Sign in · Turnpike", &body)
}

/// The consent page: Allow or Deny, both posting the request back with `consent=`.
pub(crate) fn consent(r: &AuthRequest, csrf: &str, user: &str) -> String {
    let who = r.consent.as_ref().map(requester).unwrap_or_default();
    let scopes = match r.scope.as_deref() {
        Some(s) => format!("with the scopes <code>{}</code>", escape(s)),
        None => "with the scopes its keys allow".to_owned(),
    };
    let target = match r.resource.as_deref() {
        Some(res) => format!("the API <code id=\"resource\">{}</code>", escape(res)),
        None => "APIs".to_owned(),
    };
    let fields = request_fields(r, csrf);
    let body = format!(
        "<h1>Allow access?</h1><p class=\"sub\">Signed in as <strong>{}</strong></p>\
         <p>{who} asks to call {target} as you, {scopes}. It is sent back to <code>{}</code>.</p>\
         <form method=\"post\" action=\"/oauth2/authorize\">{fields}\
         <button type=\"submit\" name=\"consent\" value=\"allow\">Allow</button>\
         <button type=\"submit\" name=\"consent\" value=\"deny\" class=\"secondary\">Deny</button></form>",
        escape(user),
        escape(&r.redirect_uri),
    );
    page("Allow access · Turnpike", &body)
}

pub(crate) fn error(message: &str) -> String {
    page(
        "Sign-in error · Turnpike",
        &format!(
            "<h1>Cannot sign in</h1><p class=\"error\" role=\"alert\">{}</p>",
            escape(message)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_escaped_in_attributes_and_text() {
        let req = AuthRequest {
            client_id: "c".into(),
            redirect_uri: "http://x/cb".into(),
            state: Some("\"><script>alert(1)</script>".into()),
            code_challenge: "a".repeat(43),
            scope: None,
            resource: None,
            force_consent: false,
            consent: None,
        };
        let html = render(&LoginPage {
            request: &req,
            csrf: "t",
            error: Some("<b>"),
        });
        assert!(!html.contains("<script>"));
        assert!(html.contains("&quot;&gt;&lt;script&gt;"));
        assert!(html.contains("&lt;b&gt;"));
        assert!(!html.contains("name=\"scope\""));
    }
}

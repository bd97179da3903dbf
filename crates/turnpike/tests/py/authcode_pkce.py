"""The authorization code grant with PKCE (S256) as an application does it with authlib,
against a running control plane. The user's browser is played by `requests`: it loads
the login page, posts the form (CSRF field and cookie), then answers the consent page.
Prints one JSON object of what happened; the Rust test (oauth_authcode_e2e.rs) asserts.

Usage: authcode_pkce.py BASE_URL CLIENT_ID CLIENT_SECRET REDIRECT_URI USER PASSWORD
"""
import html
import json
import re
import sys
from urllib.parse import parse_qs, urlparse

import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session

base, client_id, client_secret, redirect_uri, user, password = sys.argv[1:7]


def form_fields(page):
    """Every hidden input of the page's form, unescaped."""
    return {
        html.unescape(n): html.unescape(v)
        for n, v in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page)
    }


def browser_flow(meta, answer):
    """authlib builds the authorization URL (`prompt=consent`: the consent page even when
    the user allowed before); the browser signs in and answers the consent page with
    `answer`. Returns (authlib session, verifier, final redirect, pages seen)."""
    client = OAuth2Session(
        client_id,
        client_secret,
        redirect_uri=redirect_uri,
        scope=None,
        code_challenge_method="S256",
        token_endpoint_auth_method="client_secret_basic",
    )
    verifier = generate_token(64)
    url, state = client.create_authorization_url(
        meta["authorization_endpoint"], code_verifier=verifier, prompt="consent"
    )
    browser = requests.Session()
    login = browser.get(url, allow_redirects=False)
    seen = {"login_status": login.status_code, "login_names_app": "to continue to" in login.text}
    fields = form_fields(login.text)
    fields.update({"username": user, "password": password})
    consent = browser.post(meta["authorization_endpoint"], data=fields, allow_redirects=False)
    seen["consent_status"] = consent.status_code
    seen["consent_page"] = "Allow access?" in consent.text
    fields = form_fields(consent.text)
    fields["consent"] = answer
    done = browser.post(meta["authorization_endpoint"], data=fields, allow_redirects=False)
    seen["answer_status"] = done.status_code
    location = done.headers.get("location", "")
    seen["state_kept"] = parse_qs(urlparse(location).query).get("state") == [state]
    # A second authorization in the same browser session skips the login, and after an
    # Allow the consent too (remembered per user, client and scopes); after a Deny it asks.
    again_url, _ = client.create_authorization_url(meta["authorization_endpoint"], state=state, code_verifier=verifier)
    again = browser.get(again_url, allow_redirects=False)
    seen["second_visit_asks_consent"] = again.status_code == 200 and "Allow access?" in again.text
    seen["second_visit_redirects"] = again.status_code == 302 and "code=" in again.headers.get("location", "")
    seen["state"] = state
    return client, verifier, location, seen


out = {}
meta = requests.get(f"{base}/.well-known/oauth-authorization-server").json()
out["metadata"] = {
    k: meta.get(k)
    for k in [
        "issuer",
        "authorization_endpoint",
        "token_endpoint",
        "code_challenge_methods_supported",
        "token_endpoint_auth_methods_supported",
        "grant_types_supported",
        "response_types_supported",
    ]
}

client, verifier, location, seen = browser_flow(meta, "allow")
out["allow"] = seen
out["allow"]["redirected_to"] = location.split("?")[0]
token = client.fetch_token(
    meta["token_endpoint"], authorization_response=location, state=seen.pop("state"), code_verifier=verifier
)
out["token"] = {"token_type": token.get("token_type"), "has_access_token": bool(token.get("access_token"))}
claims = json.loads(
    __import__("base64").urlsafe_b64decode(token["access_token"].split(".")[1] + "==")
)
out["claims"] = {k: claims.get(k) for k in ["sub", "client_id", "username", "subscriber", "keytype"]}
intro = requests.post(
    meta["introspection_endpoint"], data={"token": token["access_token"]}, auth=(client_id, client_secret)
).json()
out["introspection_active"] = intro.get("active")

# The same code twice, and a code with the wrong verifier: invalid_grant.
replay = requests.post(
    meta["token_endpoint"],
    data={"grant_type": "authorization_code", "code": parse_qs(urlparse(location).query)["code"][0],
          "redirect_uri": redirect_uri, "code_verifier": verifier},
    auth=(client_id, client_secret),
)
out["replay"] = [replay.status_code, replay.json().get("error")]
client2, _, location2, _ = browser_flow(meta, "allow")
wrong = requests.post(
    meta["token_endpoint"],
    data={"grant_type": "authorization_code", "code": parse_qs(urlparse(location2).query)["code"][0],
          "redirect_uri": redirect_uri, "code_verifier": generate_token(64)},
    auth=(client_id, client_secret),
)
out["wrong_verifier"] = [wrong.status_code, wrong.json().get("error")]

_, _, denied, seen = browser_flow(meta, "deny")
out["deny"] = parse_qs(urlparse(denied).query).get("error")

# An unregistered redirect URI never gets a redirect: an error page.
bad = requests.get(
    meta["authorization_endpoint"],
    params={"response_type": "code", "client_id": client_id, "redirect_uri": "https://evil.example/cb",
            "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", "code_challenge_method": "S256"},
    allow_redirects=False,
)
out["unregistered_redirect"] = [bad.status_code, bad.headers.get("location")]
print(json.dumps(out))

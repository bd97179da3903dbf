"""An agent finds its way to a token the way the MCP authorization spec describes, with
authlib for the OAuth side and `requests` as the user's browser: a 401 from the gateway
names the API's protected resource metadata (RFC 9728); that names the authorization
server, whose RFC 8414 metadata names the registration endpoint; the agent registers
itself (RFC 7591, a public client), an admin subscribes the new application, the user
signs in and allows it on the consent page (which names the resource), and the code is
exchanged with PKCE and the resource indicator (RFC 8707). Prints one JSON object of
what happened; the Rust test (agents_e2e.rs) asserts.

Usage: agent_oauth.py GATEWAY_URL API_PATH OTHER_API_PATH CP_URL API_ID USER PASSWORD
"""
import base64
import html
import json
import re
import sys
import time
from urllib.parse import parse_qs, urlparse

import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session

gw, api_path, other_path, cp, api_id, user, password = sys.argv[1:8]
REDIRECT = "http://127.0.0.1:33418/callback"
out = {}


def challenge_params(header):
    """The auth-params of a `Bearer` challenge."""
    return dict(re.findall(r'(\w+)="([^"]*)"', header or ""))


def form_fields(page):
    return {
        html.unescape(n): html.unescape(v)
        for n, v in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page)
    }


# 1. Discovery: 401 -> resource metadata -> authorization server metadata.
first = requests.get(gw + api_path)
challenge = challenge_params(first.headers.get("www-authenticate"))
out["unauthenticated"] = {"status": first.status_code, "challenge": challenge}
prm = requests.get(challenge["resource_metadata"])
out["prm"] = {"status": prm.status_code, "doc": prm.json(), "cors": prm.headers.get("access-control-allow-origin")}
resource = prm.json()["resource"]
issuer = prm.json()["authorization_servers"][0]
meta = requests.get(f"{issuer}/.well-known/oauth-authorization-server").json()
out["registration_endpoint"] = meta.get("registration_endpoint")

# 2. Dynamic client registration: a public client (PKCE is its credential).
reg = requests.post(
    meta["registration_endpoint"],
    json={
        "client_name": "pizza agent",
        "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "scope": challenge.get("scope", ""),
    },
)
out["registration"] = {"status": reg.status_code, "body": reg.json()}
client_id = reg.json()["client_id"]

# 3. The registered client is an application of the policy's owner: the admin
#    subscribes it like any application.
apps = requests.get(f"{cp}/api/am/devportal/v1/applications", auth=(user, password)).json()
app = next(a for a in apps["list"] if a["name"].startswith("pizza agent ("))
sub = requests.post(
    f"{cp}/api/am/devportal/v1/subscriptions",
    json={"applicationId": app["id"], "apiId": api_id, "throttlingPolicy": "Unlimited"},
    auth=(user, password),
)
out["subscription_status"] = sub.status_code

# 4. Authorization code with PKCE and the resource; the browser signs in and allows.
agent = OAuth2Session(
    client_id,
    None,
    redirect_uri=REDIRECT,
    scope=challenge.get("scope"),
    code_challenge_method="S256",
    token_endpoint_auth_method="none",
)
verifier = generate_token(64)
url, state = agent.create_authorization_url(meta["authorization_endpoint"], code_verifier=verifier, resource=resource)
browser = requests.Session()
login = browser.get(url, allow_redirects=False)
fields = form_fields(login.text)
fields.update({"username": user, "password": password})
consent = browser.post(meta["authorization_endpoint"], data=fields, allow_redirects=False)
out["consent"] = {
    "status": consent.status_code,
    "names_resource": f'<code id="resource">{html.escape(resource)}</code>' in consent.text,
    "names_client": "pizza agent" in consent.text,
}
fields = form_fields(consent.text)
fields["consent"] = "allow"
done = browser.post(meta["authorization_endpoint"], data=fields, allow_redirects=False)
location = done.headers.get("location", "")
token = agent.fetch_token(
    meta["token_endpoint"], authorization_response=location, code_verifier=verifier, resource=resource
)
claims = json.loads(base64.urlsafe_b64decode(token["access_token"].split(".")[1] + "=="))
out["claims"] = {k: claims.get(k) for k in ["aud", "scope", "client_id", "subscriber", "username"]}

# 5. The token works at its API (once the subscription reached the gateway) and
#    nowhere else.
bearer = {"authorization": f"Bearer {token['access_token']}"}
deadline = time.time() + 15
while True:
    call = requests.get(gw + api_path, headers=bearer)
    if call.status_code == 200 or time.time() > deadline:
        break
    time.sleep(0.05)
out["call"] = call.status_code
other = requests.get(gw + other_path, headers=bearer)
out["other"] = {
    "status": other.status_code,
    "code": other.json().get("code"),
    "challenge": challenge_params(other.headers.get("www-authenticate")),
}
print(json.dumps(out))

"""The official MCP Python SDK's OAuth client (`mcp.client.auth.OAuthClientProvider`)
against a gateway's MCP endpoint secured by the key manager (driven by agents_e2e.rs):
the SDK meets the 401, reads the protected resource metadata and the authorization
server's, registers itself (RFC 7591), and opens the browser at the authorization URL;
here the "browser" is `requests`: an admin first subscribes the freshly registered
application, then the user signs in and allows it. The SDK exchanges the code with PKCE
and the resource, then initialises and lists the tools. Prints one JSON object.

usage: mcp_oauth.py MCP_URL CP_URL API_ID USER PASSWORD
"""

import asyncio
import html
import json
import re
import sys
from urllib.parse import parse_qs, urlparse

import requests
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

url, cp, api_id, user, password = sys.argv[1:6]
REDIRECT = "http://127.0.0.1:33419/callback"
out = {}


class Memory(TokenStorage):
    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


storage = Memory()
answer = {}


def form_fields(page):
    return {
        html.unescape(n): html.unescape(v)
        for n, v in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page)
    }


def browse(auth_url):
    """Subscribes the registered application, signs in, allows; keeps the redirect."""
    client_id = parse_qs(urlparse(auth_url).query)["client_id"][0]
    apps = requests.get(f"{cp}/api/am/devportal/v1/applications", auth=(user, password)).json()
    app = next(a for a in apps["list"] if a["name"].startswith("mcp agent ("))
    sub = requests.post(
        f"{cp}/api/am/devportal/v1/subscriptions",
        json={"applicationId": app["id"], "apiId": api_id, "throttlingPolicy": "Unlimited"},
        auth=(user, password),
    )
    out["subscription_status"] = sub.status_code
    out["resource_asked"] = parse_qs(urlparse(auth_url).query).get("resource")
    browser = requests.Session()
    login = browser.get(auth_url, allow_redirects=False)
    fields = form_fields(login.text)
    fields.update({"username": user, "password": password})
    endpoint = auth_url.split("?")[0]
    consent = browser.post(endpoint, data=fields, allow_redirects=False)
    out["consent_page"] = "Allow access?" in consent.text
    fields = form_fields(consent.text)
    fields["consent"] = "allow"
    done = browser.post(endpoint, data=fields, allow_redirects=False)
    q = parse_qs(urlparse(done.headers.get("location", "")).query)
    answer["code"] = q.get("code", [""])[0]
    answer["state"] = q.get("state", [None])[0]
    out["client_id"] = client_id


async def redirect_handler(auth_url):
    await asyncio.to_thread(browse, auth_url)


async def callback_handler():
    return AuthorizationCodeResult(code=answer["code"], state=answer["state"])


async def main():
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="mcp agent",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    async with create_mcp_http_client(auth=provider) as http:
        # The subscription reaches the gateway within a snapshot: retry briefly.
        for attempt in range(40):
            try:
                async with streamable_http_client(url, http_client=http) as (read, write):
                    async with ClientSession(read, write) as session:
                        await asyncio.wait_for(session.initialize(), 20)
                        tools = await session.list_tools()
                        out["tools"] = sorted(t.name for t in tools.tools)
                        break
            except BaseException as e:  # an ExceptionGroup from the SDK's task group
                out["last_error"] = repr(e)[:300]
                await asyncio.sleep(0.25)
    if storage.tokens is not None:
        token = storage.tokens.access_token
        claims = json.loads(__import__("base64").urlsafe_b64decode(token.split(".")[1] + "=="))
        out["aud"] = claims.get("aud")
    print(json.dumps(out))


asyncio.run(main())

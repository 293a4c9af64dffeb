"""The Verda Cloud API as this collector calls it: the URLs and response labels, the OAuth2
client-credentials grant, and authorised GETs that fail with Verda's own error words."""

from __future__ import annotations

import json

from collectors.base import RawResponse
from collectors.errors import ParseError
from collectors.http import Http
from collectors.jsonapi import fetch_explained
from pricedb import redact

API = "https://api.verda.com/v1"
TOKEN_URL = f"{API}/oauth2/token"
INSTANCE_TYPES_URL = f"{API}/instance-types?currency=usd"
AVAILABILITY_URL = f"{API}/instance-availability?isSpot={{spot}}"
LONG_TERM_URL = f"{API}/long-term/periods/instances"
OFFLINE_CREDENTIALS = ("offline-replay-client-id", "offline-replay-client-secret")
CREDENTIALS_HINT = (
    "check GPUPRICE_VERDA_CLIENT_ID / GPUPRICE_VERDA_CLIENT_SECRET (or VERDA_CLIENT_ID / VERDA_CLIENT_SECRET)"
)
LABEL_TYPES, LABEL_ON_DEMAND, LABEL_SPOT, LABEL_LONG_TERM = (
    "instance-types",
    "available:on_demand",
    "available:spot",
    "long-term",
)


async def get(http: Http, url: str, label: str, token: str) -> RawResponse:
    return await fetch_explained(
        http, "GET", url, source="Verda API", auth_hint=CREDENTIALS_HINT, label=label,
        headers={"Authorization": f"Bearer {token}"},
    )  # fmt: skip


async def access_token(http: Http, client_id: str, client_secret: str) -> str:
    """The client-credentials grant. The answer holds the token: it is read here and dropped."""
    body = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": client_secret}
    raw = await fetch_explained(
        http,
        "POST",
        TOKEN_URL,
        source="Verda OAuth2 token endpoint",
        auth_hint=CREDENTIALS_HINT,
        label="token",
        content=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        answer = json.loads(raw.body)
    except ValueError:
        raise ParseError(f"{TOKEN_URL}: the token answer is not JSON") from None  # never echo the body
    token = answer.get("access_token") if isinstance(answer, dict) else None
    if not isinstance(token, str) or not token:
        keys = ", ".join(sorted(answer)) if isinstance(answer, dict) else type(answer).__name__
        raise ParseError(f"{TOKEN_URL}: no access_token in the token answer (fields: {keys})")
    kind = answer.get("token_type", "Bearer")
    if str(kind).lower() != "bearer":
        raise ParseError(f"{TOKEN_URL}: token_type {kind!r}, expected Bearer")
    redact.learn(token)  # a credential no setting holds: an error body echoing it must not leak it
    return token

"""Digest delivery to webhooks, each optional and configured by settings:

- **json** (`GPUPRICE_DIGEST_WEBHOOK_URL`): the digest JSON exactly as `/digest` serves it.
- **slack** (`GPUPRICE_DIGEST_SLACK_WEBHOOK_URL`): an incoming-webhook message, `{"text": …,
  "blocks": [header, section (mrkdwn)]}`; `text` is the notification fallback
  (https://api.slack.com/messaging/webhooks).
- **feishu** (`GPUPRICE_DIGEST_FEISHU_WEBHOOK_URL`, optional `…_FEISHU_SECRET`): a custom-bot
  message `{"msg_type": "text", "content": {"text": …}}`; with a secret, `timestamp` (seconds) and
  `sign` = base64(HMAC-SHA256 keyed with `timestamp + "\\n" + secret`, over an empty message) in the
  body (https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot). Feishu answers HTTP
  200 with `{"code": non-zero}` on errors, which counts as a failure.
- **dingtalk** (`GPUPRICE_DIGEST_DINGTALK_WEBHOOK_URL`, optional `…_DINGTALK_SECRET`): a custom
  robot message `{"msgtype": "markdown", "markdown": {"title", "text"}}`; with a secret, the URL gets
  `timestamp` (milliseconds) and `sign` = URL-encoded base64(HMAC-SHA256 keyed with the secret over
  `timestamp + "\\n" + secret`) (https://open.dingtalk.com/document/robots/customize-robot-security-settings).
  DingTalk answers `{"errcode": non-zero}` on errors.

Sending goes through collectors.http (the same retries with backoff and `Retry-After` as the
collectors). A failure is recorded in `deliveries` and shown by `/digest` and `gpuprice digest`;
it never raises into the scheduler."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any
from urllib.parse import quote_plus

import httpx
from pydantic import SecretStr

from collectors.errors import CollectorError
from collectors.http import Http, make_client
from pricedb import clock
from pricedb.digest import record_delivery
from pricedb.formats.digest_render import title, to_markdown
from pricedb.redact import get_logger
from pricedb.settings import Settings
from pricedb.store import PriceStore

log = get_logger("gpuprice.delivery")

SLACK_TEXT_LIMIT = 3000  # characters in one section block
DINGTALK_TEXT_LIMIT = 18000  # stay under DingTalk's 20000-byte message limit with CJK text


@dataclass(frozen=True)
class Target:
    kind: str  # json | slack | feishu | dingtalk
    url: SecretStr
    secret: SecretStr | None = None


def targets(settings: Settings) -> list[Target]:
    found = [
        ("json", settings.digest_webhook_url, None),
        ("slack", settings.digest_slack_webhook_url, None),
        ("feishu", settings.digest_feishu_webhook_url, settings.digest_feishu_secret),
        ("dingtalk", settings.digest_dingtalk_webhook_url, settings.digest_dingtalk_secret),
    ]
    return [Target(kind, url, secret) for kind, url, secret in found if url is not None and url.get_secret_value()]


def feishu_sign(secret: str, timestamp: int) -> str:
    key = f"{timestamp}\n{secret}".encode()
    return base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()


def dingtalk_sign(secret: str, timestamp_ms: int) -> str:
    """Base64 of the HMAC-SHA256; the caller puts it in the query string URL-encoded."""
    digest = hmac.new(secret.encode(), f"{timestamp_ms}\n{secret}".encode(), hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 20].rstrip() + "\n… (truncated)"


def message(kind: str, digest: dict[str, Any], secret: str | None, now: Callable[[], float] = clock.timestamp) -> Any:
    """The JSON body for one webhook kind."""
    markdown = to_markdown(digest)
    if kind == "json":
        return digest
    if kind == "slack":
        return {
            "text": f"{title(digest)}: {digest['summary']}",
            "blocks": [
                {"type": "header", "text": {"type": "plain_text", "text": title(digest)}},
                # Slack's mrkdwn has no tables: the digest goes in a code block, so its columns line up.
                {
                    "type": "section",
                    "text": {"type": "mrkdwn", "text": f"```{_short(markdown, SLACK_TEXT_LIMIT - 6)}```"},
                },
            ],
        }
    if kind == "feishu":
        body: dict[str, Any] = {"msg_type": "text", "content": {"text": markdown}}
        if secret:
            stamp = int(now())
            body.update(timestamp=str(stamp), sign=feishu_sign(secret, stamp))
        return body
    if kind == "dingtalk":
        return {
            "msgtype": "markdown",
            "markdown": {"title": title(digest), "text": _short(markdown, DINGTALK_TEXT_LIMIT)},
        }
    raise ValueError(f"unknown webhook kind {kind!r}")


def _dingtalk_signer(secret: str, now: Callable[[], float]) -> Callable[[httpx.Request], None]:
    def sign(request: httpx.Request) -> None:  # fresh on every attempt
        stamp = int(now() * 1000)
        query = request.url.query.decode()
        extra = f"timestamp={stamp}&sign={quote_plus(dingtalk_sign(secret, stamp))}"
        request.url = request.url.copy_with(query=(f"{query}&{extra}" if query else extra).encode())

    return sign


def _refusal(kind: str, response: httpx.Response) -> str | None:
    """Feishu and DingTalk say no with HTTP 200 and an error code in the body."""
    if kind not in ("feishu", "dingtalk"):
        return None
    try:
        answer = response.json()
    except ValueError:
        return None
    code = answer.get("code", answer.get("StatusCode")) if kind == "feishu" else answer.get("errcode")
    if code in (None, 0):
        return None
    text = answer.get("msg") or answer.get("errmsg") or answer.get("StatusMessage") or ""
    return f"{kind} refused the message: code {code}: {text}"


async def send(
    http: Http, target: Target, digest: dict[str, Any], now: Callable[[], float] = clock.timestamp
) -> str | None:
    """Send one message; None when delivered, else what went wrong (URLs and secrets never appear)."""
    secret = target.secret.get_secret_value() if target.secret else None
    sign = _dingtalk_signer(secret, now) if target.kind == "dingtalk" and secret else None
    try:
        payload = message(target.kind, digest, secret, now)
        response = await http.request(
            "POST",
            target.url.get_secret_value(),
            content=json.dumps(payload, ensure_ascii=False).encode(),
            headers={"Content-Type": "application/json; charset=utf-8"},
            sign=sign,
        )
    except CollectorError as exc:
        return _without_url(str(exc), target.url.get_secret_value())
    except Exception as exc:  # a bug here must not stop the other deliveries or the scheduler
        return f"unexpected {type(exc).__name__}"
    return _refusal(target.kind, response)


def _without_url(text: str, url: str) -> str:
    """Error messages name the URL; webhook URLs carry tokens, so keep only scheme and host."""
    parsed = httpx.URL(url)
    origin = f"{parsed.scheme}://{parsed.netloc.decode()}"
    return re.sub(re.escape(origin) + r"\S*", origin + "/…", text)


async def deliver(
    store: PriceStore, settings: Settings, digest: dict[str, Any], transport: httpx.AsyncBaseTransport | None = None
) -> list[dict[str, Any]]:
    """Send the digest to every configured webhook and record each outcome."""
    results = []
    chosen = targets(settings)
    if not chosen:
        return results
    day = date.fromisoformat(digest["date"])
    async with make_client(settings, transport) as client:
        http = Http(client, "digest", settings)
        for target in chosen:
            error = await send(http, target, digest)
            at = clock.now()
            await asyncio.to_thread(record_delivery, store, day, target.kind, at, error)
            if error:
                log.warning("digest %s: delivery to %s failed: %s", day, target.kind, error)
            results.append({"target": target.kind, "status": "ok" if error is None else "failed", "error": error})
    return results

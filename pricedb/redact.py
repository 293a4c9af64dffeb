"""The one redaction point: secrets never leave the process.

Every text gpuprice stores, prints, logs, serves or exports that may carry words from outside (an
upstream's error body, a URL, an exception message) passes `redact()`, which masks:

- every credential it knows, in the forms credentials travel in (as is, URL-encoded, JSON-escaped):
  each `SecretStr` a `Settings` holds (API keys, tokens, client ids and secrets, AccessKeyIds,
  webhook URLs and their secrets; learned when the settings are made and again wherever a copy is
  put to use), and those a collector resolves at run time (`learn()`: AWS keys from botocore's
  chain, OAuth access tokens);
- credentials by their shape: `Bearer …`/`Basic …` values, and values named like credentials
  (`api_key=`, `key=`, `token=`, `signature=`, `X-Amz-*=`, `Authorization: …`, `"client_secret": …`)
  in query strings, form bodies, header lines and JSON;
- a URL's user-info and, unless `keep_query`, its query string and fragment: an error names the URL
  without its query.

`RedactingFilter` applies the same function to log records: gpuprice's loggers come from
`get_logger`, and httpx's and uvicorn's get the filter when this module is imported.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus, urlsplit

from pydantic import SecretStr

MASK = "***"
# Shorter values are not searched for: they would mask ordinary words, and no provider issues them.
MIN_SECRET_CHARS = 8

_lock = threading.Lock()
_known: set[str] = set()
_known_pattern: re.Pattern[str] | None = None


def _forms(value: str) -> set[str]:
    """The ways a credential appears in text: as is, URL-encoded, JSON-escaped; for a URL (a
    webhook's) also its path and query and each query value, which errors may show apart."""
    forms = {value, quote(value, safe=""), quote_plus(value), json.dumps(value)[1:-1]}
    forms.add(json.dumps(value)[1:-1].replace("/", "\\/"))
    parts = urlsplit(value) if "://" in value else None
    if parts is not None and parts.netloc:
        tail = value.split(parts.netloc, 1)[1]
        forms.add(tail)
        forms.update(v for chunk in parts.query.split("&") for v in chunk.split("=", 1)[1:])
    return {f for f in forms if len(f) >= MIN_SECRET_CHARS}


def learn(*values: str | SecretStr | None) -> None:
    """Add credentials to those `redact` masks (values under MIN_SECRET_CHARS are ignored)."""
    global _known_pattern
    found: set[str] = set()
    for value in values:
        text = value.get_secret_value() if isinstance(value, SecretStr) else value
        if text and len(text.strip()) >= MIN_SECRET_CHARS:
            found |= _forms(text) | _forms(text.strip())
    with _lock:
        if found <= _known:
            return
        _known.update(found)
        ordered = sorted(_known, key=len, reverse=True)  # a longer form before its own substrings
        _known_pattern = re.compile("|".join(map(re.escape, ordered)))


def learn_settings(settings: Any) -> None:
    """Learn every `SecretStr` a settings object holds (works on any pydantic model)."""
    learn(*(value for value in vars(settings).values() if isinstance(value, SecretStr)))


def forget_all() -> None:
    """Tests only: start again from no known credentials."""
    global _known_pattern
    with _lock:
        _known.clear()
        _known_pattern = None


# ----- credentials by shape -----------------------------------------------------------------------
_NAMES = (
    r"(?:api[_-]?key|apikey|x-api-key|key|token|access[_-]?token|refresh[_-]?token|id[_-]?token|auth[_-]?token"
    r"|session[_-]?token|security[_-]?token|x-acs-security-token|x-tc-token|secret|client[_-]?secret"
    r"|client[_-]?id|secret[_-]?id|secret[_-]?key|access[_-]?key(?:[_-]?id|[_-]?secret)?|signature|sign"
    r"|password|passwd|credential|authorization|proxy-authorization|cookie|set-cookie|x-amz-[\w-]+)"
)
_NAME = rf"(?<![\w-]){_NAMES}(?![\w-])"
# Header names whose value is a credential ("Authorization: <token>" in an echoed request).
_HEADER_NAMES = (
    r"(?<![\w-])(?:authorization|proxy-authorization|cookie|set-cookie|x-api-key|api-key|apikey"
    r"|x-acs-security-token|x-tc-token|x-amz-security-token)(?![\w-])"
)
_SCHEMES = r"(?:Bearer|bearer|Basic|Digest|AWS4-HMAC-SHA256|TC3-HMAC-SHA256|ACS3-HMAC-SHA256)"
_SCHEME_VALUE = re.compile(r"\b(Bearer|bearer|BEARER|Basic|Digest)\s+[\w\-.~+/]{6,}=*")
# "name": "value" (JSON) or 'name': 'value' (a Python repr)
_QUOTED_PAIR = re.compile(rf"""(["'])({_NAME})\1(\s*:\s*)(["'])(?:\\.|(?!\4).)*\4""", re.IGNORECASE)
# Name: value (a header line), the value's first word after an optional scheme
_HEADER_PAIR = re.compile(
    rf"({_HEADER_NAMES})(\s*:\s*)((?:{_SCHEMES}\s+)?)(?!\*\*\*)(?!{_SCHEMES}\b)[^\s,;\"'}}<]+", re.IGNORECASE
)
# name=value (a query string, a form body, a signature's parts)
_ASSIGNED = re.compile(rf"({_NAME})=(?!\*\*\*)[^&\s\"'<>,;#)]+", re.IGNORECASE)
_URL = re.compile(r"\b(?:https?|wss?)://[^\s\"'<>]*[^\s\"'<>.,:;)\]]", re.IGNORECASE)  # no trailing punctuation


def _clean_url(url: str, keep_query: bool) -> str:
    scheme, _, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = authority.rsplit("@", 1)[1]
    if not keep_query:
        path = re.split(r"[?#]", path, maxsplit=1)[0]
        authority = re.split(r"[?#]", authority, maxsplit=1)[0]
    return f"{scheme}://{authority}{slash}{path}"


def redact(text: str, *, keep_query: bool = False) -> str:
    """`text` fit to leave the process: known credentials and credential-shaped values masked, URLs
    without user-info and (unless `keep_query`, as in log lines) without query string and fragment."""
    if not text:
        return text
    pattern = _known_pattern
    if pattern is not None:
        text = pattern.sub(MASK, text)
    text = _URL.sub(lambda m: _clean_url(m.group(0), keep_query), text)
    text = _SCHEME_VALUE.sub(rf"\1 {MASK}", text)
    text = _QUOTED_PAIR.sub(rf"\1\2\1\3\4{MASK}\4", text)
    text = _HEADER_PAIR.sub(rf"\1\2\3{MASK}", text)
    return _ASSIGNED.sub(rf"\1={MASK}", text)


def redact_all(texts: Iterable[str]) -> list[str]:
    return [redact(t) for t in texts]


# ----- logs -----------------------------------------------------------------------------------------
_PLAIN = (str, int, float, type(None))


class RedactingFilter(logging.Filter):
    """Runs every record of the logger it sits on through `redact` (queries kept, credentials not),
    traceback included. Plain arguments are redacted one by one, so formatters that read them apart
    (uvicorn's access lines) still can; any other record is formatted first, then redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args.values() if isinstance(record.args, dict) else record.args or ()
        if isinstance(record.msg, str) and all(isinstance(a, _PLAIN) for a in args):
            record.msg = redact(record.msg, keep_query=True)
            if isinstance(record.args, dict):
                record.args = {k: _scrub(v) for k, v in record.args.items()}
            elif record.args:
                record.args = tuple(_scrub(a) for a in record.args)
        else:
            try:
                message = record.getMessage()
            except Exception:  # a malformed record: let logging report it as it would
                return True
            record.msg, record.args = redact(message, keep_query=True), None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info), keep_query=True)
        if record.stack_info:
            record.stack_info = redact(record.stack_info, keep_query=True)
        return True


def _scrub(value: Any) -> Any:
    return redact(value, keep_query=True) if isinstance(value, str) else value


_FILTER = RedactingFilter()
# Libraries that log URLs, request lines or exceptions: httpx (every request it sends), httpcore
# (its traces), uvicorn (access and error lines), APScheduler (a job's exception). A filter sees only
# the records of its own logger, so each logger they log on is named.
THIRD_PARTY_LOGGERS = (
    "httpx",
    "httpcore",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
    "uvicorn",
    "uvicorn.access",
    "uvicorn.error",
    "uvicorn.asgi",
    "apscheduler",
    "apscheduler.scheduler",
    "apscheduler.executors",
    "apscheduler.executors.default",
    "apscheduler.jobstores",
    "apscheduler.jobstores.default",
)


def get_logger(name: str) -> logging.Logger:
    """gpuprice's loggers: a logger whose records pass `redact` (a filter on a parent logger does not
    see its children's records, so each logger gets its own)."""
    logger = logging.getLogger(name)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
    return logger


for _name in THIRD_PARTY_LOGGERS:
    get_logger(_name)

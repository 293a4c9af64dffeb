"""One retry policy for every source: exponential backoff with full jitter on connect errors,
timeouts, HTTP 5xx and 429, honouring `Retry-After` (seconds or an HTTP date), always capped."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TypeVar

import httpx

from collectors.errors import FetchError
from pricedb import clock, redact

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})


class RetryableStatus(Exception):
    """Raised by an attempt that got a response worth retrying."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        super().__init__(f"HTTP {response.status_code} from {redact.redact(str(response.request.url))}")


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0

    def backoff(self, attempt: int) -> float:
        """Full jitter: a random delay up to base × 2^attempt, capped."""
        return random.uniform(0, min(self.max_delay_s, self.base_delay_s * 2**attempt))


def retry_after_seconds(response: httpx.Response, now: datetime | None = None) -> float | None:
    value = response.headers.get("Retry-After")
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or clock.now())).total_seconds())


def describe(exc: BaseException) -> str:
    if isinstance(exc, RetryableStatus):
        return str(exc)
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out ({type(exc).__name__}) on {redact.redact(str(exc.request.url))}"
    if isinstance(exc, httpx.TransportError):
        return redact.redact(f"{type(exc).__name__} on {exc.request.url}: {exc}")
    return redact.redact(f"{type(exc).__name__}: {exc}")


async def with_retries(
    attempt: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """Run `attempt` until it succeeds, retrying transient failures; FetchError when out of tries."""
    last: BaseException | None = None
    for number in range(policy.attempts):
        try:
            return await attempt()
        except (RetryableStatus, httpx.TimeoutException, httpx.TransportError) as exc:
            last = exc
            if number == policy.attempts - 1:
                break
            delay = policy.backoff(number)
            if isinstance(exc, RetryableStatus):
                hinted = retry_after_seconds(exc.response)
                if hinted is not None:
                    delay = min(hinted, policy.max_delay_s)
            await sleep(delay)
    assert last is not None
    raise FetchError(f"{describe(last)} (gave up after {policy.attempts} attempts)") from last

"""E2E Networks' MyAccount plan API, the one its own open-source CLI (e2enetworks-oss/e2ectl) reads.

Request (e2ectl `src/myaccount/transport.ts`, `src/node/client.ts`): `GET
https://api.e2enetworks.com/myaccount/api/v1/images/` with the API key as the query parameter `apikey`,
the token as `Authorization: Bearer …`, `project_id` and `location` (Delhi, Mumbai, …), and the
catalogue query e2ectl requires (`category`, `display_category`, `os`, `osversion`): here the GPU
category as public scripts ask for it (`category=GPU&display_category=GPU`) with Ubuntu 22.04 — a Linux
image, so no OS licence is in the price. `billing_type` and `family` are filters inside the CLI, not
API parameters. No paging: `data` is the whole list.

Answer: the envelope `{"code", "data": [plan…], "errors", "message"}`; each plan `{name, plan, image,
location, currency, available_inventory_status, os{…}, specs{id, sku_name, series, family, cpu, ram
(a string), disk_space, price_per_hour, price_per_month, minimum_billing_amount, committed_sku[{committed_days,
committed_sku_id, committed_sku_name, committed_sku_price, committed_upto_date, committed_node_message}]}}`
(e2ectl `src/node/types.ts`). The same plan comes once per OS image: deduplicated by `sku_name`; a
Windows image (its licence in the price) is left out, and said so in the run's notes.
`committed_sku_price` is the price of the whole term (e2ectl shows it as the option's total).

A failure is an HTTP error status (401/403: the key or token), or an answer with HTTP 200 whose
`code` or `status_code` is 400 or more, whose `detail` is a non-empty string, or whose `errors` is
`true` (e2ectl's `buildFallbackApiError`): a FetchError with E2E's message, never an empty plan list.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from pydantic import SecretStr

from collectors.base import RawResponse
from collectors.e2e.plan_names import plan_gpu
from collectors.e2e.plans import Plan, Price
from collectors.errors import FetchError, ParseError
from collectors.http import Http
from collectors.jsonapi import fetch_explained
from pricedb.card_names import UnknownGpu
from pricedb.models import Availability
from pricedb.shapes import host_fields

PLANS_URL = "https://api.e2enetworks.com/myaccount/api/v1/images/"
GPU_CATALOGUE = (("category", "GPU"), ("display_category", "GPU"), ("os", "Ubuntu"), ("osversion", "22.04"))
PLANS_LABEL = "plans:"  # + the location: the label of a plan-list answer
DEFAULT_LOCATIONS = ("Delhi",)
SETTINGS = ("GPUPRICE_E2E_API_KEY", "GPUPRICE_E2E_AUTH_TOKEN", "GPUPRICE_E2E_PROJECT_ID")
AUTH_HINT = "check GPUPRICE_E2E_API_KEY, GPUPRICE_E2E_AUTH_TOKEN and GPUPRICE_E2E_PROJECT_ID (MyAccount → API)"


@dataclass(frozen=True)
class ApiKeys:
    api_key: SecretStr
    auth_token: SecretStr
    project_id: SecretStr


def plans_url(location: str) -> str:
    """The plan list's URL as stored with quotes: the catalogue query and location, no credential."""
    return f"{PLANS_URL}?{urlencode(_catalogue_query(location))}"


def _catalogue_query(location: str) -> list[tuple[str, str]]:
    return [*GPU_CATALOGUE, ("location", location)]


async def fetch_plans(http: Http, keys: ApiKeys, location: str) -> RawResponse:
    raw = await fetch_explained(
        http,
        "GET",
        plans_url(location),
        source="E2E MyAccount API",
        auth_hint=AUTH_HINT,
        keys=("code", "message", "detail"),
        label=f"{PLANS_LABEL}{location}",
        # the whole query (httpx's `params` replaces the URL's): credentials first, as e2ectl sends them
        params=[
            ("apikey", keys.api_key.get_secret_value()),
            ("project_id", keys.project_id.get_secret_value()),
            *_catalogue_query(location),
        ],
        headers={"Authorization": f"Bearer {keys.auth_token.get_secret_value()}", "Accept": "application/json"},
    )
    failure = envelope_failure(raw)
    if failure is not None:
        raise FetchError(f"E2E MyAccount API refused the plan list for {location}: {failure} ({AUTH_HINT})")
    return raw


def envelope_failure(raw: RawResponse) -> str | None:
    """E2E's words when an answer with a 2xx status is a failure, else None."""
    try:
        document = raw.json()
    except ParseError:
        return None  # not JSON: the parser says so
    if not isinstance(document, dict):
        return None
    status = next((document[k] for k in ("code", "status_code") if isinstance(document.get(k), int)), None)
    detail = document.get("detail")
    failed = (
        (status is not None and status >= 400) or (isinstance(detail, str) and detail) or document.get("errors") is True
    )
    if not failed:
        return None
    words = document.get("message") or detail or document.get("errors")
    return f"{status} {words}" if status is not None else str(words)


def plan_items(raw: RawResponse) -> list[Mapping[str, Any]]:
    document = raw.json_object()
    data = document.get("data")
    if not isinstance(data, list) or not all(isinstance(item, Mapping) for item in data):
        found = ", ".join(map(str, document)) or "nothing"
        raise ParseError(f"{raw.url}: no list of plans under 'data' (found: {found}); has the plan API changed?")
    return data


def read_plan(item: Mapping[str, Any], where: str) -> Plan | str | None:
    """A GPU plan, or why a GPU plan is not taken (a string), or None for a plan without a GPU."""
    specs = item.get("specs")
    if not isinstance(specs, Mapping):
        raise ParseError(f"{where}: a plan without 'specs'")
    sku = _text(specs.get("sku_name")) or _text(item.get("name"))
    if not sku:
        raise ParseError(f"{where}: a plan without sku_name or name")
    try:
        gpu, count = plan_gpu(sku, item.get("gpu_card_details"))
    except UnknownGpu as exc:
        if str(specs.get("family", "")).strip().lower() != "gpu":
            return None  # a CPU plan in the answer: not an offer of a GPU
        return f"unknown GPU, not collected: plan {sku} ({exc})"
    licensed = _licensed_os(item)
    if licensed:
        return f"plan {sku}: {licensed} image not collected (its OS licence is in the price)"
    currency = _text(item.get("currency")).upper()
    if len(currency) != 3:
        return f"plan {sku}: no currency in the answer, not collected"
    hourly = _amount(specs.get("price_per_hour"))
    plan = Plan(
        sku=sku,
        gpu=gpu,
        gpu_count=count,
        hourly=Price(hourly, currency, "hour", f"{currency} {figure(hourly)}/hr") if hourly else None,
        availability=_availability(item.get("available_inventory_status")),
        host=_host(specs),
        shape=host_fields(specs.get("cpu"), specs.get("ram")),
    )
    for committed in specs.get("committed_sku") or []:
        if not isinstance(committed, Mapping):
            raise ParseError(f"{where}: plan {sku}: a committed_sku entry that is not an object: {committed!r}")
        days, price = committed.get("committed_days"), _amount(committed.get("committed_sku_price"))
        if isinstance(days, int) and days > 0 and price:
            text = _text(committed.get("committed_sku_name")) or f"{days} days, {currency} {figure(price)}"
            plan.committed[days] = Price(price, currency, "term", text)
    monthly, minimum = _amount(specs.get("price_per_month")), _amount(specs.get("minimum_billing_amount"))
    if monthly:
        plan.notes.append(f"E2E also lists price_per_month {currency} {figure(monthly)} for this plan")
    if minimum:
        plan.notes.append(f"minimum billing amount {currency} {figure(minimum)}")
    if plan.hourly is None and not plan.committed:
        return f"plan {sku}: no price in the answer, not collected"
    return plan


def figure(amount: float) -> str:
    """A price as people write it: 1319840 → `1,319,840`, 2.5 → `2.5`."""
    return f"{amount:,.2f}".rstrip("0").rstrip(".")


def _licensed_os(item: Mapping[str, Any]) -> str:
    """The image's name when it is a Windows image (E2E lists a plan once per OS image)."""
    os_fields = item.get("os") if isinstance(item.get("os"), Mapping) else {}
    names = (_text(item.get("image")), _text(os_fields.get("name")), _text(os_fields.get("image")))
    return next((name for name in names if "windows" in name.lower()), "")


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _amount(value: Any) -> float | None:
    """A positive price (numbers, or numeric strings), else None: 0 and null mean no price."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        amount = float(value)
    except ValueError:
        return None
    return amount if amount > 0 else None


def _availability(status: Any) -> Availability:
    if status is True:
        return Availability.AVAILABLE
    if status is False:
        return Availability.SOLD_OUT
    return Availability.UNKNOWN


def _host(specs: Mapping[str, Any]) -> str:
    parts = [(specs.get("cpu"), "vCPU"), (specs.get("ram"), "GB RAM"), (specs.get("disk_space"), "GB storage")]
    return ", ".join(f"{_number_text(value)} {unit}" for value, unit in parts if _number_text(value))


def _number_text(value: Any) -> str:
    amount = _amount(value)
    return f"{amount:g}" if amount else ""

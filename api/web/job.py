"""The "my job" page: `/cheapest` as a form, and its answer as people read it.

The form is made from `/cheapest`'s parameters as the OpenAPI document states them (each one's
type, choices, bounds and default), so a parameter the API gains (such as `tokens`) appears in the
form by itself; the labels name the ones known here. The answer is `cheapest_answer`, the bytes
`/cheapest` sends: the ranked options with their arithmetic (billed hours × price = total, by the
billing rule), the estimate's breakdown and band, and why each rejected configuration was rejected."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from api.answers import cheapest_answer
from api.estimator.catalog import all_models
from api.estimator.models import _ALIASES
from api.query import CheapestParams, known_providers
from api.state import AppState
from api.web.html import Page, query_string
from api.web.params import Problems, given, is_list, parse
from pricedb.models import Pricing

GROUPS = {
    "job": ("mem", "hours", "tokens"),
    "model": (
        "model", "params", "workload", "precision", "context", "batch", "gpus", "engine", "zero", "optimizer",
        "lora_rank", "gradient_checkpointing",
    ),
    "architecture": ("layers", "hidden", "heads", "kv_heads", "head_dim", "vocab", "intermediate"),
    "offers": (
        "gpu", "pricing", "provider", "region", "single_gpu", "interruptible", "include_stale", "include_unavailable",
        "rank_by", "limit",
    ),
}  # fmt: skip
PLACEHOLDERS = {"mem": "60", "hours": "200", "model": "llama-2-13b", "params": "7B", "region": "us-east-1, eastus"}


@dataclass
class FormField:
    name: str
    control: str  # number, text, select, checks, flag
    label: str
    help: str = ""
    options: list[tuple[str, str]] = field(default_factory=list)  # (value, label)
    value: str = ""
    chosen: set[str] = field(default_factory=set)
    checked: bool = False
    default: str = ""
    minimum: Any = None
    maximum: Any = None
    step: str = "any"
    placeholder: str = ""
    datalist: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """The page asks something other than this parameter's default."""
        if self.control == "flag":
            return self.checked != (self.default == "true")
        if self.control == "checks":
            return bool(self.chosen)
        return bool(self.value.strip()) and self.value.strip().lower() != self.default.lower()


def _alternatives(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return schema.get("anyOf", [schema])


def _card_choices(state: AppState) -> list[str]:
    default = CheapestParams.model_fields["gpu"].default
    models = {o.gpu_model for o in state.current().offers}
    return sorted(models | ({default} if isinstance(default, str) and default else set()))


def form_field(parameter: dict[str, Any], page: Page, state: AppState) -> FormField:
    """One parameter of the OpenAPI document as a form control, holding what the page was given."""
    name, schema = parameter["name"], parameter.get("schema", {})
    words = page.words
    texts = page.values().get(name, [])
    last = texts[-1] if texts else ""
    described = schema.get("description") or parameter.get("description") or ""
    label = words(name) if words.has(name) else name.replace("_", " ")
    found = FormField(name, "text", label, help=described, value=last, placeholder=PLACEHOLDERS.get(name, ""))
    default = schema.get("default")
    found.default = "" if default is None else str(default).lower() if isinstance(default, bool) else str(default)
    fixed = {"pricing": [p.value for p in Pricing], "provider": known_providers(), "gpu": _card_choices(state)}
    if name in fixed and (name != "gpu" or is_list(CheapestParams, name)):
        found.control = "checks"
        found.options = [(v, words.value(name, v)) for v in fixed[name]]
        found.chosen = {p.strip().lower() for t in texts for p in t.split(",") if p.strip()}
        return found
    if name == "gpu":
        found.control, found.options = "select", [(v, v) for v in fixed[name]]
        found.value = last or found.default
        return found
    alternatives = _alternatives(schema)
    if any(a.get("type") == "boolean" for a in alternatives):
        if default is None:  # unset means "the estimator decides": a choice of three, not a box
            found.control, found.value = "select", last
            found.options = [("", words("default")), ("true", words("yes")), ("false", words("no"))]
            return found
        found.control = "flag"
        found.checked = (last.strip().lower() in ("true", "1", "yes", "on")) if last else found.default == "true"
        return found
    enum = next((a["enum"] for a in alternatives if "enum" in a), None)
    if enum is not None:
        aliases = _ALIASES.get(name, {})
        found.control = "select"
        blank = [] if default is not None else [("", words("default"))]
        found.options = blank + [(v, v) for v in enum if v not in aliases]
        found.value = last or found.default
        return found
    numeric = next((a for a in alternatives if a.get("type") in ("number", "integer")), None)
    if numeric is not None:
        found.control = "number"
        found.minimum = numeric.get("minimum", numeric.get("exclusiveMinimum"))
        found.maximum = numeric.get("maximum")
        found.step = "1" if numeric["type"] == "integer" else "any"
        if not found.placeholder and default is not None:
            found.placeholder = found.default
        return found
    if name == "model":
        found.datalist = sorted(spec.name for spec in all_models())
    return found


def form_groups(parameters: list[dict[str, Any]], page: Page, state: AppState) -> list[tuple[str, list[FormField]]]:
    by_name = {p["name"]: p for p in parameters if p.get("in") == "query"}
    groups = []
    placed: set[str] = set()
    for group, names in GROUPS.items():
        fields = [form_field(by_name[n], page, state) for n in names if n in by_name]
        placed.update(names)
        groups.append((group, fields))
    others = [form_field(p, page, state) for name, p in by_name.items() if name not in placed]
    groups.insert(1, ("other", others))
    return [(group, fields) for group, fields in groups if fields]


@dataclass
class Job:
    page: Page
    groups: list[tuple[str, list[FormField]]]
    problems: Problems
    answer: dict[str, Any] | None = None
    asked: bool = False

    def api_query(self) -> str:
        """The `/cheapest` query this page asked (its JSON)."""
        return query_string(given(self.page, CheapestParams).items())


def job(state: AppState, page: Page, parameters: list[dict[str, Any]]) -> Job:
    values = given(page, CheapestParams)
    found = Job(page, form_groups(parameters, page, state), [], asked=bool(values))
    if not values:
        return found
    params, found.problems = parse(CheapestParams, values)
    if params is not None:
        found.answer = json.loads(cheapest_answer(state, params))
    return found

"""The price sheet as downloadable files: `/export` (CSV, JSON, NDJSON, Parquet; CONTRACT §6
columns in order) and the SkyPilot / gpuhunt catalogs. Every writer lives in pricedb (sheet.py,
foreign.py), the same ones that write the files after each run.

Each answer carries its filename, an ETag (a hash of the exact bytes) and Last-Modified (the last
run that landed before the data's moment), and is built at most once per data change."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import date, datetime

from api.errors import ApiError
from api.history import day_snapshot
from api.query import ExportParams, ForeignParams, known_providers
from api.state import AppState
from pricedb.formats.gpuhunt import GPUHUNT_ALIASES, gpuhunt_csv, resolve
from pricedb.formats.sheet import csv_text, json_text, ndjson_text, parquet_bytes, sheet_row
from pricedb.formats.skypilot import (
    SKYPILOT_COLUMNS,
    SKYPILOT_UNSUPPORTED,
    ZONED_CLOUDS,
    CatalogUnavailable,
    skypilot_vms_csv,
)
from pricedb.offer_filter import matches
from pricedb.queries import Offer, instance_zones, last_run_finished

MEDIA_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "json": "application/json",
    "ndjson": "application/x-ndjson",
    "parquet": "application/vnd.apache.parquet",
}


@dataclass(frozen=True)
class FileAnswer:
    body: bytes
    media_type: str
    filename: str
    last_modified: datetime | None
    notes: list[str] = field(default_factory=list)

    @property
    def etag(self) -> str:
        return '"' + hashlib.sha256(self.body).hexdigest()[:32] + '"'


def _offers_and_moment(state: AppState, day: date | None) -> tuple[list[Offer], datetime | None]:
    if day:
        snapshot = day_snapshot(state, day)
        return snapshot.offers, snapshot.last_change
    return state.current().offers, last_run_finished(state.cursor())


def export_answer(state: AppState, params: ExportParams) -> FileAnswer:
    def build(_: object) -> FileAnswer:
        offers, moment = _chosen_offers(state, params)
        rows = [sheet_row(o) for o in sorted(offers, key=lambda o: o.key)]
        if params.format == "csv":
            body = csv_text(rows).encode()
        elif params.format == "json":
            body = json_text(rows).encode()
        elif params.format == "ndjson":
            body = ndjson_text(rows).encode()
        else:
            body = parquet_bytes(rows)
        name = f"gpuprice-offers-{params.date}" if params.date else "gpuprice-offers"
        return FileAnswer(body, MEDIA_TYPES[params.format], f"{name}.{params.format}", moment)

    return state.cached_value(("export", params.model_dump_json()), build)


def _chosen_offers(state: AppState, params: ExportParams | ForeignParams) -> tuple[list[Offer], datetime | None]:
    offers, moment = _offers_and_moment(state, params.date)
    chosen = params.offer_filter()
    return [o for o in offers if matches(o, chosen)], moment


def skypilot_answer(state: AppState, cloud: str, params: ForeignParams) -> FileAnswer:
    cloud = cloud.strip().lower()  # provider names are case-insensitive everywhere
    if cloud in SKYPILOT_UNSUPPORTED:
        raise ApiError(404, f"no SkyPilot catalog for {cloud}: {SKYPILOT_UNSUPPORTED[cloud]}", "cloud", cloud)
    if cloud not in SKYPILOT_COLUMNS:
        choices = ", ".join(SKYPILOT_COLUMNS)
        refused = ", ".join(SKYPILOT_UNSUPPORTED)
        raise ApiError(
            404, f"unknown SkyPilot cloud {cloud!r}; choose from {choices} (not writable: {refused})", "cloud", cloud
        )

    def build(_: object) -> FileAnswer:
        offers, moment = _chosen_offers(state, params)
        zones = instance_zones(state.cursor(), cloud) if cloud in ZONED_CLOUDS else None
        try:
            sheet = skypilot_vms_csv(offers, cloud, state.store.fx_table(), zones)
        except CatalogUnavailable as exc:
            raise ApiError(404, f"no SkyPilot catalog for {cloud}: {exc}", "cloud", cloud) from exc
        return FileAnswer(sheet.text.encode(), MEDIA_TYPES["csv"], "vms.csv", moment, sheet.notes)

    return state.cached_value(("skypilot", cloud, params.model_dump_json()), build)


def gpuhunt_answer(state: AppState, name: str, params: ForeignParams) -> FileAnswer:
    """`name` is a gpuprice provider or gpuhunt's name for it (`lambdalabs`, `vastai`, `datacrunch`);
    the file is named as gpuhunt looks for it (`lambdalabs.csv`)."""
    resolved = resolve(name.strip().lower(), known_providers())  # any case, like every provider name
    if resolved is None:
        choices = ", ".join([*known_providers(), *GPUHUNT_ALIASES])
        raise ApiError(404, f"unknown provider {name!r}; choose from {choices}", "provider", name)
    provider, stem = resolved

    def build(_: object) -> FileAnswer:
        offers, moment = _chosen_offers(state, params)
        sheet = gpuhunt_csv(offers, provider, state.store.fx_table())
        return FileAnswer(sheet.text.encode(), MEDIA_TYPES["csv"], f"{stem}.csv", moment, sheet.notes)

    return state.cached_value(("gpuhunt", stem, params.model_dump_json()), build)

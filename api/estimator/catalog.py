"""The models the estimator knows by name, from `models_catalog.json` beside this file.

Each entry has the architecture facts of its config, its parameter count (computed from those
facts) and its sources. Lookup accepts the short name (`llama-2-13b`), the Hugging Face id
(`meta-llama/Llama-2-13b-hf`) or an alias, case-insensitively; fine-tuned variants that keep the
architecture (`-Instruct`, `-Chat`, `-hf`, `-base`) resolve to their base model.
"""

from __future__ import annotations

import difflib
import json
import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from .errors import UnknownModel
from .formulas import Shape

CATALOG_PATH = Path(__file__).with_name("models_catalog.json")

# Suffixes of fine-tuned or renamed variants that keep the base model's architecture.
_VARIANT_SUFFIXES = ("-instruct", "-chat", "-hf", "-base", "-it")


@dataclass(frozen=True, slots=True)
class ModelSpec:
    name: str
    display_name: str
    hf_id: str
    family: str
    arch: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    intermediate: int
    mlp: str
    tied_embeddings: bool
    qkv_bias: bool
    max_context: int
    causal: bool
    params: int
    published_params_b: float | None = None
    num_experts: int = 1
    experts_per_token: int = 1
    sliding_window: int | None = None
    sliding_window_layer_fraction: float = 1.0
    aliases: tuple[str, ...] = ()
    source: tuple[str, ...] = ()
    unverified: tuple[str, ...] = ()
    note: str | None = None
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def shape(self) -> Shape:
        return Shape(
            layers=self.layers,
            hidden=self.hidden,
            heads=self.heads,
            kv_heads=self.kv_heads,
            head_dim=self.head_dim,
            vocab=self.vocab,
            intermediate=self.intermediate,
            mlp=self.mlp,
            tied_embeddings=self.tied_embeddings,
            qkv_bias=self.qkv_bias,
            num_experts=self.num_experts,
            experts_per_token=self.experts_per_token,
            arch=self.arch,
            max_context=self.max_context,
        )

    def facts(self) -> dict:
        """The architecture facts and sources, as the answer shows them."""
        out = {
            "name": self.name,
            "hf_id": self.hf_id,
            "layers": self.layers,
            "hidden": self.hidden,
            "heads": self.heads,
            "kv_heads": self.kv_heads,
            "head_dim": self.head_dim,
            "vocab": self.vocab,
            "intermediate": self.intermediate,
            "mlp": self.mlp,
            "tied_embeddings": self.tied_embeddings,
            "max_context": self.max_context,
            "source": list(self.source),
        }
        if self.num_experts > 1:
            out["num_experts"] = self.num_experts
            out["experts_per_token"] = self.experts_per_token
        if self.sliding_window:
            out["sliding_window"] = self.sliding_window
        return out


def _spec(entry: dict) -> ModelSpec:
    known = set(ModelSpec.__dataclass_fields__) - {"extra"}
    kwargs = {k: v for k, v in entry.items() if k in known}
    for key in ("aliases", "source", "unverified"):
        kwargs[key] = tuple(kwargs.get(key, ()))
    return ModelSpec(**kwargs, extra={k: v for k, v in entry.items() if k not in known})


@cache  # no arguments: the catalog file, read once
def all_models() -> tuple[ModelSpec, ...]:
    data = json.loads(CATALOG_PATH.read_text(encoding="utf-8"))
    return tuple(_spec(entry) for entry in data["models"])


@cache  # no arguments: one index of the catalog
def _index() -> dict[str, ModelSpec]:
    index: dict[str, ModelSpec] = {}
    for spec in all_models():
        for key in (spec.name, spec.display_name, spec.hf_id, *spec.aliases):
            index.setdefault(key.lower(), spec)
            # the repository part of a Hugging Face id alone ("Llama-2-13b-hf")
            index.setdefault(key.lower().rsplit("/", 1)[-1], spec)
    return index


def _normalize(name: str) -> str:
    return " ".join(name.strip().lower().split()).replace(" ", "-")


def _candidates(key: str):
    yield key
    yield key.rsplit("/", 1)[-1]
    stripped = key.rsplit("/", 1)[-1]
    changed = True
    while changed:  # "Llama-2-13b-chat-hf" → "llama-2-13b-chat" → "llama-2-13b"
        changed = False
        for suffix in _VARIANT_SUFFIXES:
            if stripped.endswith(suffix):
                stripped = stripped[: -len(suffix)]
                changed = True
                yield stripped


def lookup(name: str) -> ModelSpec:
    """The catalog entry for a short name, Hugging Face id or alias (case-insensitive).
    Raises `UnknownModel` (a ValueError naming `model`) with close names."""
    key = _normalize(name)
    index = _index()
    for candidate in _candidates(key):
        if candidate in index:
            return index[candidate]
    raise UnknownModel(name, suggest(name))


def suggest(name: str, limit: int = 5) -> list[str]:
    """Close catalog names for a misspelt one: difflib matches on names and ids, then names that
    contain what was typed."""
    key = _normalize(name)
    names = [spec.name for spec in all_models()]
    index = _index()
    close = difflib.get_close_matches(key, list(index), n=limit * 3, cutoff=0.6)
    out: list[str] = []
    for match in close:
        canonical = index[match].name
        if canonical not in out:
            out.append(canonical)
    bare = key.rsplit("/", 1)[-1]
    for candidate in names:
        if bare and bare in candidate and candidate not in out:
            out.append(candidate)
    return out[:limit]


def closest_by_params(params: float) -> ModelSpec:
    """The decoder model whose size is nearest (in ratio) to `params`: the shape assumed when only a
    parameter count is given."""
    decoders = [spec for spec in all_models() if spec.causal and spec.num_experts == 1]
    return min(decoders, key=lambda spec: (abs(math.log(spec.params / params)), spec.name))

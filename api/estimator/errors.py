"""Bad input, named by parameter. Every error the estimator raises is a `ValueError` whose message
starts with the parameter's name; `EstimatorError.param` carries it for an HTTP 422 body."""

from __future__ import annotations

from pydantic import ValidationError


class EstimatorError(ValueError):
    """A query the estimator cannot answer, because of `param`."""

    def __init__(self, param: str, message: str) -> None:
        self.param = param
        self.message = message
        super().__init__(f"{param}: {message}")


class UnknownModel(EstimatorError):
    """A model name the catalog does not know; `suggestions` are close names."""

    def __init__(self, name: str, suggestions: list[str]) -> None:
        self.name = name
        self.suggestions = suggestions
        hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else ""
        super().__init__(
            "model",
            f"unknown model {name!r}{hint} (or give params, e.g. params=7B, with layers/hidden/kv_heads/…)",
        )


class InvalidCombination(EstimatorError):
    """Parameters that are each valid but cannot go together (qlora with fp32, …)."""


def error_details(exc: Exception) -> list[dict[str, str]]:
    """`[{"param", "message"}]` for an estimator error or a pydantic validation error of
    `EstimateQuery`, ready for a 422 body."""
    if isinstance(exc, EstimatorError):
        return [{"param": exc.param, "message": exc.message}]
    if isinstance(exc, ValidationError):
        out = []
        for err in exc.errors():
            param = ".".join(str(p) for p in err.get("loc", ())) or "query"
            message = str(err.get("msg", "invalid value"))
            message = message.removeprefix("Value error, ")
            out.append({"param": param, "message": message})
        return out
    return [{"param": "query", "message": str(exc)}]

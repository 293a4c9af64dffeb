"""The one version string: pyproject reads it (`dynamic = ["version"]`), so do `gpuprice --version`,
the API's OpenAPI document and index, and the User-Agent the collectors send."""

VERSION = "0.1.0"

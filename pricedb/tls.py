"""One TLS context per process for every HTTP client gpuprice makes."""

from __future__ import annotations

import ssl
from functools import cache


@cache  # no arguments: one context per process
def client_context() -> ssl.SSLContext:
    """httpx's own default context (certifi's CA bundle, or SSL_CERT_FILE / SSL_CERT_DIR), built once.
    Loading the CA bundle costs ~50 ms of CPU, which httpx pays again for every client it makes unless
    it is handed a context: a collection round makes one client per provider, the CLI one per question
    to a server. A context is safe to share between clients and threads; verification stays on."""
    import httpx  # not at import: the CLI's parser loads no HTTP client

    return httpx.create_ssl_context()

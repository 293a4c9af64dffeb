"""`gpuprice`: the command line (CONTRACT §5). Tables for people; `--json` prints exactly the JSON
the HTTP API returns, because both come from api.answers.

- `entry.py`: the parser and `main()`, which turns every problem a user can act on into one line and
  a status of api.exits;
- `runner.py`: what every query command does the same way: settings, parameters parsed into the
  API's own models, the answer from the database file or from the running server, `--json`;
- `options.py`: the options that are the API's query parameters;
- `service.py` (serve, collect), `prices.py` (cheapest, estimate, offers, providers),
  `data.py` (history, digest, export): the commands, one group a module."""

from api.cli.entry import main

__all__ = ["main"]

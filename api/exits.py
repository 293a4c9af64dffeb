"""Exit statuses of `gpuprice` (README, "Exit status") and the errors that choose them.

Every problem a user can act on is printed as one line on stderr — what failed, the file or port
it concerns, what to do — and ends the command with its status here, never with a traceback."""

from __future__ import annotations

OK = 0
RUN_FAILED = 1  # collect: a named provider's run failed (or was skipped); digest --store: a delivery failed
USAGE = 2  # bad option or input; the message names the option
DATABASE = 3  # the database file cannot be created, opened, read or written (or another process holds it)
SERVER = 4  # serve: the port cannot be listened on; query commands: the server holding the database does not answer
EXPORTS = 5  # collect: every run is recorded, but the price sheets could not be written
PUBLISH = 6  # collect: every run is recorded, but no snapshot could be published (GPUPRICE_PUBLISH_TO)
INTERRUPTED = 130


class CliError(Exception):
    """A problem the user can fix; printed as one line, exit status 2."""


class ServerUnavailable(Exception):
    """The port is taken or refused (serve), or the running server does not answer (query commands)."""


def status_for(exc: BaseException) -> int | None:
    """The exit status for an error that is printed as its one line; None for anything else (a bug)."""
    # imported here, not with this module: every `gpuprice` start imports this one, and these bring
    # DuckDB and the export formats, which `gpuprice estimate` (say) never needs
    from pricedb.formats.exports import ExportFailed
    from pricedb.storefaults import StoreUnavailable

    if isinstance(exc, CliError):
        return USAGE
    if isinstance(exc, StoreUnavailable):
        return DATABASE
    if isinstance(exc, ServerUnavailable):
        return SERVER
    if isinstance(exc, ExportFailed):
        return EXPORTS
    return None

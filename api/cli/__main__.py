"""`python -m api.cli`: the same as the `gpuprice` command."""

from api.cli.entry import main

raise SystemExit(main())

"""The fault matrix: each row of the "trustworthy when nobody is watching" table, run against local
fake upstreams, real servers and real disk faults, with the guarantee it must keep. One module per
layer. The rows, and where each is checked:

- The suite on any date: `.ci/run` runs it again with the clock a year ahead (tests/test_project.py).
- 401/403 bodies echoing the request's credentials: no secret in the database file or its WAL,
  stdout/stderr, logs, API answers or exports — test_collectors `test_echoed_credentials_…`,
  `test_the_wal_…`, `test_echoing_webhooks_…`.
- Headers, then one byte every 10 s: the run fails at its deadline, is recorded, `collect` returns —
  test_collectors `test_a_trickling_upstream_…`.
- A 200 MB answer: the run fails at the body cap with the reason — test_collectors `test_a_200_mb_…`.
- 8 heavy history questions on 1M observations: `/healthz` keeps answering, heavy answers are
  bounded (422/503 with the reason) — test_api `test_healthz_answers_while_…`, `test_over_budget_…`,
  `test_the_budget_interrupts_…`, `test_too_broad_…`.
- 4,000 distinct large `/cheapest` answers: the cache is bounded in bytes — test_api
  `test_the_answer_cache_is_bounded_in_bytes`.
- One row's price ×1000: that offer keeps its last good price, stale with the reason, nothing
  withdrawn — test_collectors `test_a_price_times_1000_…`.
- Exports folder not writable, or its disk full: every run recorded, the failure on the run,
  `/providers`, `/healthz` degraded — test_storage `test_exports_…`, `test_sheets_that_stop_…`.
- Database folder or file read-only, corrupt, disk full; port busy: one line naming the file or
  port and what to do, a documented exit status — test_storage `test_database_…`,
  `test_a_folder_that_turns_read_only_…`, `test_port_busy`.
- Leftovers after crashes, sheet modes — test_storage `test_leftovers_…`, `test_sheets_are_written_…`.
- Out-of-range dates: a 422 naming the parameter, one CLI line — test_api `test_out_of_range_…`,
  `test_cli_out_of_range_dates_…`.
- schemathesis against /openapi.json: 0 failures — test_api `test_openapi_document_tells_the_truth`.
- `/docs` without internet: every asset served by gpuprice — test_api `test_docs_work_offline`.
- `collect AWS`, a 100 KB parameter, `HEAD /cheapest`, queries after `serve --port N`: names
  case-insensitive, a short error excerpt, HEAD wherever GET, the server found through
  `<db>.server.json` — test_api `test_provider_names_…`, `test_a_100kb_parameter_…`, `test_head_…`;
  test_storage `test_query_commands_find_the_server_…`.
"""

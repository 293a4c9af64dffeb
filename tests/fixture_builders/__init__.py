"""Scripts that write recorded answers into fixtures/<provider>/ (run one: `.venv/bin/python
tests/fixture_builders/<provider>.py`). They are kept apart from the recordings, which ship with the
package; fixtures/README.md says where each shape comes from."""

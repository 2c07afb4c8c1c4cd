"""``error_for_status``: the message an operator reads when lakeFS, or a proxy in front of it, refuses."""

from __future__ import annotations

from lakefs_mirror_dagster.lakefs import LakeFSError, LakeFSUnavailable
from lakefs_mirror_dagster.lakefs.errors import error_for_status

ENDPOINT = "http://lakefs.example:8000"


def test_a_proxys_html_page_is_quoted_shortened() -> None:
    page = b"<html><body>" + b"x" * 1000 + b"</body></html>"
    err = error_for_status(502, page, endpoint=ENDPOINT, what="list branches of repo1")
    assert isinstance(err, LakeFSUnavailable) and err.endpoint == ENDPOINT
    assert str(err).startswith(f"list branches of repo1: lakeFS at {ENDPOINT} answered 502: <html><body>xxx")
    assert len(str(err)) < 400


def test_no_body_names_only_the_status() -> None:
    err = error_for_status(418, None, endpoint=ENDPOINT, what="get repository repo1")
    assert type(err) is LakeFSError
    assert str(err) == f"get repository repo1: lakeFS at {ENDPOINT} answered 418"

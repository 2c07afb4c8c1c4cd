"""Dagster's UI, in a real headless Chromium, shows the demo mirror's branches as materialized.

An operator's first look after the demo: the asset ``lakefs_mirror/sample-mirror/branch_heads`` lists
one partition per source branch, every one materialized, and each partition's latest materialization
names the commit the mirror branch really points at in the mirror region's lakeFS.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from lakefs_mirror_dagster.lakefs import LakeFSClient

from .conftest import DemoState

if TYPE_CHECKING:
    from playwright.sync_api import Page

SOURCE_REGION, MIRROR_REGION = "region-a", "region-b"
REPOSITORY, MIRROR = "sample", "sample-mirror"
ASSET_PATH = f"/assets/lakefs_mirror/{MIRROR}/branch_heads"
CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-dev-shm-usage",
]
UI_TIMEOUT_MS = 120_000


def _client(demo_state: DemoState, region: str) -> LakeFSClient:
    r = demo_state.env.region(region)
    return LakeFSClient(r.endpoint, r.access_key_id, r.secret_access_key)


def _wait_for_metadata(page: Page, key: str, expected: str, timeout_s: float = UI_TIMEOUT_MS / 1000) -> None:
    """Poll (bounded) until the selected partition's metadata shows ``key`` = ``expected``.

    The panel renders after the URL changes; its metadata exists only for a materialization.
    """
    deadline = time.monotonic() + timeout_s
    shown = None
    while time.monotonic() < deadline:
        found = re.search(rf"^{re.escape(key)}\s+(\S+)", page.inner_text("body"), re.MULTILINE)
        shown = found.group(1) if found else None
        if shown == expected:
            return
        page.wait_for_timeout(250)
    raise AssertionError(f"the UI shows {key} = {shown!r}, expected {expected!r}")


def test_ui_shows_every_branch_partition_materialized_at_the_mirror_head(
    dagster_ui: str, demo_state: DemoState, chromium_path: str, tmp_path: Path
) -> None:
    source_branches = sorted(b.id for b in _client(demo_state, SOURCE_REGION).list_branches(REPOSITORY))
    mirror = _client(demo_state, MIRROR_REGION)
    mirror_heads = {b: mirror.get_branch_head(MIRROR, b) for b in source_branches}
    assert len(source_branches) >= 3, source_branches
    # Imported here: without Playwright the chromium_path fixture fails (or skips on request) with a clear message.
    from playwright.sync_api import sync_playwright

    screenshot = tmp_path / "dagster-ui-branch-heads.png"
    started = time.monotonic()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path, headless=True, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(UI_TIMEOUT_MS)
            # Dagster greets a new browser with a newsletter dialog over the page: dismiss it whenever it shows.
            skip = page.get_by_role("button", name="Skip")
            page.add_locator_handler(skip, lambda: skip.click())
            page.goto(dagster_ui + ASSET_PATH, timeout=UI_TIMEOUT_MS)
            page.get_by_role("tab", name="Partitions", exact=True).click()
            page.get_by_text(f"Materialized ({len(source_branches)})", exact=True).wait_for()
            for status in ("Failed", "Missing", "Materializing"):
                assert page.get_by_text(f"{status} (0)", exact=True).is_visible(), f"{status} partitions shown"
            for branch in source_branches:
                page.get_by_text(branch, exact=True).first.click()
                page.wait_for_url(re.compile(rf"partition={re.escape(branch)}\b"))
                _wait_for_metadata(page, "branch", branch)
                _wait_for_metadata(page, "mirror_commit_id", mirror_heads[branch] or "")
            page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    print(f"\nscreenshot of the Dagster UI: {screenshot} (browser part {time.monotonic() - started:.1f}s)")
    assert screenshot.stat().st_size > 10_000

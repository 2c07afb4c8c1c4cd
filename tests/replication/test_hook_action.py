"""The action file ``mirrors create --install-hooks`` writes: every post-* event that moves a ref calls the URL, and
with ``hooks.secret`` the file names lakeFS's environment variable, never the secret (the file is readable by
anyone who reads the repository). lakeFS running it is shown in ``tests/service/test_hooks_live.py``."""

from __future__ import annotations

import yaml

from lakefs_mirror_dagster.region import HOOK_EVENTS
from lakefs_mirror_dagster.region.hook_action import SECRET_ENV, action_file


def test_the_action_calls_the_url_on_every_ref_event_and_names_the_secrets_variable_only() -> None:
    plain = yaml.safe_load(action_file("http://mirror:8008/service/replication/v1/hooks/lakefs", with_secret=False))
    assert sorted(plain["on"]) == sorted(HOOK_EVENTS) and all(e.startswith("post-") for e in plain["on"])
    (hook,) = plain["hooks"]
    assert hook["type"] == "webhook" and "headers" not in hook["properties"]
    secret = yaml.safe_load(action_file("http://mirror:8008/x", with_secret=True))
    assert secret["hooks"][0]["properties"]["headers"] == {"X-Lakefs-Mirror-Secret": f"{{{{ ENV.{SECRET_ENV} }}}}"}
    assert SECRET_ENV.startswith("LAKEFSACTION_")  # lakeFS passes only its actions.env.prefix's variables

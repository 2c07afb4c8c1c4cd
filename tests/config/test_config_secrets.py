"""Secrets in the config are never printed, yet reach the code that needs them."""

from __future__ import annotations

import logging
import pickle

import pytest

from lakefs_mirror_dagster.config import Secret
from tests.config.config_data import SECRETS, config_full_of_secrets, error_of, minimal


def test_secrets_do_not_appear_in_repr_str_or_dict(caplog: pytest.LogCaptureFixture) -> None:
    config = config_full_of_secrets()
    with caplog.at_level(logging.INFO):
        logging.getLogger("test").info("config: %s / %r", config, config)
    shown = [repr(config), str(config), f"{config}", str(config.as_dict()), caplog.text]
    shown += [repr(s) for s in config.stores] + [str(config.mirrors_database.sqlalchemy_url)]
    for text in shown:
        for secret in SECRETS:
            assert secret not in text
    assert "**********" in repr(config)


def test_secrets_are_available_to_code_that_needs_them() -> None:
    config = config_full_of_secrets()
    assert config.auth.encrypt.secret_key.reveal() == SECRETS[0]
    assert config.credentials_for("us-east-1") == ("AKIA", SECRETS[1])
    assert config.credentials_for("us-west-2") == ("AKIAW", SECRETS[7])
    assert config.store_by_id("main").s3.credentials.session_token.reveal() == SECRETS[3]
    url = config.mirrors_database.sqlalchemy_url
    assert url.password == SECRETS[4]
    revealed = str(config.as_dict(reveal_secrets=True))
    assert all(secret in revealed for secret in SECRETS)


def test_secret_type_behaviour() -> None:
    secret = Secret("x-Sekr1t")
    assert secret == Secret("x-Sekr1t") and secret != Secret("other")
    assert pickle.loads(pickle.dumps(secret)).reveal() == "x-Sekr1t"
    assert "x-Sekr1t" not in repr(secret) + str(secret) + f"{secret!s}{secret!r}"
    assert not Secret("") and repr(Secret("")) == "Secret('')"


def test_errors_about_secret_values_do_not_echo_them() -> None:
    err = error_of(
        minimal(mirrors_database={"type": "postgres", "postgres": {"connection_string": "mysql://u:Sekr1t@h/db"}})
    )
    assert err.path == "mirrors_database.postgres.connection_string"
    assert "Sekr1t" not in str(err)

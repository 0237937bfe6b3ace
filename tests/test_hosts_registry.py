from backscroll import config
from backscroll.errors import ConfigError
from backscroll.hosts import HOST_NAMES
from backscroll.readers import READERS


def test_static_host_names_match_the_registered_readers() -> None:
    assert set(HOST_NAMES) == {reader.host for reader in READERS}


def test_a_misspelt_host_in_the_config_is_reported_with_a_suggestion() -> None:
    try:
        config.parse({"hosts": {"claude-cod": {"enabled": False}}}, "cfg.yaml")
    except ConfigError as exc:
        assert "hosts.claude-cod" in str(exc) and "claude-code" in str(exc)
    else:
        raise AssertionError("a misspelt host name was accepted")

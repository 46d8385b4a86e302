"""Reading configuration files: ``broker.conf`` (Java properties), JSON and TOML."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bundlewise.config.config import ALL_KEYS, Config
from bundlewise.model.errors import InputError
from bundlewise.model.textfiles import parse_json, read_text


def _properties(text: str) -> dict[str, str]:
    """Java ``.properties``: ``key=value`` or ``key: value``, ``#``/``!`` comments, ``\\`` continuation."""
    out: dict[str, str] = {}
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped[0] in "#!"):
            continue
        if stripped.endswith("\\") and not stripped.endswith("\\\\"):
            pending += stripped[:-1]
            continue
        logical = pending + stripped
        pending = ""
        cut = min((i for i in (logical.find("="), logical.find(":")) if i >= 0), default=-1)
        if cut < 0:
            key, value = logical.split(None, 1) if " " in logical else (logical, "")
        else:
            key, value = logical[:cut], logical[cut + 1 :]
        out[key.strip()] = value.strip()
    return out


def parse_config_text(text: str, source: str) -> dict[str, Any]:
    """The raw key/value map of a config file's text, by its name's suffix."""
    suffix = Path(source).suffix.lower()
    if suffix == ".json":
        data = parse_json(text, source)
        if not isinstance(data, dict):
            raise InputError("expected a JSON object of configuration keys", source=source)
        return data
    if suffix == ".toml":
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise InputError(f"malformed TOML: {e}", source=source) from None
        except RecursionError:
            raise InputError("malformed TOML: nested too deeply", source=source) from None
    return _properties(text)


def load_config(path: str | None, overrides: Iterable[str] = (), warnings: list[str] | None = None) -> Config:
    """``--config FILE`` then ``--set KEY=VALUE`` overrides, in that order; every view checked (``Config.check``)."""
    config = Config()
    if path is not None:
        text = read_text(path)
        config = config.with_values(*_settings(parse_config_text(text, path), path), warnings)
    assignments = parse_assignments(overrides)
    if assignments:
        config = config.with_values(assignments, "--set", warnings)
    return config.check()


def _settings(raw: dict[str, Any], source: str) -> tuple[dict[str, Any], str]:
    """The configuration keys of a file: a scenario file's (CLUSTER.toml) ``[balancer]`` table, else the file's
    own keys.  Any other table is refused: it cannot be a ``ServiceConfiguration`` key, and ignoring it would
    silently drop settings."""
    if "balancer" in raw or "brokers" in raw:  # a scenario file: its settings are its [balancer] table
        balancer = raw.get("balancer", {})
        if not isinstance(balancer, dict):
            raise InputError(
                f"expected a table of configuration keys, got {balancer!r}", source=source, field="balancer"
            )
        return balancer, f"{source}: balancer"
    for key, value in raw.items():
        if isinstance(value, dict | list) and (isinstance(value, dict) or any(isinstance(v, dict) for v in value)):
            raise InputError(
                "expected a configuration key = value; a table is read only as a scenario's [balancer]",
                source=source,
                field=key,
            )
    return raw, source


def parse_assignments(items: Iterable[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"expected KEY=VALUE, got {item!r}", source="--set")
        out[key.strip()] = value
    return out


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(value)
    if value is None:
        return ""
    return str(value)


def to_broker_conf(config: Config, only_explicit: bool = False) -> str:
    """Render as ``broker.conf`` text (every key, or only the explicitly set ones)."""
    names = config.explicit if only_explicit else ALL_KEYS
    lines = []
    for name in names:
        key = ALL_KEYS[name]
        lines.append(f"# {key.meaning} [{key.unit}]" if key.unit else f"# {key.meaning}")
        lines.append(f"{name}={_format(config[name])}")
    return "\n".join(lines) + "\n"

"""Configuration: Pulsar key names and defaults, loading and validation (docs/configuration.md).

``Config`` is an immutable mapping from every known key to its value (the default unless set).
``load_config`` reads ``broker.conf`` (Java properties), JSON or TOML; ``Config.with_values``
applies ``--set`` overrides and per-step overrides; ``Config.view`` gives the small per-concern settings of
``views``.  Unknown keys are ignored, except those that
look like balancer or dispatch keys, which earn a warning naming the closest known key.
"""

from bundlewise.config.config import ALL_KEYS, Config, short_class_name
from bundlewise.config.loading import load_config, parse_assignments, parse_config_text, to_broker_conf

__all__ = [
    "ALL_KEYS",
    "Config",
    "load_config",
    "parse_assignments",
    "parse_config_text",
    "short_class_name",
    "to_broker_conf",
]

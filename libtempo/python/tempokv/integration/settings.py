"""An integration's settings, read from the engine's own configuration (vLLM's
kv_connector_extra_config, SGLang's storage extra config, LMCache's adapter_params).

Two keys say where the Context comes from, `tempo_config` (a TempoKV configuration file,
Documentation/configuration.md) and `tempo` (settings inline, applied after the file);
every other key is one of the integration's own options, and a key it does not know is an
error naming the accepted ones, so a typo never passes silently."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..binding import Config, Context, SettingValue

# The engine name tempod accepts (daemon.engine, at most 23 bytes).
ENGINE_NAME_BYTES = 23


@dataclass(frozen=True)
class Option:
    """One option of an integration: its default and the check that converts a given value
    (raising ValueError with the reason)."""

    default: Any
    convert: Callable[[Any], Any]
    doc: str


def positive_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"a positive integer, not {value!r}")
    return value


def non_negative_number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 \
            or not math.isfinite(value):
        raise ValueError(f"a finite number >= 0, not {value!r}")
    return float(value)


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"true or false, not {value!r}")
    return value


def text(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"a non-empty string, not {value!r}")
    return value


@dataclass(frozen=True)
class ContextSpec:
    """Where a Context comes from: a configuration file, then settings inline; `engine`
    (when not set inline) names the engine in tempod, so every process of one engine shares
    its claims (Documentation/tempod.md). Two equal specs are one Context in a process."""

    config_file: str | None
    settings: tuple[tuple[str, SettingValue], ...]
    engine: str

    def open(self) -> Context:
        cfg = Config()
        try:
            cfg.set("daemon.engine", self.engine)
            if self.config_file is not None:
                cfg.load(self.config_file)
            for key, value in self.settings:
                cfg.set(key, value)
            return Context(cfg)
        finally:
            cfg.close()


def engine_name(prefix: str, identity: str) -> str:
    """An engine name for tempod of at most 23 bytes: the prefix and as much of the identity
    as fits (vLLM's engine_id is a 36-character UUID)."""
    name = f"{prefix}-{identity}" if identity else prefix
    return name.encode()[:ENGINE_NAME_BYTES].decode(errors="ignore")


def read_settings(where: str, extra: Mapping[str, Any] | None, options: Mapping[str, Option],
                  engine: str, ignore: frozenset[str] = frozenset()) -> tuple[ContextSpec,
                                                                              dict[str, Any]]:
    """(the Context's spec, the options with their defaults filled in) from an engine's extra
    configuration. `ignore` names keys the engine itself reads from the same mapping."""
    extra = dict(extra or {})
    file = extra.pop("tempo_config", None)
    if file is not None and not isinstance(file, (str, os.PathLike)):
        raise ValueError(f"{where}: tempo_config must be a path, not {file!r}")
    inline = extra.pop("tempo", {}) or {}
    if not isinstance(inline, Mapping):
        raise ValueError(f"{where}: tempo must be a mapping of TempoKV settings, not {inline!r}")
    if file is None and not inline and not os.environ.get("TEMPO_CONFIG") \
            and not os.environ.get("TEMPO_DAEMON"):
        raise ValueError(f"{where}: say where TempoKV runs: tempo_config (a configuration "
                         "file) or tempo (settings, e.g. {\"device\": \"daemon\"})")
    values: dict[str, Any] = {}
    for key, value in extra.items():
        if key in ignore:
            continue
        option = options.get(key)
        if option is None:
            accepted = ", ".join(["tempo", "tempo_config", *options])
            raise ValueError(f"{where}: unknown key {key!r}: accepted {accepted}")
        try:
            values[key] = option.convert(value)
        except ValueError as e:
            raise ValueError(f"{where}: {key} must be {e}") from None
    for key, option in options.items():
        values.setdefault(key, option.default)
    settings = tuple(sorted((str(k), v) for k, v in inline.items()))
    name = values.pop("engine", None) or engine
    return ContextSpec(None if file is None else os.fspath(file), settings, name), values

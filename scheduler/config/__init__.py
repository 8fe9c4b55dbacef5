"""KubeSchedulerConfiguration (``kubescheduler.config.k8s.io/v1``) read as kube-scheduler reads
its ``--config`` file: decoded strictly, defaulted, validated, and each profile built.

kube-scheduler runs one framework per profile, chosen by a pod's ``spec.schedulerName``; a pod
naming no profile is another scheduler's and is left alone (no status, no event). Operators
tune exactly this file — bin packing with ``MostAllocated``, a GPU profile with its own
``addedAffinity``, spreading defaults, ``percentageOfNodesToScore`` — so a simulation or a drain
plan that ignored it would predict the wrong node.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from kube.apierrors import FieldError, aggregate_message
from kube.objects import DEFAULT_SCHEDULER_NAME, Pod
from kube.strict import (
    AliasRefused,
    DuplicateKey,
    ManifestError,
    check_object,
    drop_nulls,
    parse_yaml,
    read_text,
    strict_message,
)
from scheduler.config.defaults import API_VERSION, set_defaults
from scheduler.config.profiles import ProfileError, SchedulerProfile, build_profile
from scheduler.config.schema import ARGS_TYPES, CONFIG_TYPE, TYPES
from scheduler.config.validation import validate_configuration

__all__ = [
    "API_VERSION",
    "ConfigError",
    "KubeSchedulerConfiguration",
    "SchedulerProfile",
    "decode_config",
    "default_configuration",
    "load_config",
]

KIND: Final = "KubeSchedulerConfiguration"


class ConfigError(ValueError):
    """A configuration kube-scheduler would refuse: ``field`` names the first bad field (the
    file itself when the whole document is wrong), ``str()`` is the message."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class KubeSchedulerConfiguration:
    """A decoded, defaulted, validated configuration with its profiles built.

    ``document`` is the defaulted document (what ``kube-scheduler --write-config-to`` would
    write); ``profiles`` the built profiles by ``schedulerName``, in the file's order.
    """

    __slots__ = (
        "document",
        "percentage_of_nodes_to_score",
        "pod_initial_backoff_seconds",
        "pod_max_backoff_seconds",
        "profiles",
    )

    def __init__(self, document: Mapping[str, Any]) -> None:
        self.document: Mapping[str, Any] = document
        self.percentage_of_nodes_to_score: int = document.get("percentageOfNodesToScore", 0)
        self.pod_initial_backoff_seconds: int = document.get("podInitialBackoffSeconds", 1)
        self.pod_max_backoff_seconds: int = document.get("podMaxBackoffSeconds", 10)
        profiles: dict[str, SchedulerProfile] = {}
        for i, profile in enumerate(document.get("profiles") or ()):
            name = profile.get("schedulerName", "")
            try:
                profiles[name] = build_profile(profile)
            except ProfileError as exc:
                raise ConfigError(
                    f"profiles[{i}].plugins",
                    f"initializing profiles: creating profile for scheduler name {name}: {exc}",
                ) from None
        self.profiles: Mapping[str, SchedulerProfile] = profiles

    @property
    def scheduler_names(self) -> tuple[str, ...]:
        return tuple(self.profiles)

    def profile_for(self, pod: Pod) -> SchedulerProfile | None:
        """The profile that schedules ``pod`` (by ``spec.schedulerName``), or None: the pod is
        another scheduler's."""
        return self.profiles.get(pod.scheduler_name or DEFAULT_SCHEDULER_NAME)

    def percentage_for(self, profile: SchedulerProfile) -> int:
        """``percentageOfNodesToScore`` for ``profile``: its own, else the configuration's."""
        own = profile.percentage_of_nodes_to_score
        return self.percentage_of_nodes_to_score if own is None else own


def _fail(errors: Sequence[FieldError], prefix: str) -> ConfigError:
    return ConfigError(errors[0].field, prefix + aggregate_message(errors))


_GO_FIELD: Final = re.compile(r"Go struct field \w+\.(\S+) of type")


def _type_error_field(message: str, prefix: str, default: str) -> str:
    found = _GO_FIELD.search(message)
    return prefix + found[1] if found else default


def _check(doc: dict[str, Any], duplicates: Any, where: str) -> None:
    problems = check_object(doc, model=CONFIG_TYPE, duplicates=duplicates, extra_types=TYPES)
    if problems.type_error is not None:
        field = _type_error_field(problems.type_error, "", where)
        raise ConfigError(field, f"{where}: {problems.type_error}")
    if problems.strict:
        first = problems.strict[0].split('"')[1] if '"' in problems.strict[0] else where
        raise ConfigError(first, f"{where}: {strict_message(problems.strict)}")
    for i, profile in enumerate(doc.get("profiles") or ()):
        for j, entry in enumerate(profile.get("pluginConfig") or ()):
            args = entry.get("args")
            model = ARGS_TYPES.get(entry.get("name", ""))
            if args is None or model is None:
                continue
            at = f"profiles[{i}].pluginConfig[{j}].args"
            if not isinstance(args, dict):
                raise ConfigError(at, f"{where}: {at}: must be an object")
            kind = args.get("kind")
            if kind is not None and kind != model.removeprefix("V1"):
                raise ConfigError(
                    f"{at}.kind",
                    f'{where}: {at}.kind: Invalid value: "{kind}": has to match plugin args'
                    f" ({model.removeprefix('V1')})",
                )
            found = check_object(args, model=model, duplicates=duplicates, extra_types=TYPES)
            if found.type_error is not None:
                field = _type_error_field(found.type_error, f"{at}.", at)
                raise ConfigError(field, f"{where}: decoding {at}: {found.type_error}")
            if found.strict:
                field = at + "." + found.strict[0].split('"')[1]
                raise ConfigError(field, f"{where}: decoding {at}: {strict_message(found.strict)}")


def decode_config(text: str, *, source: str = "") -> KubeSchedulerConfiguration:
    """Decode, default, validate and build a KubeSchedulerConfiguration from YAML or JSON.

    The steps, each kube's:

    * decode: one YAML or JSON document; aliases and keys given twice refused; fields checked
      against the v1 types (``scheduler.config.schema``) with ``kube.strict``'s walk, each
      ``pluginConfig[].args`` against its plugin's args type — an unknown field is named
      (``strict decoding error: unknown field "profiles[0].plugins.score.enabeld"``);
    * ``scheduler.config.defaults``: ``v1/defaults.go``;
    * ``scheduler.config.validation``: ``validation``'s checks and messages;
    * ``scheduler.config.profiles``: ``NewFramework`` per profile.

    Any failure raises ``ConfigError``: the field, and the message kube-scheduler would print.
    """
    where = source or KIND
    try:
        docs, duplicates = parse_yaml(text, source=source, duplicates="refuse", aliases="refuse")
    except DuplicateKey as exc:
        raise ConfigError(
            exc.dotted, f'{where}: strict decoding error: duplicate field "{exc.dotted}"'
        ) from None
    except AliasRefused as exc:
        raise ConfigError(where, f"{where}: YAML aliases are not allowed: {exc}") from None
    except ManifestError as exc:
        raise ConfigError(where, f"{where}: {exc}") from None
    docs = [d for d in docs if d is not None]
    if len(docs) != 1:
        raise ConfigError(
            where, f"{where}: one KubeSchedulerConfiguration expected, found {len(docs)} documents"
        )
    raw = docs[0]
    if not isinstance(raw, dict):
        raise ConfigError(where, f"{where}: must hold a KubeSchedulerConfiguration object")
    doc: dict[str, Any] = drop_nulls(raw)
    if doc.get("kind") != KIND or doc.get("apiVersion") != API_VERSION:
        raise ConfigError(
            "apiVersion",
            f'{where}: no kind "{doc.get("kind", "")}" is registered for version'
            f' "{doc.get("apiVersion", "")}": want kind {KIND}, apiVersion {API_VERSION}',
        )
    try:
        _check(doc, duplicates, where)
    except ManifestError as exc:
        raise ConfigError(where, f"{where}: {exc}") from None
    defaulted = set_defaults(doc)
    errors = validate_configuration(defaulted)
    if errors:
        raise _fail(errors, f"{where}: ")
    try:
        return KubeSchedulerConfiguration(defaulted)
    except ConfigError as exc:
        raise ConfigError(exc.field, f"{where}: {exc}") from None


def load_config(path: str | Path) -> KubeSchedulerConfiguration:
    """``decode_config`` of a file (``kube-scheduler --config``)."""
    try:
        text = read_text(path)
    except ManifestError as exc:
        raise ConfigError(str(path), str(exc)) from None
    except OSError as exc:
        raise ConfigError(str(path), f"{path}: {exc.strerror or exc}") from None
    return decode_config(text, source=str(path))


_DEFAULT: dict[str, KubeSchedulerConfiguration] = {}


def default_configuration(
    scheduler_name: str = DEFAULT_SCHEDULER_NAME,
) -> KubeSchedulerConfiguration:
    """kube-scheduler's configuration without a file: one default profile, named
    ``scheduler_name`` (``kube-scheduler --scheduler-name``), built once."""
    found = _DEFAULT.get(scheduler_name)
    if found is None:
        doc = set_defaults({"profiles": [{"schedulerName": scheduler_name}]})
        found = _DEFAULT[scheduler_name] = KubeSchedulerConfiguration(doc)
    return found

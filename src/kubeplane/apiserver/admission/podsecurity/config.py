"""PodSecurityConfiguration: the default policy (every mode privileged:latest unless configured)
and the exemptions, read from the PodSecurity entry of an AdmissionConfiguration file
(--admission-control-config-file), inline or through its `path`.

Upstream: PodSecurityConfiguration (admission/api/v1/types.go), SetDefaults_PodSecurityDefaults
(v1/defaults.go), ValidatePodSecurityConfiguration (admission/api/validation/validation.go),
LoadFromData (admission/api/load/load.go); the AdmissionConfiguration file format is
apiserver.config.k8s.io/v1 (apiserver/pkg/admission/config.go ReadAdmissionConfiguration).
"""
from __future__ import annotations

import pathlib
from dataclasses import dataclass, field
from typing import Any

import yaml

from ....api import errors
from ....api.validation import names
from .api import VERSION_LATEST, LevelVersion, ParseError, Policy, parse_level, parse_version

PLUGIN_NAME = "PodSecurity"
API_VERSIONS = ("pod-security.admission.config.k8s.io/v1", "pod-security.admission.config.k8s.io/v1beta1",
                "pod-security.admission.config.k8s.io/v1alpha1")
KIND = "PodSecurityConfiguration"
_MODES = ("enforce", "audit", "warn")


@dataclass(frozen=True)
class PodSecurityConfiguration:
    defaults: Policy = field(default_factory=Policy)
    exempt_usernames: frozenset[str] = field(default_factory=frozenset)
    exempt_namespaces: frozenset[str] = field(default_factory=frozenset)
    exempt_runtime_classes: frozenset[str] = field(default_factory=frozenset)


DEFAULT_CONFIGURATION = PodSecurityConfiguration()


def from_object(obj: dict[str, Any]) -> PodSecurityConfiguration:
    """A PodSecurityConfiguration object (apiVersion/kind checked), defaulted and validated;
    a ValueError names every bad field as upstream's validation does."""
    if obj.get("apiVersion") not in API_VERSIONS or obj.get("kind") != KIND:
        raise ValueError(f"expected {KIND} ({API_VERSIONS[0]}), got {obj.get('apiVersion')}/{obj.get('kind')}")
    defaults = obj.get("defaults") or {}
    exemptions = obj.get("exemptions") or {}
    if not isinstance(defaults, dict) or not isinstance(exemptions, dict):
        raise ValueError("defaults and exemptions must be objects")
    errs: list[errors.FieldError] = []
    modes = []
    for mode in _MODES:                      # SetDefaults_PodSecurityDefaults, then validateLevel/Version
        level = str(defaults.get(mode) or "privileged")
        version = str(defaults.get(f"{mode}-version") or VERSION_LATEST)
        try:
            level = parse_level(level)
        except ParseError as e:
            errs.append(errors.invalid(f"defaults.{mode}", level, str(e)))
        try:
            parsed_version = parse_version(version)
        except ParseError as e:
            errs.append(errors.invalid(f"defaults.{mode}-version", version, str(e)))
            parsed_version = parse_version(VERSION_LATEST)
        modes.append(LevelVersion(level, parsed_version))
    namespaces = _exemptions(exemptions, "namespaces", lambda n: names.name_is_dns_label(n, False), errs)
    runtime_classes = _exemptions(exemptions, "runtimeClasses", lambda n: names.name_is_dns_subdomain(n, False), errs)
    usernames = _exemptions(exemptions, "usernames", lambda u: ["username must not be empty"] if not u else [], errs)
    if errs:
        raise ValueError(f"{PLUGIN_NAME} invalid: {errors.aggregate(errs)}")
    return PodSecurityConfiguration(Policy(*modes), usernames, namespaces, runtime_classes)


def _exemptions(exemptions: dict[str, Any], key: str, validate: Any, errs: list[errors.FieldError]) -> frozenset[str]:
    """One exemption list: each entry valid and not repeated (upstream's validate* functions)."""
    seen: set[str] = set()
    for i, value in enumerate(exemptions.get(key) or []):
        path = f"exemptions.{key}[{i}]"
        value = str(value)
        if problems := validate(value):
            errs.append(errors.invalid(path, value, ", ".join(problems)))
        elif value in seen:
            errs.append(errors.duplicate(path, value))
        else:
            seen.add(value)
    return frozenset(seen)


def from_admission_config_file(path: str | pathlib.Path | None) -> PodSecurityConfiguration:
    """The PodSecurity entry of an AdmissionConfiguration file; the defaults when there is no
    file or no entry (upstream: LoadFromReader(nil))."""
    if not path:
        return DEFAULT_CONFIGURATION
    path = pathlib.Path(path)
    doc = _read(path)
    for plugin in doc.get("plugins") or []:
        if not isinstance(plugin, dict) or plugin.get("name") != PLUGIN_NAME:
            continue
        if isinstance(plugin.get("configuration"), dict):
            return from_object(plugin["configuration"])
        if plugin.get("path"):
            p = pathlib.Path(str(plugin["path"]))
            return from_object(_read(p if p.is_absolute() else path.parent / p))
    return DEFAULT_CONFIGURATION


def _read(path: pathlib.Path) -> dict[str, Any]:
    """A YAML or JSON document as a dict; every failure a ValueError naming the file."""
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ValueError(f"unable to read admission control configuration from {str(path)!r}: {e}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ValueError(f"unable to read admission control configuration from {str(path)!r}: not an object")
    return doc

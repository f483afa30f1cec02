"""``/flagz`` and ``/statusz`` (component-base z-pages, ComponentFlagz/ComponentStatusz).

Both answer text by default: a header naming the component and a warning that the
page is not machine-parseable, then one ``key<sep>value`` line per item, with the
separator picked at random among ``:``, ``: ``, ``=`` and a space on every request —
upstream does that on purpose so nobody parses the text. A structured answer is given
for ``Accept: application/json;as=Flagz;v=v1beta1;g=config.k8s.io`` (or ``Statusz``,
``application/yaml``, ``v1alpha1`` with a deprecation ``Warning``); any other explicit
media type is ``406 NotAcceptable``, as upstream's content negotiation answers.

``/statusz`` has the process start time, the uptime, the runtime version, the binary
and emulated Kubernetes versions and the listed paths (the first segment of every
registered path, as upstream aggregates them). ksched is a Python program: the
runtime it reports is Python's (``Python version`` in the text, the ``goVersion``
field of the structured object).
"""

from __future__ import annotations

import datetime
import platform
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson
import yaml

__all__ = ["ZPage", "flagz_object", "negotiate", "statusz_object"]

DELIMITERS = (":", ": ", "=", " ")
GROUP = "config.k8s.io"
VERSIONS = ("v1beta1", "v1alpha1")
DEPRECATED = {"v1alpha1"}

_HEADER = (
    "\n{name} {page}\nWarning: This endpoint is not meant to be machine parseable, has no "
    "formatting compatibility guarantees and is for debugging purposes only.\n"
)
_NON_DEBUGGING = {"/apis", "/api", "/openid", "/version", "/"}


class ZPage:
    """What ``negotiate`` decided: a status, a content type, a body and headers."""

    def __init__(
        self, status: int, content_type: str, body: bytes, headers: Mapping[str, str] = {}
    ) -> None:
        self.status = status
        self.content_type = content_type
        self.body = body
        self.headers = dict(headers)


def _media_ranges(accept: str) -> list[tuple[str, dict[str, str]]]:
    out = []
    for part in accept.split(","):
        bits = [b.strip() for b in part.split(";")]
        if not bits[0]:
            continue
        params = {}
        for b in bits[1:]:
            k, _, v = b.partition("=")
            params[k.strip().lower()] = v.strip()
        out.append((bits[0].lower(), params))
    return out


def _not_acceptable() -> ZPage:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "only the following media types are accepted: application/json, "
        "application/yaml, text/plain",
        "reason": "NotAcceptable",
        "code": 406,
    }
    return ZPage(406, "application/json", orjson.dumps(body, option=orjson.OPT_INDENT_2))


def negotiate(
    accept: str,
    kind: str,
    text: Callable[[], str],
    obj: Callable[[str], dict[str, Any]],
) -> ZPage:
    """Upstream's negotiation: no Accept (or one that text/plain satisfies) → text; the
    structured media type with ``as=<kind>``, ``g=config.k8s.io`` and a known ``v`` →
    that object as JSON or YAML; anything else → 406."""
    if not accept.strip():
        return ZPage(200, "text/plain; charset=utf-8", text().encode())
    for media, params in _media_ranges(accept):
        structured = "as" in params
        if media in ("application/json", "application/yaml") and structured:
            version = params.get("v", "")
            if params.get("as") != kind or params.get("g") != GROUP or version not in VERSIONS:
                continue
            doc = obj(version)
            headers = {}
            if version in DEPRECATED:
                headers["Warning"] = (
                    f'299 - "This version of the {kind.lower()} endpoint is deprecated. '
                    'Please use a newer version."'
                )
            ctype = f"{media};g={GROUP};v={version};as={kind}"
            if media == "application/json":
                body = orjson.dumps(doc, option=orjson.OPT_INDENT_2)
            else:
                body = yaml.safe_dump(doc, sort_keys=False).encode()
            return ZPage(200, ctype, body, headers)
        if not structured and media in ("text/plain", "text/*", "*/*"):
            return ZPage(200, "text/plain; charset=utf-8", text().encode())
    return _not_acceptable()


# ---- flagz ----------------------------------------------------------------------------


def flagz_text(component: str, flags: Mapping[str, str]) -> str:
    sep = random.choice(DELIMITERS)
    lines = [_HEADER.format(name=component, page="flagz")]
    for key in sorted(flags):
        lines.append(f"{key}{sep}{flags[key]}\n")
    return "".join(lines)


def flagz_object(component: str, flags: Mapping[str, str], version: str) -> dict[str, Any]:
    return {
        "kind": "Flagz",
        "apiVersion": f"{GROUP}/{version}",
        "metadata": {"name": component},
        "flags": dict(sorted(flags.items())),
    }


# ---- statusz --------------------------------------------------------------------------


def aggregate_paths(paths: Sequence[str]) -> list[str]:
    """``aggregatePaths``: the distinct first segments, without the API paths."""
    seen = set()
    for p in paths:
        parts = p.split("/")
        if len(parts) < 2 or not parts[1]:
            continue
        folder = "/" + parts[1]
        if folder not in _NON_DEBUGGING:
            seen.add(folder)
    return sorted(seen)


def _uptime(start: float) -> str:
    up = max(0, int(time.time() - start))
    return f"{up // 3600} hr {(up // 60) % 60:02d} min {up % 60:02d} sec"


def _unix_date(t: float) -> str:
    """Go's ``time.UnixDate`` layout: ``Mon Jan _2 15:04:05 MST 2006``."""
    dt = datetime.datetime.fromtimestamp(t).astimezone()
    return f"{dt:%a %b} {dt.day:2d} {dt:%H:%M:%S} {dt.tzname()} {dt.year}"


def runtime_version() -> str:
    return f"python{platform.python_version()}"


def statusz_text(
    component: str,
    *,
    start: float,
    binary_version: str,
    emulation_version: str,
    paths: Sequence[str],
) -> str:
    d = random.choice(DELIMITERS)
    listed = " ".join(aggregate_paths(paths))
    emulation = f"Emulation version{d} {emulation_version}" if emulation_version else ""
    path_line = f"Paths{d} {listed}" if listed else ""
    return (
        _HEADER.format(name=component, page="statusz")
        + f"\nStarted{d} {_unix_date(start)}\nUp{d} {_uptime(start)}\n"
        + f"Python version{d} {runtime_version()}\nBinary version{d} {binary_version}\n"
        + f"{emulation}\n{path_line}\n"
    )


def statusz_object(
    component: str,
    version: str,
    *,
    start: float,
    binary_version: str,
    emulation_version: str,
    paths: Sequence[str],
) -> dict[str, Any]:
    started = datetime.datetime.fromtimestamp(int(start), datetime.UTC)
    doc: dict[str, Any] = {
        "kind": "Statusz",
        "apiVersion": f"{GROUP}/{version}",
        "metadata": {"name": component},
        "startTime": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "uptimeSeconds": max(0, int(time.time() - start)),
        "goVersion": runtime_version(),
        "binaryVersion": binary_version,
    }
    if emulation_version:
        doc["emulationVersion"] = emulation_version
    doc["paths"] = aggregate_paths(paths)
    return doc

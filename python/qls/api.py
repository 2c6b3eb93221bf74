"""``qls.verify``, ``qls.render`` and ``qls.check``: the prover and the tool check from Python,
each one call into the native module (the same code as ``qls verify`` and ``qls check``)."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from qls import _native
from qls._build import Export
from qls._shared import PathLike, QlsInputError
from qls.export import write

__all__ = ["verify", "render", "check", "tasks_from_trace", "Result", "Finding", "QlsInputError", "PathLike", "verify_inputs"]


class Finding(dict):  # type: ignore[type-arg]
    """One finding of ``qls-findings/1``: a dict, with its fields also as attributes."""

    @property
    def rule(self) -> str:
        return str(self["rule"])

    @property
    def severity(self) -> str:
        return str(self["severity"])

    @property
    def subject(self) -> str:
        return str(self["subject"])

    @property
    def message(self) -> str:
        return str(self["message"])


@dataclass(frozen=True)
class Result:
    """What ``qls verify`` found: the findings, the gate, the exit code and both reports."""

    exit_code: int
    gate: str
    findings: list[Finding]
    report: dict[str, Any] = field(repr=False)
    text: str = field(repr=False)

    @property
    def passed(self) -> bool:
        return self.exit_code == 0


def verify_inputs(path_or_graph: PathLike | Export | tuple[dict, dict], tmp: str,
           options: Mapping[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The agent.yaml, and the options with the inputs of an exported graph among them (its
    graph and catalogue written into ``tmp``; its own rulebook and settings unless ``options``
    name them)."""
    if isinstance(path_or_graph, (str, os.PathLike)):
        return str(path_or_graph), dict(options)
    if not (isinstance(path_or_graph, tuple) and len(path_or_graph) == 2
            and all(isinstance(d, Mapping) for d in path_or_graph)):
        raise QlsInputError("expected an agent.yaml path, an Export or a (graph, catalogue) pair of dicts, "
                            f"not {type(path_or_graph).__name__}")
    graph, catalogue = path_or_graph
    g, c = Path(tmp) / "graph.json", Path(tmp) / "tools.catalogue.json"
    write(graph, catalogue, str(g), str(c))
    given = options.get("catalogue")
    more = [] if given is None else list(given) if isinstance(given, (list, tuple)) else [given]
    out: dict[str, Any] = {**options, "graph": str(g), "catalogue": [str(c), *more]}
    for name in ("rulebook", "settings"):
        own = getattr(path_or_graph, name, None)
        if own is not None and options.get(name) is None:
            out[name] = str(own)
    return None, out


def verify(path_or_graph: PathLike | Export | tuple[dict, dict], **options: Any) -> Result:
    """Proves an ``agent.yaml`` (a path) or an exported graph (an ``export_<framework>`` result,
    or a ``(graph, catalogue)`` pair) as ``qls verify`` does, with its flags as keyword
    options (``session_steps=2``, ``replay=True``, ``sarif="qls.sarif"``, ``rulebook=…``), each
    handed to the native proof as a typed value (no command line between).

    ``tasks=`` (SPEC §1.5) is a tasks file's path, or the mapping itself (task name → task, as
    agent.yaml's ``tasks:``), handed over as a JSON file; the verdicts are ``result.report["tasks"]``.

    A bad input or option raises ``QlsInputError``; the gate's verdict is ``result.exit_code``.
    """
    with tempfile.TemporaryDirectory(prefix="qls-verify-") as tmp:
        agent, opts = verify_inputs(path_or_graph, tmp, options)
        if isinstance(opts.get("tasks"), Mapping):
            tasks_file = Path(tmp) / "tasks.json"
            tasks_file.write_text(json.dumps({"tasks": dict(opts["tasks"])}), encoding="utf-8")
            opts["tasks"] = str(tasks_file)
        try:
            code, text, report = _native.verify(agent, opts)
        except ValueError as e:
            raise QlsInputError(str(e).rstrip()) from None
    doc = json.loads(report)
    return Result(exit_code=code, gate=doc["gate"], findings=[Finding(f) for f in doc["findings"]],
                  report=doc, text=text)


def render(result: Result) -> str:
    """The text report of a ``verify`` result (SPEC §7), as ``qls verify`` prints it."""
    return result.text


def check(catalogue: PathLike, history: PathLike | Mapping[str, Any], call: PathLike | Mapping[str, Any] | Sequence[Mapping[str, Any]], *,
          rulebook: PathLike | None = None, settings: PathLike | None = None,
          key_file: PathLike | None = None, append: bool = False) -> dict[str, Any]:
    """Decides one call — or, given a list of calls, one model step's batch (SPEC §2) — exactly
    as ``qls check`` does: the same native code, the same JSON (a decision; ``{"decisions":
    [...]}`` for a batch; the history with ``append``). ``history`` and ``call`` are paths or the
    JSON values themselves (handed to the native check as they are: no temporary file)."""
    def value(v: Any) -> Any:
        if isinstance(v, (str, os.PathLike)):
            return v
        return dict(v) if isinstance(v, Mapping) else v

    calls = {"calls": [value(c) for c in call]} if isinstance(call, (list, tuple)) else value(call)
    try:
        out = _native.check(str(catalogue), value(history), calls, _opt(rulebook), _opt(settings), _opt(key_file), append)
    except ValueError as e:
        raise QlsInputError(str(e).rstrip()) from None
    parsed: dict[str, Any] = json.loads(out)
    return parsed


def tasks_from_trace(run: PathLike | Mapping[str, Any] | Sequence[Mapping[str, Any]], *, name: str | None = None,
                     catalogue: PathLike | Sequence[PathLike] | None = None,
                     settings: PathLike | None = None) -> str:
    """The tasks file (YAML, as ``--tasks`` and ``qls.verify(..., tasks=...)`` read it) that a
    recorded run makes, exactly as ``qls tasks from-trace`` writes it: the run's calls in order,
    each argument's origin read from where its value came from (SPEC §2 "Provenance"). ``run`` is
    a path, or the run itself: a guard's history (``guard.history``), a LangGraph/LangChain run's
    messages (``messages_to_dict(...)`` or ``dumpd`` of each), or an OpenAI Agents SDK run's items
    (``result.to_input_list()``). With ``catalogue`` (and ``settings``, an agent.yaml) the task is
    checked against them; a bad run raises ``QlsInputError`` naming its line."""
    value: Any = run if isinstance(run, (str, os.PathLike)) else dict(run) if isinstance(run, Mapping) else list(run)
    cats = [] if catalogue is None else [str(catalogue)] if isinstance(catalogue, (str, os.PathLike)) else [str(c) for c in catalogue]
    try:
        return _native.tasks_from_trace(value, name, cats, _opt(settings))
    except ValueError as e:
        raise QlsInputError(str(e).rstrip()) from None


def _opt(p: PathLike | None) -> str | None:
    return None if p is None else str(p)



"""A finding's witness replayed through a guard: the same calls, decided by the guard object that
runs in front of the app's tools.

``qls verify --replay`` replays a witness through the Rust tool check with stubbed tools. On an
app whose tools sit behind a ``qls.Guard``, that proves the finding against the check the
exporter *described*; ``replay_through`` closes the loop with the guard that *runs*: it replays
the witness as ``qls replay`` does (``qls._native.replay``, which returns the concrete run's
calls as ``qls-replay-trace/1``), then drives the guard through those calls in order — each
decided with its entry by ``Guard.begin`` (a person's yes with the held call's token), acted on
by ``Guard.carry_out`` (runs, holds, refusals and their rollbacks) with the tools stubbed by the
results the concrete run used — and compares each decision, and each rollback's compensations,
with the concrete run's. A guard built from other files than the export's (another catalogue, rulebook or
settings), or one whose history differs from what the proof assumed, diverges at the first call
it decides otherwise, and the result says which.

What is compared: the decision and its reasons for every call the check decided; for a refusal,
the compensations run (tool and arguments, in order); for an allowed call, that the guard ran it.
Calls at unguarded nodes (``checked: false`` in the trace) run outside the guard, as in the app:
the guard never sees them.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from typing import Any, Mapping, Union

from qls import _native
from qls._build import Export
from qls._shared import PathLike, QlsInputError
from qls.api import verify_inputs
from qls.guard import Call, Guard, Held

#: The trace format ``qls replay --trace`` writes and ``_native.replay`` returns.
TRACE_FORMAT = "qls-replay-trace/1"

Inputs = Union[PathLike, Export, "tuple[dict, dict]"]


@dataclass(frozen=True)
class GuardReplay:
    """What replaying a witness through a guard found.

    ``reproduced``: the concrete run reproduced the violation and the guard decided every call
    exactly as the concrete run's check did. ``replay``: the Rust replay's own words.
    ``diverged``: where the guard differed (``None`` when it did not). ``calls``: the concrete
    run's calls (``qls-replay-trace/1``); ``decisions``: the guard's decision on each call it saw.
    """

    reproduced: bool
    replay: str
    diverged: str | None
    calls: list[dict[str, Any]] = field(repr=False)
    decisions: list[dict[str, Any]] = field(repr=False, default_factory=list)


class _Stubs:
    """The tools as the concrete run stubbed them: each run must be the next one expected."""

    def __init__(self) -> None:
        self.expected: list[tuple[str, dict[str, Any], Any]] = []
        self.wrong: str | None = None

    def __call__(self, tool: str, args: Mapping[str, Any]) -> Any:
        if not self.expected:
            self.wrong = self.wrong or f"the guard ran `{tool}` {json.dumps(dict(args), sort_keys=True)}, which the concrete run did not"
            return None
        want_tool, want_args, result = self.expected.pop(0)
        if (tool, dict(args)) != (want_tool, want_args):
            self.wrong = self.wrong or (f"the guard ran `{tool}` {json.dumps(dict(args), sort_keys=True)}, "
                                        f"the concrete run `{want_tool}` {json.dumps(want_args, sort_keys=True)}")
        return result


def _call(c: Mapping[str, Any], undoes: int | None) -> Call:
    origins = c.get("origins", {})
    return Call(c["tool"], dict(c.get("args", {})), origins if origins == "auto" else dict(origins), agent=c.get("agent"),
                context=dict(c.get("context", {})), marks=list(c.get("marks", [])), undoes=undoes)


def replay_through(guard: Guard, finding: Mapping[str, Any], inputs: Inputs, **options: Any) -> GuardReplay:
    """Replays ``finding``'s witness (a finding of ``qls.verify(..., replay=True)``, or any with a
    ``witness``) on ``inputs`` (what it was found on: an ``agent.yaml`` path or an export), then
    drives ``guard`` — which should start with an empty history — through the concrete run's calls
    with the tools stubbed, and compares its decisions with the concrete run's."""
    witness = finding.get("witness")
    if not witness:
        raise QlsInputError(f"finding {finding.get('rule')}:{finding.get('subject')} has no witness "
                            "(verify with replay=True, or the obligation is not reachable)")
    with tempfile.TemporaryDirectory(prefix="qls-replay-") as tmp:
        agent, opts = verify_inputs(inputs, tmp, options)
        try:
            reproduced, line, trace = _native.replay(dict(witness), agent, opts)
        except ValueError as e:
            raise QlsInputError(str(e).rstrip()) from None
    doc = json.loads(trace)
    calls: list[dict[str, Any]] = doc["calls"]
    words = str(doc["replay"])
    if not reproduced:
        return GuardReplay(False, words, f"the witness does not replay: {words}", calls)
    diverged, decisions = _drive(guard, calls)
    return GuardReplay(diverged is None, words, diverged, calls, decisions)


def _drive(guard: Guard, calls: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """Drives the guard through the concrete run's calls; the first divergence, if any."""
    stubs = _Stubs()
    entry_of: dict[int, int] = {}  # the concrete history's entry index -> the guard's
    held: Held | None = None
    decisions: list[dict[str, Any]] = []
    for i, item in enumerate(calls, 1):
        c = item["call"]
        where = f"call {i} (`{c['tool']}`, turn {item['turn']} step {item['step']})"
        if not item["checked"]:
            continue
        undoes = c.get("undoes")
        if undoes is not None:
            if undoes not in entry_of:
                return f"{where}: it undoes entry {undoes}, which the guard's history does not hold", decisions
            undoes = entry_of[undoes]
        call = _call(c, undoes)
        guard.turn = c.get("turn", guard.turn)
        token = c.get("token")
        if token is not None:
            if held is None or (held.call.tool, dict(held.call.args)) != (call.tool, dict(call.args)):
                return f"{where}: the concrete run presents a person's yes, but the guard holds no such call", decisions
            call, token = held.call, held.token
        t = guard.begin(call, token=token)
        d = t.decision
        decisions.append(d)
        got = (d["decision"], list(d["reasons"]))
        want = (item["decision"], list(item["reasons"]))
        if got != want:
            guard.abandon(t, "not run: the replay diverged here")
            return (f"{where}: the guard decided {got[0]} {got[1]}, the concrete run's check {want[0]} {want[1]}",
                    decisions)
        if d["decision"] == "allow":
            stubs.expected.append((c["tool"], dict(c.get("args", {})), item["result"]))
        for r in item["rollback"]:
            stubs.expected.append((r["tool"], dict(r["args"]), r["result"]))
        outcome = guard.carry_out(t, stubs)
        if stubs.wrong is not None:
            return f"{where}: {stubs.wrong}", decisions
        if stubs.expected:
            t_, a, _ = stubs.expected[0]
            return f"{where}: the guard did not run `{t_}` {json.dumps(a, sort_keys=True)}, which the concrete run ran", decisions
        ran = ([t.entry] if t.answer == "allow" else []) + [r["entry"] for r in t.rollback]
        concrete = ([item["entry"]] if item["entry"] is not None else []) + [r["entry"] for r in item["rollback"]]
        for mine, theirs in zip(ran, concrete):
            entry_of[theirs] = mine
        held = outcome.held if outcome.status == "held" else None
    return None, decisions

"""The tool check in front of a framework's tool calls (SPEC §2), framework-agnostic: a
``Guard`` keeps a session's signed history and decides each model step's calls as one batch
through the native check (``toolcheck::check_batch``); ``qls.langgraph`` and ``qls.agents`` map its
three answers to their framework's own means.

What a guard does with each answer:

- ``allow``: the tool runs once, and its result is recorded in the history with the marks the
  catalogue declares for it (``external`` for a ``returns: untrusted`` tool, …).
- ``confirm``: the call is held for a person, who is shown each argument with its origin; the
  person's yes presents the decision's token and the call is checked again (``Guard.approve``),
  so it runs only with the exact arguments the person saw. The step's later calls are not run.
- ``refuse``: nothing runs; the reason goes back to the model, and the run's earlier writes are
  undone, last first, by the compensations the decision lists (each run and recorded).

The history key comes from ``key=``, else the file ``QLS_HISTORY_KEY_FILE`` names, else the
``QLS_HISTORY_KEY`` environment variable; without one the guard makes an ephemeral key and warns
(a history signed under it cannot be checked by anyone else, or after the process ends).

A step's calls are decided once, as a batch, on the history as though each allowed call had
returned (SPEC §2 "A batch"); the guard then runs them in the model's order and records each
real result. A rule-sheet check reading ``{from: tool.field}`` of a call of the same step
therefore reads no value and refuses (never the other way round).
"""

from __future__ import annotations

import json
import os
import secrets
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, Sequence, Union

from qls import _native

PathLike = Union[str, "os.PathLike[str]"]
Origin = Literal["typed", "model", "tool", "handoff"]

#: What a call after a held one returns to the model.
NOT_RUN: str = _native.NOT_RUN

KEY_ENV = "QLS_HISTORY_KEY"
KEY_FILE_ENV = "QLS_HISTORY_KEY_FILE"


class QlsGuardWarning(UserWarning):
    """A guard runs under a key nobody else has (an ephemeral key)."""


@dataclass(frozen=True)
class Call:
    """One tool call the model asked for: its tool, arguments, and where each argument came
    from (an argument with no origin is the model's, the check's reading)."""

    tool: str
    args: Mapping[str, Any]
    origins: Mapping[str, Origin] = field(default_factory=dict)
    call_id: str | None = None
    agent: str | None = None
    context: Mapping[str, Any] = field(default_factory=dict)
    marks: Sequence[str] = ()
    #: The history entry this call undoes (a compensation the model chose), when it is one.
    undoes: int | None = None

    def to_json(self, *, token: str | None = None, turn: int | None = None, undoes: int | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"tool": self.tool, "args": dict(self.args),
                               "origins": {k: self.origins.get(k, "model") for k in self.args}}
        if self.agent is not None:
            out["agent"] = self.agent
        if self.context:
            out["context"] = dict(self.context)
        if self.marks:
            out["marks"] = list(self.marks)
        if token is not None:
            out["token"] = token
        if turn is not None:
            out["turn"] = turn
        undoes = self.undoes if undoes is None else undoes
        if undoes is not None:
            out["undoes"] = undoes
        return out


@dataclass(frozen=True)
class Held:
    """A call the check decided ``confirm``: what the person is asked about."""

    call: Call
    reasons: list[str]
    token: str
    confirmation: str | None

    def question(self) -> dict[str, Any]:
        """What a person is shown: the tool, each argument with its value and origin, why."""
        return {"tool": self.call.tool,
                "args": {k: {"value": v, "origin": self.call.origins.get(k, "model")} for k, v in self.call.args.items()},
                "reasons": list(self.reasons), "confirmation": self.confirmation}


@dataclass(frozen=True)
class Outcome:
    """What became of one call of a step: ``ran`` (with its ``result``), ``refused`` (with the
    reason for the model), ``held`` (for a person) or ``not_run`` (an earlier call is held)."""

    call: Call
    status: Literal["ran", "refused", "held", "not_run", "declined"]
    decision: dict[str, Any]
    result: Any = None
    message: str = ""
    held: Held | None = None
    undone: list[dict[str, Any]] = field(default_factory=list)

    def for_model(self) -> str:
        """What goes back to the model as the call's result."""
        if self.status == "ran":
            return self.result if isinstance(self.result, str) else json.dumps(self.result, default=str)
        return self.message


Runner = Callable[[str, Mapping[str, Any]], Any]


def _key(key: bytes | str | None) -> bytes:
    if key is not None:
        return key.encode() if isinstance(key, str) else bytes(key)
    path = os.environ.get(KEY_FILE_ENV)
    if path:
        raw = Path(path).read_bytes()
        return raw.rstrip(b"\r\n")
    env = os.environ.get(KEY_ENV)
    if env:
        return env.encode()
    warnings.warn(f"no history key ({KEY_ENV} or {KEY_FILE_ENV}): an ephemeral key, so this session's "
                  "history can be checked only by this process", QlsGuardWarning, stacklevel=3)
    return secrets.token_bytes(32)


class Guard:
    """The SPEC §2 tool check for one session, in front of a framework's tools.

    ``catalogue`` (and ``rulebook``, ``settings``: an ``agent.yaml`` whose settings and agents
    apply) are read as ``qls check`` reads them; exporting an app whose tools sit behind this
    guard writes them as the graph's guarded node, so the proof is about the check that runs.
    """

    def __init__(self, catalogue: PathLike, *, rulebook: PathLike | None = None, settings: PathLike | None = None,
                 key: bytes | str | None = None, session: str | None = None, agent: str | None = None) -> None:
        self.catalogue = str(catalogue)
        self.rulebook = None if rulebook is None else str(rulebook)
        self.settings = None if settings is None else str(settings)
        self._checker = _native.Checker(self.catalogue, _key(key), self.rulebook, self.settings)
        self.agent = agent
        self.history: dict[str, Any] = {"session": session or uuid.uuid4().hex, "entries": []}
        self.turn: int | None = None

    # -- what the exporter reads --------------------------------------------------------------

    def catalogue_entries(self) -> dict[str, dict[str, Any]]:
        """The guard's catalogue as qls catalogue entries (overlays applied)."""
        tools: dict[str, dict[str, Any]] = json.loads(self._checker.catalogue_json())["tools"]
        return tools

    # -- the session ----------------------------------------------------------------------------

    def new_turn(self) -> None:
        """Starts a new turn: a refusal's rollback undoes only the current turn's writes."""
        self.turn = 0 if self.turn is None else self.turn + 1

    def history_json(self) -> str:
        """The signed history, as ``qls check --history`` reads it."""
        return json.dumps(self.history)

    def _call(self, c: Call, **kw: Any) -> dict[str, Any]:
        if c.agent is None and self.agent is not None:
            c = Call(c.tool, c.args, c.origins, c.call_id, self.agent, c.context, c.marks, c.undoes)
        return c.to_json(turn=self.turn, **kw)

    def decide(self, calls: Sequence[Call]) -> list[dict[str, Any]]:
        """The batch's decisions (SPEC §2), one per call, without running anything."""
        out = json.loads(self._checker.decide(self.history_json(), json.dumps([self._call(c) for c in calls])))
        decisions: list[dict[str, Any]] = out["decisions"]
        return decisions

    def _record(self, call: dict[str, Any], decision: str, ran: bool, result: Any) -> None:
        self.history = json.loads(self._checker.record(self.history_json(), json.dumps(call), decision, ran,
                                                       json.dumps(result, default=str)))

    def _undo(self, decision: dict[str, Any], run: Runner) -> list[dict[str, Any]]:
        undone = []
        for step in decision.get("detail", {}).get("rollback", []):
            result = run(step["tool"], step["args"])
            call = {"tool": step["tool"], "args": step["args"], "undoes": step["undoes"]}
            agent = self.agent
            if agent is not None:
                call["agent"] = agent
            if self.turn is not None:
                call["turn"] = self.turn
            self._record(call, "rollback", True, result)
            undone.append(step)
        return undone

    def run_step(self, calls: Sequence[Call], run: Runner) -> list[Outcome]:
        """Decides one model step's calls as a batch and acts on each in the model's order: runs
        the allowed ones, refuses (and rolls back) the refused ones, holds the first confirmed
        one; the calls after a held one are not run.

        Each call is decided as the head of the batch of the step's calls not yet acted on, on the
        history extended by what the earlier ones really did (their real results, so a token is
        bound to the history the person's yes will meet): the same decisions as the batch decided
        once (SPEC §2), and exact where a rule-sheet check reads an earlier call's result.
        """
        out: list[Outcome] = []
        for i, c in enumerate(calls):
            if any(o.status == "held" for o in out):
                held_by = next(j for j, o in enumerate(out) if o.status == "held")
                out.append(Outcome(c, "not_run", {"decision": "not_run", "reasons": [],
                                                  "detail": {"held_by": held_by, "message": NOT_RUN}},
                                   message=NOT_RUN))
                continue
            out.append(self.act(c, self.decide(calls[i:])[0], run))
        return out

    def act(self, c: Call, d: dict[str, Any], run: Runner, *, token: str | None = None) -> Outcome:
        """Acts on one decision: ``allow`` runs the tool and records its result; ``refuse``
        records the refusal and runs the rollback; ``confirm`` records the held call."""
        call = self._call(c, token=token)
        answer = d["decision"]
        if answer == "allow":
            result = run(c.tool, c.args)
            self._record(call, "allow", True, result)
            return Outcome(c, "ran", d, result=result)
        if answer == "refuse":
            self._record(call, "refuse", False, None)
            undone = self._undo(d, run)
            return Outcome(c, "refused", d, message=_refusal(c, d, undone), undone=undone)
        self._record(call, "confirm", False, None)
        detail = d.get("detail", {})
        held = Held(c, list(d["reasons"]), detail.get("token", ""), detail.get("confirmation"))
        return Outcome(c, "held", d, message=f"waiting for a person: {', '.join(d['reasons'])}", held=held)

    def approve(self, held: Held, run: Runner) -> Outcome:
        """The person's yes: the held call, with the token, checked again (a batch of one) and
        run only when the check now allows it — with exactly the arguments the person saw."""
        d = self.decide_one(held.call, token=held.token)
        return self.act(held.call, d, run, token=held.token)

    def decline(self, held: Held) -> Outcome:
        """The person's no: nothing runs."""
        return Outcome(held.call, "declined", {"decision": "confirm", "reasons": held.reasons, "detail": {}},
                       message=f"not run: the person declined `{held.call.tool}`")

    def decide_one(self, c: Call, *, token: str | None = None) -> dict[str, Any]:
        """The decision on one call (a batch of one), with a token when the person said yes."""
        out = json.loads(self._checker.decide(self.history_json(), json.dumps([self._call(c, token=token)])))
        decision: dict[str, Any] = out["decisions"][0]
        return decision

    def verify_history(self) -> int | None:
        """The index of the first entry whose MAC does not verify (``None``: the chain holds)."""
        return self._checker.first_invalid(self.history_json())


def _refusal(c: Call, d: dict[str, Any], undone: list[dict[str, Any]]) -> str:
    detail = {k: v for k, v in d.get("detail", {}).items() if k != "rollback"}
    text = f"refused: `{c.tool}` ({', '.join(d['reasons'])}) {json.dumps(detail, sort_keys=True)}"
    if undone:
        text += "; undone: " + ", ".join(f"{u['tool']}" for u in undone)
    return text

"""The tool check in front of a framework's tool calls (SPEC §2), framework-agnostic: a
``Guard`` keeps a session's signed history and decides each call through the native check
(``toolcheck``); ``qls.langgraph``, ``qls.agents`` and the others map its three answers to their
framework's own means.

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

**One guard, many threads and tasks.** Deciding a call and putting its entry on the history is one
step (``Guard.begin``), taken under the native session's own lock: an allowed call's entry goes on
the history *running* — it counts as run for every call decided after it (``at_most``, ``after``,
spent compensations, the marks its result declares), as SPEC §2's batch counts an earlier allowed
call "as though it had returned" — then the tool runs outside the lock, and its result completes
the entry (``Guard.finish``; ``Guard.fail`` records that the tool raised: an ambiguous failure,
never nothing). The lock is held only inside one native call, which cannot be suspended, so it
orders threads and asyncio tasks alike and is never held while a tool runs. A compensation (a
rollback's, or an undo the model chose) waits until the run it undoes came back.

A step's calls are decided in the model's order, each on the history the earlier ones left
(SPEC §2 "A batch"): ``run_step`` decides, runs and records each in turn, so a rule-sheet check
reading ``{from: tool.field}`` of an earlier call of the step reads its real result. A call decided
while an earlier one still runs reads no value there and is refused (never the other way round).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import threading
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Literal, Mapping, Sequence

from qls import _native
from qls._shared import CallOrigins, Origin, PathLike, QlsInputError

#: What a call after a held one returns to the model.
NOT_RUN: str = _native.NOT_RUN

KEY_ENV = "QLS_HISTORY_KEY"
KEY_FILE_ENV = "QLS_HISTORY_KEY_FILE"


class QlsGuardWarning(UserWarning):
    """A guard runs under a key nobody else has (an ephemeral key)."""


@dataclass(frozen=True)
class Call:
    """One tool call the model asked for: its tool, arguments, and where each argument came
    from: ``"auto"`` (the default: traced from the values against the person's messages and the
    earlier results, SPEC §2 "Provenance, not authorship"), or per argument (an argument with no
    origin is the model's, the check's reading)."""

    tool: str
    args: Mapping[str, Any]
    origins: CallOrigins = "auto"
    call_id: str | None = None
    agent: str | None = None
    context: Mapping[str, Any] = field(default_factory=dict)
    marks: Sequence[str] = ()
    #: The history entry this call undoes (a compensation the model chose), when it is one.
    undoes: int | None = None

    def to_json(self, *, token: str | None = None, turn: int | None = None, undoes: int | None = None) -> dict[str, Any]:
        origins: Any = ("auto" if self.origins == "auto"
                        else {k: self.origins.get(k, "model") for k in self.args})  # type: ignore[union-attr]
        out: dict[str, Any] = {"tool": self.tool, "args": dict(self.args), "origins": origins}
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
    #: Each argument's origin as the check decided it (an ``auto`` call's as traced).
    origins: Mapping[str, Origin] = field(default_factory=dict)

    def origin(self, arg: str) -> Origin:
        """Where ``arg`` came from, as the check decided."""
        if arg in self.origins:
            return self.origins[arg]
        given = self.call.origins
        return "model" if given == "auto" else given.get(arg, "model")  # type: ignore[union-attr]

    def question(self) -> dict[str, Any]:
        """What a person is shown: the tool, each argument with its value and origin, why."""
        return {"tool": self.call.tool,
                "args": {k: {"value": v, "origin": self.origin(k)} for k, v in self.call.args.items()},
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
        try:
            raw = Path(path).read_bytes()
        except OSError as e:
            raise QlsInputError(f"{path}: the history key file ({KEY_FILE_ENV}) cannot be read: {e.strerror}") from None
        return raw.rstrip(b"\r\n")
    env = os.environ.get(KEY_ENV)
    if env:
        return env.encode()
    warnings.warn(f"no history key ({KEY_ENV} or {KEY_FILE_ENV}): an ephemeral key, so this session's "
                  "history can be checked only by this process", QlsGuardWarning, stacklevel=3)
    return secrets.token_bytes(32)


@dataclass(frozen=True)
class Ticket:
    """A call the guard decided and put on its history in one step (``Guard.begin``): the
    decision, the index of the call's entry and, for a refusal, the compensations its rollback
    runs (each ``{"entry", "tool", "args", "undoes"}``). An allowed call's entry and each
    compensation's are *running* until ``Guard.finish`` or ``Guard.fail`` completes them."""

    call: Call
    decision: dict[str, Any]
    entry: int
    rollback: list[dict[str, Any]] = field(default_factory=list)
    token: str | None = None

    @property
    def answer(self) -> str:
        """``allow``, ``confirm`` or ``refuse``."""
        answer: str = self.decision["decision"]
        return answer


AsyncRunner = Callable[[Mapping[str, Any]], Awaitable[Any]]

#: How long a compensation waits for the run it undoes to come back (seconds); past it, the
#: compensation is not run and its entry records why.
UNDO_WAIT = 600.0

#: A tool's result as JSON text (what ``json.dumps(result, default=str)`` writes), with one
#: encoder made once rather than one per call.
_RESULT_JSON = json.JSONEncoder(default=str)
#: A call as JSON text, and the native module's answers read back (``json.dumps`` and
#: ``json.loads`` without their per-call argument checks: the guard's hot path).
_JSON = json.JSONEncoder()
_JSON_READ = json.JSONDecoder().decode


def _error_text(error: BaseException | str) -> str:
    if isinstance(error, BaseException):
        return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return str(error)


class Guard:
    """The SPEC §2 tool check for one session, in front of a framework's tools.

    ``catalogue`` (and ``rulebook``, ``settings``: an ``agent.yaml`` whose settings and agents
    apply) are read as ``qls check`` reads them; exporting an app whose tools sit behind this
    guard writes them as the graph's guarded node, so the proof is about the check that runs.
    ``history`` starts the session from a history persisted earlier (verified once, here).
    """

    def __init__(self, catalogue: PathLike, *, rulebook: PathLike | None = None, settings: PathLike | None = None,
                 key: bytes | str | None = None, session: str | None = None, agent: str | None = None,
                 history: Mapping[str, Any] | None = None) -> None:
        self.catalogue = str(catalogue)
        self.rulebook = None if rulebook is None else str(rulebook)
        self.settings = None if settings is None else str(settings)
        try:
            self._checker = _native.Checker(self.catalogue, _key(key), self.rulebook, self.settings)
            self._session = _native.Session(self._checker, session or uuid.uuid4().hex,
                                            None if history is None else json.dumps(history))
        except ValueError as e:
            raise QlsInputError(str(e).rstrip()) from None
        self.agent = agent
        self.turn: int | None = None
        # The person's messages recorded so far (``user``, ``user_said``).
        self._said: list[str] = []
        self._said_lock = threading.Lock()
        # Woken whenever a run comes back (a compensation may be waiting for it), when a thread
        # waits: ``_waiting`` counts them, changed under the condition's lock.
        self._returned = threading.Condition()
        self._waiting = 0

    # -- what the exporter reads --------------------------------------------------------------

    def catalogue_entries(self) -> dict[str, dict[str, Any]]:
        """The guard's catalogue as qls catalogue entries (overlays applied)."""
        tools: dict[str, dict[str, Any]] = json.loads(self._checker.catalogue_json())["tools"]
        return tools

    # -- the session ----------------------------------------------------------------------------

    @property
    def history(self) -> dict[str, Any]:
        """The signed history (a copy: ``{"session": …, "entries": [...]}``). Assigning one
        replaces the session's history with it, verified once."""
        h: dict[str, Any] = json.loads(self._session.history_json())
        return h

    @history.setter
    def history(self, value: Mapping[str, Any]) -> None:
        try:
            self._session.load(json.dumps(value))
        except ValueError as e:
            raise QlsInputError(str(e).rstrip()) from None

    def user(self, text: str) -> int:
        """Records the person's message ``text`` as a signed ``user`` entry (SPEC §2
        "Provenance, not authorship"): a later call's argument equal to a value of it (or a
        string of at least 4 characters occurring in it) is ``typed``. Its entry's index."""
        if not isinstance(text, str):
            raise QlsInputError(f"Guard.user: the person's message is text, not {type(text).__name__}")
        with self._said_lock:
            self._said.append(text)
            return self._session.user(text, self.turn)

    def user_said(self, texts: Sequence[str]) -> None:
        """The person's messages of the conversation so far, oldest first, as a framework holds
        them (LangGraph's state, a chat's history): those after the ones this guard recorded are
        recorded (``user``), each once. When the framework's list no longer starts with what was
        recorded (it trimmed or summarised the conversation), its last message is recorded unless
        it was the last one recorded."""
        texts = [t for t in texts if isinstance(t, str)]
        with self._said_lock:
            said = self._said
            if texts[:len(said)] == said:
                new = texts[len(said):]
            else:
                new = texts[-1:] if texts and (not said or texts[-1] != said[-1]) else []
            for t in new:
                said.append(t)
                self._session.user(t, self.turn)

    def new_turn(self) -> None:
        """Starts a new turn: a refusal's rollback undoes only the current turn's writes."""
        self.turn = 0 if self.turn is None else self.turn + 1

    def history_json(self) -> str:
        """The signed history, as ``qls check --history`` reads it."""
        return self._session.history_json()

    def _call(self, c: Call, **kw: Any) -> dict[str, Any]:
        out = c.to_json(turn=self.turn, **kw)
        if c.agent is None and self.agent is not None:
            out["agent"] = self.agent
        return out

    def decide(self, calls: Sequence[Call]) -> list[dict[str, Any]]:
        """The batch's decisions (SPEC §2), one per call, on the history as it stands, without
        running or recording anything (a query: ``begin`` is what decides a call that runs)."""
        decisions: list[dict[str, Any]] = json.loads(self._session.decide(json.dumps([self._call(c) for c in calls])))
        return decisions

    def decide_one(self, c: Call, *, token: str | None = None) -> dict[str, Any]:
        """The decision on one call (a batch of one), with a token when the person said yes."""
        decision: dict[str, Any] = json.loads(self._session.decide(json.dumps([self._call(c, token=token)])))[0]
        return decision

    # -- deciding and recording, one step -------------------------------------------------------

    def begin(self, c: Call, *, token: str | None = None) -> Ticket:
        """Decides ``c`` and puts its entry on the history, in one step: an allowed call's entry
        (and a refusal's compensations) running, a held or refused call's as decided. The caller
        then runs what the ticket allows (``carry_out`` does it) and completes each running entry."""
        out = _JSON_READ(self._session.begin(_JSON.encode(self._call(c, token=token))))
        return Ticket(c, out["decision"], out["entry"], out["rollback"], token)

    def finish(self, t: Ticket, result: Any) -> None:
        """The allowed call of ``t`` returned ``result``: its entry is completed."""
        self._complete(t.entry, result=result)

    def fail(self, t: Ticket, error: BaseException | str) -> None:
        """The allowed call of ``t`` raised (or was cancelled): its entry records the failure."""
        self._complete(t.entry, error=error)

    def abandon(self, t: Ticket, why: str) -> None:
        """Nothing of ``t`` will run: every running entry it reserved records ``why``."""
        entries = ([t.entry] if t.answer == "allow" else []) + [r["entry"] for r in t.rollback]
        for e in entries:
            if self._session.is_running(e):
                self._complete(e, error=why)

    def _complete(self, entry: int, *, result: Any = None, error: BaseException | str | None = None) -> None:
        try:
            if error is not None:
                self._session.complete(entry, None, _error_text(error))
            else:
                try:
                    text = _RESULT_JSON.encode(result)
                except Exception as e:
                    # Not recorded as it returned: the run failed to be recorded, and says why
                    # (never left running, which an undo of it would wait for).
                    self._session.complete(entry, None, f"not a JSON result: {_error_text(e)}")
                    raise
                self._session.complete(entry, text, None)
        finally:
            self._notify_returned()

    def _notify_returned(self) -> None:
        """Wakes the waiters for a run to come back. A waiter counts itself before it reads
        whether the run is still out, and the run was completed before the count is read here: a
        waiter this does not see reads the run as back and does not wait."""
        if self._waiting:
            with self._returned:
                self._returned.notify_all()

    def _wait_returned(self, entry: int | None) -> bool:
        """Waits until the run at ``entry`` came back (at most ``UNDO_WAIT``); whether it did."""
        if entry is None:
            return True
        with self._returned:
            self._waiting += 1
            try:
                return self._returned.wait_for(lambda: not self._session.is_running(entry), UNDO_WAIT)
            finally:
                self._waiting -= 1

    async def _await_returned(self, entry: int | None) -> bool:
        """``_wait_returned`` for a task: polls, so the event loop runs the awaited run meanwhile."""
        if entry is None:
            return True
        loop = asyncio.get_running_loop()
        deadline, pause = loop.time() + UNDO_WAIT, 0.0005
        while self._session.is_running(entry):
            if loop.time() > deadline:
                return False
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.02)
        return True

    # -- acting on a ticket ---------------------------------------------------------------------

    def carry_out(self, t: Ticket, run: Runner) -> Outcome:
        """Acts on ``t``: ``allow`` runs the tool and completes its entry with the result (or
        the failure, re-raised); ``refuse`` runs the rollback's compensations; ``confirm`` holds
        the call (its entry is on the history already)."""
        c = t.call
        if t.answer == "allow":
            if c.undoes is not None and not self._wait_returned(c.undoes):
                return self._undoes_a_run_still_out(t)
            try:
                result = run(c.tool, c.args)
            except BaseException as e:
                self.fail(t, e)
                raise
            self._complete(t.entry, result=result)
            return Outcome(c, "ran", t.decision, result=result)
        if t.answer == "refuse":
            return self._refused(t, self._undo(t, run, self._wait_returned))
        return self._held(t)

    async def acarry_out(self, t: Ticket, invoke: AsyncRunner, run: Runner) -> Outcome:
        """``carry_out`` for a task: the allowed call is awaited (``invoke(args)``); a rollback's
        compensations run through ``run``."""
        c = t.call
        if t.answer == "allow":
            if not await self._await_returned(c.undoes):
                return self._undoes_a_run_still_out(t)
            try:
                result = await invoke(c.args)
            except BaseException as e:
                self.fail(t, e)
                raise
            return self._ran(t, result)
        if t.answer == "refuse":
            waited: dict[int, bool] = {}
            for r in t.rollback:
                u = r.get("undoes")
                if u is not None:
                    waited[u] = await self._await_returned(u)
            return self._refused(t, self._undo(t, run, lambda e: waited.get(e, True) if e is not None else True))
        return self._held(t)

    def _ran(self, t: Ticket, result: Any) -> Outcome:
        self.finish(t, result)
        return Outcome(t.call, "ran", t.decision, result=result)

    def _refused(self, t: Ticket, undone: list[dict[str, Any]]) -> Outcome:
        return Outcome(t.call, "refused", t.decision, message=_refusal(t.call, t.decision, undone), undone=undone)

    def _undoes_a_run_still_out(self, t: Ticket) -> Outcome:
        """An undo whose run had not come back within ``UNDO_WAIT``: not run; its entry says why."""
        c = t.call
        self.fail(t, f"not run: entry {c.undoes}, which it undoes, had not returned after {UNDO_WAIT:.0f} s")
        return Outcome(c, "refused", t.decision, message=f"not run: `{c.tool}` undoes a run that has not returned")

    def _held(self, t: Ticket) -> Outcome:
        d = t.decision
        detail = d.get("detail", {})
        # The origins as decided: an ``auto`` call's decision says how they were traced.
        origins = detail.get("origins", {})
        held = Held(t.call, list(d["reasons"]), detail.get("token", ""), detail.get("confirmation"), origins)
        return Outcome(t.call, "held", d, message=f"waiting for a person: {', '.join(d['reasons'])}", held=held)

    def _undo(self, t: Ticket, run: Runner, returned: Callable[[int | None], bool]) -> list[dict[str, Any]]:
        """Runs a refusal's compensations, last write first, each after the run it undoes came
        back; each entry completed with its result or failure. A compensation that raised is
        recorded and the others still run."""
        undone: list[dict[str, Any]] = []
        pending = list(t.rollback)
        try:
            while pending:
                step = pending.pop(0)
                done = {"tool": step["tool"], "args": step["args"], "undoes": step["undoes"], "entry": step["entry"]}
                if not returned(step.get("undoes")):
                    why = f"not run: entry {step['undoes']} had not returned after {UNDO_WAIT:.0f} s"
                    self._complete(step["entry"], error=why)
                    undone.append({**done, "error": why})
                    continue
                try:
                    result = run(step["tool"], step["args"])
                except Exception as e:
                    self._complete(step["entry"], error=e)
                    undone.append({**done, "error": _error_text(e)})
                    continue
                self._complete(step["entry"], result=result)
                undone.append(done)
        finally:
            for step in pending:  # interrupted: what never ran says so
                self._complete(step["entry"], error="not run: the rollback was interrupted")
        return undone

    # -- one call, one step ---------------------------------------------------------------------

    def call(self, c: Call, run: Runner, *, token: str | None = None) -> Outcome:
        """Decides ``c`` (``begin``) and acts on the decision (``carry_out``)."""
        return self.carry_out(self.begin(c, token=token), run)

    async def acall(self, c: Call, invoke: AsyncRunner, run: Runner, *, token: str | None = None) -> Outcome:
        """``call`` for a task: the allowed call is awaited (``invoke(args)``)."""
        return await self.acarry_out(self.begin(c, token=token), invoke, run)

    def run_step(self, calls: Sequence[Call], run: Runner) -> list[Outcome]:
        """Decides one model step's calls in the model's order and acts on each: runs the
        allowed ones, refuses (and rolls back) the refused ones, holds the first confirmed one;
        the calls after a held one are not run.

        Each call is decided when the earlier ones were acted on, on the history extended by
        what they really did (their real results, so a token is bound to the history the person's
        yes will meet): the same decisions as the batch decided once (SPEC §2), and exact where a
        rule-sheet check reads an earlier call's result.
        """
        calls = list(calls)
        out: list[Outcome] = []
        i = 0
        try:
            while i < len(calls):
                # The allowed calls run in one crossing of the native module (decide, run,
                # record: the same steps as ``call``); it stops at the first call it does not
                # take (False) or that the check does not allow (its ticket).
                ran, stop = self._session.run_allowed(calls, i, run, self.agent, self.turn, _JSON.encode,
                                                      _RESULT_JSON.encode)
                for decision, result in ran:
                    out.append(Outcome(calls[i], "ran", decision, result=result))
                    i += 1
                if stop is None:
                    break
                c = calls[i]
                o = (self.call(c, run) if stop is False
                     else self.carry_out(Ticket(c, stop["decision"], stop["entry"], stop["rollback"]), run))
                out.append(o)
                i += 1
                if o.status == "held":
                    held_by = len(out) - 1
                    out.extend(Outcome(c, "not_run", {"decision": "not_run", "reasons": [],
                                                      "detail": {"held_by": held_by, "message": NOT_RUN}},
                                       message=NOT_RUN) for c in calls[i:])
                    break
        finally:
            # What the native step completed, a waiter for a run it undoes is told of.
            self._notify_returned()
        return out

    def approve(self, held: Held, run: Runner) -> Outcome:
        """The person's yes: the held call, with the token, checked again and run only when the
        check now allows it — with exactly the arguments the person saw."""
        return self.call(held.call, run, token=held.token)

    def decline(self, held: Held) -> Outcome:
        """The person's no: nothing runs."""
        return Outcome(held.call, "declined", {"decision": "confirm", "reasons": held.reasons, "detail": {}},
                       message=f"not run: the person declined `{held.call.tool}`")

    def verify_history(self) -> int | None:
        """The index of the first entry whose MAC does not verify (``None``: the chain holds),
        the whole chain verified again."""
        return self._session.first_invalid()


def _refusal(c: Call, d: dict[str, Any], undone: list[dict[str, Any]]) -> str:
    detail = {k: v for k, v in d.get("detail", {}).items() if k != "rollback"}
    text = f"refused: `{c.tool}` ({', '.join(d['reasons'])}) {json.dumps(detail, sort_keys=True)}"
    if undone:
        text += "; undone: " + ", ".join(u["tool"] + (f" (failed: {u['error']})" if "error" in u else "")
                                         for u in undone)
    return text

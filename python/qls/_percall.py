"""The tool check for frameworks whose hook sees one tool call at a time (Google ADK's
``before_tool_callback``, CrewAI's tool-call hooks, an AutoGen tool wrapper).

``CallGate`` decides each call when its hook fires, through ``Guard.begin``: the decision and the
call's entry are one step under the guard's own lock, so calls the framework runs concurrently
(threads or asyncio tasks) are each decided on the history holding every call decided before them
— an earlier allowed call counts as run even while it still runs, as SPEC §2's batch counts it.
The tool runs outside the lock, and its result (or its failure) completes its entry.

- ``allow``: the tool runs (the framework runs it, or the gate does) and its result is recorded.
- ``confirm``: the gate asks the person (``ask``, given the question: each argument with its value
  and origin, and the reasons) and **waits** for the answer. A yes presents the check's token: the
  call is checked again and runs with exactly the arguments the person saw. A no runs nothing.
  Without ``ask``, nothing runs and the model is told the call waits for a person (the held call
  is kept in ``gate.held``).
- ``refuse``: nothing runs; the reason goes back to the model and the run's earlier writes are
  undone by their compensations (run through ``run``: they must be tools the gate can reach).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping

from qls._shared import FrameworkGuard, QlsInputError, approved, wait
from qls.guard import Call, Guard, Held, Outcome, Runner, Ticket

Ask = Callable[[dict], Any]  # the person: question -> yes (True, "yes", "approve") or no; may be async


@dataclass
class Go:
    """The call may run (its entry is on the history, running); ``record`` its result."""

    call: Call
    ticket: Ticket

    @property
    def token(self) -> str | None:
        return self.ticket.token


@dataclass
class Stop:
    """Nothing runs; ``message`` goes back to the model."""

    outcome: Outcome

    @property
    def message(self) -> str:
        return self.outcome.message


class CallGate:
    """One call at a time through the ``Guard`` of ``owner`` (a framework guard, whose origins and
    outcomes it uses): ``decide`` (may ask the person), then ``record``. It holds no lock of its
    own: ``Guard.begin`` is the one step that orders concurrent calls."""

    def __init__(self, owner: FrameworkGuard, *, ask: Ask | None = None) -> None:
        if ask is not None and not callable(ask):
            raise QlsInputError(f"{type(owner).__name__}: `ask` is a function (question) -> yes or no, "
                                f"not {type(ask).__name__}")
        self.owner = owner
        self.guard: Guard = owner.guard
        self.ask = ask
        self.outcomes: list[Outcome] = owner.outcomes
        self.held: list[Held] = []

    def call(self, tool: str, args: Mapping[str, Any], call_id: str | None = None, agent: str | None = None) -> Call:
        return Call(tool, dict(args), self.owner.origins_of(tool, args), call_id=call_id, agent=agent)

    # -- one call, synchronously (the person's answer awaited when ``ask`` is async) -----------------

    def decide(self, c: Call, run: Runner, ask: Ask | None = None) -> Go | Stop:
        """The check's answer to ``c``; a confirm asks the person and waits."""
        t = self.guard.begin(c)
        if t.answer == "allow":
            return Go(c, t)
        o = self.guard.carry_out(t, run)  # a refusal's rollback, or the held call
        if o.held is None:
            return self._stop(o)
        ask = ask or self.ask
        if ask is None:
            self.held.append(o.held)
            return self._stop(o)
        answer = ask(o.held.question())
        if inspect.isawaitable(answer):
            answer = wait(answer)
        return self._after_answer(o.held, answer, run)

    def _after_answer(self, held: Held, answer: Any, run: Runner) -> Go | Stop:
        if not approved(answer):
            return self._stop(self.guard.decline(held))
        t = self.guard.begin(held.call, token=held.token)
        if t.answer == "allow":
            return Go(held.call, t)
        return self._stop(self.guard.carry_out(t, run))

    def record(self, go: Go, result: Any) -> Outcome:
        """The allowed call ran: its real result completes its entry."""
        self.guard.finish(go.ticket, result)
        o = Outcome(go.call, "ran", go.ticket.decision, result=result)
        self.outcomes.append(o)
        return o

    def fail(self, go: Go, error: BaseException | str) -> None:
        """The allowed call raised: its entry records the failure."""
        self.guard.fail(go.ticket, error)

    def _stop(self, o: Outcome) -> Stop:
        self.outcomes.append(o)
        return Stop(o)

    # -- one call, run by the gate itself ---------------------------------------------------------

    def run(self, c: Call, invoke: Callable[[Mapping[str, Any]], Any], run: Runner) -> Any:
        """Decides ``c`` and, when allowed, runs it (``invoke(args)``) and records the result;
        returns the result or the message for the model."""
        v = self.decide(c, run)
        if isinstance(v, Stop):
            return v.message
        try:
            result = invoke(c.args)
        except BaseException as e:
            self.fail(v, e)
            raise
        self.record(v, result)
        return result

    async def arun(self, c: Call, invoke: Callable[[Mapping[str, Any]], Awaitable[Any]], run: Runner) -> Any:
        """``run`` for an async framework: calls it runs concurrently are each decided in one
        step and then run concurrently."""
        v = await self._adecide(c, run)
        if isinstance(v, Stop):
            return v.message
        try:
            result = await invoke(c.args)
        except BaseException as e:
            self.fail(v, e)
            raise
        self.record(v, result)
        return result

    async def _adecide(self, c: Call, run: Runner) -> Go | Stop:
        t = self.guard.begin(c)
        if t.answer == "allow":
            return Go(c, t)
        o = await self.guard.acarry_out(t, _never, run)  # a refusal's rollback, or the held call
        if o.held is None:
            return self._stop(o)
        if self.ask is None:
            self.held.append(o.held)
            return self._stop(o)
        # Asked outside any synchronous wait: an async person is awaited on this loop.
        a = self.ask(o.held.question())
        answer = await a if inspect.isawaitable(a) else a
        if not approved(answer):
            return self._stop(self.guard.decline(o.held))
        t = self.guard.begin(o.held.call, token=o.held.token)
        if t.answer == "allow":
            return Go(o.held.call, t)
        return self._stop(await self.guard.acarry_out(t, _never, run))


async def _never(args: Mapping[str, Any]) -> Any:
    raise AssertionError("only a refusal or a held call is carried out here")

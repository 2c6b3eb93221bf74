"""The tool check for frameworks whose hook sees one tool call at a time (Google ADK's
``before_tool_callback``, CrewAI's tool-call hooks, an AutoGen tool wrapper).

``CallGate`` decides each call when its hook fires, on the history that holds every earlier call
of the session *with its real result*: calls are decided and recorded one after the other (an
``asyncio``/``threading`` lock orders calls the framework runs concurrently), which is the decision
the batch would give the call at that place (SPEC §2: a call's decision depends on the history
and the calls before it, never on the calls after it).

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

import asyncio
import inspect
import threading
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping

from qls.guard import Call, Guard, Held, Origin, Outcome
from qls.langgraph import approved  # the person's yes, read as the LangGraph guard reads a resume

Ask = Callable[[dict], Any]  # the person: question -> yes (True, "yes", "approve") or no; may be async
Origins = Callable[[str, Mapping[str, Any]], Mapping[str, Origin]]
Runner = Callable[[str, Mapping[str, Any]], Any]

@dataclass
class Go:
    """The call may run, under ``token`` when a person approved it; ``record`` its result."""

    call: Call
    token: str | None = None


@dataclass
class Stop:
    """Nothing runs; ``message`` goes back to the model."""

    outcome: Outcome

    @property
    def message(self) -> str:
        return self.outcome.message


class CallGate:
    """One call at a time through a ``Guard``: ``decide`` (may ask the person), then ``record``."""

    def __init__(self, guard: Guard, *, ask: Ask | None = None, origins: Origins | None = None) -> None:
        self.guard = guard
        self.ask = ask
        self.origins = origins
        self.outcomes: list[Outcome] = []
        self.held: list[Held] = []
        self.lock = threading.RLock()
        self._alock: asyncio.Lock | None = None

    def call(self, tool: str, args: Mapping[str, Any], call_id: str | None = None, agent: str | None = None) -> Call:
        origins = dict(self.origins(tool, args)) if self.origins else {}
        return Call(tool, dict(args), origins, call_id=call_id, agent=agent)

    # -- one call, synchronously (the person's answer awaited when ``ask`` is async) -----------------

    def decide(self, c: Call, run: Runner, ask: Ask | None = None) -> Go | Stop:
        """The check's answer to ``c``; a confirm asks the person and waits."""
        d = self.guard.decide([c])[0]
        if d["decision"] == "allow":
            return Go(c)
        if d["decision"] == "refuse":
            return self._stop(self.guard.act(c, d, run))
        o = self.guard.act(c, d, run)  # records the held call
        assert o.held is not None
        ask = ask or self.ask
        if ask is None:
            self.held.append(o.held)
            return self._stop(o)
        answer = ask(o.held.question())
        if inspect.isawaitable(answer):
            answer = _wait(answer)
        if not approved(answer):
            return self._stop(self.guard.decline(o.held))
        d2 = self.guard.decide_one(c, token=o.held.token)
        if d2["decision"] == "allow":
            return Go(c, o.held.token)
        return self._stop(self.guard.act(c, d2, run, token=o.held.token))

    def record(self, go: Go, result: Any) -> Outcome:
        """The allowed call ran: its real result into the history."""
        self.guard._record(self.guard._call(go.call, token=go.token), "allow", True, result)
        o = Outcome(go.call, "ran", {"decision": "allow", "reasons": []}, result=result)
        self.outcomes.append(o)
        return o

    def _stop(self, o: Outcome) -> Stop:
        self.outcomes.append(o)
        return Stop(o)

    # -- one call, run by the gate itself ---------------------------------------------------------

    def run(self, c: Call, invoke: Callable[[Mapping[str, Any]], Any], run: Runner) -> Any:
        """Decides ``c`` and, when allowed, runs it (``invoke(args)``) and records the result;
        returns the result or the message for the model."""
        with self.lock:
            v = self.decide(c, run)
            if isinstance(v, Stop):
                return v.message
            result = invoke(c.args)
            self.record(v, result)
            return result

    async def arun(self, c: Call, invoke: Callable[[Mapping[str, Any]], Awaitable[Any]], run: Runner) -> Any:
        """``run`` for an async framework: calls it runs concurrently are decided in turn."""
        if self._alock is None:
            self._alock = asyncio.Lock()
        async with self._alock:
            v = await self._adecide(c, run)
            if isinstance(v, Stop):
                return v.message
            result = await invoke(c.args)
            self.record(v, result)
            return result

    async def _adecide(self, c: Call, run: Runner) -> Go | Stop:
        answers: list[Any] = []
        if self.ask is not None:
            # Ask outside the synchronous decide: an async person is awaited on this loop.
            d = self.guard.decide([c])[0]
            if d["decision"] == "confirm":
                o = self.guard.act(c, d, run)
                assert o.held is not None
                a = self.ask(o.held.question())
                answers.append(await a if inspect.isawaitable(a) else a)
                if not approved(answers[0]):
                    return self._stop(self.guard.decline(o.held))
                d2 = self.guard.decide_one(c, token=o.held.token)
                if d2["decision"] == "allow":
                    return Go(c, o.held.token)
                return self._stop(self.guard.act(c, d2, run, token=o.held.token))
        return self.decide(c, run)


def _wait(aw: Awaitable[Any]) -> Any:
    """An awaitable's value from synchronous code (on a worker thread when a loop is running)."""
    import concurrent.futures

    async def go() -> Any:
        return await aw

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(go())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, go()).result()

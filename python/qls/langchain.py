"""The tool check as LangChain agent middleware: ``GuardMiddleware``, for agents built with
``langchain.agents.create_agent`` (LangChain 1.x), where a ``GuardedToolNode`` cannot be put in.

``create_agent(model, tools, middleware=[GuardMiddleware(guard, tools)])`` puts the guard in
front of every tool call through the middleware's ``wrap_tool_call`` hook:

- ``create_agent`` sends each tool call of one model answer to the tools node as its own task, and
  runs them concurrently. The middleware still decides them as SPEC §2's batch, in the model's
  order: each call waits until the earlier calls of the same answer were *decided* (not run), then
  is decided with its entry in one step (``Guard.begin``), on the history holding the earlier
  ones — an allowed one as run, still running or not — and the allowed calls run concurrently.
- ``allow``: the call runs through the agent's own tool execution (the ``handler``), and its
  result is recorded with the marks the catalogue declares.
- ``confirm``: LangGraph's ``interrupt`` shows the person each argument with its value and
  origin; resuming with ``Command(resume=True)`` (or ``"approve"``, ``{"approve": True}``) checks
  the call again under the decision's token and runs it with exactly those arguments; anything
  else declines it. The answer's later calls return "not run: …".
- ``refuse``: nothing runs, the model gets the reason, and the run's earlier writes are undone by
  their compensations, which must be among ``tools``.

``qls.export_langgraph(agent, model_nodes=["model"])`` finds the middleware in the tools node's
wrapper and writes that node as guarded, with the guard's catalogue: the proof is about the
check that runs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from langchain.agents.middleware import AgentMiddleware

from qls._shared import FrameworkGuard, Origins, QlsInputError, approved, human_texts
from qls.guard import NOT_RUN, Call, Guard, Outcome, Ticket

__all__ = ["GuardMiddleware"]

#: How long a call waits for the earlier calls of its model answer before it is refused.
WAIT_SECONDS = 600.0


@dataclass
class _Step:
    """One model answer's calls, the decision on each, and what became of each, in the model's
    order (``decided[i]`` is set once call ``i`` was decided and its entry appended)."""

    key: tuple[str, ...]
    calls: list[Call]
    tickets: dict[int, Ticket] = field(default_factory=dict)
    outcomes: dict[int, Outcome] = field(default_factory=dict)
    decided: list[threading.Event] = field(default_factory=list)


class GuardMiddleware(AgentMiddleware, FrameworkGuard):  # type: ignore[misc,type-arg]
    """``create_agent``'s tool calls behind a ``Guard``. ``tools`` are the agent's tools (the
    compensations a rollback may run included). Origins are ``"auto"`` by default (SPEC §2
    "Provenance, not authorship"): the person's messages in the agent's state (``HumanMessage``)
    are recorded as ``user`` history entries, once, before a call is decided, and each argument is
    traced from its value; ``origins`` (``(tool, args) -> {argument: origin}``) overrides it."""

    def __init__(self, guard: Guard, tools: Sequence[Any], *, origins: Origins | None = None) -> None:
        super().__init__()
        self._setup(guard, origins)
        if isinstance(tools, (str, bytes)) or not all(hasattr(t, "name") for t in tools):
            raise QlsInputError("GuardMiddleware: `tools` is a list of LangChain tools")
        self.tools_by_name: dict[str, Any] = {t.name: t for t in tools}
        self._lock = threading.Lock()
        self._steps: dict[tuple[str, ...], _Step] = {}

    def _call(self, tc: Mapping[str, Any]) -> Call:
        args = dict(tc.get("args", {}))
        return Call(tc["name"], args, self.origins_of(tc["name"], args), call_id=tc.get("id"))

    def _step(self, request: Any) -> tuple[_Step, int]:
        state = request.state
        messages = state["messages"] if isinstance(state, Mapping) else getattr(state, "messages", [])
        self.guard.user_said(human_texts(messages))
        want = request.tool_call.get("id")
        ai = next((m for m in reversed(messages)
                   if any(tc.get("id") == want for tc in (getattr(m, "tool_calls", None) or []))), None)
        tool_calls = list(ai.tool_calls) if ai is not None else [request.tool_call]
        key = tuple(str(tc.get("id")) for tc in tool_calls)
        with self._lock:
            step = self._steps.get(key)
            if step is None:
                step = _Step(key, [self._call(tc) for tc in tool_calls])
                step.decided = [threading.Event() for _ in tool_calls]
                self._steps[key] = step
        index = next(i for i, tc in enumerate(tool_calls) if tc.get("id") == want)
        return step, index

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        from langchain_core.messages import ToolMessage
        from langgraph.types import interrupt

        step, i = self._step(request)
        call = step.calls[i]

        # What the agent's own execution returned for this call (a ToolMessage or a Command),
        # handed back to LangGraph as it is; the history records its content.
        produced: list[Any] = []

        def message(o: Outcome) -> Any:
            self.outcomes.append(o)
            if o.status == "ran" and produced:
                return produced[-1]
            return ToolMessage(content=o.for_model(), name=call.tool, tool_call_id=call.call_id or "",
                               status="success" if o.status == "ran" else "error")

        def run(tool: str, args: Mapping[str, Any]) -> Any:
            if tool == call.tool and dict(args) == dict(call.args):
                out = handler(request)
                produced.append(out)
                return out.content if isinstance(out, ToolMessage) else str(out)
            t = self.tools_by_name.get(tool)
            if t is None:
                raise KeyError(f"`{tool}` is not among GuardMiddleware's tools (a compensation must be one)")
            return t.invoke(dict(args))

        held = step.outcomes.get(i)
        if held is None:
            # The model's order: every earlier call of this answer decided first.
            ticket: Ticket | None = None
            try:
                for j in range(i):
                    if not step.decided[j].wait(WAIT_SECONDS):
                        return ToolMessage(content=f"refused: call {j} of this step was not decided in time; nothing ran",
                                           name=call.tool, tool_call_id=call.call_id or "", status="error")
                if any(t.answer == "confirm" for t in step.tickets.values()):
                    return ToolMessage(content=NOT_RUN, name=call.tool, tool_call_id=call.call_id or "", status="error")
                ticket = self.guard.begin(call)
                step.tickets[i] = ticket
            finally:
                step.decided[i].set()
                if ticket is None:
                    self._forget_if_settled(step)
            held = self.guard.carry_out(ticket, run)
            step.outcomes[i] = held
            self._forget_if_settled(step)
            if held.status != "held":
                return message(held)
        # Held for a person: LangGraph runs this task again when the graph resumes, and the
        # interrupt then returns the person's answer.
        if held.held is None:
            return message(held)
        answer = interrupt({"qls": "confirm", **held.held.question()})
        final = (self.guard.approve(held.held, run) if approved(answer)
                 else self.guard.decline(held.held))
        step.outcomes[i] = final
        self._forget_if_settled(step)
        return message(final)

    def _forget_if_settled(self, step: _Step) -> None:
        """Drops a model answer once every call of it was acted on and none waits for a person
        (a held call's task runs again when the graph resumes and must find its step)."""
        with self._lock:
            acted = len(step.outcomes) == len(step.tickets)
            settled = all(e.is_set() for e in step.decided) and acted and not any(
                o.status == "held" for o in step.outcomes.values())
            if settled:
                self._steps.pop(step.key, None)

"""The tool check in front of a LangGraph app's tools: ``GuardedToolNode``, used where a
``ToolNode`` would be.

It takes the last AI message's tool calls (one model step), decides them as one batch through the
guard's native check, runs the allowed ones, returns each refusal's reason to the model (after
the rollback of the run's earlier writes), and holds the first confirmed call with LangGraph's own
human-in-the-loop, ``interrupt``: the person is shown each argument with its value and origin, and
resumes the graph with ``Command(resume=True)`` (or ``"approve"``, ``{"approve": True}``) to
approve, anything else to decline. An approved call is checked again under the decision's token
and runs with exactly the arguments shown. The calls after a held one return "not run: …".

``qls.export_graph`` writes a ``GuardedToolNode`` as a guarded tools node, with the guard's
catalogue (and ``Export.rulebook``/``Export.settings``): the proof is about the check that runs.

Origins: every argument of a model's tool call is the model's (SPEC §2's reading), unless
``origins`` (a function from a tool call to ``{argument: origin}``) says otherwise.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from qls.guard import Call, Guard, Origin, Outcome

Origins = Callable[[Mapping[str, Any]], Mapping[str, Origin]]

_YES = (True, "yes", "y", "approve", "approved")


def approved(answer: Any) -> bool:
    """Whether a resume value is the person's yes."""
    if isinstance(answer, Mapping):
        answer = answer.get("approve", answer.get("decision"))
    if isinstance(answer, str):
        answer = answer.strip().lower()
    return answer in _YES


class GuardedToolNode:
    """A LangGraph node that runs one model step's tool calls behind a ``Guard``.

    ``tools`` are LangChain tools (``@tool``, ``StructuredTool``), the compensations a rollback
    may run included. Add it as any node: ``graph.add_node("tools", GuardedToolNode(tools,
    guard))``.
    """

    def __init__(self, tools: Sequence[Any], guard: Guard, *, messages_key: str = "messages",
                 origins: Origins | None = None) -> None:
        self.tools_by_name: dict[str, Any] = {t.name: t for t in tools}
        self.qls_guard = guard
        self.messages_key = messages_key
        self.origins = origins
        # A step held for a person, by its tool-call ids: LangGraph runs the node again from the
        # start when the graph resumes, and what ran before the interrupt must not run twice.
        self._held: dict[tuple[str, ...], list[Outcome]] = {}
        self.__name__ = "GuardedToolNode"

    def _run(self, tool: str, args: Mapping[str, Any]) -> Any:
        t = self.tools_by_name.get(tool)
        if t is None:
            raise KeyError(f"`{tool}` is not a tool of this GuardedToolNode (a compensation must be one too)")
        return t.invoke(dict(args))

    def _calls(self, state: Any) -> list[Call]:
        messages = state[self.messages_key] if isinstance(state, Mapping) else state
        ai = next((m for m in reversed(messages) if getattr(m, "tool_calls", None)), None)
        if ai is None:
            return []
        out = []
        for tc in ai.tool_calls:
            origins = dict(self.origins(tc)) if self.origins else {}
            out.append(Call(tc["name"], dict(tc["args"]), origins, call_id=tc["id"]))
        return out

    def __call__(self, state: Any) -> dict[str, Any]:
        from langchain_core.messages import ToolMessage
        from langgraph.types import interrupt

        calls = self._calls(state)
        key = tuple(c.call_id or "" for c in calls)
        outcomes = self._held.get(key)
        if outcomes is None:
            outcomes = self.qls_guard.run_step(calls, self._run)
        held = next((o for o in outcomes if o.status == "held"), None)
        if held is not None and held.held is not None:
            self._held[key] = outcomes
            answer = interrupt({"qls": "confirm", **held.held.question()})
            del self._held[key]
            final = (self.qls_guard.approve(held.held, self._run) if approved(answer)
                     else self.qls_guard.decline(held.held))
            outcomes = [final if o is held else o for o in outcomes]
        return {self.messages_key: [
            ToolMessage(content=o.for_model(), name=o.call.tool, tool_call_id=o.call.call_id or "",
                        status="success" if o.status == "ran" else "error")
            for o in outcomes]}

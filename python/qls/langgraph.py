"""The tool check in front of a LangGraph app's tools: ``GuardedToolNode``, used where a
``ToolNode`` would be.

It takes the last AI message's tool calls (one model step), decides them as one batch through the
guard's native check, runs the allowed ones, returns each refusal's reason to the model (after
the rollback of the run's earlier writes), and holds the first confirmed call with LangGraph's own
human-in-the-loop, ``interrupt``: the person is shown each argument with its value and origin, and
resumes the graph with ``Command(resume=True)`` (or ``"approve"``, ``{"approve": True}``) to
approve, anything else to decline. An approved call is checked again under the decision's token
and runs with exactly the arguments shown. The calls after a held one return "not run: …".

``qls.export_langgraph`` (this module's exporter, ``qls.export``'s code) writes a
``GuardedToolNode`` as a guarded tools node, with the guard's catalogue (and
``Export.rulebook``/``Export.settings``): the proof is about the check that runs.

Origins: ``"auto"`` (SPEC §2 "Provenance, not authorship"): the node records each of the person's
messages in the state (``HumanMessage``) as a ``user`` history entry, once, before it decides a
step, and the check traces each argument from its value — one the person typed is ``typed``, one
copied from an earlier result is ``tool`` (with that result's marks), anything else the model's.
``origins`` (a function ``(tool, args) -> {argument: origin}``) overrides it.
"""

from __future__ import annotations

import warnings
from typing import Any, Mapping, Sequence

from qls._shared import FrameworkGuard, Origins, QlsInputError, approved, human_texts
from qls.export import export_graph, export_langgraph
from qls.guard import Call, Guard, Outcome

__all__ = ["export_langgraph", "GuardedToolNode", "approved", "export_graph"]


class GuardedToolNode(FrameworkGuard):
    """A LangGraph node that runs one model step's tool calls behind a ``Guard``.

    ``tools`` are LangChain tools (``@tool``, ``StructuredTool``), the compensations a rollback
    may run included. Add it as any node: ``graph.add_node("tools", GuardedToolNode(guard,
    tools))``. (The old order, ``GuardedToolNode(tools, guard)``, still works for one release,
    with a ``DeprecationWarning``.)
    """

    def __init__(self, guard: Guard, tools: Sequence[Any], *, messages_key: str = "messages",
                 origins: Origins | None = None) -> None:
        if not isinstance(guard, Guard) and isinstance(tools, Guard):
            warnings.warn("GuardedToolNode(tools, guard) is now GuardedToolNode(guard, tools), the guard first "
                          "as in every qls guard (the old order goes away next release)", DeprecationWarning,
                          stacklevel=2)
            guard, tools = tools, guard
        self._setup(guard, origins)
        if isinstance(tools, (str, bytes)) or not all(hasattr(t, "name") for t in tools):
            raise QlsInputError("GuardedToolNode: `tools` is a list of LangChain tools")
        self.tools_by_name: dict[str, Any] = {t.name: t for t in tools}
        self.messages_key = messages_key
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
            out.append(Call(tc["name"], dict(tc["args"]), self.origins_of(tc["name"], tc["args"]), call_id=tc["id"]))
        return out

    def __call__(self, state: Any) -> dict[str, Any]:
        from langchain_core.messages import ToolMessage
        from langgraph.types import interrupt

        messages = state[self.messages_key] if isinstance(state, Mapping) else state
        self.guard.user_said(human_texts(messages))
        calls = self._calls(state)
        key = tuple(c.call_id or "" for c in calls)
        outcomes = self._held.get(key)
        if outcomes is None:
            outcomes = self.guard.run_step(calls, self._run)
        held = next((o for o in outcomes if o.status == "held"), None)
        if held is not None and held.held is not None:
            self._held[key] = outcomes
            answer = interrupt({"qls": "confirm", **held.held.question()})
            del self._held[key]
            final = (self.guard.approve(held.held, self._run) if approved(answer)
                     else self.guard.decline(held.held))
            outcomes = [final if o is held else o for o in outcomes]
        self.outcomes += outcomes
        return {self.messages_key: [
            ToolMessage(content=o.for_model(), name=o.call.tool, tool_call_id=o.call.call_id or "",
                        status="success" if o.status == "ran" else "error")
            for o in outcomes]}

"""AutoGen AgentChat (``autogen-agentchat``): ``export_autogen`` and ``AutogenGuard``.

``export_autogen(app, *, tools=None, agents=None, mcp_tools=None)`` reads the team or
agent the app builds and returns an ``Export`` ``(graph, catalogue)``:

- ``AssistantAgent``: a model node with its tools (each tool's own JSON schema). Its ``handoffs``
  are hand-off edges in a ``Swarm`` (to a participant) or, to a name no participant has (the
  user), a human node: the run stops there for the person and resumes with the agent. Outside a
  swarm a hand-off ends the agent's run. A standalone agent's budget is its
  ``max_tool_iterations`` (plus one reflection step).
- ``UserProxyAgent``: a human node (a person's turn).
- ``RoundRobinGroupChat``: each participant after the one before (a cycle). ``SelectorGroupChat``:
  the selector — a model node ``<team>:selector`` — picks any participant next (a
  ``selector_func``/``candidate_func`` is code: read as "any", noted), and every participant
  goes back to it. ``Swarm``: an agent keeps the turn until it hands off. ``GraphFlow``: its
  edges, each may be taken (a condition is read as "may hold"), from its start nodes; its leaves
  finish. A team inside a team is compiled the same way.
- Termination: ``MaxMessageTermination(n)`` and the team's ``max_turns`` bound every agent of the
  team (a budget of ``n`` turns, each up to the agent's tool iterations); ``|`` takes the
  smallest bound, ``&`` the largest only when every side is bounded. Any other condition is no
  bound (a cycle without one is QG023). ``HandoffTermination(target)`` is the person's stop.
- Any other agent (a ``CodeExecutorAgent``, a ``SocietyOfMindAgent``, a custom chat agent): a
  custom node (QG006). An MCP workbench's tools come from ``mcp_tools`` (keyed by the workbench
  object, a list of MCP ``Tool`` dicts or a ``tools/list`` answer); without one, a custom node.

A tool's effect comes from ``tools``, else a write. ``agents`` gives ``privilege``/``budget``.

``AutogenGuard(guard, ask=...).tools([...])`` wraps the agent's ``FunctionTool``s (any
``BaseTool``): each call is decided when AutoGen runs the tool (``qls._percall``), so the wrapper
is the check; ``export_autogen`` writes the tools it wraps as a guarded tools node. What the
person says is recorded as ``user`` history entries, for ``origins="auto"`` to trace against,
through AgentChat's own extension points (``qls._autogensaid``): ``model_context=g.model_context()``
on each ``AssistantAgent`` (the task and the user's messages it is given) and
``input_func=g.input(fn)`` on a ``UserProxyAgent`` (the person's replies).
"""

from __future__ import annotations

import inspect
from typing import Any, Mapping, Sequence

from qls._build import Builder, Export, Part, ToolSpec, clean_schema, hashable, mcp_specs
from qls._percall import Ask, CallGate
from qls._shared import FrameworkGuard, Origins, QlsInputError, check_overlays, framework_class, require_app, wait
from qls.guard import Guard

__all__ = ["export_autogen", "AutogenGuard"]


def _classes() -> dict[str, Any]:
    from autogen_agentchat import agents as A
    from autogen_agentchat import teams as T

    return {"assistant": A.AssistantAgent, "proxy": A.UserProxyAgent, "rr": T.RoundRobinGroupChat,
            "sel": T.SelectorGroupChat, "swarm": T.Swarm, "graph": T.GraphFlow}


def _bound(cond: Any) -> int | None:
    """The number of messages after which ``cond`` surely stops the run, or ``None``."""
    if cond is None:
        return None
    from autogen_agentchat.base._termination import AndTerminationCondition, OrTerminationCondition
    from autogen_agentchat.conditions import MaxMessageTermination

    if isinstance(cond, MaxMessageTermination):
        return int(cond._max_messages)
    if isinstance(cond, OrTerminationCondition):
        bs = [b for b in (_bound(c) for c in cond._conditions) if b is not None]
        return min(bs) if bs else None
    if isinstance(cond, AndTerminationCondition):
        bs = [_bound(c) for c in cond._conditions]
        return None if any(b is None for b in bs) else max(b for b in bs if b is not None)
    return None


def _handoff_stops(cond: Any) -> set[str]:
    """The hand-off targets at which the condition stops the run (the person's turn)."""
    if cond is None:
        return set()
    from autogen_agentchat.conditions import HandoffTermination

    if isinstance(cond, HandoffTermination):
        return {cond._target}
    return {t for c in getattr(cond, "_conditions", []) for t in _handoff_stops(c)}


class _Reader:
    def __init__(self, b: Builder, mcp_tools: Mapping[Any, Any]) -> None:
        self.b = b
        self.mcp_tools = mcp_tools
        self.parts: dict[str, Part] = {}
        self.members: dict[str, list[str]] = {}  # a team's name -> its agents' names
        self.budget: int | None = None  # the enclosing team's bound on turns

    def agent(self, a: Any) -> Part:
        C = _classes()
        if a.name in self.parts:
            return self.parts[a.name]
        if isinstance(a, C["assistant"]):
            part = self.assistant(a)
        elif isinstance(a, C["proxy"]):
            h = self.b.node(a.name, "human", a.name)
            self.b.agent(a.name)
            part = Part([h], [h])
        elif isinstance(a, (C["rr"], C["sel"], C["swarm"], C["graph"])):
            part = self.team(a)
        else:
            c = self.b.custom(a.name, a.name, f"agent `{a.name}` is a {type(a).__name__}, whose work is its own code")
            part = Part([c], [c])
        self.parts[a.name] = part
        return part

    def assistant(self, a: Any) -> Part:
        iters = int(getattr(a, "_max_tool_iterations", 1)) + (1 if getattr(a, "_reflect_on_tool_use", False) else 0)
        budget = None if self.budget is None else self.budget * iters
        if self.budget is None and not self.members:
            budget = iters  # a standalone agent's own run
        specs = [self.tool(t) for t in a._tools]
        for wb in a._workbench:
            if type(wb).__name__ in ("StaticWorkbench", "StaticStreamWorkbench"):
                continue  # the agent's own `tools`, read above
            specs += self.workbench(a, wb)
        m = self.b.model(a.name, specs, budget=budget)
        return Part([m], [m])

    def tool(self, t: Any) -> ToolSpec:
        guard = getattr(t, "qls_guard", None)
        s = t.schema
        schema = clean_schema(dict(s.get("parameters") or {"type": "object", "properties": {}}))
        return ToolSpec(t.name, self.b.entry(t.name, schema), guard=guard)

    def workbench(self, a: Any, wb: Any) -> list[ToolSpec]:
        listing = self.mcp_tools.get(wb) if hashable(wb) else None
        if listing is None:
            self.b.beside(a.name, f"{a.name}:{type(wb).__name__}",
                          f"workbench {type(wb).__name__} of `{a.name}` has no listing (pass mcp_tools=)")
            return []
        return mcp_specs(self.b, listing, where=a.name)

    def team(self, t: Any) -> Part:
        C = _classes()
        outer = self.budget
        bounds = [b for b in (_bound(t._termination_condition), t._max_turns, outer) if b is not None]
        self.budget = min(bounds) if bounds else None
        name = t.name
        self.members[name] = []
        parts = {p.name: self.agent(p) for p in t._participants}
        self.members[name] = list(parts)
        order = list(parts.values())
        stops = _handoff_stops(t._termination_condition)
        if isinstance(t, C["rr"]):
            for p, q in zip(order, order[1:] + order[:1]):
                self.b.wire(p.exits, q.entries)
            part = Part(list(order[0].entries), [x for p in order for x in p.exits])
        elif isinstance(t, C["sel"]):
            sel = self.b.model(f"{name}:selector", [], budget=self.budget)
            if t._selector_func is not None or t._candidate_func is not None:
                self.b.note(f"SelectorGroupChat `{name}` picks speakers by a function: read as any participant")
            for p in order:
                self.b.wire([sel], p.entries)
                self.b.wire(p.exits, [sel])
            part = Part([sel], [x for p in order for x in p.exits])
        elif isinstance(t, C["swarm"]):
            for p_obj in t._participants:
                p = parts[p_obj.name]
                self.b.wire(p.exits, p.entries, kind="route")  # no hand-off: the speaker speaks again
                for h in getattr(p_obj, "_handoffs", {}).values():
                    if h.target in parts:
                        self.b.wire(p.exits, parts[h.target].entries)
                    else:
                        self.person(p_obj.name, h.target, h.target in stops)
            part = Part(list(order[0].entries), [x for p in order for x in p.exits])
        else:  # GraphFlow
            g = t._graph
            for src, node in g.nodes.items():
                for e in node.edges:
                    if e.condition is not None or getattr(e, "condition_function", None) is not None:
                        self.b.note(f"GraphFlow `{name}`: the edge {src} -> {e.target} has a condition, read as may hold")
                    self.b.wire(parts[src].exits, parts[e.target].entries)
            starts = [g.default_start_node] if g.default_start_node else sorted(g.get_start_nodes())
            leaves = sorted(g.get_leaf_nodes())
            entries = [e for s in starts for e in parts[s].entries]
            exits = [x for lf in leaves for x in parts[lf].exits]
            if not exits:
                exits = [x for p in order for x in p.exits]  # a cyclic flow stops where its condition says
            part = Part(entries, exits)
        self.budget = outer
        return part

    def person(self, agent: str, target: str, stops: bool) -> None:
        """A hand-off to a name no participant has: the person (the run waits for them)."""
        h = f"{agent}:{target}"
        if h not in self.b.nodes:
            self.b.node(h, "human", agent)
            self.b.edge(agent, h, "call")
            self.b.edge(h, agent, "route")
            self.b.edge(h, None, "reply")
            if not stops:
                self.b.note(f"`{agent}` hands off to `{target}`, which is no participant and no HandoffTermination "
                            "names: read as the person")


def export_autogen(app: Any, *, tools: dict | None = None, agents: dict | None = None,
                   mcp_tools: Mapping[Any, Any] | None = None) -> Export:
    """Exports an AutoGen AgentChat team or agent (``app``): ``(graph, catalogue)``."""
    check_overlays("export_autogen", tools=tools, agents=agents)
    what = "an AutoGen AgentChat team or agent"
    agent_cls = framework_class("export_autogen", "autogen_agentchat.base", "ChatAgent", what)
    team_cls = framework_class("export_autogen", "autogen_agentchat.base", "Team", what)
    require_app("export_autogen", app, isinstance(app, (agent_cls, team_cls)), what)
    team_or_agent = app
    b = Builder(tools=dict(tools or {}), agents_overlay=dict(agents or {}))
    r = _Reader(b, dict(mcp_tools or {}))
    part = r.agent(team_or_agent)
    C = _classes()
    if isinstance(team_or_agent, C["assistant"]):
        for h in team_or_agent._handoffs.values():
            r.person(team_or_agent.name, h.target, False)
    return b.finish(part)


class AutogenGuard(FrameworkGuard):
    """AutoGen tools behind a ``Guard``: ``AssistantAgent(..., tools=g.tools([...]))``.

    Each wrapped tool keeps its name, description and schema; when AutoGen runs it, the check
    decides the call first (a confirm asks the person, ``ask``, and waits — AutoGen runs a step's
    calls concurrently, and the guard decides them one after the other). Compensations a refusal
    runs must be tools given to this guard too.
    """

    def __init__(self, guard: Guard, *, ask: Ask | None = None, origins: Origins | None = None) -> None:
        self._setup(guard, origins)
        self.ask = ask
        self.gate = CallGate(self, ask=ask)
        self._tools: dict[str, Any] = {}

    def tools(self, tools: Sequence[Any]) -> list[Any]:
        from autogen_core.tools import FunctionTool

        out = []
        for t in tools:
            if not hasattr(t, "run_json"):
                t = FunctionTool(t, description=t.__doc__ or "")
            self._tools[t.name] = t
            out.append(_wrap(t, self))
        return out

    def model_context(self, inner: Any = None, *, people: Sequence[str] = ("user",)) -> Any:
        """A model context for an ``AssistantAgent`` (``model_context=g.model_context()``) that
        records the person's messages the agent is given — those whose source is in ``people``:
        ``"user"``, the source of a task — as ``user`` history entries, and keeps every message in
        ``inner`` (the agent's own context; an unbounded one by default)."""
        from qls._autogensaid import PeopleContext

        if isinstance(people, str) or not all(isinstance(p, str) for p in people):
            raise QlsInputError(f"AutogenGuard.model_context: `people` is a list of sources (names), not {people!r}")
        return PeopleContext(self.heard, inner, people)

    def input(self, fn: Any = None) -> Any:
        """A ``UserProxyAgent``'s ``input_func`` that records each reply the person types as a
        ``user`` history entry: ``fn`` (sync ``(prompt)`` or async ``(prompt,
        cancellation_token)``), by default the console's ``input`` (AgentChat runs a sync one on a
        worker thread)."""
        from qls._autogensaid import recording_input

        if fn is None:
            fn = input
        if not callable(fn):
            raise QlsInputError(f"AutogenGuard.input: `fn` is an input function, not {type(fn).__name__}")
        return recording_input(self.heard, fn)

    def _runner(self, tool: str, args: Mapping[str, Any]) -> Any:
        from autogen_core import CancellationToken

        t = self._tools.get(tool)
        if t is None:
            raise KeyError(f"`{tool}` is not a tool of this guard (a compensation must be one too)")
        return wait(t.run_json(dict(args), CancellationToken()))


def _wrap(inner: Any, owner: AutogenGuard) -> Any:
    from autogen_core.tools import BaseTool

    class GuardedTool(BaseTool):  # type: ignore[misc,type-arg]
        qls_guard = owner.guard

        def __init__(self) -> None:
            super().__init__(inner.args_type(), inner.return_type(), inner.name, inner.description)
            self.inner = inner

        @property
        def schema(self) -> Any:
            return inner.schema

        async def run(self, args: Any, cancellation_token: Any) -> Any:
            a = args.model_dump() if hasattr(args, "model_dump") else dict(args)
            c = owner.gate.call(self.name, a)

            async def invoke(x: Mapping[str, Any]) -> Any:
                out = inner.run_json(dict(x), cancellation_token)
                return await out if inspect.isawaitable(out) else out

            return await owner.gate.arun(c, invoke, owner._runner)

        def return_value_as_string(self, value: Any) -> str:
            return value if isinstance(value, str) else inner.return_value_as_string(value)

    return GuardedTool()

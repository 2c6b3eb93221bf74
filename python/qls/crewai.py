"""CrewAI (``crewai``): ``export_crewai`` and ``CrewGuard``.

``export_crewai(app, *, tools=None, agents=None)`` (``app``: a ``Crew`` or a ``Flow``; the old name
``export_crew`` is a deprecated alias, kept one release) reads the crew or flow the app builds
and returns an ``Export`` ``(graph, catalogue)``:

- A ``Crew`` with ``Process.sequential``: one model node per task, of the task's agent (graph
  agent = the agent's ``role``), with the task's tools (else the agent's), each task on to the
  next; the last finishes. Outputs flow down the chain (a task's ``context`` is within it: the
  chain's hand-offs carry every earlier output).
- ``Process.hierarchical``: the manager (``manager_agent``, else CrewAI's "Crew Manager" built
  from ``manager_llm``) as one model node that delegates to every agent.
- ``allow_delegation=True``: CrewAI's delegation tools ("Delegate work to coworker", "Ask question
  to coworker") are hand-offs to each other agent (a ``<role>:delegated`` model node with the
  agent's own tools) and back with the answer.
- ``Task.human_input=True``: a human node after the task's answer (the person's feedback sends
  the agent back to work, or lets the crew go on).
- ``max_iter``: the agent's budget, times the tasks it runs (and the delegations that may reach
  it; an agent on a delegation cycle has no bound: QG023).
- Tools: ``args_schema`` as the JSON schema; the effect from ``tools``, else a write.
- A ``Flow``: each method a custom node (its code is opaque: QG006), at the line it was written;
  ``@start`` methods are entries, ``@listen(x)`` an edge from ``x`` (``or_``/``and_``: from each),
  ``@router`` an edge to every listener of a label (a label listens on a router's return value),
  or to end; ``@human_feedback`` a human node after its method. The crews and agents a method
  kicks off (``SomeCrew().crew().kickoff()`` on a ``@CrewBase`` class, a module-level crew or
  agent, ``self.<attr>``: ``qls._crewflow``) are exported inside the flow after the method's node,
  in the order written, each possibly skipped, and on to the method's listeners; their agents'
  budgets add up over the kickoffs, and are dropped where a kickoff may repeat (a loop, a cycle
  of the flow). A kickoff that cannot be followed is a note and stays the method's opaque code.

``CrewGuard(guard, ask=...)`` is CrewAI's own tool-call hooks (``register_before_tool_call_hook``
and ``register_after_tool_call_hook``, global): the before hook decides the call (``qls._percall``;
a confirm asks the person — by default through CrewAI's ``request_human_input`` — and waits) and
blocks what is refused or declined; the after hook records the allowed call's real result, or
gives the model the refusal's reason. A hook that fails blocks the call (CrewAI's hooks fail open).
Installed, it records what the person says (the outermost run's ``kickoff(inputs=...)``, a task's
human-input feedback) as ``user`` history entries, through CrewAI's ``input`` interception point
and its human-input provider (``qls._crewsaid``), so ``origins="auto"`` traces against them.
``export_crewai`` writes every tool as guarded while the guard's hooks are installed (they see every
tool call of every crew in the process); the delegation tools pass through (they are edges).
"""

from __future__ import annotations

from typing import Any, Mapping

from qls._build import Builder, Export, Part, ToolSpec, at_of, clean_schema
from qls._crewflow import kickoffs
from qls._crewsaid import CrewSaid
from qls._percall import Ask, CallGate, Go, Stop
from qls._shared import FrameworkGuard, Origins, QlsInputError, check_overlays, deprecated_alias, framework_class, require_app
from qls.guard import Guard

__all__ = ["export_crewai", "CrewGuard", "export_crew"]

_DELEGATION = {"delegate_work_to_coworker", "ask_question_to_coworker",
               "Delegate work to coworker", "Ask question to coworker"}


def _installed_guard() -> Any:
    from crewai.hooks import get_before_tool_call_hooks

    for h in get_before_tool_call_hooks():
        g = getattr(h, "qls_guard", None)
        if g is not None:
            return g
    return None


class _Crew:
    def __init__(self, b: Builder, guard: Any) -> None:
        self.b = b
        self.guard = guard
        self.delegated: dict[str, str] = {}  # role -> its delegated node

    def specs(self, tools: list) -> list[ToolSpec]:
        out = []
        for t in tools or []:
            if t.name in _DELEGATION:
                continue
            schema = None
            a = getattr(t, "args_schema", None)
            if a is not None and hasattr(a, "model_json_schema"):
                schema = clean_schema(a.model_json_schema())
            fn = getattr(t, "func", None) or getattr(type(t), "_run", None)
            out.append(ToolSpec(t.name, self.b.entry(t.name, schema), guard=self.guard, at=at_of(fn)))
        return out

    def crew(self, crew: Any) -> Part:
        from crewai import Process

        agents = list(crew.agents)
        manager = None
        if crew.process == Process.hierarchical:
            manager = crew.manager_agent
            role = manager.role if manager is not None else "Crew Manager"
            self.b.agent(role, budget=self._budget(manager, len(crew.tasks)) if manager is not None else None)
            if manager is None:
                self.b.note("the hierarchical crew's manager is built by CrewAI from manager_llm: "
                            "read as a model with no budget of its own")
            m = self.b.node(self.b.unique(role), "model", role)
            self.b.attach(m, role, self.specs(getattr(manager, "tools", []) or []))
            for a in agents:
                d = self.delegate_node(a, agents)
                self.b.edge(m, d)
                self.b.edge(d, m)
            return Part([m], [m])
        parts: list[Part] = []
        for t in crew.tasks:
            a = t.agent
            if a is None:
                c = self.b.custom(f"task:{t.name or t.description[:30]}", "crew", "a task without an agent")
                parts.append(Part([c], [c]))
                continue
            parts.append(self.task(t, a, agents))
        for p, q in zip(parts, parts[1:]):
            self.b.wire(p.exits, q.entries)
        if not parts:
            raise QlsInputError("the crew has no tasks")
        return Part(parts[0].entries, parts[-1].exits)

    def task(self, t: Any, a: Any, agents: list) -> Part:
        role = a.role
        self.b.agent(role)
        specs = self.specs(t.tools if t.tools else a.tools)
        m = self.b.unique(role)
        self.b.node(m, "model", role)
        self.b.attach(m, role, specs)
        if a.allow_delegation:
            for other in agents:
                if other is not a:
                    d = self.delegate_node(other, agents)
                    self.b.edge(m, d)
                    self.b.edge(d, m)
        exits = [m]
        if getattr(t, "human_input", False):
            h = self.b.node(self.b.unique(f"{m}:human_input"), "human", role)
            self.b.edge(m, h, "call")
            self.b.edge(h, m, "route")
            exits = [h]
        return Part([m], exits)

    def delegate_node(self, a: Any, agents: list) -> str:
        role = a.role
        if role in self.delegated:
            return self.delegated[role]
        self.b.agent(role)
        d = self.b.unique(f"{role}:delegated")
        self.delegated[role] = d
        self.b.node(d, "model", role)
        self.b.attach(d, role, self.specs(a.tools))
        if a.allow_delegation:
            for other in agents:
                if other is not a:
                    o = self.delegate_node(other, agents)
                    self.b.edge(d, o)
                    self.b.edge(o, d)
        return d

    @staticmethod
    def _budget(a: Any, runs: int) -> int | None:
        it = getattr(a, "max_iter", None)
        return None if it is None else int(it) * max(runs, 1)

    def budgets(self, crew: Any) -> None:
        """Each agent's budget: ``max_iter`` times the executions that may reach it."""
        for role, v in _crew_budgets(crew).items():
            entry = self.b.agents.get(role)
            if entry is None or "budget" in (self.b.agents_overlay.get(role) or {}):
                continue
            if v is None:
                entry.pop("budget", None)
                self.b.note(f"agent `{role}` may be delegated to without a bound (a delegation cycle): no budget")
            else:
                entry["budget"] = v

    def agent(self, a: Any) -> Part:
        """An ``Agent`` kicked off on its own (``Agent.kickoff``): its model node and tools."""
        self.b.agent(a.role)
        m = self.b.unique(a.role)
        self.b.node(m, "model", a.role)
        self.b.attach(m, a.role, self.specs(a.tools))
        return Part([m], [m])


def _crew_budgets(crew: Any) -> dict[str, int | None]:
    """Each agent's budget in one run of a crew: ``max_iter`` times the executions that may
    reach it; ``None`` where a delegation cycle leaves it unbounded."""
    agents = list(crew.agents)
    runs = {a.role: sum(1 for t in crew.tasks if t.agent is a) for a in agents}
    hier = crew.process.value == "hierarchical"
    delegators = {a.role: [d for d in agents if d is not a and d.allow_delegation] for a in agents}
    if hier:
        mgr = crew.manager_agent
        for a in agents:
            delegators[a.role].append(mgr)

    memo: dict[str, int | None] = {}

    def visits(a: Any, path: tuple) -> int | None:
        if a is None:
            return None  # the built-in manager: bounded by nothing we can read
        if a.role in path:
            return None
        if a.role in memo:
            return memo[a.role]
        total = runs.get(a.role, 0) + (1 if hier and a is crew.manager_agent else 0)
        for d in delegators.get(a.role, []):
            v = visits(d, path + (a.role,))
            if v is None or d is None or d.max_iter is None:
                memo[a.role] = None
                return None
            total += v * int(d.max_iter)
        memo[a.role] = total
        return total

    out: dict[str, int | None] = {}
    for a in agents:
        v = visits(a, ())
        out[a.role] = None if v is None or a.max_iter is None else int(a.max_iter) * max(v, 1)
    return out


def _kickoff_budgets(target: Any) -> dict[str, int | None]:
    """The budgets one kickoff of a crew or an agent gives its agents (a hierarchical crew's
    manager included, as ``_Crew.crew`` declares it)."""
    if _is_crew(target):
        out = _crew_budgets(target)
        manager = getattr(target, "manager_agent", None)
        if target.process.value == "hierarchical" and manager is not None:
            out[manager.role] = _Crew._budget(manager, len(target.tasks))
        return out
    it = getattr(target, "max_iter", None)
    return {target.role: None if it is None else int(it)}


def _flow(b: Builder, flow: Any) -> Part:
    cls = type(flow)
    name = getattr(flow, "name", None) or cls.__name__
    b.agent(name)
    defs = cls._flow_definition.methods
    nodes: dict[str, str] = {}
    exits: dict[str, list[str]] = {}
    crews = _Crew(b, _installed_guard())
    runs: dict[str, list] = {}  # method -> what it kicks off

    def link(xs: list[str], to: str) -> None:
        """On from the flow's own nodes (a route), or from a crew's last agent (a hand-off back
        to the flow's code)."""
        for x in xs:
            b.edge(x, to, "route" if b.nodes[x]["agent"] == name else None)
    for m, d in defs.items():
        nodes[m] = b.custom(f"{name}.{m}", name, f"flow method `{m}` is code", at=at_of(getattr(cls, m, None)))
        found, notes = kickoffs(flow, m)
        for n in notes:
            b.note(n)
        runs[m] = found
        # The method's code runs what it kicks off in the order written, each possibly skipped
        # (a branch, an exception): more runs than the code has, never fewer.
        out = [nodes[m]]
        for k in found:
            part = crews.crew(k.target) if _is_crew(k.target) else crews.agent(k.target)
            b.wire(out, part.entries)
            out = out + [x for x in part.exits if x not in out]
        exits[m] = out
        if d.human_feedback is not None:
            h = b.node(b.unique(f"{name}.{m}:feedback"), "human", name)
            link(out, h)
            exits[m] = [h]

    def sources(cond: Any) -> list[str]:
        if cond is None:
            return []
        if isinstance(cond, str):
            return [cond]
        if isinstance(cond, (list, tuple)):
            return [s for c in cond for s in sources(c)]
        if isinstance(cond, Mapping):
            return [s for v in cond.values() for s in sources(v)]
        return sources(getattr(cond, "model_dump", lambda: None)())

    routers = [m for m, d in defs.items() if d.router]
    labels_heard = False
    after: dict[str, set[str]] = {m: set() for m in defs}  # the methods each method may run before
    def heard(d: Any) -> list[str]:
        """What a method listens to; ``@start("label")`` is an entry that also listens (CrewAI
        runs it again when a router returns the label: the flow's loop)."""
        cond = [] if isinstance(d.start, bool) or d.start is None else sources(d.start)
        return sources(d.listen) + cond

    for m, d in defs.items():
        for s in heard(d):
            if s in defs:
                link(exits[s], nodes[m])
                after[m].add(s)
            else:  # a label: any router may return it
                labels_heard = True
                for r in routers:
                    link(exits[r], nodes[m])
                    after[m].add(r)
    if labels_heard:
        b.note(f"flow `{name}`: a router's return value picks its listeners; read as any label")
    _budgets(b, name, runs, after)
    listened = {s for d in defs.values() for s in heard(d)}
    starts = [nodes[m] for m, d in defs.items() if d.start]
    ends = [x for m in defs if m not in listened or defs[m].router for x in exits[m]]
    if not starts:
        raise QlsInputError(f"flow `{name}` has no @start method")
    return Part(starts, ends or [x for xs in exits.values() for x in xs])


def _is_crew(x: Any) -> bool:
    from crewai import Crew

    return isinstance(x, Crew)


def _budgets(b: Builder, flow: str, runs: dict[str, list], after: dict[str, set[str]]) -> None:
    """The budgets of the agents a flow kicks off: each kickoff's own (``max_iter`` times the
    tasks it runs, as for a crew alone), summed over the kickoffs that reach an agent — and none
    where a kickoff may run any number of times (in a loop, or its method on a cycle of the
    flow: a router sending the flow back)."""

    def on_cycle(m: str) -> bool:
        seen: set[str] = set()
        todo = list(after[m])
        while todo:
            x = todo.pop()
            if x == m:
                return True
            if x not in seen:
                seen.add(x)
                todo.extend(after[x])
        return False

    total: dict[str, int | None] = {}
    for m, found in runs.items():
        again = on_cycle(m)
        for k in found:
            per = _kickoff_budgets(k.target)
            for role, v in per.items():
                if "budget" in (b.agents_overlay.get(role) or {}):
                    continue
                if again or k.repeats or v is None:
                    if total.get(role, 0) is not None:
                        why = ("its method is on a cycle of the flow" if again else
                               "it is kicked off in a loop" if k.repeats else "it has no bound of its own")
                        b.note(f"flow `{flow}`: agent `{role}` has no budget: {why}")
                    total[role] = None
                elif role not in total:
                    total[role] = v
                elif total[role] is not None:
                    total[role] = int(total[role] or 0) + v
    for role, v in total.items():
        entry = b.agents.get(role)
        if entry is None:
            continue
        if v is None:
            entry.pop("budget", None)
        else:
            entry["budget"] = v


def export_crewai(app: Any, *, tools: dict | None = None, agents: dict | None = None) -> Export:
    """Exports a CrewAI ``Crew`` or ``Flow`` (``app``): ``(graph, catalogue)``."""
    check_overlays("export_crewai", tools=tools, agents=agents)
    what = "a CrewAI Crew or Flow"
    crew_cls = framework_class("export_crewai", "crewai", "Crew", what)
    flow_cls = framework_class("export_crewai", "crewai.flow.flow", "Flow", what)
    require_app("export_crewai", app, isinstance(app, (crew_cls, flow_cls)), what)
    crew_or_flow = app
    b = Builder(tools=dict(tools or {}), agents_overlay=dict(agents or {}))
    if isinstance(crew_or_flow, flow_cls):
        return b.finish(_flow(b, crew_or_flow))
    r = _Crew(b, _installed_guard())
    part = r.crew(crew_or_flow)
    r.budgets(crew_or_flow)
    for name, over in b.agents_overlay.items():
        if name in b.agents and "budget" in over:
            b.agents[name]["budget"] = int(over["budget"])
    return b.finish(part)


class CrewGuard(FrameworkGuard):
    """CrewAI's tool calls behind a ``Guard``, through CrewAI's global tool-call hooks.

    ``g = CrewGuard(guard, ask=person); g.install()`` … ``g.uninstall()`` (or ``with g:``).
    Without ``ask``, a confirm asks through CrewAI's ``request_human_input`` on the hook's
    context (the console). Compensations a refusal runs must be tools of the calling agent.

    Installed, it also records what the person says as ``user`` history entries, so each
    argument's origin is traced against it (``qls._crewsaid``): the outermost run's
    ``kickoff(inputs=...)`` values and a task's human-input feedback.
    """

    def __init__(self, guard: Guard, *, ask: Ask | None = None, origins: Origins | None = None) -> None:
        self._setup(guard, origins)
        self.ask = ask
        self.gate = CallGate(self, ask=ask)
        self._pending: dict[int, Go | str] = {}
        self._said = CrewSaid(self.heard)

    def install(self) -> "CrewGuard":
        from crewai.hooks import register_after_tool_call_hook, register_before_tool_call_hook

        self._before = _Hook(self.before, self.guard)
        self._after = _Hook(self.after, self.guard)
        register_before_tool_call_hook(self._before)
        register_after_tool_call_hook(self._after)
        self._said.install()
        return self

    def uninstall(self) -> None:
        from crewai.hooks import unregister_after_tool_call_hook, unregister_before_tool_call_hook

        unregister_before_tool_call_hook(self._before)
        unregister_after_tool_call_hook(self._after)
        self._said.uninstall()

    def __enter__(self) -> "CrewGuard":
        return self.install()

    def __exit__(self, *exc: Any) -> None:
        self.uninstall()

    def _runner(self, ctx: Any) -> Any:
        def run(tool: str, args: Mapping[str, Any]) -> Any:
            for t in list(getattr(ctx.agent, "tools", None) or []) + list(getattr(ctx.task, "tools", None) or []):
                if t.name == tool:
                    return t.run(**dict(args))
            raise KeyError(f"`{tool}` is not a tool of the calling agent (a compensation must be one)")
        return run

    def _ask(self, ctx: Any) -> Ask:
        if self.gate.ask is not None:
            return self.gate.ask
        return lambda q: ctx.request_human_input(f"qls: approve {q['tool']} {q['args']} ({', '.join(q['reasons'])})? yes/no")

    def before(self, ctx: Any) -> bool | None:
        """CrewAI's before-tool-call hook: ``False`` blocks the call."""
        if ctx.tool_name in _DELEGATION:
            return None
        key = id(ctx.tool_input)
        v: Go | Stop | None = None
        try:
            c = self.gate.call(ctx.tool_name, dict(ctx.tool_input), agent=getattr(ctx.agent, "role", None))
            # Decided in one step with its entry (``Guard.begin``): crews running tasks on
            # several threads each see the calls decided before theirs; the tool runs unlocked.
            v = self.gate.decide(c, self._runner(ctx), ask=self._ask(ctx))
            if isinstance(v, Go):
                # The arguments run are the ones decided (and, for a confirm, shown).
                ctx.tool_input.clear()
                ctx.tool_input.update(dict(c.args))
                self._pending[key] = v
                return None
            self._pending[key] = v.message
            return False
        except Exception as e:  # fail closed: CrewAI would run the tool if the hook raised
            if isinstance(v, Go):
                self.gate.fail(v, f"not run: the qls guard failed ({e})")
            self._pending[key] = f"refused: the qls guard failed ({e}); nothing ran"
            return False

    def after(self, ctx: Any) -> str | None:
        """CrewAI's after-tool-call hook: records the result, or gives the refusal's reason."""
        if ctx.tool_name in _DELEGATION:
            return None
        v = self._pending.pop(id(ctx.tool_input), None)
        if isinstance(v, Go):
            raw = ctx.raw_tool_result if ctx.raw_tool_result is not None else ctx.tool_result
            self.gate.record(v, raw)
            return None
        return v


export_crew = deprecated_alias(export_crewai, "export_crew")


class _Hook:
    """A hook CrewAI calls, carrying the guard (so ``export_crewai`` recognises it)."""

    def __init__(self, fn: Any, guard: Guard) -> None:
        self.fn = fn
        self.qls_guard = guard
        self.__name__ = getattr(fn, "__name__", "qls_hook")

    def __call__(self, ctx: Any) -> Any:
        return self.fn(ctx)

"""Google's Agent Development Kit (``google-adk``): ``export_adk`` and ``AdkGuard``.

``export_adk(app, *, tools=None, agents=None, mcp_tools=None)`` reads the agent tree the
app builds (never its source) and returns an ``Export`` ``(graph, catalogue)``:

- ``LlmAgent``: a model node named after the agent, with its tools (below). Each of its
  ``sub_agents`` is a hand-off edge from the model (ADK's ``transfer_to_agent``, which the model
  calls); a sub-agent may transfer back to its parent and to its peers unless
  ``disallow_transfer_to_parent`` / ``disallow_transfer_to_peers`` say no. A sub-agent that
  answers ends the turn.
- ``AgentTool(agent)``: the agent called as a tool: a hand-off to it and back (its answer returns
  to the caller as the tool's result, so marks travel both ways).
- ``SequentialAgent``: each sub-agent's finish on to the next's start. ``ParallelAgent``: the
  branches in any order (each branch's finish on to every other branch's start, each such edge at
  most once per turn, and any branch may be the last). ``LoopAgent``: the sequence, with the edge
  from the last sub-agent back to the first taken at most ``max_iterations - 1`` times
  (``exit_after``); without ``max_iterations`` the loop is unbounded (QG023). Any sub-agent of a
  loop may leave it (``exit_loop``/escalation).
- ``FunctionTool`` (and plain functions): the schema ADK declares to the model; with
  ``require_confirmation=True`` a human node before the call; a ``require_confirmation``
  function earns no credit (decided per call at run time), noted.
- MCP toolsets (any ``BaseToolset``): their tools from ``mcp_tools`` — keyed by the toolset object
  or its ``tool_name_prefix`` — an MCP ``tools/list`` answer (``{"tools": [...]}``), a list of
  MCP ``Tool`` dicts, or a path to one of those or to a ``qls mcp snapshot`` lock
  (``qls-mcp-lock/1``, every server's tools); an MCP tool is a read only where its
  ``readOnlyHint`` says so. A toolset without a listing is a custom node (QG006).
- Built-in tools that read the web (``google_search``, ``url_context``, ``load_web_page``,
  enterprise and Vertex AI search, Maps grounding): reads whose results are untrusted. The
  model-side ones (``GoogleSearchTool``, ``UrlContextTool``, …) run inside the model, where no
  callback sees them: never guarded.
- Any other agent (a custom ``BaseAgent``, a remote A2A agent, a LangGraph agent): a custom node
  that may run its sub-agents in any order (QG006).

A tool's effect comes from ``tools`` (``{"name": {"effect": "read"}}``), else its own metadata
(``custom_metadata={"qls": {...}}``), else it is a write. ``agents`` gives an agent's
``privilege`` and ``budget``.

``AdkGuard(guard, ask=...)`` puts the tool check in ADK's own hook, ``before_tool_callback``: each
call is decided when the callback fires (``qls._percall``); an allowed call is run by the callback
itself and its result recorded, and the callback returns it, so ADK does not run the tool again; a
confirm asks the person (``ask``) and waits; a refusal returns the reason. ``export_adk`` writes
the tools of an agent whose callback is the guard's as a guarded tools node.
"""

from __future__ import annotations

import inspect
import json
import threading
from typing import Any, Mapping

from qls._build import WEB, Builder, Export, Part, ToolSpec, at_of, clean_schema, hashable, mcp_specs, own_metadata
from qls._percall import Ask, CallGate
from qls._shared import (FrameworkGuard, Origins, QlsInputError, check_overlays, framework_class, message_text,
                         require_app, wait)
from qls.guard import Guard

__all__ = ["export_adk", "AdkGuard"]

#: ADK's own tools that hand over control: read as hand-offs, never as effects.
_CONTROL = {"transfer_to_agent", "exit_loop"}
#: Built-in tools that run inside the model (no tool callback sees them) and read the web.
_MODEL_SIDE_WEB = {"GoogleSearchTool", "UrlContextTool", "EnterpriseWebSearchTool", "VertexAiSearchTool",
                   "GoogleMapsGroundingTool", "DiscoveryEngineSearchTool"}
#: Function tools of ADK that fetch from the web.
_WEB_FUNCTIONS = {"load_web_page", "google_search_agent", "GoogleSearchAgentTool"}


def _adk() -> Any:
    from google.adk import agents as A
    from google.adk import tools as T

    return A, T


class _Reader:
    def __init__(self, b: Builder, mcp_tools: Mapping[Any, Any]) -> None:
        self.b = b
        self.mcp_tools = mcp_tools
        self.parts: dict[str, Part] = {}
        self.llm_parent: dict[str, Any] = {}  # an LlmAgent's name -> its LlmAgent parent

    # -- agents -------------------------------------------------------------------------------

    def agent(self, a: Any, parent: Any = None) -> Part:
        A, _ = _adk()
        if a.name in self.parts:
            return self.parts[a.name]
        if isinstance(a, A.LlmAgent):
            part = self.llm(a, parent)
        elif isinstance(a, A.LoopAgent):
            part = self.loop(a)
        elif isinstance(a, A.SequentialAgent):
            part = self.sequence(a, a.sub_agents)
        elif isinstance(a, A.ParallelAgent):
            part = self.parallel(a)
        else:
            part = self.opaque(a)
        self.parts[a.name] = part
        return part

    def llm(self, a: Any, parent: Any) -> Part:
        A, _ = _adk()
        m = self.b.model(a.name, [])
        specs, called = self.tool_specs(a)
        self.b.attach(m, a.name, specs)
        part = Part([m], [m])
        self.parts[a.name] = part
        for sub in called:  # AgentTool: there and back
            sp = self.agent(sub)
            self.b.wire([m], sp.entries)
            self.b.wire(sp.exits, [m])
        for sub in a.sub_agents:
            if isinstance(sub, A.LlmAgent):
                self.llm_parent[sub.name] = a
            sp = self.agent(sub, a)
            self.b.wire([m], sp.entries)
            part.exits += [x for x in sp.exits if x not in part.exits]
        return part

    def transfers(self) -> None:
        """A sub-agent's transfers back to its parent and to its peers (ADK's defaults)."""
        A, _ = _adk()
        for name, parent in self.llm_parent.items():
            sub = next(s for s in parent.sub_agents if s.name == name)
            if not sub.disallow_transfer_to_parent:
                self.b.edge(name, parent.name)
            if not sub.disallow_transfer_to_peers:
                for peer in parent.sub_agents:
                    if peer.name != name:
                        self.b.wire([name], self.parts[peer.name].entries)

    def sequence(self, a: Any, subs: list, *, loop: bool = False) -> Part:
        parts = [self.agent(s) for s in subs]
        if not parts:
            return self.opaque(a, why=f"workflow agent `{a.name}` has no sub-agents")
        for p, q in zip(parts, parts[1:]):
            self.b.wire(p.exits, q.entries)
        exits = [x for p in parts for x in p.exits] if loop else list(parts[-1].exits)
        return Part(list(parts[0].entries), list(dict.fromkeys(exits)))

    def parallel(self, a: Any) -> Part:
        parts = [self.agent(s) for s in a.sub_agents]
        if not parts:
            return self.opaque(a, why=f"workflow agent `{a.name}` has no sub-agents")
        for i, p in enumerate(parts):
            for j, q in enumerate(parts):
                if i != j:
                    self.b.wire(p.exits, q.entries, exit_after=1)
        entries = list(dict.fromkeys(e for p in parts for e in p.entries))
        return Part(entries, list(dict.fromkeys(x for p in parts for x in p.exits)))

    def loop(self, a: Any) -> Part:
        part = self.sequence(a, a.sub_agents, loop=True)
        last = self.parts[a.sub_agents[-1].name].exits if a.sub_agents else []
        n = a.max_iterations
        if n is None:
            self.b.note(f"LoopAgent `{a.name}` has no max_iterations: an unbounded loop (QG023)")
            for x in last:
                for e in part.entries:
                    self.b.edge(x, e)
        elif n > 1:
            for x in last:
                for e in part.entries:
                    self.b.edge(x, e, exit_after=n - 1)
        return part

    def opaque(self, a: Any, *, why: str | None = None) -> Part:
        why = why or f"agent `{a.name}` is a {type(a).__name__}, whose order of work is its own code"
        c = self.b.custom(a.name, a.name, why, at=at_of(type(a)))
        part = Part([c], [c])
        self.parts[a.name] = part
        for sub in getattr(a, "sub_agents", None) or []:
            sp = self.agent(sub)
            self.b.wire([c], sp.entries)
            self.b.wire(sp.exits, [c])
        return part

    # -- tools --------------------------------------------------------------------------------

    def tool_specs(self, a: Any) -> tuple[list[ToolSpec], list[Any]]:
        _, T = _adk()
        from google.adk.tools.base_toolset import BaseToolset

        guard = _guard_of(a)
        specs: list[ToolSpec] = []
        called: list[Any] = []
        for t in a.tools:
            if isinstance(t, T.AgentTool):
                called.append(t.agent)
                continue
            if isinstance(t, BaseToolset):
                specs += self.toolset(a, t, guard)
                continue
            if not isinstance(t, T.BaseTool):
                t = T.FunctionTool(t)
            cls = type(t).__name__
            if _is_control(t):
                continue
            if cls in _MODEL_SIDE_WEB:
                specs.append(ToolSpec(t.name, self.b.entry(t.name, None, WEB)))
                continue
            decl = _declaration(t)
            if decl is None:
                self.b.beside(a.name, f"{a.name}:{t.name}", f"tool `{t.name}` of `{a.name}` ({cls}) declares no schema")
                continue
            own = dict(WEB) if (t.name in _WEB_FUNCTIONS or cls in _WEB_FUNCTIONS) else {}
            own.update(own_metadata(getattr(t, "custom_metadata", None)))
            confirm = getattr(t, "_require_confirmation", False)
            if callable(confirm):
                self.b.note(f"tool `{t.name}` of `{a.name}` needs confirmation only when a function says so: read as never confirmed")
                confirm = False
            specs.append(ToolSpec(t.name, self.b.entry(t.name, decl, own), confirm=bool(confirm) and guard is None,
                                  guard=guard, at=at_of(getattr(t, "func", None))))
        return specs, called

    def toolset(self, a: Any, ts: Any, guard: Any) -> list[ToolSpec]:
        listing = self.mcp_tools.get(ts) if hashable(ts) else None
        prefix = getattr(ts, "tool_name_prefix", None)
        if listing is None and prefix is not None:
            listing = self.mcp_tools.get(prefix)
        if listing is None:
            self.b.beside(a.name, f"{a.name}:{type(ts).__name__}",
                          f"toolset {type(ts).__name__} of `{a.name}` has no listing (pass mcp_tools=)")
            return []
        return mcp_specs(self.b, listing, prefix=prefix, keep=getattr(ts, "tool_filter", None), guard=guard,
                         where=a.name)


def _is_control(t: Any) -> bool:
    """ADK's own ``exit_loop``/``transfer_to_agent`` (a function of the app's that happens to
    have the name is a tool like any other)."""
    fn = getattr(t, "func", None)
    return t.name in _CONTROL and (getattr(fn, "__module__", "") or "").startswith("google.adk")


def _declaration(t: Any) -> dict | None:
    try:
        decl = t._get_declaration()
    except Exception:  # a tool whose declaration needs a live connection or credentials
        return None
    if decl is None:
        return None
    schema = decl.parameters_json_schema
    if schema is None and decl.parameters is not None:
        schema = decl.parameters.model_dump(mode="json", exclude_none=True)
        schema = json.loads(json.dumps(schema).replace('"STRING"', '"string"').replace('"OBJECT"', '"object"')
                            .replace('"NUMBER"', '"number"').replace('"INTEGER"', '"integer"')
                            .replace('"BOOLEAN"', '"boolean"').replace('"ARRAY"', '"array"'))
    return clean_schema(schema if schema is not None else {})


def _guard_of(a: Any) -> Any:
    cbs = a.before_tool_callback
    for cb in cbs if isinstance(cbs, list) else [cbs]:
        g = getattr(cb, "qls_guard", None)
        if g is not None:
            return g
    return None


def export_adk(app: Any, *, tools: dict | None = None, agents: dict | None = None,
               mcp_tools: Mapping[Any, Any] | None = None) -> Export:
    """Exports an ADK agent tree (``app``: the root agent the app runs): ``(graph, catalogue)``."""
    check_overlays("export_adk", tools=tools, agents=agents)
    what = "an ADK agent (the root agent the app runs)"
    require_app("export_adk", app, isinstance(app, framework_class("export_adk", "google.adk.agents", "BaseAgent", what)), what)
    root_agent = app
    b = Builder(tools=dict(tools or {}), agents_overlay=dict(agents or {}))
    r = _Reader(b, dict(mcp_tools or {}))
    part = r.agent(root_agent)
    r.transfers()
    return b.finish(part)


class _Callback:
    """ADK's ``before_tool_callback``: the tool check, then the tool (run here), its result."""

    def __init__(self, owner: "AdkGuard") -> None:
        self.owner = owner
        self.qls_guard = owner.guard
        self.__name__ = "qls_before_tool_callback"

    async def __call__(self, tool: Any, args: dict[str, Any], tool_context: Any) -> dict[str, Any] | None:
        _, T = _adk()
        if tool.name == "transfer_to_agent" or _is_control(tool) or isinstance(tool, T.AgentTool):
            return None  # hand-offs: the graph models them as edges
        self.owner._user_content(tool_context)
        gate = self.owner.gate
        agent = getattr(tool_context, "agent_name", None)
        c = gate.call(tool.name, args, call_id=getattr(tool_context, "function_call_id", None), agent=None)
        _ = agent

        async def invoke(a: Mapping[str, Any]) -> Any:
            return await tool.run_async(args=dict(a), tool_context=tool_context)

        out = await gate.arun(c, invoke, self.owner._runner)
        return out if isinstance(out, dict) else {"result": out}


class AdkGuard(FrameworkGuard):
    """ADK's tools behind a ``Guard``, through ``before_tool_callback``.

    ``AdkGuard(guard, ask=person).agent(root)`` sets the callback on ``root`` and every
    ``LlmAgent`` below it (an agent with a callback of its own is refused: the guard must see every
    call). ``ask`` is the person: given the question (tool, each argument's value and origin, the
    reasons), it returns yes or no (it may be async); the guard waits for it.
    """

    def __init__(self, guard: Guard, *, ask: Ask | None = None, origins: Origins | None = None) -> None:
        self._setup(guard, origins)
        self.gate = CallGate(self, ask=ask)
        self.ask = ask
        self.callback = _Callback(self)
        self._tools: dict[str, Any] = {}
        # The invocations whose user content was recorded.
        self._seen: set[str] = set()
        self._seen_lock = threading.Lock()

    def agent(self, agent: Any) -> Any:
        A, T = _adk()
        stack = [agent]
        while stack:
            a = stack.pop()
            if isinstance(a, A.LlmAgent):
                if a.before_tool_callback is not None and a.before_tool_callback is not self.callback:
                    raise QlsInputError(f"agent `{a.name}` has a before_tool_callback of its own: the guard needs it")
                a.before_tool_callback = self.callback
                for t in a.tools:
                    if isinstance(t, T.AgentTool):
                        stack.append(t.agent)
                    elif not isinstance(t, T.BaseTool) and callable(t):
                        self._tools[t.__name__] = t
                    elif isinstance(t, T.FunctionTool):
                        self._tools[t.name] = t.func
            stack.extend(getattr(a, "sub_agents", None) or [])
        return agent

    def _user_content(self, tool_context: Any) -> None:
        """The person's message that started this invocation (ADK's ``user_content``), recorded
        as a ``user`` history entry once per invocation, before the invocation's first call is
        decided: what an argument the person typed is traced to (SPEC §2 "Provenance, not
        authorship")."""
        invocation = getattr(tool_context, "invocation_id", None)
        content = getattr(tool_context, "user_content", None)
        if invocation is None or content is None:
            return
        with self._seen_lock:
            if invocation in self._seen:
                return
            self._seen.add(invocation)
        text = message_text(getattr(content, "parts", None) or [])
        if text:
            self.guard.user(text)

    def _runner(self, tool: str, args: Mapping[str, Any]) -> Any:
        """A compensation, run directly (it must be a function tool of a guarded agent)."""
        f = self._tools.get(tool)
        if f is None:
            raise KeyError(f"`{tool}` is not a function tool of the guarded agents (a compensation must be one)")
        out = f(**dict(args))
        if inspect.isawaitable(out):
            out = wait(out)
        return out

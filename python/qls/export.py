"""Export a LangGraph app or an OpenAI Agents SDK agent for ``qls verify --graph``.

``export_langgraph(app, model_nodes=[...])`` and ``export_openai_agents(app)`` (also
``qls.langgraph.export_langgraph`` and ``qls.openai_agents.export_openai_agents``; the old names
``export_graph`` and ``export_agents`` are deprecated aliases, kept one release) each return an ``Export``:
``(graph, catalogue)`` — a ``qls-graph/1`` dict and a catalogue dict, both JSON-ready — with the
``rulebook`` and ``settings`` of the guard its tools run behind, if any.

A tool node behind a ``qls`` guard (``qls.langgraph.GuardedToolNode``, a tool wrapped by
``qls.openai_agents.AgentsGuard``) is written as a *guarded* tools node, and its tools' catalogue
entries are the guard's own: the proof is about the check that runs. Every other tool node is
unguarded (QG001 for its writes: nothing checks them). The graph
follows the same reading as ``qls``'s own LangGraph reader (``readers/src/langgraph.rs``), so
exporting here and reading LangGraph's ``to_json()`` there give the same proof.

What cannot be modelled is written into the graph, never dropped: a node that is neither a model
nor a ToolNode is a ``custom`` node (QG006), and a node that no drawn edge reaches (a ``Send``
fan-out, an undrawn ``Command``) gets a ``dynamic`` edge with no targets (QG016).

A tool's effect comes from the ``tools`` mapping or from the tool's own metadata
(``metadata={"qls": {"effect": "read"}}`` or ``metadata={"effect": "read"}``); a tool whose effect
nobody states is a write, the dangerous reading. Hand-off tools of ``langgraph-swarm`` and
``langgraph-supervisor`` are reads: they change nothing outside the run.
"""

from __future__ import annotations

from typing import Any, Iterable

from qls._build import (FORMAT, Export, QlsExportNote, catalogue_entry, clean_schema, edge_kind, guarded_entries,
                        one_guard, own_metadata, warn_notes)
from qls._shared import QlsInputError, check_overlays, deprecated_alias, guard_of, require_app

__all__ = ["export_langgraph", "export_openai_agents", "export_graph", "export_agents", "lower", "write", "Export",
           "QlsExportNote", "FORMAT"]


_HANDOFF_KEY = "__handoff_destination"


def _guard_of(x: Any) -> Any:
    """The ``qls`` guard a node or tool runs behind (LangGraph wraps a callable node in a
    ``RunnableCallable`` whose ``func`` is the node), or ``None``. A ``ToolNode`` that
    ``create_agent`` built runs behind the guard when its tool-call wrapper is, or composes,
    ``qls.langchain.GuardMiddleware.wrap_tool_call``."""
    for obj in (x, getattr(x, "func", None)):
        g = guard_of(obj)
        if g is not None:
            return g
    return _guard_in_wrapper(getattr(x, "_wrap_tool_call", None))


def _guard_in_wrapper(fn: Any, depth: int = 0) -> Any:
    """The guard of a ``GuardMiddleware`` whose hook ``fn`` is, wraps or composes: followed
    through bound methods (``__self__``), decorators (``__wrapped__``) and the closures LangChain
    composes middleware with, a few levels deep."""
    if fn is None or depth > 8:
        return None
    g = guard_of(getattr(fn, "__self__", None))
    if g is not None:
        return g
    inner = [getattr(fn, "__wrapped__", None)]
    inner += [c.cell_contents for c in (getattr(fn, "__closure__", None) or ()) if _filled(c)]
    for f in inner:
        if callable(f):
            g = _guard_in_wrapper(f, depth + 1)
            if g is not None:
                return g
    return None


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------------------------------------
# Catalogue entries
# ---------------------------------------------------------------------------------------------

def _langchain_tool_entry(tool: Any, overlay: dict | None) -> tuple[str, dict]:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    schema = convert_to_openai_tool(tool)["function"].get("parameters")
    md = getattr(tool, "metadata", None) or {}
    return tool.name, catalogue_entry(tool.name, clean_schema(schema), own_metadata(md), overlay, _HANDOFF_KEY in md)


# ---------------------------------------------------------------------------------------------
# LangGraph
# ---------------------------------------------------------------------------------------------

def export_langgraph(app: Any, *, model_nodes: Iterable[str], tools: dict | None = None) -> Export:
    """Exports a compiled LangGraph app: ``(graph, catalogue)``.

    ``model_nodes`` are node ids as ``app.get_graph(xray=True)`` names them (``agent``, or
    ``flight_assistant:agent`` inside a swarm). ``tools`` maps a tool name to catalogue fields laid
    over what the exporter reads (``{"book_hotel": {"effect": "write", "undo": "cancel_hotel"}}``).
    """
    check_overlays("export_langgraph", tools=tools)
    require_app("export_langgraph", app, callable(getattr(app, "get_graph", None)), "a compiled LangGraph app")
    if isinstance(model_nodes, str):
        raise QlsInputError("export_langgraph: `model_nodes` is a list of node ids, not one string")
    model_nodes = list(model_nodes)
    if not all(isinstance(m, str) for m in model_nodes):
        raise QlsInputError("export_langgraph: `model_nodes` is a list of node ids")
    drawn = app.get_graph(xray=True)
    tools = dict(tools or {})
    catalogue: dict[str, dict] = {}
    node_tools: dict[str, list[str]] = {}
    guarded: list[str] = []
    guards: list[Any] = []
    for nid, node in drawn.nodes.items():
        data = node.data
        guard = _guard_of(data)
        by_name = getattr(data, "tools_by_name", None) or getattr(getattr(data, "func", None), "tools_by_name", None)
        if isinstance(by_name, dict) and by_name:
            node_tools[nid] = list(by_name)
            for t in by_name.values():
                name, entry = _langchain_tool_entry(t, tools.get(t.name))
                catalogue[name] = entry
            if guard is not None:
                guarded.append(nid)
                guards.append(guard)
    guard = one_guard(guards)
    if guard is not None:
        guarded_entries(guard, [t for n in guarded for t in node_tools[n]], catalogue)
    unknown = [t for t in tools if t not in catalogue]
    if unknown:
        raise QlsInputError(f"`tools` names {unknown}, which no ToolNode of the app holds")
    missing = [m for m in model_nodes if m not in drawn.nodes]
    if missing:
        raise QlsInputError(f"model_nodes {missing} name no node of the app (nodes: {sorted(drawn.nodes)})")
    graph = lower(drawn.to_json(), model_nodes=model_nodes, tools_nodes=node_tools, guarded=guarded)
    return _export(graph, catalogue, guard)


def _export(graph: dict, catalogue: dict[str, dict], guard: Any) -> Export:
    if guard is None:
        return Export(graph, {"tools": catalogue})
    return Export(graph, {"tools": catalogue}, guard.rulebook, guard.settings)


def lower(lg: dict, *, model_nodes: Iterable[str], tools_nodes: dict[str, list[str]] | None = None,
          guarded: Iterable[str] = ()) -> dict:
    """Lowers LangGraph's ``to_json()`` dict to ``qls-graph/1`` (the reading of ``qls``'s reader).

    ``guarded`` names the tools nodes that run behind a ``qls`` guard. What was read as less than
    certain is issued as a ``QlsExportNote`` warning, one per note.
    """
    guarded = set(guarded)
    model_nodes = set(model_nodes)
    tools_nodes = dict(tools_nodes or {})
    notes: list[str] = []
    raw: dict[str, dict] = {}
    for n in lg["nodes"]:
        nid = n["id"]
        data = n.get("data")
        data_id = data.get("id", []) if isinstance(data, dict) else []
        md = n.get("metadata") or {}
        inter = md.get("__interrupt")
        passing = nid in ("__start__", "__end__") or nid.endswith((":__start__", ":__end__"))
        if passing and (nid in model_nodes or nid in tools_nodes):
            raise QlsInputError(f"node `{nid}` is a start or an end: it cannot be a model or tools node")
        if nid == "__start__":
            role = "start"
        elif nid == "__end__":
            role = "end"
        elif nid.endswith(":__start__"):
            role = "substart"
        elif nid.endswith(":__end__"):
            role = "subend"
        elif nid in model_nodes:
            role = "model"
        elif (data_id and data_id[-1] == "ToolNode") or nid in tools_nodes:
            role = "tools"
        else:
            role = "custom"
            notes.append(f"node `{nid}` is neither a ToolNode nor a model node: a custom node, opaque (QG006)")
        tl = tools_nodes.get(nid) or md.get("__tools") or []
        agent = nid.rsplit(":", 1)[0] if ":" in nid else ""
        raw[nid] = {"role": role, "tools": list(tl), "agent": agent,
                    "before": inter in ("before", "before,after"), "after": inter in ("after", "before,after")}
    if "__start__" not in raw:
        raise QlsInputError("the graph has no `__start__` node")
    top = next((i for i, r in raw.items() if not r["agent"] and r["role"] == "model"), "graph")
    for r in raw.values():
        r["agent"] = r["agent"] or top
    redges = [(e["source"], e["target"], bool(e.get("conditional"))) for e in lg.get("edges", [])]
    real = lambda i: raw[i]["role"] in ("model", "tools", "custom")  # noqa: E731

    def resolve(start: str) -> list[str | None]:
        out: list[str | None] = []
        seen: set[str] = set()
        stack = [start]
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            role = raw[n]["role"]
            if role == "end":
                out.append(None)
            elif real(n):
                out.append(n)
            else:
                outs = [e for e in redges if e[0] == n]
                if role != "start" and all(c for _, _, c in outs):
                    out.append(None)
                stack.extend(t for _, t, _ in reversed(outs))
        return list(dict.fromkeys(out))

    edges: list[tuple[str, str | None]] = []

    def add(a: str, b: str | None) -> bool:
        if (a, b) in edges:
            return False
        edges.append((a, b))
        return True

    for s, t, _ in redges:
        if real(s):
            for r in sorted(resolve(t), key=lambda x: (x is not None, x or "")):
                add(s, r)
    for sid, r in raw.items():
        if r["role"] != "subend":
            continue
        prefix = sid[: -len("__end__")]
        dests: list[str | None] = []
        for s, t, c in redges:
            if s == sid and c:
                dests += resolve(t)
        for nid, m in raw.items():
            if nid.startswith(prefix) and m["role"] in ("tools", "custom"):
                if any([add(nid, d) for d in dests if d != nid]):
                    notes.append(f"node `{nid}` may hand off to where subgraph `{prefix[:-1]}` leads")
    for nid, m in raw.items():
        # A `transfer_to_X` tool hands off to X (node X, or subgraph `X:`'s entry), drawn or not.
        if m["role"] != "tools":
            continue
        for t in m["tools"]:
            dest = t[len("transfer_to_"):] if t.startswith("transfer_to_") else None
            key = dest if dest in raw else f"{dest}:__start__"
            if dest and key in raw:
                for d in resolve(key):
                    if d is not None and d != nid and add(nid, d):
                        notes.append(f"tool `{t}` of `{nid}` hands off to `{d}`")
    nodes: dict[str, dict] = {}
    for nid, r in raw.items():
        if real(nid):
            node = {"id": nid, "kind": r["role"], "agent": r["agent"]}
            if r["role"] == "tools":
                node["guarded"] = nid in guarded
                node["batch"] = True  # a ToolNode runs a message's calls in one super-step
                node["tools"] = r["tools"]
            nodes[nid] = node
    starts = resolve("__start__")
    if not [s for s in starts if s is not None]:
        raise QlsInputError("`__start__` leads to no node")
    if len(starts) == 1:
        entry = starts[0]
    else:
        entry = "__start__"
        nodes[entry] = {"id": entry, "kind": "custom", "agent": top}
        for s in starts:
            add(entry, s)
        notes.append("`__start__` fans out by code: a custom node that may take any of its ways")
    reached: set[str] = set()
    stack = [entry]
    while stack:
        n = stack.pop()
        if n is not None and n not in reached:
            reached.add(n)
            stack.extend(b for a, b in edges if a == n)
    dynamic: list[str] = []
    orphans = [n for n in nodes if n not in reached]
    if orphans:
        for kind in ("custom", "model"):
            dynamic = [n for n, v in nodes.items() if v["kind"] == kind and n in reached]
            if dynamic:
                break
        dynamic = dynamic or [entry]
        notes.append(f"no drawn edge reaches {orphans} (a `Send` fan-out?): dynamic edges without targets (QG016)")
    for nid, r in raw.items():
        if not real(nid):
            continue
        if r["before"]:
            h = f"interrupt_before:{nid}"
            back = []
            for i, (a, b) in enumerate(edges):
                if b == nid:
                    edges[i] = (a, h)
                    if nodes[a]["kind"] == "model" and a not in back:
                        back.append(a)
            if entry == nid:
                entry = h
            nodes[h] = {"id": h, "kind": "human", "agent": r["agent"]}
            add(h, nid)
            for b in back:
                add(h, b)
        if r["after"]:
            h = f"interrupt_after:{nid}"
            edges[:] = [(h if a == nid else a, b) for a, b in edges]
            nodes[h] = {"id": h, "kind": "human", "agent": r["agent"]}
            add(nid, h)
            if nodes[nid]["kind"] == "model":
                add(h, nid)
    out_edges = []
    seen_e: set[tuple] = set()
    for a, b in edges:
        b = b or "end"
        if (a, b) in seen_e:
            continue
        seen_e.add((a, b))
        out_edges.append({"from": a, "to": b, "kind": edge_kind(nodes.get(a), nodes.get(b))})
    for d in dynamic:
        out_edges.append({"from": d, "to": None, "kind": "dynamic", "targets": None})
    node_list = list(nodes.values()) + [{"id": "end", "kind": "end"}]
    warn_notes(notes)
    return {"format": FORMAT, "entry": entry, "nodes": node_list, "edges": out_edges}


# ---------------------------------------------------------------------------------------------
# OpenAI Agents SDK
# ---------------------------------------------------------------------------------------------

def export_openai_agents(app: Any, *, tools: dict | None = None) -> Export:
    """Exports an OpenAI Agents SDK ``Agent`` and every agent its hand-offs reach.

    Per agent ``A``: a model node ``A``, an unguarded tools node ``A:tools`` for its function tools,
    and, for tools that need approval, ``A:approval`` (a human node) before ``A:approved_tools``.
    Each hand-off is a hand-off edge from the model (the SDK's runner makes it). A hand-off given as
    a ``Handoff`` object whose agent cannot be read, and any non-function tool, become custom nodes.
    """
    check_overlays("export_openai_agents", tools=tools)
    require_app("export_openai_agents", app, _is_agent(app), "an OpenAI Agents SDK Agent")
    agent = app
    tools = dict(tools or {})
    catalogue: dict[str, dict] = {}
    nodes: list[dict] = []
    edges: list[dict] = []
    notes: list[str] = []
    seen: dict[int, str] = {}
    guards: list[Any] = []
    guarded_tools: list[str] = []
    queue = [agent]
    while queue:
        a = queue.pop(0)
        if id(a) in seen:
            continue
        name = a.name
        seen[id(a)] = name
        nodes.append({"id": name, "kind": "model", "agent": name})
        edges.append({"from": name, "to": "end", "kind": "reply"})
        plain: list[str] = []
        gated: list[str] = []
        behind: list[str] = []
        for t in a.tools:
            schema = getattr(t, "params_json_schema", None)
            if schema is None:
                cid = f"{name}:{t.name}"
                nodes.append({"id": cid, "kind": "custom", "agent": name})
                edges.append({"from": name, "to": cid, "kind": "route"})
                edges.append({"from": cid, "to": name, "kind": "route"})
                notes.append(f"tool `{t.name}` of `{name}` is not a function tool: a custom node (QG006)")
                continue
            catalogue[t.name] = catalogue_entry(t.name, clean_schema(schema), {}, tools.get(t.name), False)
            guard = _guard_of(t)
            if guard is not None:
                # The guard's check decides it (its confirm is the SDK's approval).
                behind.append(t.name)
                guards.append(guard)
                continue
            approval = getattr(t, "needs_approval", False)
            if callable(approval):
                # Decided per call at run time: some calls may run unapproved, so no credit.
                notes.append(f"tool `{t.name}` of `{name}` needs approval only when a function says so: read as never approved")
            (gated if approval is True else plain).append(t.name)
        if behind:
            tn = f"{name}:guarded_tools"
            nodes.append({"id": tn, "kind": "tools", "agent": name, "guarded": True, "batch": True, "tools": behind})
            edges += [{"from": name, "to": tn, "kind": "call"}, {"from": tn, "to": name, "kind": "return"}]
            guarded_tools += behind
        if plain:
            tn = f"{name}:tools"
            nodes.append({"id": tn, "kind": "tools", "agent": name, "guarded": False, "batch": True, "tools": plain})
            edges += [{"from": name, "to": tn, "kind": "call"}, {"from": tn, "to": name, "kind": "return"}]
        if gated:
            h, tn = f"{name}:approval", f"{name}:approved_tools"
            nodes.append({"id": h, "kind": "human", "agent": name})
            nodes.append({"id": tn, "kind": "tools", "agent": name, "guarded": False, "batch": True, "tools": gated})
            edges += [
                {"from": name, "to": h, "kind": "call"},
                {"from": h, "to": tn, "kind": "route"},
                {"from": h, "to": name, "kind": "route"},
                {"from": tn, "to": name, "kind": "return"},
            ]
        for h in a.handoffs:
            target = h if _is_agent(h) else None
            if target is None:
                # `handoff(agent)` keeps a weak reference to its agent (the SDK's own field).
                ref = getattr(h, "_agent_ref", None)
                target = ref() if callable(ref) else None
            if target is not None:
                queue.append(target)
                edges.append({"from": name, "to": target.name, "kind": "handoff", "_pending": True})
            else:
                cid = f"{name}:handoff:{getattr(h, 'agent_name', 'unknown')}"
                nodes.append({"id": cid, "kind": "custom", "agent": name})
                edges.append({"from": name, "to": cid, "kind": "route"})
                edges.append({"from": cid, "to": None, "kind": "dynamic", "targets": None})
                notes.append(f"hand-off `{cid}` is a Handoff object whose agent is not readable: a dynamic edge (QG016)")
    unknown = [t for t in tools if t not in catalogue]
    if unknown:
        raise QlsInputError(f"`tools` names {unknown}, which no agent holds")
    for e in edges:
        e.pop("_pending", None)
    nodes.append({"id": "end", "kind": "end"})
    warn_notes(notes)
    guard = one_guard(guards)
    if guard is not None:
        guarded_entries(guard, guarded_tools, catalogue)
    graph = {"format": FORMAT, "entry": agent.name, "nodes": nodes, "edges": edges}
    return _export(graph, catalogue, guard)


def _is_agent(x: Any) -> bool:
    try:
        from agents import Agent
    except ImportError:  # pragma: no cover - only reached without the SDK
        return False
    return isinstance(x, Agent)


export_graph = deprecated_alias(export_langgraph, "export_graph")
export_agents = deprecated_alias(export_openai_agents, "export_agents")


def write(graph: dict, catalogue: dict, graph_path: str, catalogue_path: str) -> None:
    """Writes the two files ``qls verify --graph G --catalogue C`` reads (the catalogue as JSON:
    name it ``….json``)."""
    import json

    for path, doc in ((graph_path, graph), (catalogue_path, catalogue)):
        with open(path, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")

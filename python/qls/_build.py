"""The graph builder the Google ADK, CrewAI and AutoGen exporters share (``qls.adk``,
``qls.crewai``, ``qls.autogen``): agents as model nodes with their tools nodes, the hops between
them, and the catalogue, written as ``qls-graph/1`` the way ``qls.export_agents`` writes the
OpenAI Agents SDK's agents.

Per agent ``A``: a model node ``A``; its tools in ``A:tools`` (unguarded), ``A:guarded_tools``
(behind a ``qls`` guard: the guard's catalogue entries), and ``A:approval`` (a human node) before
``A:approved_tools`` for tools the framework asks a person about before each call. A hop between
two agents is a hand-off edge (it carries the conversation, so it carries marks); a hop inside
one agent is a route. What an exporter cannot read is a custom node (QG006) or a dynamic edge
without targets (QG016), each with a ``QlsExportNote``, never dropped.

It also holds what every exporter shares (the LangGraph and Agents SDK exporters of
``qls.export`` too): ``Export``, the catalogue entry a tool gets, the edge kind between two nodes,
the one guard of an app, and the notes (``QlsExportNote``).

Each workflow shape compiles to a ``Part``: the nodes where it is entered and the nodes it may
finish at, so sequences, fan-outs and loops are wired exit-to-entry.
"""

from __future__ import annotations

import inspect
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from qls._shared import QlsInputError

FORMAT = "qls-graph/1"


class QlsExportNote(UserWarning):
    """What the exporter read as less than certain (the graph itself carries it too)."""


def warn_notes(notes: list[str]) -> None:
    for n in notes:
        warnings.warn(n, QlsExportNote, stacklevel=3)


class Export(tuple):  # type: ignore[type-arg]
    """``(graph, catalogue)``, with the rulebook and settings of the guard the tools run behind
    (``None`` without one): ``qls.verify(export)`` passes them as ``--rulebook``/``--settings``."""

    rulebook: str | None
    settings: str | None

    def __new__(cls, graph: dict, catalogue: dict, rulebook: str | None = None, settings: str | None = None) -> "Export":
        self = super().__new__(cls, (graph, catalogue))
        self.rulebook = rulebook
        self.settings = settings
        return self

    @property
    def graph(self) -> dict:
        return self[0]  # type: ignore[no-any-return]

    @property
    def catalogue(self) -> dict:
        return self[1]  # type: ignore[no-any-return]


def one_guard(guards: list[Any]) -> Any:
    """The guard every guarded node shares (one catalogue, rulebook and settings per proof)."""
    if not guards:
        return None
    first = guards[0]
    for g in guards[1:]:
        if (g.catalogue, g.rulebook, g.settings) != (first.catalogue, first.rulebook, first.settings):
            raise QlsInputError("the app's guards read different catalogues, rulebooks or settings: "
                             "one proof is about one check; give every guard the same files")
    return first


def guarded_entries(guard: Any, names: Iterable[str], catalogue: dict[str, dict]) -> None:
    """The guard's own catalogue entries for its tools (what the check enforces), in place."""
    own = guard.catalogue_entries()
    for name in names:
        if name in own:
            catalogue[name] = own[name]
        else:
            warn_notes([f"tool `{name}` runs behind a guard whose catalogue does not declare it: the check refuses it (unknown_tool)"])


def catalogue_entry(name: str, schema: dict | None, own: dict, overlay: dict | None, handoff: bool) -> dict:
    """One catalogue entry: what the tool says of itself, then the caller's overlay."""
    entry: dict[str, Any] = {}
    if handoff:
        entry["effect"] = "read"
    for k, v in own.items():
        entry[k] = v
    for k, v in (overlay or {}).items():
        entry[k] = v
    entry.setdefault("effect", "write")
    if schema is not None and "args" not in entry:
        entry["args"] = schema
    return entry


def own_metadata(md: dict | None) -> dict:
    md = md or {}
    own = dict(md.get("qls") or {})
    if "effect" in md and "effect" not in own:
        own["effect"] = md["effect"]
    return own


def clean_schema(schema: dict | None) -> dict | None:
    if schema is None:
        return None
    s = {k: v for k, v in schema.items() if k not in ("title", "description")}
    s.setdefault("type", "object")
    s.setdefault("properties", {})
    return s


def edge_kind(a: dict | None, b: dict | None) -> str:
    if b is None:
        return "reply"
    if a["agent"] != b["agent"]:
        return "handoff"
    if a["kind"] == "model" and b["kind"] in ("tools", "human"):
        return "call"
    if a["kind"] == "tools" and b["kind"] == "model":
        return "return"
    return "route"



#: Tool names of the hand-off/delegation machinery: they change nothing outside the run.
READ = {"effect": "read"}
#: What a tool that reads the web or another open source returns: untrusted content.
WEB = {"effect": "read", "returns": "untrusted"}


@dataclass
class Part:
    """A compiled piece of the app: where it is entered, and where it may finish."""

    entries: list[str]
    exits: list[str]


def at_of(obj: Any) -> dict | None:
    """Where ``obj`` (a function, a method, a class) was written, when Python can tell."""
    fn = getattr(obj, "__func__", obj)
    fn = getattr(fn, "__wrapped__", fn)
    try:
        path = inspect.getsourcefile(fn)
        _, line = inspect.getsourcelines(fn)
    except (TypeError, OSError):
        return None
    if not path:
        return None
    return {"file": path, "line": int(line)}


@dataclass
class ToolSpec:
    """One tool an agent holds: its catalogue entry, and how the framework runs it."""

    name: str
    entry: dict
    confirm: bool = False  # the framework asks a person before every call
    guard: Any = None  # the ``qls.Guard`` it runs behind, if any
    at: dict | None = None


@dataclass
class Builder:
    """Collects nodes, edges, agents and the catalogue of one export."""

    tools: dict = field(default_factory=dict)  # the caller's `tools` overlay
    agents_overlay: dict = field(default_factory=dict)  # the caller's `agents` overlay
    nodes: dict = field(default_factory=dict)
    edges: list = field(default_factory=list)
    agents: dict = field(default_factory=dict)
    catalogue: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    guards: list = field(default_factory=list)
    guarded_tools: list = field(default_factory=list)

    # -- vocabulary ---------------------------------------------------------------------------

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def unique(self, base: str) -> str:
        """A node id not used yet (``base``, else ``base#2``, …)."""
        if base not in self.nodes:
            return base
        i = 2
        while f"{base}#{i}" in self.nodes:
            i += 1
        return f"{base}#{i}"

    def agent(self, name: str, *, budget: int | None = None, at: dict | None = None) -> None:
        """Declares an agent (privilege and budget from the caller's `agents` overlay first)."""
        over = dict(self.agents_overlay.get(name) or {})
        a: dict[str, Any] = {"privilege": over.get("privilege", "low"), "tools": []}
        b = over.get("budget", budget)
        if b is not None:
            a["budget"] = int(b)
        if at is not None:
            a["at"] = at
        self.agents.setdefault(name, a)

    def node(self, nid: str, kind: str, agent: str, *, at: dict | None = None, **extra: Any) -> str:
        n: dict[str, Any] = {"id": nid, "kind": kind, "agent": agent, **extra}
        if at is not None:
            n["at"] = at
        self.nodes[nid] = n
        return nid

    def edge(self, a: str, b: str | None, kind: str | None = None, **extra: Any) -> None:
        """An edge; its kind, when not given, from the nodes it joins (hand-off between agents)."""
        if kind is None:
            kind = self.kind(a, b)
        e = {"from": a, "to": b or "end", "kind": kind, **extra}
        if not any(x["from"] == e["from"] and x["to"] == e["to"] and x["kind"] == kind for x in self.edges):
            self.edges.append(e)

    def kind(self, a: str, b: str | None) -> str:
        return edge_kind(self.nodes[a], None if b is None or b == "end" else self.nodes[b])

    def wire(self, exits: Iterable[str], entries: Iterable[str], **extra: Any) -> None:
        """Every exit of one part on to every entry of the next."""
        for a in exits:
            for b in entries:
                if a != b or extra:
                    self.edge(a, b, **extra)

    def custom(self, nid: str, agent: str, why: str, *, at: dict | None = None, dynamic: bool = False) -> str:
        """An opaque node (QG006); with ``dynamic``, its way on is unknown (QG016)."""
        nid = self.unique(nid)
        self.agent(agent)
        self.node(nid, "custom", agent, at=at)
        self.note(f"{why}: a custom node `{nid}` (QG006)" + (", with a dynamic edge (QG016)" if dynamic else ""))
        if dynamic:
            self.edges.append({"from": nid, "to": None, "kind": "dynamic", "targets": None})
        return nid

    def beside(self, owner: str, nid: str, why: str) -> None:
        """Code beside an agent that its model may call (tools nobody can list): a custom node
        the model goes to and comes back from (QG006)."""
        c = self.custom(nid, self.nodes[owner]["agent"], why)
        self.edge(owner, c, "route")
        self.edge(c, owner, "route")

    # -- tools --------------------------------------------------------------------------------

    def entry(self, name: str, schema: dict | None, own: dict | None = None) -> dict:
        """A catalogue entry: the tool's own metadata, then the caller's overlay; else a write."""
        return catalogue_entry(name, schema, dict(own or {}), self.tools.get(name), False)

    def model(self, name: str, specs: list[ToolSpec], *, at: dict | None = None, budget: int | None = None) -> str:
        """Agent ``name``'s model node and its tools nodes (called and returning to the model)."""
        self.agent(name, budget=budget, at=at)
        self.node(name, "model", name, at=at)
        self.attach(name, name, specs)
        return name

    def attach(self, owner: str, agent: str, specs: list[ToolSpec]) -> None:
        """``owner``'s tools nodes (a model node's, or a custom node's) for ``specs``."""
        plain = [s for s in specs if s.guard is None and not s.confirm]
        gated = [s for s in specs if s.guard is None and s.confirm]
        behind = [s for s in specs if s.guard is not None]
        for s in specs:
            prev = self.catalogue.get(s.name)
            if prev is not None and prev != s.entry:
                self.note(f"tool `{s.name}` is defined twice with different schemas or effects: the first is kept")
            else:
                self.catalogue[s.name] = s.entry
            if s.name not in self.agents[agent]["tools"]:
                self.agents[agent]["tools"].append(s.name)
        # Every tools node is a batch (SPEC §3 Batches): ADK and AutoGen run all the function
        # calls of one model response together, and CrewAI's native tool calling may too; a
        # batch allows one call as well, so marking it only adds runs (never hides one).
        if behind:
            tn = self.node(self.unique(f"{owner}:guarded_tools"), "tools", agent, guarded=True, batch=True,
                           tools=[s.name for s in behind])
            self.edge(owner, tn)
            self.edge(tn, owner)
            self.guards += [s.guard for s in behind]
            self.guarded_tools += [s.name for s in behind]
        if plain:
            tn = self.node(self.unique(f"{owner}:tools"), "tools", agent, guarded=False, batch=True,
                           tools=[s.name for s in plain])
            self.edge(owner, tn)
            self.edge(tn, owner)
        if gated:
            h = self.node(self.unique(f"{owner}:approval"), "human", agent)
            tn = self.node(self.unique(f"{owner}:approved_tools"), "tools", agent, guarded=False, batch=True,
                           tools=[s.name for s in gated])
            self.edge(owner, h, "call")
            self.edge(h, tn, "route")
            self.edge(h, owner, "route")
            self.edge(tn, owner)

    # -- the result ---------------------------------------------------------------------------

    def finish(self, part: Part) -> Export:
        """The export: ``part``'s exits reply (end the turn); one entry, or a custom fan-out."""
        unknown = [t for t in self.tools if t not in self.catalogue]
        if unknown:
            raise QlsInputError(f"`tools` names {unknown}, which no agent of the app holds")
        unknown_a = [a for a in self.agents_overlay if a not in self.agents]
        if unknown_a:
            raise QlsInputError(f"`agents` names {unknown_a}, which the app does not have (agents: {sorted(self.agents)})")
        if not part.entries:
            raise QlsInputError("the app has no agent to start at")
        for x in part.exits:
            self.edge(x, None, "reply")
        entry = part.entries[0]
        if len(part.entries) > 1:
            # The run starts at any of several places: a router with a route to each (a router
            # with no tools node to go to takes no tool step; a route hands nothing over).
            first = self.nodes[part.entries[0]]["agent"]
            entry = self.node(self.unique("__start__"), "router", first)
            for e in part.entries:
                self.edge(entry, e, "route")
        guard = one_guard(self.guards)
        if guard is not None:
            guarded_entries(guard, list(dict.fromkeys(self.guarded_tools)), self.catalogue)
        warn_notes(self.notes)
        graph = {"format": FORMAT, "entry": entry, "agents": self.agents,
                 "nodes": [*self.nodes.values(), {"id": "end", "kind": "end"}], "edges": self.edges}
        if guard is None:
            return Export(graph, {"tools": self.catalogue})
        return Export(graph, {"tools": self.catalogue}, guard.rulebook, guard.settings)


def mcp_specs(b: Builder, listing: Any, *, prefix: str | None = None, keep: Any = None, guard: Any = None,
              where: str = "") -> list[ToolSpec]:
    """The tools an MCP listing names (a ``tools/list`` answer, a list of ``Tool`` dicts, a
    ``qls-mcp-lock/1`` lock, or a path to one): a read only where ``readOnlyHint`` says so."""
    out = []
    if callable(keep):
        b.note(f"toolset of `{where}` filters its tools by a function: every listed tool is kept")
    for tool in mcp_listing(listing):
        name = tool["name"]
        if isinstance(keep, list) and name not in keep:
            continue
        full = f"{prefix}_{name}" if prefix else name
        own = {"effect": "read" if (tool.get("annotations") or {}).get("readOnlyHint") else "write"}
        schema = tool.get("inputSchema", tool.get("input_schema"))
        out.append(ToolSpec(full, b.entry(full, clean_schema(schema), own), guard=guard))
    return out


def mcp_listing(listing: Any) -> list[dict]:
    """The MCP tools a listing names."""
    if isinstance(listing, (str, Path)):
        listing = json.loads(Path(listing).read_text())
    if isinstance(listing, dict) and listing.get("format") == "qls-mcp-lock/1":
        return [t for s in listing.get("servers", {}).values() for t in s.get("tools") or []]
    if isinstance(listing, dict) and "result" in listing:
        listing = listing["result"]
    if isinstance(listing, dict):
        listing = listing.get("tools", [])
    return [t if isinstance(t, dict) else t.model_dump(by_alias=True) for t in listing]


def hashable(x: Any) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True

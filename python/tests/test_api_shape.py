"""The Python API's one shape, walked across the five frameworks: each exporter is
``qls.<m>.export_<m>(app, *, tools=None, …)`` (and ``qls.export_<m>``), each guard takes the
``qls.Guard`` first (then its ``tools``, where it needs them) and the rest by keyword, keeps it as
``.guard`` with ``.origins`` and ``.outcomes``, takes the one ``qls.Origins``, and every entry
point raises ``qls.QlsInputError`` for a bad input. The old names still work, with a
``DeprecationWarning``, for one release."""

from __future__ import annotations

import ast
import importlib
import inspect
import warnings
from pathlib import Path
from typing import Optional, get_type_hints

import pytest

import qls
from conftest import DATA, tool_of

CATALOGUE = DATA / "desk.catalogue.yaml"
KEY = b"k" * 32

#: Each framework module and its exporter's name.
EXPORTERS = ["langgraph", "openai_agents", "adk", "crewai", "autogen"]
#: Each guard: its module and class (LangGraph has two: the tool node, and create_agent's middleware).
GUARDS = [("langgraph", "GuardedToolNode"), ("langchain", "GuardMiddleware"), ("openai_agents", "AgentsGuard"),
          ("adk", "AdkGuard"), ("crewai", "CrewGuard"), ("autogen", "AutogenGuard")]
#: The guards that need the tools up front (the others find them in the app or the framework's hooks).
TAKES_TOOLS = {"GuardedToolNode", "GuardMiddleware"}


def exporter(m: str):
    return getattr(importlib.import_module(f"qls.{m}"), f"export_{m}")


def guard_class(m: str, name: str):
    return getattr(importlib.import_module(f"qls.{m}"), name)


def tools():
    return [tool_of("get_order", "Reads an order.", order_id=str)]


def build(cls, guard, **kw):
    """A guard of class ``cls`` in front of ``guard`` (with the tools, when it takes them)."""
    return cls(guard, tools(), **kw) if cls.__name__ in TAKES_TOOLS else cls(guard, **kw)


def origins(tool, args):
    return {k: "typed" for k in args} if tool == "get_order" else {}


# -- the exporters ------------------------------------------------------------------------------

@pytest.mark.parametrize("m", EXPORTERS)
def test_each_exporter_is_export_m_of_its_module_and_of_qls(m):
    fn = exporter(m)
    assert fn.__name__ == f"export_{m}"
    assert getattr(qls, f"export_{m}") is fn
    assert f"export_{m}" in qls.__all__ and f"export_{m}" in importlib.import_module(f"qls.{m}").__all__


@pytest.mark.parametrize("m", EXPORTERS)
def test_each_exporter_takes_the_app_first_and_the_rest_by_keyword(m):
    params = list(inspect.signature(exporter(m)).parameters.values())
    assert params[0].name == "app" and params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[1:]), params
    by_name = {p.name: p for p in params}
    assert by_name["tools"].default is None
    if "agents" in by_name:
        assert by_name["agents"].default is None
    # The keywords they share come in the same order.
    shared = [p.name for p in params if p.name in ("tools", "agents", "mcp_tools")]
    assert shared == [n for n in ("tools", "agents", "mcp_tools") if n in by_name]


@pytest.mark.parametrize("m", EXPORTERS)
@pytest.mark.parametrize("bad", [{"tools": {"get_order": "read"}}, {"tools": ["get_order"]}])
def test_each_exporter_refuses_a_bad_overlay_with_qls_input_error(m, bad):
    extra = {"model_nodes": []} if m == "langgraph" else {}
    with pytest.raises(qls.QlsInputError, match=f"export_{m}: `tools"):
        exporter(m)(object(), **bad, **extra)


@pytest.mark.parametrize("m", EXPORTERS)
def test_each_exporter_refuses_what_is_not_its_frameworks_app_with_qls_input_error(m):
    extra = {"model_nodes": []} if m == "langgraph" else {}
    with pytest.raises(qls.QlsInputError, match=f"export_{m} takes"):
        exporter(m)(object(), **extra)


# -- the guards ---------------------------------------------------------------------------------

@pytest.mark.parametrize("m,name", GUARDS)
def test_each_guard_takes_the_guard_first_then_its_tools_then_keywords(m, name):
    cls = guard_class(m, name)
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    assert params[0].name == "guard" and params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    positional = [p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    assert positional == (["guard", "tools"] if name in TAKES_TOOLS else ["guard"])
    keywords = [p for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]
    assert len(keywords) == len(params) - len(positional), params
    by_name = {p.name: p for p in keywords}
    assert by_name["origins"].default is None
    hints = get_type_hints(cls.__init__)
    assert hints["guard"] is qls.Guard
    assert hints["origins"] == Optional[qls.Origins]  # the one Origins type
    if "ask" in by_name:
        assert by_name["ask"].default is None
        assert [p.name for p in keywords][-2:] == ["ask", "origins"]


@pytest.mark.parametrize("m,name", GUARDS)
def test_each_guard_keeps_the_same_attributes(m, name):
    g = qls.Guard(CATALOGUE, key=KEY)
    w = build(guard_class(m, name), g, origins=origins)
    assert w.guard is g
    assert w.origins is origins
    assert w.outcomes == []
    assert w.origins_of("get_order", {"order_id": "1"}) == {"order_id": "typed"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new names never warn
        assert (w.guard, w.origins, w.outcomes) == (g, origins, [])


@pytest.mark.parametrize("m,name", GUARDS)
def test_each_guard_refuses_what_is_not_a_guard_with_qls_input_error(m, name):
    cls = guard_class(m, name)
    with pytest.raises(qls.QlsInputError, match=f"{name} takes a qls.Guard first"):
        build(cls, str(CATALOGUE))
    with pytest.raises(qls.QlsInputError, match="`origins` is \"auto\" or a function"):
        build(cls, qls.Guard(CATALOGUE, key=KEY), origins={"order_id": "typed"})


def test_there_is_one_origins_type_and_one_input_error():
    """Each public name (a type, a class, a constant) is defined once in the installed package;
    the other modules import it."""
    defined: dict[str, list[str]] = {}
    for path in sorted(Path(qls.__file__).parent.glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            names = ([t.id for t in node.targets if isinstance(t, ast.Name)] if isinstance(node, ast.Assign)
                     else [node.name] if isinstance(node, ast.ClassDef) else [])
            for n in names:
                defined.setdefault(n, []).append(path.name)
    twice = {n: where for n, where in defined.items() if len(where) > 1 and not n.startswith("_")}
    assert not twice
    assert defined["Origins"] == ["_shared.py"] and defined["QlsInputError"] == ["_shared.py"]


def test_no_module_imports_another_modules_private_names():
    for path in sorted(Path(qls.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("qls"):
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.endswith("__")
                           and not (node.module == "qls" and a.name == "_native")]
                assert not private, f"{path.name}: from {node.module} import {private}"


# -- every entry point's bad input --------------------------------------------------------------

def test_every_entry_point_raises_qls_input_error(tmp_path):
    bad = tmp_path / "bad.catalogue.yaml"
    bad.write_text("tools:\n  get_order: {effect: sometimes}\n")
    with pytest.raises(qls.QlsInputError, match="bad.catalogue.yaml"):
        qls.Guard(bad, key=KEY)
    with pytest.raises(qls.QlsInputError):
        qls.Guard(tmp_path / "missing.yaml", key=KEY)
    g = qls.Guard(CATALOGUE, key=KEY)
    with pytest.raises(qls.QlsInputError, match="not a history"):
        g.history = {"entries": "none"}
    with pytest.raises(qls.QlsInputError):
        qls.verify(tmp_path / "missing.yaml")
    with pytest.raises(qls.QlsInputError, match="an agent.yaml path, an Export"):
        qls.verify(42)  # type: ignore[arg-type]
    with pytest.raises(qls.QlsInputError, match="option `session_steps`"):
        qls.verify(DATA / "desk.agent.yaml", session_steps=object())
    with pytest.raises(qls.QlsInputError):
        qls.check(tmp_path / "missing.yaml", {"session": "s", "entries": []}, {"tool": "get_order", "args": {}})
    with pytest.raises(qls.QlsInputError, match="has no witness"):
        qls.replay_through(g, {"rule": "QG001", "subject": "x"}, DATA / "desk.agent.yaml")


# -- the old names: one release, with a warning -------------------------------------------------

def langgraph_app(guard=None):
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    from conftest import fake_model

    model = fake_model()
    b = StateGraph(MessagesState)
    b.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    node = ToolNode(tools()) if guard is None else qls.langgraph.GuardedToolNode(guard, tools())
    b.add_node("tools", node)
    b.add_edge(START, "agent")
    b.add_conditional_edges("agent", lambda s: "tools" if s["messages"][-1].tool_calls else END, ["tools", END])
    b.add_edge("tools", "agent")
    return b.compile()


def test_export_graph_warns_and_gives_what_export_langgraph_gives():
    app = langgraph_app(qls.Guard(CATALOGUE, key=KEY))
    with pytest.warns(DeprecationWarning, match="`export_graph` is now `export_langgraph`"):
        old = qls.export_graph(app, model_nodes=["agent"])
    new = qls.export_langgraph(app, model_nodes=["agent"])
    assert old == new and (old.rulebook, old.settings) == (new.rulebook, new.settings)
    assert any(n.get("guarded") for n in new.graph["nodes"])  # the guard, found by `.guard`


def test_export_agents_warns_and_gives_what_export_openai_agents_gives():
    from agents import Agent, function_tool

    @function_tool
    def get_order(order_id: str) -> str:
        """Reads an order."""
        return ""

    agent = qls.openai_agents.AgentsGuard(qls.Guard(CATALOGUE, key=KEY)).agent(Agent(name="desk", tools=[get_order]))
    with pytest.warns(DeprecationWarning, match="`export_agents` is now `export_openai_agents`"):
        old = qls.export_agents(agent)
    new = qls.export_openai_agents(agent)
    assert old == new and any(n.get("guarded") for n in new.graph["nodes"])


def test_the_old_argument_order_of_guarded_tool_node_warns_and_works():
    g = qls.Guard(CATALOGUE, key=KEY)
    ts = tools()
    with pytest.warns(DeprecationWarning, match=r"GuardedToolNode\(guard, tools\)"):
        node = qls.langgraph.GuardedToolNode(ts, g)  # type: ignore[arg-type]
    assert node.guard is g and list(node.tools_by_name) == ["get_order"]


@pytest.mark.parametrize("name", ["GuardedToolNode", "GuardMiddleware"])
def test_qls_guard_warns_and_is_the_guard(name):
    g = qls.Guard(CATALOGUE, key=KEY)
    w = build(guard_class("langgraph" if name == "GuardedToolNode" else "langchain", name), g)
    with pytest.warns(DeprecationWarning, match=r"\.qls_guard` is now `\.guard`"):
        assert w.qls_guard is g


@pytest.mark.parametrize("m,name", GUARDS)
def test_an_origins_function_of_one_tool_call_warns_and_still_answers(m, name):
    def old(tc):
        return {"order_id": "typed"} if tc["name"] == "get_order" else {}

    with pytest.warns(DeprecationWarning, match="origins function of one tool call"):
        w = build(guard_class(m, name), qls.Guard(CATALOGUE, key=KEY), origins=old)
    assert w.origins_of("get_order", {"order_id": "1"}) == {"order_id": "typed"}
    assert w.origins_of("other", {"x": 1}) == {}

"""Real LangGraph apps (langgraph, langgraph-swarm, langgraph-supervisor; a fake chat model, no
network) exported with `export_langgraph` and verified with the `qls` binary."""

from __future__ import annotations

import json
import operator
import warnings
from typing import Annotated, TypedDict

import pytest

from conftest import fake_model, run, tool_of, verify

warnings.filterwarnings("ignore", category=DeprecationWarning)
lg = pytest.importorskip("langgraph")
from langgraph.checkpoint.memory import MemorySaver  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402
from langgraph.prebuilt import ToolNode, create_react_agent  # noqa: E402
from langgraph.types import Send  # noqa: E402

from qls import QlsExportNote, export_langgraph  # noqa: E402


search_web = tool_of("search_web", "Search the web.", query=str)
search_flights = tool_of("search_flights", "Search flights.", departure_airport=str)
update_ticket_to_new_flight = tool_of("update_ticket_to_new_flight", "Move a ticket to another flight.", ticket_no=str, new_flight_id=int)
cancel_ticket = tool_of("cancel_ticket", "Cancel a ticket.", ticket_no=str)
book_flight = tool_of("book_flight", "Book a flight.", frm=str, to=str)
search_hotels = tool_of("search_hotels", "Search hotel reviews on the web.", city=str)
book_hotel = tool_of("book_hotel", "Book a hotel.", hotel=str)
get_weather = tool_of("get_weather", "Today's weather.", city=str)


get_weather.metadata = {"effect": "read"}

ToFlightBookingAssistant = tool_of("ToFlightBookingAssistant", "Hand the conversation to the flight assistant.", request=str)


CS_TOOLS = {
    "search_web": {"effect": "read", "returns": "untrusted"},
    "ToFlightBookingAssistant": {"effect": "read"},
    "search_flights": {"effect": "read"},
    "cancel_ticket": {"irreversible": True},
}
CS_MODELS = ["primary_assistant:agent", "update_flight:agent"]


def assistant_graph(tool_nodes: dict, interrupt: list):
    """One assistant as a subgraph: a model and its ToolNodes, each returning to the model."""
    model = fake_model()

    def agent(state: MessagesState):
        return {"messages": [model.invoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    for name, tools in tool_nodes.items():
        g.add_node(name, ToolNode(tools))
        g.add_edge(name, "agent")
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", lambda s: END, [*tool_nodes, END])
    return g.compile(interrupt_before=interrupt)


def customer_support(interrupt: bool):
    """The customer-support tutorial's shape (part 4): the primary assistant searches the web and
    delegates to the flight assistant, whose sensitive tools sit behind `interrupt_before`."""
    primary = assistant_graph({"tools": [search_web, ToFlightBookingAssistant]}, [])
    flight = assistant_graph({"safe_tools": [search_flights],
                              "sensitive_tools": [update_ticket_to_new_flight, cancel_ticket]},
                             ["sensitive_tools"] if interrupt else [])
    g = StateGraph(MessagesState)
    g.add_node("primary_assistant", primary)
    g.add_node("update_flight", flight)
    g.add_edge(START, "primary_assistant")
    g.add_conditional_edges("primary_assistant", lambda s: END, ["update_flight", END])
    g.add_edge("update_flight", END)
    return g.compile(checkpointer=MemorySaver())


def test_customer_support_with_approval_gate(tmp_path):
    graph, cat = export_langgraph(customer_support(True), model_nodes=CS_MODELS, tools=CS_TOOLS)
    kinds = {n["id"]: n["kind"] for n in graph["nodes"]}
    assert kinds["interrupt_before:update_flight:sensitive_tools"] == "human"
    # An effect nobody states is a write; a stated one is kept.
    assert cat["tools"]["update_ticket_to_new_flight"]["effect"] == "write"
    assert cat["tools"]["search_flights"]["effect"] == "read"
    assert cat["tools"]["update_ticket_to_new_flight"]["args"]["required"] == ["ticket_no", "new_flight_id"]
    rc, findings, ob = verify(tmp_path, graph, cat)
    assert ("QG001", "update_ticket_to_new_flight") in findings  # a ToolNode runs writes unchecked
    assert ("QG001", "cancel_ticket") in findings
    assert ob["QG012:update_ticket_to_new_flight"] == "unreachable"  # every such write was approved
    assert ob["QG012:cancel_ticket"] == "unreachable"
    assert rc == 1


def test_customer_support_without_approval_gate_lets_untrusted_text_steer_writes(tmp_path):
    graph, cat = export_langgraph(customer_support(False), model_nodes=CS_MODELS, tools=CS_TOOLS)
    assert all(n["kind"] != "human" for n in graph["nodes"])
    rc, findings, ob = verify(tmp_path, graph, cat)
    assert ob["QG012:update_ticket_to_new_flight"] == "reachable"
    assert ("QG012", "cancel_ticket") in findings
    assert rc == 1


def swarm_app():
    from langgraph_swarm import create_handoff_tool, create_swarm

    flight = create_react_agent(fake_model(), [book_flight, create_handoff_tool(agent_name="hotel_assistant")],
                                name="flight_assistant", interrupt_before=["tools"])
    hotel = create_react_agent(fake_model(), [search_hotels, book_hotel, create_handoff_tool(agent_name="flight_assistant")],
                               name="hotel_assistant")
    return create_swarm([flight, hotel], default_active_agent="flight_assistant").compile()


SWARM_MODELS = ["flight_assistant:agent", "hotel_assistant:agent"]


def test_swarm_hands_off_by_tool(tmp_path):
    pytest.importorskip("langgraph_swarm")
    app = swarm_app()
    graph, cat = export_langgraph(app, model_nodes=SWARM_MODELS, tools={"search_hotels": {"effect": "read", "returns": "untrusted"}})
    handoffs = {(e["from"], e["to"]) for e in graph["edges"] if e["kind"] == "handoff"}
    assert ("hotel_assistant:tools", "flight_assistant:agent") in handoffs
    assert ("flight_assistant:tools", "hotel_assistant:agent") in handoffs
    assert cat["tools"]["transfer_to_hotel_assistant"]["effect"] == "read"  # a hand-off tool
    rc, findings, ob = verify(tmp_path, graph, cat)
    assert ob["QG012:book_hotel"] == "reachable"  # untrusted reviews steer the hotel booking
    assert ob["QG012:book_flight"] == "unreachable"  # the flight booking is approved
    assert ("QG006", "__start__") in findings  # the swarm's active-agent router is code
    assert rc == 1
    # The same app's own to_json(), read by qls with --model-node, proves the same.
    lgj = tmp_path / "lg.json"
    lgj.write_text(json.dumps(app.get_graph(xray=True).to_json()))
    args = ["verify", "--graph", str(lgj), "--catalogue", str(tmp_path / "tools.catalogue.json"),
            "--format", "json", "--step-limit", "10"]
    for m in SWARM_MODELS:
        args += ["--model-node", m]
    assert run(args) == (rc, findings, ob)


def test_supervisor_with_two_workers(tmp_path):
    sup = pytest.importorskip("langgraph_supervisor")
    flights = create_react_agent(fake_model(), [book_flight], name="flights")
    hotels = create_react_agent(fake_model(), [search_hotels, book_hotel], name="hotels")
    app = sup.create_supervisor([flights, hotels], model=fake_model()).compile()
    graph, cat = export_langgraph(app, model_nodes=["supervisor:agent", "flights:agent", "hotels:agent"],
                              tools={"search_hotels": {"effect": "read", "returns": "untrusted"}})
    handoffs = {(e["from"], e["to"]) for e in graph["edges"] if e["kind"] == "handoff"}
    assert ("supervisor:tools", "flights:agent") in handoffs  # transfer_to_flights
    assert ("hotels:agent", "supervisor:agent") in handoffs  # a worker's end returns
    assert {"transfer_to_flights", "transfer_to_hotels"} <= set(cat["tools"])
    rc, findings, ob = verify(tmp_path, graph, cat)
    assert ("QG001", "book_flight") in findings and ("QG001", "book_hotel") in findings
    assert ob["QG012:book_hotel"] == "reachable"
    assert rc == 1


def test_custom_node_and_send_fan_out_are_said_not_proved(tmp_path):
    class S(TypedDict):
        items: list
        results: Annotated[list, operator.add]

    g = StateGraph(S)
    g.add_node("plan", lambda s: {"items": ["a", "b"]})
    g.add_node("worker", lambda s: {"results": [1]})
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", lambda s: [Send("worker", {"items": [i]}) for i in s["items"]])
    g.add_edge("worker", END)
    with pytest.warns(QlsExportNote):
        graph, cat = export_langgraph(g.compile(), model_nodes=[])
    rc, findings, _ = verify(tmp_path, graph, cat)
    assert ("QG006", "plan") in findings and ("QG006", "worker") in findings
    assert ("QG016", "plan") in findings
    assert rc == 1  # not a clean proof


def test_tool_metadata_states_its_effect_and_unknown_names_are_refused():
    app = create_react_agent(fake_model(), [get_weather, book_hotel])
    graph, cat = export_langgraph(app, model_nodes=["agent"])
    assert cat["tools"]["get_weather"]["effect"] == "read"
    assert cat["tools"]["book_hotel"]["effect"] == "write"
    _, cat = export_langgraph(app, model_nodes=["agent"], tools={"book_hotel": {"undo": "cancel_hotel"}})
    assert cat["tools"]["book_hotel"] == {**cat["tools"]["book_hotel"], "effect": "write", "undo": "cancel_hotel"}
    with pytest.raises(ValueError, match="agnet"):
        export_langgraph(app, model_nodes=["agnet"])
    with pytest.raises(ValueError, match="nope"):
        export_langgraph(app, model_nodes=["agent"], tools={"nope": {}})

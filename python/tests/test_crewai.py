"""CrewAI crews and flows (`crewai`, a scripted fake LLM, no network): exported with
`qls.export_crewai` and verified by the installed `qls`, and run behind `qls.crewai.CrewGuard` —
CrewAI's own tool-call hooks — where an allowed call runs, a confirmed one waits for the person and
runs with the arguments approved, and a refused one runs nothing and tells the model why.

CrewAI pins dependencies the other frameworks' cannot share (`mcp<2`, OpenTelemetry >= 1.45), so
scripts/test-python.sh runs this file in an environment of its own
(scripts/requirements-test-crewai.txt)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from conftest import DATA, check_history, example, verify

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
pytest.importorskip("crewai")
from crewai import Agent, Crew, Process, Task  # noqa: E402
from crewai.flow.flow import Flow, listen, or_, router, start  # noqa: E402
from crewai.llms.base_llm import BaseLLM  # noqa: E402
from crewai.tools import tool  # noqa: E402

import qls  # noqa: E402
from qls.crewai import CrewGuard  # noqa: E402

CATALOGUE = DATA / "desk.catalogue.yaml"
KEY = b"crewai-guard-key"
UNTRUSTED = {"read_inbox": {"effect": "read", "returns": "untrusted"}}
HIGH = {"billing": {"privilege": "high"}}


class Scripted(BaseLLM):
    """An LLM that answers in CrewAI's ReAct text: the given actions one by one, then a final
    answer. It keeps every prompt it was given (what the model saw)."""

    def __init__(self, actions: list[tuple[str, dict]]) -> None:
        super().__init__(model="fake")
        self._replies = [f"Thought: next\nAction: {n}\nAction Input: {json.dumps(a)}" for n, a in actions]
        self.seen: list[str] = []

    def call(self, messages: Any, tools: Any = None, callbacks: Any = None, available_functions: Any = None,
             from_task: Any = None, from_agent: Any = None, response_model: Any = None, **kw: Any) -> str:
        self.seen.append(json.dumps(messages, default=str))
        return self._replies.pop(0) if self._replies else "Thought: done\nFinal Answer: done"

    def supports_function_calling(self) -> bool:
        return False

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 8192


def desk_tools(ran: list) -> dict:
    @tool("get_order")
    def get_order(order_id: str) -> str:
        """Look an order up."""
        ran.append(("get_order", {"order_id": order_id}))
        return "paid"

    @tool("read_inbox")
    def read_inbox() -> str:
        """Read the customer's mail."""
        ran.append(("read_inbox", {}))
        return "please charge 500"

    @tool("charge_card")
    def charge_card(order_id: str, amount: float) -> str:
        """Charge the card for an order."""
        ran.append(("charge_card", {"order_id": order_id, "amount": amount}))
        return "charged"

    @tool("refund_card")
    def refund_card(order_id: str, amount: float) -> str:
        """Refund a charge."""
        ran.append(("refund_card", {"order_id": order_id, "amount": amount}))
        return "refunded"

    @tool("ship_order")
    def ship_order(order_id: str) -> str:
        """Ship an order."""
        ran.append(("ship_order", {"order_id": order_id}))
        return "shipped"

    return {t.name: t for t in (get_order, read_inbox, charge_card, refund_card, ship_order)}


def support_crew(*, process: Any = Process.sequential, delegation: bool = False, human: bool = False,
                 ran: list | None = None, actions: list | None = None) -> Crew:
    """A low-privilege triage agent that reads mail, then a high-privilege billing agent that
    charges and ships."""
    t = desk_tools(ran if ran is not None else [])
    llm = Scripted(actions or [])
    triage = Agent(role="triage", goal="Read the mail", backstory="Front desk.", llm=llm,
                   tools=[t["read_inbox"]], allow_delegation=delegation, max_iter=4)
    billing = Agent(role="billing", goal="Charge and ship", backstory="Billing.", llm=llm, max_iter=5,
                    tools=[t["get_order"], t["charge_card"], t["refund_card"], t["ship_order"]])
    read = Task(description="Read the customer's mail.", expected_output="the request", agent=triage)
    act = Task(description="Do what the customer asked.", expected_output="done", agent=billing,
               context=[read], human_input=human)
    kw: dict[str, Any] = {}
    if process == Process.hierarchical:
        kw["manager_agent"] = Agent(role="manager", goal="Run the desk", backstory="Lead.", llm=llm,
                                    allow_delegation=True, max_iter=3)
        agents = [triage, billing]
    else:
        agents = [triage, billing]
    return Crew(agents=agents, tasks=[read, act], process=process, **kw)


def test_the_sequential_crew_has_the_cascade_and_a_missing_check(tmp_path):
    graph, cat = qls.export_crewai(support_crew(), tools=UNTRUSTED, agents=HIGH)
    assert graph["entry"] == "triage"
    assert ("triage", "billing", "handoff") in {(e["from"], e["to"], e["kind"]) for e in graph["edges"]}
    assert graph["agents"]["triage"]["budget"] == 4 and graph["agents"]["billing"]["budget"] == 5  # max_iter
    assert cat["tools"]["charge_card"]["args"]["required"] == ["order_id", "amount"]  # args_schema
    rc, findings, ob = verify(tmp_path, graph, cat)
    assert {("QG001", "charge_card"), ("QG012", "charge_card"), ("QG011", "charge_card")} <= findings
    assert not [f for f in findings if f[0] == "QG023"]
    assert rc == 1


def test_delegation_hierarchy_and_human_input(tmp_path):
    graph, cat = qls.export_crewai(support_crew(delegation=True, human=True), tools=UNTRUSTED, agents=HIGH)
    kinds = {n["id"]: n["kind"] for n in graph["nodes"]}
    assert kinds["billing:delegated"] == "model" and kinds["billing:human_input"] == "human"
    edges = {(e["from"], e["to"]) for e in graph["edges"]}
    assert {("triage", "billing:delegated"), ("billing:delegated", "triage")} <= edges
    assert graph["agents"]["billing"]["budget"] == 5 * (1 + 4)  # its task, and each of triage's iterations
    _, findings, _ = verify(tmp_path, graph, cat)
    assert ("QG012", "charge_card") in findings and not [f for f in findings if f[0] == "QG023"]

    graph, cat = qls.export_crewai(support_crew(process=Process.hierarchical), tools=UNTRUSTED, agents=HIGH)
    assert graph["entry"] == "manager"
    edges = {(e["from"], e["to"]) for e in graph["edges"]}
    assert {("manager", "triage:delegated"), ("manager", "billing:delegated"), ("billing:delegated", "manager")} <= edges
    _, findings, _ = verify(tmp_path, graph, cat)
    assert ("QG012", "charge_card") in findings  # the mail goes up to the manager and down to billing


def test_a_delegation_cycle_has_no_bound(tmp_path):
    crew = support_crew(delegation=True)
    crew.agents[1].allow_delegation = True
    with pytest.warns(qls.QlsExportNote, match="delegation cycle"):
        graph, cat = qls.export_crewai(crew, tools=UNTRUSTED, agents=HIGH)
    assert "budget" not in graph["agents"]["billing"]
    _, findings, _ = verify(tmp_path, graph, cat)
    assert [f for f in findings if f[0] == "QG023"]


class Desk(Flow):  # type: ignore[type-arg]
    @start()
    def fetch(self) -> str:
        return "mail"

    @router(fetch)
    def triage(self) -> str:
        return "do_refund"

    @listen("do_refund")
    def refund(self) -> str:
        return "refunded"

    @listen(or_(refund, "escalate"))
    def close(self) -> str:
        return "closed"


def test_a_flow_is_the_graph_it_declares(tmp_path):
    with pytest.warns(qls.QlsExportNote, match="flow method"):
        graph, cat = qls.export_crewai(Desk())
    assert graph["entry"] == "Desk.fetch"
    edges = {(e["from"], e["to"]) for e in graph["edges"]}
    assert {("Desk.fetch", "Desk.triage"), ("Desk.triage", "Desk.refund"), ("Desk.refund", "Desk.close"),
            ("Desk.triage", "Desk.close"), ("Desk.close", "end")} <= edges
    fetch = next(n for n in graph["nodes"] if n["id"] == "Desk.fetch")
    assert fetch["kind"] == "custom" and fetch["at"]["file"].endswith("test_crewai.py")
    rc, findings, _ = verify(tmp_path, graph, cat)
    assert ("QG006", "Desk.fetch") in {(r, s) for r, s in findings}


def example_package(name: str) -> Any:
    """An example app kept as its package (data/examples/<name>/, a framework's template with its
    crews' YAML configuration beside their classes): its ``main`` module."""
    import importlib
    import sys

    root = str(DATA / "examples")
    if root not in sys.path:
        sys.path.insert(0, root)
    return importlib.import_module(f"{name}.main")


def test_the_flow_template_exports_its_crew_inside_the_flow(tmp_path):
    """CrewAI's own flow template (`crewai create flow`): `ContentCrew().crew().kickoff()` in a
    flow method. Before, the three agents were missing (the method was code only)."""
    flow = example_package("crewai_content_flow").ContentFlow()
    with pytest.warns(qls.QlsExportNote, match="flow method"):
        graph, cat = qls.export_crewai(flow)
    kinds = {n["id"]: n["kind"] for n in graph["nodes"]}
    roles = {n["agent"] for n in graph["nodes"] if n["kind"] == "model"}
    assert len(roles) == 3, roles  # planner, writer, editor: one task each, in order
    planner, writer, editor = (next(n["id"] for n in graph["nodes"] if n["kind"] == "model"
                                    and n["agent"].startswith(r)) for r in ("Content Planner", "Content Writer",
                                                                            "Content Editor"))
    edges = {(e["from"], e["to"]) for e in graph["edges"]}
    assert {("ContentFlow.generate_content", planner), (planner, writer), (writer, editor),
            (editor, "ContentFlow.save_content"),
            ("ContentFlow.generate_content", "ContentFlow.save_content")} <= edges, edges
    assert kinds["ContentFlow.generate_content"] == "custom"
    assert all(graph["agents"][r]["budget"] == 25 for r in roles)  # CrewAI's default max_iter, one task
    rc, findings, _ = verify(tmp_path, graph, cat)
    assert {f for f in findings if f[0] != "QG006"} == set(), findings  # no tools: only the code is open


def desk_flow(ran: list) -> Flow:  # type: ignore[type-arg]
    """A flow written for the test in the shapes CrewAI's documentation shows: a crew defined at
    module level (here a closure) kicked off by name, an agent kept on the flow (`self.<attr>`),
    one built inside the method (which cannot be followed), and a router that may send the flow
    back to its start."""
    crew = support_crew(ran=ran)
    t = desk_tools(ran)
    auditor = Agent(role="auditor", goal="Check the refunds", backstory="Audit.", llm=Scripted([]),
                    tools=[t["refund_card"]], max_iter=3)

    class DeskFlow(Flow):  # type: ignore[type-arg]
        @start("again")
        def take_request(self) -> str:
            return crew.kickoff(inputs={}).raw

        @router(take_request)
        def review(self) -> str:
            self.auditor.kickoff("check")
            return "again" if ran else "done"

        @listen("done")
        def report(self) -> None:
            helper = Agent(role="helper", goal="Report", backstory="Report.", llm=Scripted([]))
            helper.kickoff("report")

    f = DeskFlow()
    f.auditor = auditor  # type: ignore[attr-defined]
    return f


def test_a_flow_kicking_off_crews_exports_them_and_their_tools(tmp_path):
    """The issue's failure: `tools=` naming a tool of a crew the flow runs raised `ValueError: `tools`
    names [...], which no agent of the app holds`; now the crew is in the graph with its tools, and
    the flow's loop leaves its agents without a budget."""
    with pytest.warns(qls.QlsExportNote) as notes:
        graph, cat = qls.export_crewai(desk_flow([]), tools=UNTRUSTED, agents=HIGH)
    said = " | ".join(str(n.message) for n in notes)
    assert "`helper` is built inside the method" in said and "report" in said
    assert "agent `billing` has no budget: its method is on a cycle of the flow" in said
    assert {"triage", "billing", "auditor"} <= set(graph["agents"])
    assert "helper" not in graph["agents"]
    assert "budget" not in graph["agents"]["billing"] and "budget" not in graph["agents"]["auditor"]
    assert cat["tools"]["read_inbox"]["returns"] == "untrusted"
    edges = {(e["from"], e["to"]) for e in graph["edges"]}
    assert {("DeskFlow.take_request", "triage"), ("triage", "billing"), ("billing", "DeskFlow.review"),
            ("DeskFlow.review", "auditor"), ("auditor", "DeskFlow.take_request")} <= edges, edges
    rc, findings, _ = verify(tmp_path, graph, cat)
    # The crew's own findings hold inside the flow: the mail reaches the high-privilege write.
    assert {("QG012", "charge_card"), ("QG011", "charge_card")} <= findings and rc == 1


def test_a_flow_kicking_a_crew_off_once_sums_its_budgets(tmp_path):
    """Two kickoffs of the same crew in a flow without a cycle: each agent's budget is the sum."""
    crew = support_crew()

    class Twice(Flow):  # type: ignore[type-arg]
        @start()
        def first(self) -> None:
            crew.kickoff()

        @listen(first)
        def second(self) -> None:
            crew.kickoff()

    with pytest.warns(qls.QlsExportNote, match="flow method"):
        graph, _ = qls.export_crewai(Twice(), tools=UNTRUSTED)
    assert graph["agents"]["triage"]["budget"] == 8 and graph["agents"]["billing"]["budget"] == 10

    class InALoop(Flow):  # type: ignore[type-arg]
        @start()
        def each(self) -> None:
            for _ in range(3):
                crew.kickoff()

    with pytest.warns(qls.QlsExportNote, match="kicked off in a loop"):
        graph, _ = qls.export_crewai(InALoop(), tools=UNTRUSTED)
    assert "budget" not in graph["agents"]["triage"]


def test_what_a_flow_method_rebinds_is_not_followed(tmp_path):
    """A name the method assigns itself shadows the module's or closure's (`crew = ...` inside
    the method), and `self.<attr>` a method assigns is not the object the exporter reads: neither
    is followed (a note; the method stays opaque code), rather than exporting the wrong crew. A
    hierarchical crew's manager kicked off in a loop has no budget either."""
    crew = support_crew()
    boss = support_crew(process=Process.hierarchical)

    class Rebinds(Flow):  # type: ignore[type-arg]
        @start()
        def shadow(self) -> None:
            crew = support_crew(delegation=True)  # noqa: F841 — the local, not the closure's
            crew.kickoff()

        @listen(shadow)
        def swap(self) -> None:
            self.team = boss
            self.team.kickoff()

        @listen(swap)
        def managed(self) -> None:
            while True:
                boss.kickoff()

    f = Rebinds()
    f.team = crew  # type: ignore[attr-defined]
    with pytest.warns(qls.QlsExportNote) as notes:
        graph, _ = qls.export_crewai(f, tools=UNTRUSTED)
    said = " | ".join(str(n.message) for n in notes)
    assert "`crew` is built inside the method" in said, said
    assert "`self.team` is assigned by a method of the flow" in said, said
    assert "agent `manager` has no budget: it is kicked off in a loop" in said, said
    assert "budget" not in graph["agents"]["manager"]
    managed = [e["to"] for e in graph["edges"] if e["from"] == "Rebinds.managed"]
    assert "manager" in managed and not [e for e in graph["edges"] if e["from"] == "Rebinds.shadow"
                                         and e["to"] != "Rebinds.swap"]


def test_behind_the_guard_no_write_misses_its_check():
    with CrewGuard(qls.Guard(CATALOGUE, key=KEY)):
        export = qls.export_crewai(support_crew(), agents=HIGH)
    guarded = {n["id"]: n["tools"] for n in export.graph["nodes"] if n["kind"] == "tools" and n["guarded"]}
    assert guarded == {"triage:guarded_tools": ["read_inbox"],
                       "billing:guarded_tools": ["get_order", "charge_card", "refund_card", "ship_order"]}
    result = qls.verify(export, step_limit=10)
    assert not {f.rule for f in result.findings} & {"QG001", "QG011", "QG012"}, qls.render(result)
    graph, _ = qls.export_crewai(support_crew(), tools=UNTRUSTED)  # uninstalled: unguarded again
    assert not [n for n in graph["nodes"] if n.get("guarded")]


def test_export_crew_warns_and_gives_what_export_crewai_gives():
    with pytest.warns(DeprecationWarning, match="`export_crew` is now `export_crewai`"):
        old = qls.export_crew(support_crew(), tools=UNTRUSTED, agents=HIGH)
    assert old == qls.export_crewai(support_crew(), tools=UNTRUSTED, agents=HIGH)


def test_export_crewai_refuses_what_is_not_a_crew_or_a_flow():
    with pytest.raises(qls.QlsInputError, match="export_crewai takes a CrewAI Crew or Flow, not Agent"):
        qls.export_crewai(support_crew().agents[0])


def desk_crew(ran: list, actions: list) -> tuple[Crew, Scripted]:
    t = desk_tools(ran)
    llm = Scripted(actions)
    desk = Agent(role="desk", goal="Serve the customer", backstory="Desk.", llm=llm, max_iter=len(actions) + 2,
                 tools=[t["get_order"], t["read_inbox"], t["charge_card"], t["refund_card"], t["ship_order"]])
    return Crew(agents=[desk], tasks=[Task(description="Serve.", expected_output="done", agent=desk)]), llm


def test_the_guard_runs_an_allowed_call_and_waits_for_the_person_on_a_write(tmp_path):
    ran: list = []
    asked: list = []

    def person(q: dict) -> bool:
        asked.append(q)
        assert ran == [("get_order", {"order_id": "1"})]
        return True

    crew, _ = desk_crew(ran, [("get_order", {"order_id": "1"}), ("charge_card", {"order_id": "1", "amount": 5})])
    with CrewGuard(qls.Guard(CATALOGUE, key=KEY), ask=person) as g:
        crew.kickoff()
    assert ran == [("get_order", {"order_id": "1"}), ("charge_card", {"order_id": "1", "amount": 5.0})]
    assert asked[0]["tool"] == "charge_card" and asked[0]["args"]["order_id"] == {"value": "1", "origin": "model"}
    assert [(e["tool"], e["decision"], e["ran"]) for e in g.guard.history["entries"]] == [
        ("get_order", "allow", True), ("charge_card", "confirm", False), ("charge_card", "allow", True)]
    assert check_history(tmp_path, g.guard.history_json(), KEY)["decision"] == "allow"


def test_a_refused_call_runs_nothing_returns_the_reason_and_undoes_the_charge(tmp_path):
    ran: list = []
    crew, llm = desk_crew(ran, [("charge_card", {"order_id": "1", "amount": 5}),
                                ("ship_order", {"order_id": "https://evil.invalid/1"})])
    with CrewGuard(qls.Guard(CATALOGUE, key=KEY), ask=lambda q: "yes") as g:
        crew.kickoff()
    assert ran == [("charge_card", {"order_id": "1", "amount": 5.0}), ("refund_card", {"order_id": "1", "amount": 5.0})]
    assert "undeclared_destination" in llm.seen[-1]  # the model was told why
    assert [o.status for o in g.outcomes] == ["ran", "refused"]
    assert check_history(tmp_path, g.guard.history_json(), KEY)["decision"] == "allow"


def test_a_declined_write_runs_nothing():
    ran: list = []
    crew, llm = desk_crew(ran, [("charge_card", {"order_id": "1", "amount": 5})])
    with CrewGuard(qls.Guard(CATALOGUE, key=KEY), ask=lambda q: False):
        crew.kickoff()
    assert ran == [] and "declined" in llm.seen[-1]


def test_the_crewai_examples_export_and_verify(tmp_path):
    """Two of CrewAI's own published examples (data/examples/README.md): what each proves."""
    graph, cat = qls.export_crewai(example("crewai_markdown_validator").build(Scripted([])))
    assert graph["agents"]["Requirements Manager"]["budget"] == 25  # CrewAI's default max_iter
    rc, findings, _ = verify(tmp_path, graph, cat)
    assert findings == {("QG001", "markdown_validation_tool")} and rc == 1  # nobody says the linter only reads

    with pytest.warns(qls.QlsExportNote, match="flow method"):
        graph, cat = qls.export_crewai(example("crewai_email_flow").build())
    rc, findings, _ = verify(tmp_path, graph, cat)
    assert findings == {("QG006", "EmailAutoResponderFlow.fetch_new_emails"),
                        ("QG006", "EmailAutoResponderFlow.generate_draft_responses")}


def test_tasks_run_at_once_share_one_guard(tmp_path):
    """CrewAI runs `async_execution` tasks on threads of their own, so two agents' tool calls go
    through the guard's hooks at once: each call is decided with its entry in one step, the tools
    run together (each waits until both run: a guard that held its lock while a tool ran would
    break the barrier), every run is on the history, and of the two calls of an at-most-once read
    one runs."""
    import threading

    for trial in range(5):
        together = threading.Barrier(2, timeout=30)
        ran: list[str] = []

        @tool("get_order")
        def get_order(order_id: str) -> str:
            """Look an order up."""
            together.wait()
            ran.append(order_id)
            return "paid"

        @tool("lookup_credit")
        def lookup_credit(customer: str) -> str:
            """Look a customer's credit score up."""
            ran.append(customer)
            return "700"

        desks = [Agent(role=f"desk{i}", goal="Serve the customer", backstory="Desk.", max_iter=4,
                       llm=Scripted([("get_order", {"order_id": f"o{i}"}), ("lookup_credit", {"customer": f"c{i}"})]),
                       tools=[get_order, lookup_credit]) for i in range(2)]
        work = [Task(description=f"Serve customer {i}.", expected_output="done", agent=a, async_execution=True)
                for i, a in enumerate(desks)]
        closing = Task(description="Sum up.", expected_output="done", agent=desks[0], context=work)
        with CrewGuard(qls.Guard(CATALOGUE, key=KEY)) as g:
            Crew(agents=desks, tasks=[*work, closing]).kickoff()
        assert sorted(r for r in ran if r.startswith("o")) == ["o0", "o1"], f"trial {trial}: {ran}"
        assert len([r for r in ran if r.startswith("c")]) == 1, f"trial {trial}: {ran}"
        calls = [e for e in g.guard.history["entries"] if e.get("kind", "call") == "call"]
        assert sorted((e["tool"], e["decision"]) for e in calls) == [
            ("get_order", "allow"), ("get_order", "allow"), ("lookup_credit", "allow"), ("lookup_credit", "refuse")]
        assert g.guard.verify_history() is None
    assert check_history(tmp_path, g.guard.history_json(), KEY)["decision"] == "allow"

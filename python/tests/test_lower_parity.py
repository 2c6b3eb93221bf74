"""`qls.lower` and qls's own LangGraph reader (`qls export --graph`) give the same graph for
the same LangGraph JSON: the package and the binary read LangGraph one way."""

from __future__ import annotations

import json
import subprocess
import warnings

import pytest

from conftest import ROOT, qls_bin
from qls import lower

SNAPSHOTS = ROOT / "fixtures" / "langgraph-examples"
CASES = [
    (ROOT / "corpus/langgraph-json-swarm", ["flight_assistant:agent", "hotel_assistant:agent"], {}),
    (ROOT / "corpus/langgraph-json-send-fanout", [], {}),
    (ROOT / "corpus/langgraph-json-react", ["agent"], {"tools": ["search_api"]}),
]


def shape(g: dict):
    nodes = {(n["id"], n["kind"], n.get("agent"), tuple(n.get("tools", [])), n.get("batch")) for n in g["nodes"]}
    edges = {(e["from"], e["to"], e["kind"]) for e in g["edges"]}
    return g["entry"], nodes, edges


@pytest.mark.parametrize("case,models,tools_nodes", CASES, ids=lambda c: getattr(c, "name", None))
def test_lower_matches_the_binary(case, models, tools_nodes):
    args = [qls_bin(), "export", "--graph", str(case / "graph.json"), "--catalogue", str(case / "tools.catalogue.yaml")]
    for m in models:
        args += ["--model-node", m]
    for n, ts in tools_nodes.items():
        args += ["--tools-node", f"{n}={','.join(ts)}"]
    p = subprocess.run(args, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mine = lower(json.loads((case / "graph.json").read_text()), model_nodes=models, tools_nodes=tools_nodes)
    assert shape(mine) == shape(json.loads(p.stdout))


def test_lower_matches_the_binary_on_the_langgraph_snapshots():
    for name in ["message_graph.to_json.json", "conditional_state_graph.to_json.json"]:
        p = subprocess.run([qls_bin(), "export", "--graph", str(SNAPSHOTS / name), "--catalogue",
                            str(SNAPSHOTS / "tools.catalogue.yaml"), "--model-node", "agent",
                            "--tools-node", "tools=search_api"], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mine = lower(json.loads((SNAPSHOTS / name).read_text()), model_nodes=["agent"],
                         tools_nodes={"tools": ["search_api"]})
        assert shape(mine) == shape(json.loads(p.stdout)), name

"""A two-agent travel desk on langgraph-swarm: the flight assistant books flights behind an
approval gate (`interrupt_before`), the hotel assistant reads hotel reviews from the web
(untrusted) and books hotels with no gate; each hands off to the other by a `transfer_to_…` tool.

`python3 examples/langgraph/app.py` writes, beside this file, `graph.json` and
`tools.catalogue.json` (by `qls.export_langgraph`) and `app.to_json.json` (LangGraph's own
`get_graph(xray=True).to_json()`, which `qls verify --graph` also reads with `--model-node`).
No model is called: a fake chat model stands in. It needs the `qls` wheel installed
(`bash scripts/wheel.sh`, then `pip install target/wheels/qls-*.whl`).
"""

import json
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph_swarm import create_handoff_tool, create_swarm  # noqa: E402

from qls import QlsExportNote, export_langgraph, write  # noqa: E402

warnings.filterwarnings("ignore", category=DeprecationWarning)
from langgraph.prebuilt import create_react_agent  # noqa: E402


class FakeModel(GenericFakeChatModel):
    def bind_tools(self, tools, **kw):
        return self


def model():
    return FakeModel(messages=iter([AIMessage(content="done")]))


@tool
def book_flight(frm: str, to: str) -> str:
    """Book a flight."""
    return "booked"


@tool
def search_hotels(city: str) -> str:
    """Search hotel reviews on the web."""
    return "reviews"


@tool
def book_hotel(hotel: str) -> str:
    """Book a hotel."""
    return "booked"


flight = create_react_agent(model(), [book_flight, create_handoff_tool(agent_name="hotel_assistant")],
                            name="flight_assistant", interrupt_before=["tools"])
hotel = create_react_agent(model(), [search_hotels, book_hotel, create_handoff_tool(agent_name="flight_assistant")],
                           name="hotel_assistant")
app = create_swarm([flight, hotel], default_active_agent="flight_assistant").compile()

if __name__ == "__main__":
    with warnings.catch_warnings(record=True) as notes:
        warnings.simplefilter("always", QlsExportNote)
        graph, catalogue = export_langgraph(
            app,
            model_nodes=["flight_assistant:agent", "hotel_assistant:agent"],
            tools={"search_hotels": {"effect": "read", "returns": "untrusted"}},
        )
    for n in notes:
        if issubclass(n.category, QlsExportNote):
            print(f"note: {n.message}")
    write(graph, catalogue, str(HERE / "graph.json"), str(HERE / "tools.catalogue.json"))
    (HERE / "app.to_json.json").write_text(json.dumps(app.get_graph(xray=True).to_json(), indent=2) + "\n")

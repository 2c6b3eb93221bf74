# Source: the AutoGen AgentChat user guide, "Swarm", Customer Support example
# (https://microsoft.github.io/autogen/stable/user-guide/agentchat-user-guide/swarm.html; the
# notebook python/docs/src/user-guide/agentchat-user-guide/swarm.ipynb of microsoft/autogen).
# Copyright Microsoft, code MIT (LICENSE-CODE), docs CC-BY-4.0. Changed: the model client is a
# parameter; system messages shortened; the runner code left out.
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import HandoffTermination, TextMentionTermination
from autogen_agentchat.teams import Swarm


def refund_flight(flight_id: str) -> str:
    """Refund a flight"""
    return f"Flight {flight_id} refunded"


def build(model_client):
    travel_agent = AssistantAgent("travel_agent", model_client=model_client, handoffs=["flights_refunder", "user"],
                                  system_message="You are a travel agent. Use TERMINATE when the travel planning is complete.")
    flights_refunder = AssistantAgent("flights_refunder", model_client=model_client,
                                      handoffs=["travel_agent", "user"], tools=[refund_flight],
                                      system_message="You are an agent specialized in refunding flights.")
    termination = HandoffTermination(target="user") | TextMentionTermination("TERMINATE")
    return Swarm([travel_agent, flights_refunder], termination_condition=termination)

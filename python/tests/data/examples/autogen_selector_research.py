# Source: microsoft/autogen, python/docs/src/user-guide/agentchat-user-guide/selector-group-chat.ipynb
# @ 21af76a04c8a7824b74cd3592c8e0d6680ab76a4 ("Example: Web Search/Analysis"). Copyright Microsoft,
# code MIT (LICENSE-CODE), docs CC-BY-4.0. Changed: the model client is a parameter; system
# messages shortened; the runner code left out.
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import SelectorGroupChat


def search_web_tool(query: str) -> str:
    return "No data found."


def percentage_change_tool(start: float, end: float) -> float:
    return ((end - start) / start) * 100


def build(model_client):
    planning_agent = AssistantAgent(
        "PlanningAgent",
        description="An agent for planning tasks, this agent should be the first to engage when given a new task.",
        model_client=model_client, system_message="You are a planning agent.")
    web_search_agent = AssistantAgent(
        "WebSearchAgent", description="An agent for searching information on the web.",
        tools=[search_web_tool], model_client=model_client, system_message="You are a web search agent.")
    data_analyst_agent = AssistantAgent(
        "DataAnalystAgent", description="An agent for performing calculations.", model_client=model_client,
        tools=[percentage_change_tool], system_message="You are a data analyst.")
    text_mention_termination = TextMentionTermination("TERMINATE")
    max_messages_termination = MaxMessageTermination(max_messages=25)
    termination = text_mention_termination | max_messages_termination
    return SelectorGroupChat([planning_agent, web_search_agent, data_analyst_agent], model_client=model_client,
                             termination_condition=termination, allow_repeated_speaker=True)

# Source: google/adk-docs, examples/python/snippets/agents/workflow-agents/parallel_agent_web_research.py
# @ 1addb53552075a1562812e7089879f530c25ed3e. Copyright 2025 Google LLC, Apache-2.0.
# Changed: the model is a parameter; instructions shortened; the runner code left out.
from google.adk.agents import LlmAgent, ParallelAgent, SequentialAgent
from google.adk.tools import google_search


def build(model):
    researcher_agent_1 = LlmAgent(name="RenewableEnergyResearcher", model=model,
                                  instruction="Research the latest advancements in 'renewable energy sources'.",
                                  description="Researches renewable energy sources.", tools=[google_search],
                                  output_key="renewable_energy_result")
    researcher_agent_2 = LlmAgent(name="EVResearcher", model=model,
                                  instruction="Research the latest developments in 'electric vehicle technology'.",
                                  description="Researches electric vehicle technology.", tools=[google_search],
                                  output_key="ev_technology_result")
    researcher_agent_3 = LlmAgent(name="CarbonCaptureResearcher", model=model,
                                  instruction="Research the current state of 'carbon capture methods'.",
                                  description="Researches carbon capture methods.", tools=[google_search],
                                  output_key="carbon_capture_result")
    parallel_research_agent = ParallelAgent(
        name="ParallelWebResearchAgent", sub_agents=[researcher_agent_1, researcher_agent_2, researcher_agent_3],
        description="Runs multiple research agents in parallel to gather information.")
    merger_agent = LlmAgent(name="SynthesisAgent", model=model,
                            instruction="Combine {renewable_energy_result}, {ev_technology_result} and {carbon_capture_result}.",
                            description="Combines research findings from parallel agents into a structured, cited report.")
    return SequentialAgent(name="ResearchAndSynthesisPipeline", sub_agents=[parallel_research_agent, merger_agent],
                           description="Coordinates parallel research and synthesizes the results.")

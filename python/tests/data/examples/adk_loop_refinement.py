# Source: google/adk-docs, examples/python/snippets/agents/workflow-agents/loop_agent_doc_improv_agent.py
# @ 305fcbae08914b7dc4ec5b97bcd8cf930bd55084. Copyright 2025 Google LLC, Apache-2.0.
# Changed: the model is a parameter; instructions shortened; the runner code left out.
from google.adk.agents import LlmAgent, LoopAgent, SequentialAgent
from google.adk.tools.tool_context import ToolContext


def exit_loop(tool_context: ToolContext):
    """Call this function ONLY when the critique indicates no further changes are needed, signaling the iterative process should end."""
    tool_context.actions.escalate = True
    tool_context.actions.skip_summarization = True
    return {}


def build(model):
    initial_writer_agent = LlmAgent(name="InitialWriterAgent", model=model, include_contents="none",
                                    instruction="Write the first draft of a short story. Topic: {initial_topic}",
                                    description="Writes the initial document draft based on the topic.",
                                    output_key="current_document")
    critic_agent_in_loop = LlmAgent(name="CriticAgent", model=model, include_contents="none",
                                    instruction="Review {current_document}; or respond 'No major issues found.'",
                                    description="Reviews the current draft.", output_key="criticism")
    refiner_agent_in_loop = LlmAgent(name="RefinerAgent", model=model, include_contents="none",
                                     instruction="Refine {current_document} from {criticism}, or call exit_loop.",
                                     description="Refines the document based on critique, or calls exit_loop.",
                                     tools=[exit_loop], output_key="current_document")
    refinement_loop = LoopAgent(name="RefinementLoop", sub_agents=[critic_agent_in_loop, refiner_agent_in_loop],
                                max_iterations=5)
    return SequentialAgent(name="IterativeWritingPipeline", sub_agents=[initial_writer_agent, refinement_loop],
                           description="Writes an initial document and then iteratively refines it.")

"""qls — the agent-graph prover, from Python.

One wheel: the ``qls`` command (the same code as the Rust binary), the proof and the tool check
as functions, the exporters, and guards that put SPEC §2's check in front of a framework's tools.

- ``qls.verify(path_or_graph, **options)`` → ``Result`` (findings, gate, ``exit_code``);
  ``qls.render(result)`` → the text report.
- ``qls.check(catalogue, history, call_or_calls, …)`` → what ``qls check`` prints (one call, or a
  model step's batch).
- ``qls.export_graph(app, model_nodes=[...])`` (LangGraph) and ``qls.export_agents(agent)``
  (OpenAI Agents SDK) → ``Export`` (graph, catalogue).
- ``qls.export_adk(root_agent)`` (Google ADK), ``qls.export_crew(crew_or_flow)`` (CrewAI) and
  ``qls.export_autogen(team_or_agent)`` (AutoGen AgentChat) → ``Export``.
- ``qls.Guard`` with ``qls.langgraph.GuardedToolNode``, ``qls.openai_agents.AgentsGuard``,
  ``qls.adk.AdkGuard``, ``qls.crewai.CrewGuard`` and ``qls.autogen.AutogenGuard``;
  ``qls.replay_through(guard, finding, export)`` replays a finding's witness through the guard.
"""

from __future__ import annotations

from qls._native import __version__
from qls.api import Finding, QlsInputError, Result, check, render, verify
from qls.export import FORMAT, Export, QlsExportNote, export_agents, export_graph, lower, write
from qls.adk import export_adk
from qls.autogen import export_autogen
from qls.crewai import export_crew
from qls.guard import NOT_RUN, Call, Guard, Held, Outcome, QlsGuardWarning, Ticket
from qls.replay import TRACE_FORMAT, GuardReplay, replay_through

__all__ = [
    "__version__",
    "verify", "render", "check", "Result", "Finding", "QlsInputError",
    "export_graph", "export_agents", "export_adk", "export_crew", "export_autogen", "lower", "write", "Export", "QlsExportNote", "FORMAT",
    "Guard", "Call", "Held", "Outcome", "Ticket", "NOT_RUN", "QlsGuardWarning",
    "replay_through", "GuardReplay", "TRACE_FORMAT",
]

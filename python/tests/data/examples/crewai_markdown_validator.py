# Source: crewAIInc/crewAI-examples, archived_examples/markdown_validator/main.py (and its
# MarkdownTools.py) @ fff719fb547f1c22c24da39a3c78c2c95adad8e2, MIT. Changed: the LLM is a
# parameter; the tool's body (pymarkdown) is a stub; the task is run by a Crew instead of the
# retired `Task.execute()`; goal and backstory shortened.
from crewai import Agent, Crew, Task
from crewai.tools import tool


@tool("markdown_validation_tool")
def markdown_validation_tool(file_path: str) -> str:
    """A tool to review files for markdown syntax errors."""
    return "no issues"


def build(llm, filename="README.md"):
    general_agent = Agent(role="Requirements Manager", goal="Provide a detailed list of the markdown linting results.",
                          backstory="You are an expert business analyst and software QA specialist.",
                          allow_delegation=False, verbose=False, tools=[markdown_validation_tool], llm=llm)
    syntax_review_task = Task(description=f"Use the markdown_validation_tool to review the file(s) at this path: {filename}",
                              expected_output="a list of changes", agent=general_agent)
    return Crew(agents=[general_agent], tasks=[syntax_review_task])

# Source: crewAIInc/crewAI-examples,
# flows/email_auto_responder_flow/src/email_auto_responder_flow/main.py
# @ 7045b059bf24cf9fe8eee0098d82064d6a6a17e9, MIT. Changed: the methods' bodies (mail polling,
# the email filter crew's kickoff, a 180 s sleep) are stubs — the exporter reads the flow's
# decorators only; the state model gains the `id` field crewai 1.x requires of it.
from typing import List

from crewai.flow.flow import Flow, listen, start
from pydantic import BaseModel


class AutoResponderState(BaseModel):
    id: str = "email-auto-responder"
    emails: List[dict] = []
    checked_emails_ids: set[str] = set()


class EmailAutoResponderFlow(Flow[AutoResponderState]):
    initial_state = AutoResponderState

    @start("wait_next_run")
    def fetch_new_emails(self):
        self.state.emails = []

    @listen(fetch_new_emails)
    def generate_draft_responses(self):
        self.state.emails = []


def build(llm=None):
    return EmailAutoResponderFlow()

"""A dealer agent's answer to a message that carries text and no AAP DataPart.

AAP v0.1 names a skill with a DataPart; a plain A2A v1.0 client (or a person typing into one) sends text. A new
message whose parts are text only is read as a free-text inventory search: the text becomes ``filters.query`` of
an ``inventory.search`` request (the one AAP skill with a free-text field), run through the gateway like any
other skill. The answer is a ``completed`` Task (not AAP's one ``Message``, so the client gets a task id it can
read back), whose artifact holds the AAP search response as a DataPart and a one-line summary as text, and whose
status message says, as text and as data, which skills and DataPart shapes the agent takes.

A text message to an existing task (a lead held for approval) is not a search: it is refused as before, so a
held task never ends on a stray reply.
"""

from __future__ import annotations

from typing import Any

from a2a.helpers import new_artifact, new_data_part, new_message, new_text_part
from a2a.types import Message, Part, Role, Task, TaskState, TaskStatus

from forecourt.domain.aap_spec import SKILLS, SKILLS_BY_ID, Skill

SEARCH: Skill = SKILLS_BY_ID["inventory.search"]
QUERY_MAX = 200
"""``filters.query``'s ``maxLength`` in the AAP v0.1 inventory-search request schema."""

GUIDE_TEXT = (
    "Text is read as a free-text inventory search. For any other skill, send one DataPart whose mediaType is "
    "the skill's request media type and whose data has the skill's request type (listed in this message's data)."
)


def free_text_query(parts: list[Part]) -> str | None:
    """The search text of a message whose parts are all text (``None`` if any part is not, or all are blank)."""
    if not parts or any(p.WhichOneof("content") != "text" for p in parts):
        return None
    text = " ".join(" ".join(p.text.split()) for p in parts).strip()
    return text[:QUERY_MAX] or None


def search_request(query: str) -> dict[str, Any]:
    """The AAP ``inventory.search`` request a free-text message stands for."""
    return {"type": SEARCH.request_type, "filters": {"query": query}}


def skill_guide() -> dict[str, Any]:
    """What the agent takes: each skill with its request ``type`` and the DataPart's media type.

    Forecourt's own shape, not an AAP document, so its keys are camelCase like the A2A JSON around it.
    """
    return {
        "type": "forecourt.skill_guide",
        "freeText": {"skill": SEARCH.id, "field": "filters.query", "maxLength": QUERY_MAX},
        "skills": [
            {
                "id": s.id,
                "requestType": s.request_type,
                "requestMediaType": s.request_media_type,
                "responseMediaType": s.response_media_type,
            }
            for s in SKILLS
        ],
    }


def _summary(output: Any, query: str) -> str:
    data = output.get("data") if isinstance(output, dict) else None
    total = data.get("total") if isinstance(data, dict) else None
    if isinstance(total, int):
        noun = "vehicle matches" if total == 1 else "vehicles match"
        return f'{total} {noun} "{query}".'
    return f'Inventory search for "{query}".'


def search_task(*, task_id: str, context_id: str, request: Message, output: Any, query: str, answer: Part) -> Task:
    """The completed Task answering a free-text message: the search as an artifact, the guide as the status."""
    summary = _summary(output, query)
    artifact = new_artifact([answer, new_text_part(summary)], name=SEARCH.id, description=SEARCH.name)
    status_message = new_message(
        parts=[new_text_part(f"{summary} {GUIDE_TEXT}"), new_data_part(skill_guide(), media_type="application/json")],
        role=Role.ROLE_AGENT,
        context_id=context_id,
        task_id=task_id,
    )
    asked = Message()
    asked.CopyFrom(request)
    asked.task_id, asked.context_id = task_id, context_id
    return Task(
        id=task_id,
        context_id=context_id,
        status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED, message=status_message),
        artifacts=[artifact],
        history=[asked],
    )

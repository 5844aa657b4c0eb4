"""Small BPMN 2.0 documents for tests: a straight chain of steps between a start and an end event."""

from __future__ import annotations

import itertools
from html import escape

HEADER = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" '
    'xmlns:spiffworkflow="http://spiffworkflow.org/bpmn/schema/1.0/core" '
    'id="defs" targetNamespace="https://forecourt.example/test">'
)


def service(
    task_id: str, operator: str, params: dict[str, str] | None = None, *, result: str = "result", **props: str
) -> str:
    """A service task calling ``operator`` with parameters given as expressions."""
    items = "".join(
        f'<spiffworkflow:parameter id="{k}" type="any" value="{escape(v)}"/>' for k, v in (params or {}).items()
    )
    properties = "".join(f'<spiffworkflow:property name="{k}" value="{escape(v)}"/>' for k, v in props.items())
    extras = f"<spiffworkflow:properties>{properties}</spiffworkflow:properties>" if props else ""
    return (
        f'<bpmn:serviceTask id="{task_id}" name="{task_id}"><bpmn:extensionElements>'
        f'<spiffworkflow:serviceTaskOperator id="{operator}" resultVariable="{result}">'
        f"<spiffworkflow:parameters>{items}</spiffworkflow:parameters></spiffworkflow:serviceTaskOperator>"
        f"{extras}</bpmn:extensionElements></bpmn:serviceTask>"
    )


def script(task_id: str, code: str) -> str:
    """A script task."""
    return (
        f'<bpmn:scriptTask id="{task_id}" name="{task_id}"><bpmn:script>{escape(code)}</bpmn:script></bpmn:scriptTask>'
    )


def user(task_id: str, **props: str) -> str:
    """A user task with spiffworkflow properties."""
    properties = "".join(f'<spiffworkflow:property name="{k}" value="{escape(v)}"/>' for k, v in props.items())
    return (
        f'<bpmn:userTask id="{task_id}" name="{task_id}"><bpmn:extensionElements>'
        f"<spiffworkflow:properties>{properties}</spiffworkflow:properties></bpmn:extensionElements></bpmn:userTask>"
    )


def chain(process_id: str, *steps: str) -> str:
    """start → steps... → end, as one executable process."""
    ids = ["start", *[s.split('id="', 1)[1].split('"', 1)[0] for s in steps], "end"]
    flows = "".join(
        f'<bpmn:sequenceFlow id="f{i}" sourceRef="{a}" targetRef="{b}"/>'
        for i, (a, b) in enumerate(itertools.pairwise(ids))
    )
    body = '<bpmn:startEvent id="start"/>' + "".join(steps) + '<bpmn:endEvent id="end"/>' + flows
    return f'{HEADER}<bpmn:process id="{process_id}" isExecutable="true">{body}</bpmn:process></bpmn:definitions>'

"""SpiffWorkflow 3.x behind a small, synchronous API: parse, validate, start, step, serialize.

Service tasks use SpiffWorkflow's ``spiffworkflow:serviceTaskOperator`` extension (operator id = the
gateway action to call, parameters = sandboxed expressions, ``resultVariable`` = where the answer goes).
:class:`AsyncServiceTask` does not call anything itself: when the engine reaches one it evaluates the
parameters, records the request on the task and leaves the task ``STARTED``. The async runner
(``runner.py``) collects those requests, awaits them through the gateway, writes the answers back with
:func:`finish_service_task` and steps the engine again. The engine therefore never blocks the event loop
and never needs a thread, and a serialized workflow always says exactly which calls are outstanding.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from lxml import etree  # type: ignore[import-untyped]
from SpiffWorkflow.bpmn.parser.BpmnParser import full_tag  # type: ignore[import-untyped]
from SpiffWorkflow.bpmn.parser.ValidationException import ValidationException  # type: ignore[import-untyped]
from SpiffWorkflow.bpmn.serializer import BpmnWorkflowSerializer  # type: ignore[import-untyped]
from SpiffWorkflow.bpmn.specs.mixins import UserTaskMixin  # type: ignore[import-untyped]
from SpiffWorkflow.bpmn.workflow import BpmnWorkflow  # type: ignore[import-untyped]
from SpiffWorkflow.exceptions import SpiffWorkflowException  # type: ignore[import-untyped]
from SpiffWorkflow.spiff.parser.process import VALIDATOR, SpiffBpmnParser  # type: ignore[import-untyped]
from SpiffWorkflow.spiff.parser.task_spec import ServiceTaskParser  # type: ignore[import-untyped]
from SpiffWorkflow.spiff.serializer.config import SPIFF_CONFIG  # type: ignore[import-untyped]
from SpiffWorkflow.spiff.serializer.task_spec import ServiceTaskConverter  # type: ignore[import-untyped]
from SpiffWorkflow.spiff.specs.defaults import ServiceTask  # type: ignore[import-untyped]
from SpiffWorkflow.util.task import TaskState  # type: ignore[import-untyped]

from forecourt import caching
from forecourt.adapters.workflow import MAX_BPMN_BYTES
from forecourt.adapters.workflow.errors import InvalidDefinition, UnsafeExpression
from forecourt.adapters.workflow.expressions import SandboxScriptEngine, compile_checked

PENDING_KEY = "forecourt_request"
ENGINE_ERRORS = (SpiffWorkflowException, UnsafeExpression, ValueError, TypeError, KeyError)
"""What a step of the engine raises when a script or the definition fails (the run fails, not the call)."""
_NS = {
    "bpmn": "http://www.omg.org/spec/BPMN/20100524/MODEL",
    "spiffworkflow": "http://spiffworkflow.org/bpmn/schema/1.0/core",
}
# (xpath, whether the text is a statement block or an expression)
_SCRIPT_XPATHS: tuple[tuple[str, str], ...] = (
    ("//bpmn:scriptTask/bpmn:script/text()", "exec"),
    ("//spiffworkflow:preScript/text()", "exec"),
    ("//spiffworkflow:postScript/text()", "exec"),
    ("//bpmn:conditionExpression/text()", "eval"),
    ("//bpmn:timeDuration/text()", "eval"),
    ("//bpmn:timeDate/text()", "eval"),
    ("//bpmn:timeCycle/text()", "eval"),
    ("//bpmn:loopCardinality/text()", "eval"),
    ("//bpmn:completionCondition/text()", "eval"),
    ("//spiffworkflow:parameter/@value", "eval"),
)


class AsyncServiceTask(ServiceTask):  # type: ignore[misc]
    """A service task whose call the async runner makes (see the module docstring)."""

    def _execute(self, task: Any) -> bool | None:
        params = {name: p["value"] for name, p in self.evaluate_params(task).items()}
        task.internal_data[PENDING_KEY] = {"operator": self.operation_name, "params": params}
        return None  # STARTED: the runner completes it


class _Parser(SpiffBpmnParser):  # type: ignore[misc]
    OVERRIDE_PARSER_CLASSES = {
        **SpiffBpmnParser.OVERRIDE_PARSER_CLASSES,
        full_tag("serviceTask"): (ServiceTaskParser, AsyncServiceTask),
    }


def _serializer() -> Any:
    config = dict(SPIFF_CONFIG)
    config.pop(ServiceTask, None)
    config[AsyncServiceTask] = ServiceTaskConverter
    return BpmnWorkflowSerializer(BpmnWorkflowSerializer.configure(config))


SERIALIZER = _serializer()


@dataclass(frozen=True)
class ParsedDefinition:
    """A validated BPMN document: its main process and the specs it needs."""

    process_id: str
    name: str
    digest: str
    spec: Any = field(repr=False, compare=False)
    subprocess_specs: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)


def _secure_parse(xml: str) -> Any:
    if len(xml.encode()) > MAX_BPMN_BYTES:
        raise InvalidDefinition("The BPMN document is too large.", details={"max_bytes": MAX_BPMN_BYTES})
    # No DTDs, no entities, no network: an uploaded document must not read files or call out (XXE).
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
    try:
        root = etree.fromstring(xml.encode(), parser=parser)
    except etree.XMLSyntaxError as exc:
        raise InvalidDefinition("The document is not well-formed XML.", details={"line": exc.lineno}) from None
    if root.getroottree().docinfo.doctype:
        raise InvalidDefinition("Document type declarations are not allowed.")
    if etree.QName(root).namespace != _NS["bpmn"] or etree.QName(root).localname != "definitions":
        raise InvalidDefinition("The document is not a BPMN 2.0 definitions element.")
    return root


def _check_scripts(root: Any) -> None:
    for xpath, mode in _SCRIPT_XPATHS:
        for text in root.xpath(xpath, namespaces=_NS):
            try:
                compile_checked(str(text), "exec" if mode == "exec" else "eval")
            except UnsafeExpression as exc:
                raise InvalidDefinition(
                    "A script or expression is outside the workflow sandbox.", details={"reason": str(exc)[:200]}
                ) from None


def _main_process(root: Any) -> tuple[str, str]:
    processes = root.xpath("./bpmn:process", namespaces=_NS)
    executable = [p for p in processes if p.get("isExecutable", "true").lower() == "true"]
    if not executable:
        raise InvalidDefinition("The document has no executable process.")
    main = executable[0]
    return str(main.get("id")), str(main.get("name") or main.get("id"))


@caching.memo("adapters.workflow.parsed_definitions", 64)
def parse_definition(xml: str) -> ParsedDefinition:
    """Parse and validate a BPMN 2.0 document (XSD, sandbox, structure).

    Raises:
        InvalidDefinition: With a client-safe reason (line numbers, never a stack trace).
    """
    root = _secure_parse(xml)
    _check_scripts(root)
    process_id, name = _main_process(root)
    parser = _Parser(validator=VALIDATOR)
    try:
        parser.add_bpmn_xml(root, filename="definition.bpmn")
        spec = parser.get_spec(process_id)
        subprocesses = parser.get_subprocess_specs(process_id)
    except ValidationException as exc:
        details: dict[str, Any] = {"reason": str(exc).splitlines()[0][:300]}
        if getattr(exc, "line_number", None):
            details["line"] = exc.line_number
        raise InvalidDefinition("The BPMN definition is invalid.", details=details) from None
    except (SpiffWorkflowException, KeyError, ValueError) as exc:
        raise InvalidDefinition("The BPMN definition is invalid.", details={"reason": type(exc).__name__}) from None
    digest = hashlib.sha256(xml.encode()).hexdigest()
    return ParsedDefinition(process_id=process_id, name=name, digest=digest, spec=spec, subprocess_specs=subprocesses)


# ------------------------------------------------------------------ running


def start(definition: ParsedDefinition, data: dict[str, Any], now_iso: Callable[[], str]) -> Any:
    """A new workflow instance whose start task carries ``data``."""
    workflow = BpmnWorkflow(definition.spec, definition.subprocess_specs, script_engine=SandboxScriptEngine(now_iso))
    first = workflow.get_next_task(state=TaskState.READY)
    if first is not None:
        first.data.update(json.loads(json.dumps(data)))
    return workflow


def dumps(workflow: Any) -> str:
    """The workflow (spec, task tree and data) as JSON."""
    return str(SERIALIZER.serialize_json(workflow))


def loads(state: str, now_iso: Callable[[], str]) -> Any:
    """A workflow restored from :func:`dumps`, with the sandboxed script engine attached."""
    workflow = SERIALIZER.deserialize_json(state)
    workflow.script_engine = SandboxScriptEngine(now_iso)
    return workflow


def step(workflow: Any, did_complete: Callable[[Any], None] | None = None) -> None:
    """Run every engine task that is ready (scripts, gateways, events); stops at calls and user tasks.

    Raises:
        SpiffWorkflowException: A script or expression failed; the failing task is in ``ERROR``.
    """
    workflow.do_engine_steps(did_complete_task=did_complete)


def is_parked(task: Any) -> bool:
    """Whether ``task`` is a service task waiting for the runner."""
    return bool(task.state == TaskState.STARTED)


def pending_calls(workflow: Any) -> Iterator[tuple[Any, dict[str, Any]]]:
    """Service tasks waiting for the runner, with their ``{operator, params}`` request."""
    for task in workflow.get_tasks(state=TaskState.STARTED):
        request = task.internal_data.get(PENDING_KEY)
        if isinstance(task.task_spec, AsyncServiceTask) and isinstance(request, dict):
            yield task, request


def finish_service_task(task: Any, result: Any) -> None:
    """Store a call's answer in the task's result variable and complete the task."""
    task.data[task.task_spec.result_variable] = json.loads(json.dumps(result, default=str))
    task.internal_data.pop(PENDING_KEY, None)
    task.complete()


def waiting_user_tasks(workflow: Any) -> list[Any]:
    """User and manual tasks that wait for :func:`complete_user_task`."""
    return [t for t in workflow.get_tasks(state=TaskState.READY, manual=True)]


def complete_user_task(task: Any, data: dict[str, Any]) -> None:
    """Merge the submitted ``data`` into the task and complete it."""
    if isinstance(task.task_spec, UserTaskMixin) and hasattr(task.task_spec, "add_data_from_form"):
        task.task_spec.add_data_from_form(task, data)
    else:
        task.data.update(data)
    task.run()


def find_task(workflow: Any, task_id: str) -> Any | None:
    """The task with that id (a UUID string), if any."""
    for task in workflow.get_tasks():
        if str(task.id) == task_id:
            return task
    return None


def error_tasks(workflow: Any) -> list[Any]:
    """Tasks that failed."""
    return list(workflow.get_tasks(state=TaskState.ERROR))


def task_states(workflow: Any) -> list[dict[str, Any]]:
    """Every BPMN task of the run (no engine bookkeeping tasks), with its state."""
    states: list[dict[str, Any]] = []
    for task in workflow.get_tasks():
        spec = task.task_spec
        bpmn_id = getattr(spec, "bpmn_id", None)
        if not bpmn_id or task.has_state(TaskState.PREDICTED_MASK):
            continue
        states.append(
            {
                "task_id": str(task.id),
                "bpmn_id": bpmn_id,
                "name": getattr(spec, "bpmn_name", None) or bpmn_id,
                "type": type_of(spec),
                "state": TaskState.get_name(task.state).lower(),
            }
        )
    return states


def type_of(spec: Any) -> str:
    """A short BPMN type name for a task spec (``serviceTask``, ``userTask``...)."""
    description = getattr(spec, "description", None) or spec.__class__.__name__
    words = [w for w in str(description).split() if w.lower() != "default"]
    return words[0].lower() + "".join(w.capitalize() for w in words[1:]) if words else "task"


def is_completed(workflow: Any) -> bool:
    """Whether the process reached its end."""
    return bool(workflow.is_completed())


def result_data(workflow: Any) -> dict[str, Any]:
    """The data of the most recently completed task (the process's outputs at the end)."""
    last = workflow.last_task
    data = dict(last.data) if last is not None else {}
    plain: dict[str, Any] = json.loads(json.dumps(data, default=str))
    return plain

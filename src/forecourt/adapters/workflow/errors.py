"""Errors of the workflow runner (codes are unique across Forecourt)."""

from __future__ import annotations

from forecourt.errors import Conflict, Forbidden, InvalidParams, NotFound


class InvalidDefinition(InvalidParams):
    """An uploaded BPMN document is not valid XML, not BPMN 2.0, or uses scripts outside the sandbox."""

    code = "workflow.invalid_definition"
    default_message = "The BPMN definition is invalid."


class DefinitionNotFound(NotFound):
    code = "workflow.definition_not_found"
    default_message = "Workflow definition not found."


class RunNotFound(NotFound):
    code = "workflow.run_not_found"
    default_message = "Workflow run not found."


class TaskNotWaiting(Conflict):
    """The task does not exist in the run or is not a user task waiting for input."""

    code = "workflow.task_not_waiting"
    default_message = "That task is not waiting for input."


class RunConflict(Conflict):
    """Another replica advanced the run first (optimistic revision check)."""

    code = "workflow.run_conflict"
    retryable = True
    default_message = "The workflow run was changed by another request; read it again."


class RunBusy(Conflict):
    """Another replica holds the run's lease and is still advancing it."""

    code = "workflow.run_busy"
    retryable = True
    default_message = "The workflow run is being advanced elsewhere; try again shortly."


class RunNotResumable(Conflict):
    code = "workflow.run_not_resumable"
    default_message = "The workflow run is not in a state that can be resumed."


# raised in forecourt.adapters.workflow.expressions


class UnsafeExpression(InvalidParams, ValueError):
    """A script or expression uses syntax outside the sandbox (raised at upload and at run time)."""

    code = "workflow.unsafe_expression"
    default_message = "The script or expression uses something the sandbox does not allow."


# raised in forecourt.adapters.workflow.runner


class OperatorNotAllowed(Forbidden):
    """A workflow service task names an action workflows may not call."""

    code = "workflow.operator_not_allowed"
    default_message = "A workflow may not call this action."

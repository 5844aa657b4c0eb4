"""The BPM runner adapter (seed 001 §5): BPMN 2.0 workflows executed with SpiffWorkflow 3.

- ``workflow.run`` / ``workflow.get`` / ``workflow.complete_task`` / ``workflow.resume`` /
  ``workflow.list_runs`` (:mod:`.actions`), run by :class:`~.runner.WorkflowRunner`;
- ``admin.workflows.upload`` / ``admin.workflows.list`` (:mod:`.admin`);
- definitions per company, versioned, plus the shipped dealer processes (:mod:`.definitions`);
- scripts and expressions in a sandbox (:mod:`.expressions`); run state in the database (:mod:`.repository`).

See ``docs/workflows.md``.
"""

from forecourt.adapters.workflow.actions import WORKFLOW_ACTIONS, WorkflowAdapter, register_workflow_actions
from forecourt.adapters.workflow.runner import WorkflowRunner

__all__ = ["WORKFLOW_ACTIONS", "WorkflowAdapter", "WorkflowRunner", "register_workflow_actions"]

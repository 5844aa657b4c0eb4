"""The BPM runner (seed 001 §5): BPMN 2.0 workflows executed with SpiffWorkflow 3.

- :class:`~.runner.WorkflowRunner` runs the ``workflow.*`` actions (described in :mod:`forecourt.actions.workflows`);
- :class:`~.admin.WorkflowAdminAdapter` runs ``admin.workflows.upload`` / ``admin.workflows.list``;
- definitions per company, versioned, plus the shipped dealer processes (:mod:`.definitions`);
- scripts and expressions in a sandbox (:mod:`.expressions`); run state in the database (:mod:`.repository`).

See ``docs/workflows.md``.
"""

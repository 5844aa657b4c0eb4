"""The BPM runner (seed 001 §5): BPMN 2.0 workflows executed with SpiffWorkflow 3.

- :class:`~.runner.WorkflowRunner` runs the ``workflow.*`` actions (described in :mod:`forecourt.actions.workflows`);
- :class:`~.admin.WorkflowAdminAdapter` runs ``admin.workflows.upload`` / ``admin.workflows.list``;
- definitions per company, versioned, plus the shipped dealer processes (:mod:`.definitions`);
- scripts and expressions in a sandbox (:mod:`.expressions`); run state in the database (:mod:`.repository`).

See ``docs/workflows.md``.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import TYPE_CHECKING

MAX_BPMN_BYTES = 512 * 1024
"""The largest BPMN document accepted (the upload action's schema says so before the engine is loaded)."""


def _on_first_use(name: str) -> ModuleType:
    """Module ``name``, run on its first attribute access (``importlib.util.LazyLoader``).

    The engine imports SpiffWorkflow and lxml (~0.1 s of CPU). Every process builds the catalogue, whose workflow
    adapters name the engine; only a run, a view of one or an upload uses it.
    """
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:  # pragma: no cover - it is this package's own module
        raise ImportError(name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


if TYPE_CHECKING:
    from forecourt.adapters.workflow import engine
else:
    engine = _on_first_use(f"{__name__}.engine")

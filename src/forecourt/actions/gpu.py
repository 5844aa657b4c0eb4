"""NVIDIA actions beyond inference (seed 001 §5: "Manages fine-tuning jobs, inference, and model versioning. Handles
cluster authentication and GPU resource allocation"): Triton model versioning (admin) and fine-tuning jobs.

All run on the ``nvidia`` adapter, so they use its endpoints, its per-call credential and its timeouts, and the
gateway's policy, rate limits and audit apply to each as to every call.

- ``admin.nvidia.models.list|load|unload|pin``: the Triton model repository (admin scope; only the company's
  administrators or the operator). Loading and unloading change a server every company using it shares, so they
  also need the operator's ``triton.allow_company_model_control: true`` unless the operator calls them.
- ``nvidia.fineTune.create|get|cancel|list``: NeMo Customizer jobs (``amcp:models:write`` to create or cancel,
  ``amcp:models:read`` to read); each job's state is kept in Forecourt's store and polled until it ends, and its
  end is delivered as an event (docs/models.md).
"""

from __future__ import annotations

from typing import Any

from forecourt.actions.base import Action, Catalogue

NVIDIA_ADAPTER = "nvidia"
MODELS_READ = "amcp:models:read"
MODELS_WRITE = "amcp:models:write"
_COMPANY = {"type": "string", "minLength": 1, "maxLength": 128}
_MODEL = {"type": "string", "minLength": 1, "maxLength": 200, "pattern": "^[A-Za-z0-9_.-]+$"}
_VERSION = {"type": "string", "minLength": 1, "maxLength": 16, "pattern": "^[0-9]+$"}
JOB_ID = {"type": "string", "minLength": 1, "maxLength": 64}


def _object(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def _admin(name: str, description: str, props: dict[str, Any], required: list[str], *, write: bool) -> Action:
    return Action(
        name=name,
        type="tool.run",
        title=name,
        description=description,
        input_schema=_object({"company_id": _COMPANY, **props}, ["company_id", *required]),
        output_schema=None,
        adapter=NVIDIA_ADAPTER,
        scope="amcp:admin:write" if write else "amcp:admin:read",
        side_effect=write,
        idempotent=True,
        pii=False,
        timeout_s=60.0,
        dealer_scoped=False,
        domain="admin",
        result_type="admin.result",
        tags=("admin", "models", "nvidia"),
    )


def _job(
    name: str,
    title: str,
    description: str,
    props: dict[str, Any],
    required: list[str],
    *,
    write: bool,
    example: dict[str, Any] | None = None,
) -> Action:
    return Action(
        name=name,
        type="model.invoke",
        title=title,
        description=description,
        input_schema=_object(props, required),
        output_schema=None,
        adapter=NVIDIA_ADAPTER,
        scope=MODELS_WRITE if write else MODELS_READ,
        side_effect=write,
        idempotent=not write,
        pii=False,
        timeout_s=30.0,
        dealer_scoped=False,
        domain="models",
        result_type="model.job",
        tags=("models", "nvidia", "jobs"),
        example=example,
    )


_HYPERPARAMETERS = {
    "type": "object",
    "properties": {
        "training_type": {"enum": ["sft", "distillation"]},
        "finetuning_type": {"enum": ["lora", "all_weights"]},
        "epochs": {"type": "integer", "minimum": 1, "maximum": 100},
        "batch_size": {"type": "integer", "minimum": 1, "maximum": 4096},
        "learning_rate": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "lora": {
            "type": "object",
            "properties": {"adapter_dim": {"type": "integer", "minimum": 1, "maximum": 1024}},
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}

GPU_ACTIONS: tuple[Action, ...] = (
    _admin(
        "admin.nvidia.models.list",
        "List the Triton server's models and versions with their state (READY, UNAVAILABLE, ...) and the "
        "company's pinned version of each.",
        {},
        [],
        write=False,
    ),
    _admin(
        "admin.nvidia.models.load",
        "Load a Triton model, optionally serving exactly the given versions (a version_policy override).",
        {"model": _MODEL, "versions": {"type": "array", "items": _VERSION, "minItems": 1, "maxItems": 32}},
        ["model"],
        write=True,
    ),
    _admin(
        "admin.nvidia.models.unload",
        "Unload a Triton model (all its versions).",
        {"model": _MODEL},
        ["model"],
        write=True,
    ),
    _admin(
        "admin.nvidia.models.pin",
        "Pin the version of a Triton model that nvidia.runInference uses for this company (version null: route "
        "to the latest ready version again).",
        {"model": _MODEL, "version": {"oneOf": [_VERSION, {"type": "null"}]}},
        ["model", "version"],
        write=True,
    ),
    _job(
        "nvidia.fineTune.create",
        "Start a fine-tuning job",
        (
            "Start a NeMo Customizer fine-tuning job (config, dataset, hyperparameters); answers the job (status "
            "created or pending). Forecourt polls it until it ends and then emits a model.job event. Use it to "
            "adapt a model to the dealership's own examples."
        ),
        {
            "config": {"type": "string", "minLength": 1, "maxLength": 200},
            "dataset": _object(
                {
                    "name": {"type": "string", "minLength": 1, "maxLength": 200},
                    "namespace": {"type": "string", "minLength": 1, "maxLength": 200},
                },
                ["name"],
            ),
            "hyperparameters": _HYPERPARAMETERS,
            "output_model": {"type": "string", "minLength": 1, "maxLength": 200},
            "description": {"type": "string", "maxLength": 1000},
        },
        ["config", "dataset"],
        write=True,
        example={"config": "meta/llama-3.1-8b-instruct", "dataset": {"name": "bdc-replies"}},
    ),
    _job(
        "nvidia.fineTune.get",
        "Show a fine-tuning job",
        (
            "Fetch a fine-tuning job's state as last checked (refresh: true asks the NeMo Customizer first). Use it "
            "to follow a job started with nvidia.fineTune.create."
        ),
        {"job_id": JOB_ID, "refresh": {"type": "boolean"}},
        ["job_id"],
        write=False,
        example={"job_id": "ft_0001"},
    ),
    _job(
        "nvidia.fineTune.cancel",
        "Cancel a fine-tuning job",
        (
            "Ask the NeMo Customizer to cancel a fine-tuning job; a job that already ended is answered as it is. "
            "Use it to stop a job that is no longer needed."
        ),
        {"job_id": JOB_ID},
        ["job_id"],
        write=True,
        example={"job_id": "ft_0001"},
    ),
    _job(
        "nvidia.fineTune.list",
        "List fine-tuning jobs",
        (
            "List the company's fine-tuning jobs, newest first ({items, next_cursor}). Use it to find earlier jobs "
            "and their status."
        ),
        {
            "status": {"type": "string", "maxLength": 32},
            "cursor": {"type": "string", "maxLength": 200},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100},
        },
        [],
        write=False,
        example={"limit": 10},
    ),
)


def register_gpu_actions(catalogue: Catalogue) -> None:
    """Add the NVIDIA versioning and fine-tuning actions to ``catalogue``."""
    for action in GPU_ACTIONS:
        catalogue.add(action)

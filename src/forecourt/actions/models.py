"""The model actions (seed 001 §3 ``action.type: model.invoke``; §11 ``/mcp/vertex.invokeModel``, ...).

Scope: ``amcp:models:read``. A model call changes no dealer data (``side_effect`` is false), so the read scope is
enough and a credential limited to reads may still summarise or classify; ``amcp:models:write`` implies it, as
every ``:write`` scope implies its ``:read``. Prompts may carry customer data, so the actions are marked
``pii`` (audit records keep only redacted arguments) and never cached here (embedding caching belongs to the
knowledge adapter).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from forecourt.actions.base import Action, Catalogue

if TYPE_CHECKING:
    from forecourt.gateway.pipeline import Gateway

MODELS_SCOPE = "amcp:models:read"
TRITON_DATATYPES = (
    "BOOL",
    "UINT8",
    "UINT16",
    "UINT32",
    "UINT64",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "FP16",
    "FP32",
    "FP64",
    "BYTES",
)
"""KServe v2 tensor datatypes (BF16 needs ``ml_dtypes``, which Forecourt does not install)."""

_NAME = {"type": "string", "minLength": 1, "maxLength": 200}
_MESSAGE = {
    "type": "object",
    "properties": {
        "role": {"enum": ["system", "user", "assistant"]},
        "content": {"type": "string", "maxLength": 200_000},
    },
    "required": ["content"],
    "additionalProperties": False,
}
_INPUT = {
    "description": "A prompt, a list of messages, or (kind: embedding) a list of texts.",
    "oneOf": [
        {"type": "string", "minLength": 1, "maxLength": 200_000},
        {
            "type": "array",
            "minItems": 1,
            "maxItems": 256,
            "items": {"oneOf": [{"type": "string", "maxLength": 200_000}, _MESSAGE]},
        },
    ],
}
_PARAMS = {
    "type": "object",
    "properties": {
        "temperature": {"type": "number", "minimum": 0, "maximum": 2},
        "maxOutputTokens": {"type": "integer", "minimum": 1, "maximum": 65_536},
        "topP": {"type": "number", "minimum": 0, "maximum": 1},
        "topK": {"type": "integer", "minimum": 1, "maximum": 1000},
        "stop": {"type": "array", "items": {"type": "string", "maxLength": 100}, "maxItems": 8},
        "seed": {"type": "integer"},
        "dimensions": {"type": "integer", "minimum": 1, "maximum": 8192},
    },
    "additionalProperties": False,
}
_COMMON: dict[str, Any] = {
    "model": _NAME,
    "input": _INPUT,
    "messages": {"type": "array", "items": _MESSAGE, "minItems": 1, "maxItems": 256},
    "system": {"type": "string", "maxLength": 50_000},
    "kind": {"enum": ["text", "embedding"], "default": "text"},
    "params": _PARAMS,
    "stream": {"type": "boolean", "description": "Consume the runtime's stream; metadata.chunks counts the pieces."},
}
_ONE_INPUT = [{"required": ["input"]}, {"required": ["messages"]}]

_TENSOR = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 200},
        "datatype": {"enum": list(TRITON_DATATYPES)},
        "shape": {"type": "array", "items": {"type": "integer", "minimum": -1}, "maxItems": 8},
        "data": {"type": "array", "maxItems": 1_000_000},
    },
    "required": ["name", "datatype", "shape", "data"],
    "additionalProperties": False,
}

CHAT_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": _COMMON,
    "anyOf": _ONE_INPUT,
    "additionalProperties": False,
}
VERTEX_INPUT_SCHEMA: dict[str, Any] = {
    **CHAT_INPUT_SCHEMA,
    "properties": {
        **_COMMON,
        "memory": {
            "type": "boolean",
            "description": "Keep this conversation server-side under its session id: earlier turns are sent "
            "before this call's, and this call's turns are kept for the next.",
        },
        "session_id": {
            "type": "string",
            "minLength": 1,
            "maxLength": 128,
            "pattern": "^[A-Za-z0-9._:-]+$",
            "description": "The conversation's id (default: the calling session's own).",
        },
    },
}
NVIDIA_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        **_COMMON,
        "backend": {"enum": ["triton", "nim"]},
        "model_version": {"type": "string", "maxLength": 32},
        "inputs": {"type": "array", "items": _TENSOR, "minItems": 1, "maxItems": 64},
        "outputs": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": 200},
            "maxItems": 64,
        },
    },
    "anyOf": [*_ONE_INPUT, {"required": ["inputs"]}],
    "additionalProperties": False,
}
ROUTED_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        **_COMMON,
        "runtime": {"type": "string", "minLength": 1, "maxLength": 64},
        "task": {
            "type": "string",
            "maxLength": 64,
            "description": "What the call is for (e.g. chat, summarization, fine-tuning); matched with nvidia.useFor.",
        },
    },
    "anyOf": _ONE_INPUT,
    "additionalProperties": False,
}


def _action(
    name: str, title: str, description: str, schema: dict[str, Any], adapter: str, *, example: dict[str, Any]
) -> Action:
    return Action(
        name=name,
        type="model.invoke",
        title=title,
        description=description,
        input_schema=schema,
        output_schema=None,
        adapter=adapter,
        scope=MODELS_SCOPE,
        side_effect=False,
        cacheable=False,
        pii=True,
        timeout_s=60.0,
        dealer_scoped=False,
        domain="models",
        result_type="model.textCompletion",
        tags=("models",),
        example=example,
    )


MODEL_ACTIONS: tuple[Action, ...] = (
    _action(
        "vertex.invokeModel",
        "Invoke a Vertex AI model",
        (
            "Invoke Gemini or another Vertex AI model (generateContent; streamed with stream: true). Answers the "
            "generated text with its token count and model. With memory: true the conversation is kept server-side "
            "under its session id, so each call sends only its new turn. Use it when the company runs its models on "
            "Vertex AI."
        ),
        VERTEX_INPUT_SCHEMA,
        "vertex",
        example={"model": "gemini-2.5-flash", "input": "Draft a two-line follow-up e-mail for a test-drive lead."},
    ),
    _action(
        "nvidia.runInference",
        "Run inference on an NVIDIA-hosted model",
        (
            "Run inference on NVIDIA Triton (KServe v2: raw tensors → model.inference, or a text prompt) or on "
            "NVIDIA NIM (backend: nim, OpenAI-compatible chat completions and embeddings). Use it when the company "
            "runs its models on NVIDIA Triton or NIM."
        ),
        NVIDIA_INPUT_SCHEMA,
        "nvidia",
        example={
            "model": "llama-3.1-8b-instruct",
            "input": "Classify this lead message as sales or service: my brakes squeak.",
        },
    ),
    _action(
        "openai.invokeModel",
        "Invoke an OpenAI-compatible model",
        (
            "Chat completions or embeddings on an OpenAI-compatible server (vLLM, Ollama, LM Studio, OpenAI). Use "
            "it when the company's model is served by an OpenAI-compatible endpoint."
        ),
        CHAT_INPUT_SCHEMA,
        "openai",
        example={"model": "gpt-4o-mini", "input": "Draft a two-line follow-up e-mail for a test-drive lead."},
    ),
    _action(
        "anthropic.invokeModel",
        "Invoke an Anthropic Claude model",
        (
            "Invoke a Claude model through Anthropic's Messages API (streamed with stream: true). Answers the "
            "generated text with its input and output token counts. Use it when the company runs its models on "
            "Anthropic."
        ),
        CHAT_INPUT_SCHEMA,
        "anthropic",
        example={"model": "claude-sonnet-4-6", "input": "Draft a two-line follow-up e-mail for a test-drive lead."},
    ),
    _action(
        "huggingface.invokeModel",
        "Invoke a Hugging Face model",
        (
            "Chat completions or embeddings on a Hugging Face Inference Endpoint or a Text Generation Inference "
            "server. Use it when the company's model is deployed on Hugging Face or served by TGI."
        ),
        CHAT_INPUT_SCHEMA,
        "huggingface",
        example={"model": "meta-llama/Llama-3.1-8B-Instruct", "input": "Classify this lead: my brakes squeak."},
    ),
    _action(
        "model.invoke",
        "Invoke a model on the preferred runtime",
        (
            "Invoke a model without naming the runtime: the gateway picks runtime and model from the payload, else "
            "the calling agent's preferences (runtime, modelAffinity, nvidia.useFor), within company policy. Use it "
            "for general text generation when no particular runtime is required."
        ),
        ROUTED_INPUT_SCHEMA,
        "models",
        example={"input": "Summarise this repair order in one sentence: replaced front brake pads and rotors."},
    ),
)


def register_model_actions(
    catalogue: Catalogue,
    defaults: Mapping[str, Mapping[str, Any]],
    gateway: Gateway | Callable[[], Gateway],
) -> list[Callable[[], Awaitable[None]]]:
    """Add the model actions and the runtimes that run them to ``catalogue``.

    Args:
        catalogue: The action catalogue.
        defaults: The operator's adapter configurations (``adapters.config.load_adapter_defaults``).
        gateway: The gateway that runs ``model.invoke``'s routed calls (or a function returning it).

    Returns:
        Functions that close the runtimes' HTTP clients.
    """
    from forecourt.actions.gpu import register_gpu_actions
    from forecourt.actions.vertex import register_vertex_actions
    from forecourt.adapters.models import (
        AnthropicAdapter,
        HuggingFaceAdapter,
        ModelRouter,
        NvidiaAdapter,
        OpenAICompatAdapter,
        VertexAdapter,
    )

    for action in MODEL_ACTIONS:
        catalogue.add(action)
    register_gpu_actions(catalogue)
    register_vertex_actions(catalogue)
    vertex = VertexAdapter(defaults.get("vertex"))
    nvidia = NvidiaAdapter(defaults.get("nvidia"), lambda: gateway() if callable(gateway) else gateway)
    openai = OpenAICompatAdapter(defaults.get("openai"))
    anthropic = AnthropicAdapter(defaults.get("anthropic"))
    huggingface = HuggingFaceAdapter(defaults.get("huggingface"))
    for adapter in (vertex, nvidia, openai, anthropic, huggingface):
        catalogue.add_adapter(adapter)
    catalogue.add_adapter(ModelRouter(gateway))
    return [vertex.aclose, nvidia.aclose, openai.aclose, anthropic.aclose, huggingface.aclose]

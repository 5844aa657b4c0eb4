"""The built-in hashing embedder and the embedder registry."""

from __future__ import annotations

import numpy as np
import pytest

from forecourt.adapters.knowledge.embedders import (
    MINILM_MODEL,
    EmbedderRegistry,
    EmbedderUnavailable,
    HashingEmbedder,
    from_blob,
    to_blob,
)


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
    assert registry.configured(None) is registry.hashing
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
            registry.configured("minilm")
    else:
        assert registry.configured("minilm").model == MINILM_MODEL

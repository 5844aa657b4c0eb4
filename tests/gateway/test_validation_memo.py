"""Schema validation: an instance found valid is not checked again; an invalid one always is."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from forecourt.errors import InvalidParams
from forecourt.gateway.validation import SchemaValidator

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"limit": {"type": "integer", "maximum": 50}, "email": {"type": "string", "format": "email"}},
    "additionalProperties": False,
}


class CountingValidator(SchemaValidator):
    """Counts the schema walks (``iter_errors``) the memo did not save."""

    def __init__(self) -> None:
        super().__init__()
        self.walks = 0

    def _validator(self, schema: Any) -> Any:
        inner = super()._validator(schema)
        outer = self

        class Counting:
            def iter_errors(self, instance: Any) -> Any:
                outer.walks += 1
                return inner.iter_errors(instance)

        return Counting()


def test_a_valid_instance_is_walked_once_whatever_its_key_order() -> None:
    validator = CountingValidator()
    validator.validate(SCHEMA, {"limit": 5, "email": "a@example.com"})
    validator.validate(SCHEMA, {"email": "a@example.com", "limit": 5})
    assert validator.walks == 1
    validator.validate(SCHEMA, {"limit": 6})
    assert validator.walks == 2


def test_an_invalid_instance_is_refused_every_time() -> None:
    validator = CountingValidator()
    for _ in range(2):
        with pytest.raises(InvalidParams) as raised:
            validator.validate(SCHEMA, {"limit": 500})
        assert raised.value.details["errors"][0]["path"] == "/limit"
    assert validator.walks == 2
    with pytest.raises(InvalidParams):
        validator.validate(SCHEMA, {"limit": 5.0, "email": "not an email"})


def test_a_remembered_instance_does_not_let_a_similar_one_through() -> None:
    validator = SchemaValidator()
    schema: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}
    validator.validate(schema, {"n": 3})
    for similar in ({"n": 3.5}, {"n": "3"}, {"n": [3]}):
        with pytest.raises(InvalidParams):
            validator.validate(schema, similar)


def test_an_instance_that_is_not_plain_json_is_still_validated() -> None:
    validator = CountingValidator()
    for _ in range(2):
        validator.validate({"type": "object"}, {"at": datetime(2026, 11, 24, tzinfo=UTC)})
    assert validator.walks == 2


def _schema_of_n(kind: str) -> dict[str, Any]:
    return {"type": "object", "properties": {"n": {"type": kind}}}


def test_a_schema_rebuilt_at_a_recycled_address_is_validated_by_its_own_rules() -> None:
    # An upstream's tools rebuilt: the old schema is gone and the new one often lands on its address.
    validator = SchemaValidator()
    for _ in range(100):
        old = _schema_of_n("integer")
        validator.validate(old, {"n": 2})
        del old
        new = _schema_of_n("string")
        validator.validate(new, {"n": "two"})
        with pytest.raises(InvalidParams):
            validator.validate(new, {"n": 2})

"""core.trusted builds what pydantic's model_construct builds, field for field, for every model
classify builds on its hot path, and fresh defaults per model."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from ncu_classify.cards.figures import Margin, Roofline
from ncu_classify.cards.hot_units import HotUnit
from ncu_classify.cards.model import Card, KernelCard
from ncu_classify.core.trusted import trusted
from ncu_classify.read.rows import KernelRow, ReportRead


class _Defaults(BaseModel):
    required: int
    plain: str = "x"
    listed: list[int] = Field(default_factory=list)
    shared: dict[str, int] = {"a": 1}  # mutable: pydantic copies it per model


@pytest.mark.parametrize(
    ("cls", "values"),
    [
        (Margin, {"metric": "sm_pct", "distance": 1.5, "alternative": None, "borderline": True}),
        (
            HotUnit,
            {"unit": "sm__inst_executed_pipe_lsu", "pct": 12.5, "label": "LSU", "kind": "memory"},
        ),
        (Roofline, {"family": None, "executed_flops": None, "achieved_tflops": None}),
        (KernelCard, {"kernel": "k", "metrics": {"dur_us": 1.0}}),
        (Card, {"group": "g", "stage": "s", "op": "linear", "kernels": []}),
        (KernelRow, {"report": "r", "range_index": 0, "action_index": 3}),
        (ReportRead, {"path": "p", "kernels": []}),
        (_Defaults, {"required": 1}),
    ],
)
def test_same_as_model_construct(cls: type[BaseModel], values: dict) -> None:
    ours, theirs = trusted(cls, **values), cls.model_construct(**values)
    assert ours.__dict__ == theirs.__dict__
    assert list(ours.__dict__) == list(theirs.__dict__)  # field order: the JSON's order
    assert ours.model_fields_set == theirs.model_fields_set == set(values)
    assert ours.model_dump_json() == theirs.model_dump_json()


def test_fields_set_given_and_defaults_fresh() -> None:
    first = trusted(_Defaults, {"required", "plain"}, required=2)
    second = trusted(_Defaults, required=3)
    assert first.model_fields_set == {"required", "plain"}
    first.listed.append(1)
    first.shared["b"] = 2
    assert second.listed == [] and second.shared == {"a": 1}
    assert _Defaults.model_fields["shared"].default == {"a": 1}


def test_missing_required_field_left_out_as_model_construct_does() -> None:
    assert "required" not in trusted(_Defaults).__dict__
    assert "required" not in _Defaults.model_construct().__dict__

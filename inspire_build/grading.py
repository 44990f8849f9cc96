"""The grading step: one call per target grades all its eligible antecedents.

The model must grade every input antecedent exactly once: the answer's schema lists the input
IDs, and :func:`check_sheet` refuses a missing, repeated or invented one, which makes ``llm.py``
repair the call once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import pydantic

from inspire_build.llm import LLM
from inspire_build.models import AntecedentGrade, GradeSheet, Role, Tier


def sheet_model(antecedent_ids: Sequence[str]) -> type[GradeSheet]:
    """A GradeSheet whose ``id`` may only be one of these antecedents, and as many grades."""
    id_type: Any = Literal[tuple(antecedent_ids)]
    item: Any = pydantic.create_model("Grade", __base__=AntecedentGrade, id=(id_type, ...))
    count = len(antecedent_ids)
    grades: Any = (tuple[item, ...], pydantic.Field(min_length=count, max_length=count))
    sheet: type[GradeSheet] = pydantic.create_model(
        "GradeSheet", __base__=GradeSheet, grades=grades
    )
    return sheet


def check_sheet(sheet: GradeSheet, antecedent_ids: Sequence[str]) -> None:
    """Every antecedent graded exactly once; raises ValueError naming what is wrong."""
    given = Counter(g.id for g in sheet.grades)
    wanted = set(antecedent_ids)
    missing = sorted(wanted - set(given))
    invented = sorted(set(given) - wanted)
    repeated = sorted(i for i, n in given.items() if n > 1)
    if missing or invented or repeated:
        raise ValueError(
            f"grade every antecedent exactly once: missing {missing}, "
            f"invented {invented}, repeated {repeated}"
        )


def grade_antecedents(
    llm: LLM, abstract: str, antecedents: Sequence[Mapping[str, Any]]
) -> dict[str, tuple[Tier, Role, str]]:
    """Antecedent id -> (tier, role, rationale). ``antecedents`` carry id, title, abstract,
    contexts, intents and influential."""
    ids = [str(a["id"]) for a in antecedents]
    if not ids:
        return {}
    model = sheet_model(ids)
    sheet = llm.complete(
        "grade",
        {"abstract": abstract, "antecedents": list(antecedents)},
        model,
        validate=lambda s: check_sheet(s, ids),
    )
    return {g.id: (Tier(g.tier), Role(g.role), g.rationale) for g in sheet.grades}

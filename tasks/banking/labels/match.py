"""`--labels match`: each goal gets the tool whose schema shares the most informative words with it.

A tool's words come from its name (weight 3), its description (1), its enum values (1.5), its
parameter names and descriptions (0.5); a word's weight is the strongest field it appears in.
Each word also carries an inverse document frequency over the domain's tools, so words that
nearly every tool uses ("account", "customer") count for little. A goal scores each tool by
summing weight x idf over the goal's distinct words; the best tool is taken when it scores at
least MIN_SCORE (below it the goal gets no tool: "understand how overdraft fees work"), and a
runner-up too when it scores within SECOND_RATIO of the best, i.e. a near tie the words cannot
break. Deterministic; no model involved.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel

from tasks.banking.dataset import Dataset, Scenario
from tasks.banking.labels.model import ScenarioLabels, decided
from tasks.banking.labels.text import tokens
from tasks.banking.rows import ToolRow

VERSION = "1"
NAME_WEIGHT = 3.0
DESCRIPTION_WEIGHT = 1.0
ENUM_WEIGHT = 1.5
PARAMETER_WEIGHT = 0.5
MIN_SCORE = 4.0
SECOND_RATIO = 0.95


class ToolWords(BaseModel):
    name: str
    weights: dict[str, float]


def _enum_and_parameter_text(schema: dict[str, Any]) -> tuple[list[str], list[str]]:
    enums: list[str] = []
    params: list[str] = []
    for pname, pschema in schema.items():
        params.append(pname)
        if not isinstance(pschema, dict):
            continue
        if isinstance(pschema.get("description"), str):
            params.append(pschema["description"])
        for holder in (pschema, pschema.get("items")):
            if isinstance(holder, dict) and isinstance(holder.get("enum"), list):
                enums.extend(str(v) for v in holder["enum"])
    return enums, params


def tool_words(tool: ToolRow, synonyms: dict[str, str] | None = None,
               weights: tuple[float, float, float, float] | None = None) -> ToolWords:
    """Each schema word with the weight of the strongest field it appears in; `weights` are
    (name, description, enum, parameter), by default this module's."""
    enums, params = _enum_and_parameter_text(tool.parameters)
    name_w, description_w, enum_w, parameter_w = weights or (
        NAME_WEIGHT, DESCRIPTION_WEIGHT, ENUM_WEIGHT, PARAMETER_WEIGHT)
    fields = (
        (name_w, [tool.title]),
        (description_w, [tool.description]),
        (enum_w, enums),
        (parameter_w, params),
    )
    weights: dict[str, float] = {}
    for weight, texts in fields:
        for text in texts:
            for word in tokens(text, synonyms):
                weights[word] = max(weights.get(word, 0.0), weight)
    return ToolWords(name=tool.title, weights=weights)


class Matcher:
    """Index of a domain's tools; `rank(goal)` scores them all."""

    def __init__(self, tools: list[ToolRow], synonyms: dict[str, str] | None = None,
                 weights: tuple[float, float, float, float] | None = None):
        self.synonyms = synonyms
        self.tools = [tool_words(tool, synonyms, weights) for tool in tools]
        n = len(self.tools)
        df: dict[str, int] = {}
        for tool in self.tools:
            for word in tool.weights:
                df[word] = df.get(word, 0) + 1
        self.idf = {word: math.log(1 + n / count) for word, count in df.items()}

    def rank(self, goal: str) -> list[tuple[float, str]]:
        words = set(tokens(goal, self.synonyms))
        scored = []
        for tool in self.tools:
            score = sum(tool.weights.get(w, 0.0) * self.idf.get(w, 0.0) for w in words)
            scored.append((round(score, 6), tool.name))
        # Highest score first; ties keep dataset order (stable sort on the score alone).
        return sorted(scored, key=lambda pair: -pair[0])

    def pick(self, goal: str) -> list[str]:
        ranked = self.rank(goal)
        best_score, best = ranked[0]
        if best_score < MIN_SCORE:
            return []
        picked = [best]
        if len(ranked) > 1:
            second_score, second = ranked[1]
            if second_score >= max(MIN_SCORE, SECOND_RATIO * best_score):
                picked.append(second)
        return picked


def make_matcher(dataset: Dataset) -> Matcher:
    return Matcher(dataset.tools)


def label(scenario: Scenario, dataset: Dataset, matcher: Matcher | None = None) -> ScenarioLabels:
    matcher = matcher or make_matcher(dataset)
    goals = [decided(i, goal, matcher.pick(goal))
             for i, goal in enumerate(scenario.row.user_goals)]
    # Both picks of a goal count on the set side (this method predates preferred tools).
    expected = [name for g in goals for name in g.tools or []]
    return ScenarioLabels(expected_tools=expected, goals=goals)

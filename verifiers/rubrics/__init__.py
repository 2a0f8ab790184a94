"""Rubrics: score rollouts with weighted reward functions."""

from verifiers.rubrics.judge_rubric import JudgeRubric, PairwiseJudgeRubric
from verifiers.rubrics.math_rubric import MathRubric
from verifiers.rubrics.rubric import Rubric
from verifiers.rubrics.rubric_group import RubricGroup

__all__ = ["JudgeRubric", "MathRubric", "PairwiseJudgeRubric", "Rubric", "RubricGroup"]

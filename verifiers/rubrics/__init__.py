"""Rubrics: score rollouts with weighted reward functions."""

from verifiers.rubrics.judge_rubric import JudgeRubric, PairwiseJudgeRubric
from verifiers.rubrics.math_rubric import MathRubric
from verifiers.rubrics.rubric import Rubric
from verifiers.rubrics.rubric_group import RubricGroup

__all__ = ["JudgeRubric", "MathRubric", "PairwiseJudgeRubric", "Rubric", "RubricGroup"]


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder

__getattr__ = _forwarder(__name__)

"""Rubrics: score rollouts with weighted reward functions."""

from verifiers.rubrics.rubric import Rubric
from verifiers.rubrics.rubric_group import RubricGroup

__all__ = ["Rubric", "RubricGroup"]

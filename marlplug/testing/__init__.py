"""Reusable test suites for plugin authors: run them from pytest against your own components."""

from marlplug.testing.codes import CodingSchemeContract, check_coding_scheme

__all__ = ["CodingSchemeContract", "check_coding_scheme"]

"""Test and benchmark helpers that are not fixtures (importable from tests and benchmarks/)."""

"""SessionVault benchmarks: `make bench` (python -m benchmarks.run) prints every figure."""

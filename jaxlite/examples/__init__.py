"""Small models shared by the demo, the notebooks and the benchmarks."""

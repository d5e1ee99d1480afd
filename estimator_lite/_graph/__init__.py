"""Building the graphs: calling input_fn and model_fn (one place each), the in-graph loop, strategies."""

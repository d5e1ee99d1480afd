"""Running the graphs: training, evaluation and prediction sessions, and the hooks they run."""

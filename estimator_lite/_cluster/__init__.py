"""The cluster: TF_CONFIG, servers, train_and_evaluate's roles and the continuous evaluator."""

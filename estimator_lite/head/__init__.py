"""Heads: the loss, predictions, metrics, export outputs and train op of a model, given its logits.

tf.estimator 2.15's Head API (`Head`, `BinaryClassHead`, `MultiClassHead`,
`MultiLabelHead`, `RegressionHead`, `LogisticRegressionHead`,
`PoissonRegressionHead`, `MultiHead`); the canned estimators are built on them
and a user's own model_fn can be too. Reached as `estimator_lite.<Name>`.
"""

"""Porting tf.estimator programs: the import table, the import hooks, the rewriter."""

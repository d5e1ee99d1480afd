"""What every stage shares: the cadence primitive, validation and keys, events, TensorFlow internals."""

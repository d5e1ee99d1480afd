"""Which arguments a user's model_fn / input_fn accepts, by name."""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Set, Tuple


def fn_args(fn: Callable[..., Any]) -> Tuple[str, ...]:
  """Returns the names a callable accepts, minus arguments bound by functools.partial.

  Args:
    fn: a function, method, functools.partial or callable object.

  Returns:
    tuple of parameter names (positional-or-keyword and keyword-only).
  """
  bound: Set[str] = set()
  target = fn
  while isinstance(target, functools.partial):
    bound.update(target.keywords or {})
    target = target.func
  try:
    signature = inspect.signature(fn)
  except (TypeError, ValueError) as e:
    raise TypeError(f"Cannot read the arguments of {fn!r}: {e}") from e
  return tuple(
      name for name, p in signature.parameters.items()
      if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and name not in bound)


def required_args(fn: Callable[..., Any]) -> Tuple[str, ...]:
  """Returns the parameter names of fn that have no default and are not bound."""
  signature = inspect.signature(fn)
  return tuple(
      name for name, p in signature.parameters.items()
      if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def describe(fn: Any) -> str:
  """A short name for error messages."""
  name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
  if isinstance(fn, functools.partial):
    name = f"functools.partial({describe(fn.func)})"
  return name or repr(fn)

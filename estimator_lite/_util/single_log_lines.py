"""Each TensorFlow log record printed once, as tf.estimator printed it.

Why records came out twice: TensorFlow's logger ("tensorflow") gets its own
handler, printing `INFO:tensorflow:...`, the first time it is used if the root
logger has no handler then. Records also propagate to the root logger, and a
handler put there later prints them again: absl's, which `absl.app.run`
(and so `tf.compat.v1.app.run`, the entry point of many tf.estimator programs)
installs (`I1127 12:00:00.123 ... ] ...`), or one of the user's own
(`logging.basicConfig()` after `import tensorflow`). tf.estimator 2.15 printed
both lines too.

What is kept, for a record of TensorFlow's logger that two handlers would
write to the same place (the same stream object, or the same file):
- a handler the user put on the root logger wins over TensorFlow's own: what
  TensorFlow does when the user configured logging before importing it;
- TensorFlow's own (the `INFO:tensorflow:` line tf.estimator users read) wins
  over absl's, which `app.run` installs whatever the program wanted.
Handlers writing elsewhere (absl's `--log_dir` files, a `basicConfig(filename=
...)` log) still get every record, and records of other loggers are not
touched. `ESTIMATOR_LITE_SHOW_TF_LOGS=1` does not change this: it is about
TensorFlow's C++ lines, and a duplicate line shows nothing more.

`install()` only adds a filter to the "tensorflow" logger: cheap, and it works
whichever of TensorFlow, absl and estimator_lite is imported first, because
the filters that choose are attached to the handlers as records come.
"""
from __future__ import annotations

import logging
import os
import sys
from typing import Any, Iterator, Optional, Tuple, Type

_TF_LOGGER = "tensorflow"


def install() -> None:
  """Makes every record of TensorFlow's logger print once per destination (idempotent)."""
  logger = logging.getLogger(_TF_LOGGER)
  if not any(isinstance(f, _AttachAsRecordsCome) for f in logger.filters):
    logger.addFilter(_AttachAsRecordsCome())


class _AttachAsRecordsCome(logging.Filter):
  """On TensorFlow's logger: puts the choosing filters on the handlers that exist now.

  TensorFlow's handler appears on the logger's first use and absl's on the
  root logger when the program calls `app.run`; a logger's filters run before
  its handlers, so the record at hand is already judged by them.
  """

  def filter(self, record: logging.LogRecord) -> bool:
    for handler in logging.getLogger(_TF_LOGGER).handlers:
      if _is_tensorflows_own(handler):
        _attach(handler, _YieldToUserHandlers)
    absl_handler = _absl_handler()
    if absl_handler is not None:
      _attach(absl_handler, _NoSecondCopyFromAbsl)
    return True


class _ChoosingFilter(logging.Filter):
  """A filter on one handler that decides whether that handler writes a record."""

  def __init__(self, handler: logging.Handler) -> None:
    super().__init__()
    self.handler = handler


class _YieldToUserHandlers(_ChoosingFilter):
  """On TensorFlow's own handler: leaves a record to a user's root handler to the same place."""

  def filter(self, record: logging.LogRecord) -> bool:
    mine = _destination(self.handler)
    return not any(_same_place(mine, _destination(other))
                   for other in _user_root_handlers(record))


class _NoSecondCopyFromAbsl(_ChoosingFilter):
  """On absl's handler: leaves out TensorFlow's records another handler already writes there."""

  def filter(self, record: logging.LogRecord) -> bool:
    if record.name != _TF_LOGGER and not record.name.startswith(_TF_LOGGER + "."):
      return True
    mine = _destination(self.handler)
    others = [h for h in logging.getLogger(_TF_LOGGER).handlers if _emits(h, record)]
    others += list(_user_root_handlers(record))
    return not any(_same_place(mine, _destination(other)) for other in others)


def _attach(handler: logging.Handler, filter_class: Type[_ChoosingFilter]) -> None:
  if not any(isinstance(f, filter_class) for f in handler.filters):
    handler.addFilter(filter_class(handler))


def _is_tensorflows_own(handler: logging.Handler) -> bool:
  # What tf_logging.get_logger() adds: a bare StreamHandler in BASIC_FORMAT.
  # pylint: disable=unidiomatic-typecheck,protected-access
  formatter = handler.formatter
  return (type(handler) is logging.StreamHandler and formatter is not None
          and formatter._fmt == logging.BASIC_FORMAT)


def _absl_handler() -> Optional[logging.Handler]:
  absl_logging = sys.modules.get("absl.logging")
  if absl_logging is None:
    return None
  return absl_logging.get_absl_handler()


def _user_root_handlers(record: logging.LogRecord) -> Iterator[logging.Handler]:
  """The root logger's handlers, absl's aside, that the record reaches and passes."""
  if not logging.getLogger(_TF_LOGGER).propagate:
    return
  absl_handler = _absl_handler()
  for handler in logging.getLogger().handlers:
    if handler is not absl_handler and _emits(handler, record):
      yield handler


def _emits(handler: logging.Handler, record: logging.LogRecord) -> bool:
  return record.levelno >= handler.level


def _destination(handler: logging.Handler) -> Optional[Any]:
  """The stream a handler writes a record to; None when it is not a stream."""
  if handler is _absl_handler():
    return _absl_destination(handler)
  return getattr(handler, "stream", None)


def _absl_destination(handler: Any) -> Any:
  # absl writes to stderr until its flags are parsed and with --logtostderr;
  # otherwise to its handler's stream (a file under --log_dir).
  flags = sys.modules["absl.flags"].FLAGS
  if not flags.is_parsed() or flags["logtostderr"].value:
    return sys.stderr
  return handler.python_handler.stream


def _same_place(a: Optional[Any], b: Optional[Any]) -> bool:
  """Whether two streams end up in the same place (where one line twice reads as a duplicate)."""
  if a is None or b is None:
    return False
  if a is b:
    return True
  files = [_file_identity(a), _file_identity(b)]
  if None not in files:
    return files[0] == files[1]  # a terminal's stdout and stderr are one place
  # Streams with no file of their own, such as a notebook's: its stdout and
  # stderr show in the same cell.
  return {id(a), id(b)} == {id(sys.stdout), id(sys.stderr)}


def _file_identity(stream: Any) -> Optional[Tuple[int, int]]:
  try:
    stat = os.fstat(stream.fileno())
  except (AttributeError, OSError, ValueError):
    return None
  return (stat.st_dev, stat.st_ino)

"""A TCP proxy that delays what it forwards: latency on one link of a cluster.

`tc netem` is not in these machines' kernels, so latency is made here: the
role on one side is told (by its TF_CONFIG) that its peer is at the proxy's
address, and the proxy forwards each chunk of bytes, in order, once
`delay_secs` have passed since it arrived. The delay can be changed while
connections are open; chunks already queued keep the delay they were given.
"""
from __future__ import annotations

import asyncio
import threading
import time
from typing import Optional, Set, Tuple

Address = Tuple[str, int]
_CHUNK = 1 << 16


class DelayProxy:
  """Forwards connections from `listen` to `target`, each direction delayed by `delay_secs`."""

  def __init__(self, listen: Address, target: Address) -> None:
    self.listen = listen
    self.target = target
    self.delay_secs = 0.0
    self._loop = asyncio.new_event_loop()
    self._server: Optional[asyncio.base_events.Server] = None
    self._writers: Set[asyncio.StreamWriter] = set()
    started = threading.Event()
    self._thread = threading.Thread(target=self._serve, args=(started,), daemon=True,
                                    name=f"delay-proxy-{listen[1]}")
    self._thread.start()
    if not started.wait(30) or self._server is None:
      raise RuntimeError(f"the proxy on {listen} did not start")

  def _serve(self, started: threading.Event) -> None:
    asyncio.set_event_loop(self._loop)
    try:
      self._server = self._loop.run_until_complete(
          asyncio.start_server(self._connect, *self.listen, reuse_address=True))
    finally:
      started.set()
    self._loop.run_forever()

  async def _connect(self, client_reader: asyncio.StreamReader,
                     client_writer: asyncio.StreamWriter) -> None:
    try:
      target_reader, target_writer = await asyncio.wait_for(
          asyncio.open_connection(*self.target), 30)
    except (OSError, asyncio.TimeoutError):
      client_writer.close()
      return
    self._writers.update((client_writer, target_writer))
    await asyncio.gather(self._pump(client_reader, target_writer),
                         self._pump(target_reader, client_writer), return_exceptions=True)
    for writer in (client_writer, target_writer):
      self._writers.discard(writer)
      writer.close()

  async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copies reader to writer, each chunk sent `delay_secs` after it was read."""
    queue: asyncio.Queue = asyncio.Queue()

    async def send() -> None:
      while True:
        due, chunk = await queue.get()
        if chunk is None:
          if writer.can_write_eof():
            writer.write_eof()
          return
        wait = due - time.monotonic()
        if wait > 0:
          await asyncio.sleep(wait)
        writer.write(chunk)
        await writer.drain()

    sender = asyncio.ensure_future(send())
    try:
      while True:
        chunk = await reader.read(_CHUNK)
        queue.put_nowait((time.monotonic() + self.delay_secs, chunk or None))
        if not chunk:
          break
      await sender
    except (OSError, asyncio.IncompleteReadError):
      sender.cancel()
      writer.close()

  def close(self) -> None:
    """Stops listening and closes every connection."""
    def stop() -> None:
      if self._server is not None:
        self._server.close()
      for writer in list(self._writers):
        writer.close()
      self._loop.stop()
    self._loop.call_soon_threadsafe(stop)
    self._thread.join(30)

"""The in-sandbox relay of the interception server: standard-library Python that listens on
the sandbox's loopback and relays each connection to the rollout's Unix socket."""

from __future__ import annotations

__all__ = ["FORWARDER"]

#: Standard-library Python run inside the sandbox: listens on 127.0.0.1 (port 0: the kernel
#: picks one, printed as the first line of output) and relays each connection to the Unix
#: socket given as its argument.
FORWARDER = r"""
import asyncio, sys
SOCK = sys.argv[1]
async def pipe(r, w):
    try:
        while True:
            data = await r.read(65536)
            if not data:
                break
            w.write(data)
            await w.drain()
    except Exception:
        # the far side is gone: read (and drop) a little more of this side, so that it is not
        # reset before it has read the far side's last answer
        try:
            left = 4 << 20
            while left > 0:
                data = await r.read(65536)
                if not data:
                    break
                left -= len(data)
        except Exception:
            pass
    finally:
        try:
            if w.can_write_eof():
                w.write_eof()
        except Exception:
            pass
async def handle(cr, cw):
    try:
        ur, uw = await asyncio.open_unix_connection(SOCK)
    except OSError:
        cw.close()
        return
    await asyncio.gather(pipe(cr, uw), pipe(ur, cw))
    for w in (cw, uw):
        try:
            w.close()
        except Exception:
            pass
async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(srv.sockets[0].getsockname()[1], flush=True)
    async with srv:
        await srv.serve_forever()
asyncio.run(main())
"""

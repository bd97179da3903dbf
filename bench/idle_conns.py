#!/usr/bin/env python3
"""Opens N keep-alive connections to a gateway, makes one request on each (HTTP/1.1 over
plain TCP, or HTTP/2 over TLS with ALPN h2), then holds them idle and prints one line
`open N` when all are up; closes everything on stdin EOF or after --hold seconds.
Used by bench/memory.sh to measure the gateway's RSS per idle connection.

Usage: idle_conns.py --port P --count N [--h2 | --in-flight] [--path /open/v1/] [--hold 60]
(--in-flight: send the request and leave it unanswered, e.g. on a slow back end.)
Only talks to 127.0.0.1."""
import argparse, asyncio, ssl, struct, sys

def h2_frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload

def hpack_literal(index, value):
    # Literal header field without indexing, indexed name (RFC 7541 6.2.2), no Huffman.
    v = value.encode()
    assert len(v) < 127
    return bytes([index]) + bytes([len(v)]) + v

async def read_frame(reader):
    head = await reader.readexactly(9)
    length = int.from_bytes(head[:3], "big")
    payload = await reader.readexactly(length)
    return head[3], head[4], int.from_bytes(head[5:9], "big") & 0x7FFFFFFF, payload

async def one_h2(port, path, ctx):
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx, server_hostname="localhost")
    assert writer.get_extra_info("ssl_object").selected_alpn_protocol() == "h2"
    headers = b"\x82\x87" + hpack_literal(0x04, path) + hpack_literal(0x01, f"127.0.0.1:{port}")
    writer.write(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + h2_frame(4, 0, 0)
                 + h2_frame(1, 0x5, 1, headers))  # HEADERS, END_STREAM|END_HEADERS
    await writer.drain()
    status_seen = False
    while True:
        kind, flags, stream, payload = await read_frame(reader)
        if kind == 4 and not flags & 1:  # server SETTINGS: ack it
            writer.write(h2_frame(4, 1, 0)); await writer.drain()
        if stream == 1 and kind in (0, 1):
            status_seen = True
            if flags & 1:
                break
    assert status_seen
    return reader, writer

async def one_h1(port, path, wait=True):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    await writer.drain()
    if not wait:  # leave the request in flight
        return reader, writer
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head[:40]
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    await reader.readexactly(length)
    return reader, writer

async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--h2", action="store_true")
    ap.add_argument("--path", default="/open/v1/")
    ap.add_argument("--hold", type=float, default=60)
    ap.add_argument("--parallel", type=int, default=200)
    ap.add_argument("--in-flight", action="store_true",
                    help="HTTP/1.1: send the request and do not wait for the answer")
    a = ap.parse_args()
    ctx = None
    if a.h2:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(["h2"])
    conns, sem = [], asyncio.Semaphore(a.parallel)
    async def opener():
        async with sem:
            conns.append(await (one_h2(a.port, a.path, ctx) if a.h2
                                else one_h1(a.port, a.path, not a.in_flight)))
    await asyncio.gather(*(opener() for _ in range(a.count)))
    print(f"open {len(conns)}", flush=True)
    loop = asyncio.get_running_loop()
    eof = loop.run_in_executor(None, sys.stdin.read)
    await asyncio.wait([eof], timeout=a.hold)
    for _, w in conns:
        w.close()
    print("closed", flush=True)
    import os; os._exit(0)

asyncio.run(main())

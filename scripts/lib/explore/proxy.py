"""A TCP proxy on loopback that delays every byte by a delay that can change live.

It sits between the simulator and the broker: the ESP32's status messages (and the
triggers it receives over MQTT) arrive `delay` seconds late, as over a slow Wi-Fi.
Order is kept: a chunk read later is never written before one read earlier.
"""

import queue
import socket
import threading
import time


class DelayProxy:
    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.delay = 0.0
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.port = self._listener.getsockname()[1]
        self._closed = False
        self._sockets = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self._closed = True
        self._listener.close()
        with self._lock:
            for s in list(self._sockets):
                _close(s)

    def _track(self, s):
        with self._lock:
            self._sockets.add(s)

    def _accept(self):
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self._track(client)
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=2)
                upstream.settimeout(None)
            except OSError:
                _close(client)  # no broker: the client sees the refusal as a reset
                continue
            self._track(upstream)
            for source, sink in ((client, upstream), (upstream, client)):
                chunks = queue.Queue()
                threading.Thread(target=self._read, args=(source, sink, chunks), daemon=True).start()
                threading.Thread(target=self._write, args=(source, sink, chunks), daemon=True).start()

    def _read(self, source, sink, chunks):
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                data = b""
            chunks.put((time.monotonic() + self.delay, data))
            if not data:
                return

    def _write(self, source, sink, chunks):
        while True:
            due, data = chunks.get()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if not data:
                break
            try:
                sink.sendall(data)
            except OSError:
                break
        # One side ended: end both, as a broker or device that went away would.
        _close(source)
        _close(sink)


def _close(s):
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        s.close()
    except OSError:
        pass

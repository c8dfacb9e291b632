"""What the dashboard's server refuses before the app sees a request: other hosts, huge bodies.

A web page the user visits could reach the local server through DNS rebinding (its own name,
resolved to 127.0.0.1), so a request is answered only when its Host header names this server:
``localhost``, ``127.0.0.1`` or ``[::1]``, plus what ``graphscope serve --host`` opened it
to. An attack through DNS always carries the attacker's name, never an IP address, so a
server open on every address (``--host 0.0.0.0``) answers any address, the machine's name
and the names given with ``--allow-host``; other names get 403. And a request body over
``MAX_BODY`` (the largest upload, base64-encoded, and some room) is refused with 413 from its
Content-Length, before a byte of it is read; a body sent in chunks, without one, is refused
with 413 as soon as it passes ``MAX_BODY`` (Flask alone would cut it there silently and the
app would answer 400 to the truncated JSON).
"""

from __future__ import annotations

import io
import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..files.sources import UPLOAD_LIMIT

if TYPE_CHECKING:
    from _typeshed.wsgi import InputStream, StartResponse, WSGIApplication, WSGIEnvironment
    from flask import Flask

#: Host names the server answers for by default.
LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
#: Addresses that mean "every address of this machine" to ``--host``.
ANY_ADDRESS = frozenset({"0.0.0.0", "::", ""})
#: Largest request body, in bytes: an upload of ``UPLOAD_LIMIT`` bytes arrives in base64 (4
#: characters for 3 bytes) inside the callback's JSON, with the page's other inputs.
MAX_BODY = (UPLOAD_LIMIT + 2) // 3 * 4 + (1 << 20)
_READ_STEP = 1 << 20

# A Host header: a name or an IPv4 address, or an IPv6 address in brackets; then a port.
_HOST = re.compile(r"(?:\[([0-9a-f:.]+)\]|([a-z0-9._-]+))(?::[0-9]{1,5})?")


def host_name(header: str | None) -> str | None:
    """The host a Host header names, lower case, without port or brackets; None if malformed."""
    match = _HOST.fullmatch((header or "").strip().lower())
    if match is None:
        return None
    return match.group(1) or match.group(2).rstrip(".")


def _address(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


@dataclass(frozen=True)
class Hosts:
    """The host names a server answers for."""

    names: frozenset[str] = LOCAL_NAMES  # lower case, IPv6 without brackets
    any_address: bool = False  # every IP address (the server listens on all of them)

    def allows(self, name: str) -> bool:
        """Whether a request whose Host header names ``name`` (see ``host_name``) is answered."""
        if name in self.names:
            return True
        address = _address(name)
        return address is not None and (address.is_loopback or self.any_address)

    def shown(self) -> str:
        """The names, as a message lists them."""
        names = sorted(f"[{n}]" if ":" in n else n for n in self.names)
        return ", ".join(names) + (" and any IP address" if self.any_address else "")


def allowed_hosts(bind: str = "127.0.0.1", extra: Iterable[str] = ()) -> Hosts:
    """The hosts a server bound to ``bind`` answers for, with the names in ``extra``.

    Loopback names always; ``bind`` itself when it is an address or name of its own; every
    IP address and this machine's name when it is ``0.0.0.0`` or ``::``.
    """
    names = set(LOCAL_NAMES)
    names.update(n for n in (host_name(e) for e in extra if e.strip()) if n)
    bound = bind.strip().strip("[]").lower()
    wildcard = bound in ANY_ADDRESS
    if wildcard:
        names.add(socket.gethostname().lower())
    else:
        names.add(bound)
    return Hosts(frozenset(names), any_address=wildcard)


def _refuse(start_response: StartResponse, status: str, message: str) -> list[bytes]:
    body = (message + "\n").encode("utf-8", "replace")
    start_response(
        status,
        [
            ("Content-Type", "text/plain; charset=utf-8"),
            ("Content-Length", str(len(body))),
            ("X-Content-Type-Options", "nosniff"),  # the message quotes the request
        ],
    )
    return [body]


@dataclass
class Guard:
    """WSGI middleware in front of the app: refuses other hosts and oversized bodies."""

    app: WSGIApplication
    hosts: Hosts = field(default_factory=Hosts)
    max_body: int = MAX_BODY

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        header = environ.get("HTTP_HOST")
        name = host_name(header)
        if name is None:
            shown = "no Host header" if not header else f"a malformed Host header {header[:80]!r}"
            return _refuse(start_response, "400 Bad Request", f"graphscope: {shown}")
        if not self.hosts.allows(name):
            return _refuse(
                start_response,
                "403 Forbidden",
                f"graphscope: this server does not answer for host {name[:80]!r}, only for "
                f"{self.hosts.shown()}; to open it to that name: graphscope serve --allow-host "
                "NAME (and --host to listen beyond this machine)",
            )
        length = environ.get("CONTENT_LENGTH") or ""
        if not length and _chunked(environ):
            body = _read_at_most(environ["wsgi.input"], self.max_body)
            if body is None:
                return self._too_large(start_response, "more than")
            environ["wsgi.input"] = body
            length = environ["CONTENT_LENGTH"] = str(len(body.getbuffer()))
        if length and not length.isdigit():
            return _refuse(
                start_response, "400 Bad Request", f"graphscope: bad Content-Length {length[:40]!r}"
            )
        if int(length or 0) > self.max_body:
            return self._too_large(start_response, f"{int(length):,}")
        return self.app(environ, start_response)

    def _too_large(self, start_response: StartResponse, size: str) -> list[bytes]:
        return _refuse(
            start_response,
            "413 Content Too Large",
            f"graphscope: a request of {size} bytes is over this server's limit of "
            f"{self.max_body:,} (uploads up to {UPLOAD_LIMIT >> 20} MB); open a larger file "
            "from the command line: graphscope serve FILE",
        )


def _chunked(environ: WSGIEnvironment) -> bool:
    """A body sent in chunks, which the server ends (the only body without a length)."""
    encoding = environ.get("HTTP_TRANSFER_ENCODING", "").lower()
    return "chunked" in encoding and bool(environ.get("wsgi.input_terminated"))


def _read_at_most(stream: InputStream, limit: int) -> io.BytesIO | None:
    """The whole body, or None as soon as it passes ``limit`` bytes (the rest is not read)."""
    body = io.BytesIO()
    while chunk := stream.read(_READ_STEP):
        body.write(chunk)
        if body.tell() > limit:
            return None
    body.seek(0)
    return body


def install(server: Flask, hosts: Hosts | None = None, max_body: int = MAX_BODY) -> Guard:
    """Put a ``Guard`` in front of a Flask ``server`` (a Dash app's ``app.server``).

    Installing again changes the hosts and the limit of the guard already there.
    """
    current = server.wsgi_app
    if isinstance(current, Guard):
        guard = current
        guard.hosts = hosts or guard.hosts
        guard.max_body = max_body
    else:
        guard = Guard(current, hosts or Hosts(), max_body)
        server.wsgi_app = guard  # type: ignore[method-assign]  # Flask's way to add middleware
    # Cuts a body sent without a Content-Length (chunked) at the same size.
    server.config["MAX_CONTENT_LENGTH"] = max_body
    return guard
